package onnxruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
)

// Name is the backend's name in config.pbtxt (`backend: "onnxruntime"`); the
// platform "onnxruntime_onnx" maps to it.
const Name = "onnxruntime"

// DefaultModelFilename is the model file looked for in a version folder when
// the config names none.
const DefaultModelFilename = "model.onnx"

func init() { backend.Register(Name, New()) }

// Backend serves ONNX models with ONNX Runtime. The zero value is not
// usable; create one with [New]. Importing this package registers a
// default Backend under [Name]; give a server a configured one with
// triton.WithBackend(onnxruntime.Name, onnxruntime.New(...)).
//
// The ONNX Runtime environment is shared by every Backend value in the
// process (the library keeps one per process): the first model to load
// creates it from the shared library, the last model to close releases it.
type Backend struct {
	libraryPath  string
	defaultBatch int
}

// Option configures a [Backend].
type Option func(*Backend)

// WithLibraryPath sets the path of libonnxruntime.so (ONNX Runtime
// [RuntimeVersion]). Without it the backend searches $ONNXRUNTIME_LIB, a
// checkout's copy, the user's cache folder and the system's library
// folders, in the order the package documentation gives.
func WithLibraryPath(p string) Option { return func(b *Backend) { b.libraryPath = p } }

// WithDefaultMaxBatchSize sets the max_batch_size auto-complete gives a
// batchable model whose configuration leaves it at 0 (Triton's
// --backend-config=onnxruntime,default-max-batch-size=N; default 4). Zero
// disables it: such models are then served without batching.
func WithDefaultMaxBatchSize(n int) Option { return func(b *Backend) { b.defaultBatch = max(n, 0) } }

// New returns a Backend.
func New(opts ...Option) *Backend {
	b := &Backend{defaultBatch: 4}
	for _, o := range opts {
		o(b)
	}
	return b
}

var (
	_ backend.Backend         = (*Backend)(nil)
	_ backend.ConfigCompleter = (*Backend)(nil)
	_ backend.Model           = (*model)(nil)
	_ backend.Instance        = (*instance)(nil)
)

// modelSource is where a model version's file is: a local path (so that
// external data files next to it are found) or, for repositories that are
// not on disk, its bytes.
type modelSource struct {
	file string // for messages: the path, or "<model>/<version>/<name>"
	path string // local path, "" when only data is set
	data []byte
}

func openModel(spec *backend.ModelSpec) (modelSource, error) {
	name := spec.ModelFilename(DefaultModelFilename)
	if dir := spec.VersionDir(); dir != "" {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Stat(p); err != nil {
			return modelSource{}, fmt.Errorf("model file %s: %w", p, err)
		}
		return modelSource{file: p, path: p}, nil
	}
	vfs, err := spec.VersionFS()
	if err != nil {
		return modelSource{}, err
	}
	file := path.Join(spec.Name, fmt.Sprint(spec.Version), name)
	data, err := fs.ReadFile(vfs, name)
	if err != nil {
		return modelSource{}, fmt.Errorf("model file %s: %w", file, err)
	}
	return modelSource{file: file, data: data}, nil
}

// info reads the model's inputs and outputs from the file.
func (src modelSource) info() (ins, outs []ort.InputOutputInfo, err error) {
	if src.path != "" {
		ins, outs, err = ort.GetInputOutputInfo(src.path)
	} else {
		ins, outs, err = ort.GetInputOutputInfoWithONNXData(src.data)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a model ONNX Runtime can load: %v: %w", src.file, err, backend.ErrInvalidInput)
	}
	return ins, outs, nil
}

// withModel runs f with the environment held and the model file opened.
// With keep, a successful f keeps its reference to the environment (the
// model releases it on Close); otherwise the reference is dropped.
func (b *Backend) withModel(spec *backend.ModelSpec, keep bool, f func(src modelSource, ins, outs []ort.InputOutputInfo) error) (err error) {
	lib, err := findLibrary(b.libraryPath)
	if err != nil {
		return err
	}
	if err := acquireEnv(lib); err != nil {
		return err
	}
	defer func() {
		if err != nil || !keep {
			err = errors.Join(err, releaseEnv())
		}
	}()
	src, err := openModel(spec)
	if err != nil {
		return err
	}
	ins, outs, err := src.info()
	if err != nil {
		return fmt.Errorf("%w%s", err, opLibraries(spec.Config))
	}
	return f(src, ins, outs)
}

// opLibraries says, for an error of ONNX Runtime's, that the custom
// operator libraries the configuration names (model_operations) were not
// loaded; "" when it names none.
func opLibraries(cfg *modelconfig.ModelConfig) string {
	libs := cfg.GetModelOperations().GetOpLibraryFilename()
	if len(libs) == 0 {
		return ""
	}
	return fmt.Sprintf(" (model_operations names the custom operator libraries %q, which this server does not load)", libs)
}

// CompleteConfig fills inputs, outputs and max_batch_size from the model
// file; see the package documentation for the rules.
func (b *Backend) CompleteConfig(ctx context.Context, spec *backend.ModelSpec) error {
	return b.withModel(spec, false, func(src modelSource, ins, outs []ort.InputOutputInfo) error {
		if err := complete(spec.Config, ins, outs, b.defaultBatch); err != nil {
			return fmt.Errorf("%s: %w", src.file, err)
		}
		return nil
	})
}

// Load checks the configuration against the model file and returns the
// model; sessions are created per instance.
func (b *Backend) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	var m *model
	err := b.withModel(spec, true, func(src modelSource, ins, outs []ort.InputOutputInfo) error {
		if err := checkConfig(src.file, spec.Config, ins, outs); err != nil {
			return fmt.Errorf("%w: %w", err, backend.ErrInvalidInput)
		}
		m = &model{spec: spec, src: src, instances: instanceCount(spec.Config)}
		m.weights, m.weightsErr = weightBytes(src)
		if libs := spec.Config.GetModelOperations().GetOpLibraryFilename(); len(libs) > 0 && spec.Logger != nil {
			spec.Logger.Warn("model_operations is ignored: the model loads without its custom operator libraries", zap.Strings("op_library_filename", libs))
		}
		for _, in := range spec.Config.GetInput() {
			m.inputs = append(m.inputs, in.GetName())
		}
		for _, bi := range spec.Config.GetBatchInput() {
			m.inputs = append(m.inputs, bi.GetTargetName()...) // the server makes them (backend.Batch.Input)
		}
		for _, out := range spec.Config.GetOutput() {
			m.outputs = append(m.outputs, out.GetName())
		}
		// The tensors sequence_batching declares: the server adds the state
		// and control inputs to every request and takes the state outputs
		// back from every request, whatever the client asked for.
		seqIns, seqOuts, err := sequenceTensors(spec.Config)
		if err != nil {
			return err // checkConfig has reported it already
		}
		for _, t := range seqIns {
			if !slices.Contains(m.inputs, t.name) {
				m.inputs = append(m.inputs, t.name)
			}
		}
		for _, t := range seqOuts {
			k := slices.Index(m.outputs, t.name)
			if k < 0 {
				k = len(m.outputs)
				m.outputs = append(m.outputs, t.name)
			}
			m.always = append(m.always, k)
		}
		m.scalarIn, m.scalarOut = scalars(spec.Config, m.inputs, ins), scalars(spec.Config, m.outputs, outs)
		m.outShapes = make([]outputShape, len(m.outputs))
		for k, name := range m.outputs {
			if m.outShapes[k], err = knownShape(spec.Config, name, outs); err != nil {
				return err // checkConfig has reported it already
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// outputShape is the shape of one model output as the model file declares
// it, when that fixes it but for the batch dimension: then Execute knows
// the output's shape before the run, and ONNX Runtime writes the output
// straight into Go memory (ortrun.Output.Known).
type outputShape struct {
	dims  []int64 // nil: not known before the run
	batch int     // the index of the batch dimension in dims; -1 when the model does not batch
}

// knownShape returns the outputShape of the model output named name: the
// dims of outs, with the batch dimension (as the configuration places it)
// left for the batch size, known only when every other dimension is fixed.
func knownShape(cfg *modelconfig.ModelConfig, name string, outs []ort.InputOutputInfo) (outputShape, error) {
	k := slices.IndexFunc(outs, func(o ort.InputOutputInfo) bool { return o.Name == name })
	if k < 0 || backend.BatchLayouts(cfg)[name].Scatter != nil {
		return outputShape{}, nil // a batch output's size follows its source input's
	}
	s := outputShape{dims: normalizeDims(outs[k].Dimensions), batch: -1}
	if cfg.GetMaxBatchSize() > 0 {
		axis, err := tensorAxis(cfg, name)
		if err != nil {
			return outputShape{}, err
		}
		if axis >= len(s.dims) {
			return outputShape{}, nil
		}
		s.batch = axis
	}
	for i, d := range s.dims {
		if d < 0 && i != s.batch {
			return outputShape{}, nil
		}
	}
	return s, nil
}

// scalars reports per name whether the model file's tensor of that name
// has rank 0 in a model that does not batch: its config shape is then one
// element ([1], see scalarOK), fed to ONNX Runtime as rank 0 and answered
// as [1].
func scalars(cfg *modelconfig.ModelConfig, names []string, infos []ort.InputOutputInfo) []bool {
	out := make([]bool, len(names))
	if cfg.GetMaxBatchSize() > 0 {
		return out
	}
	for k, name := range names {
		i := slices.IndexFunc(infos, func(o ort.InputOutputInfo) bool { return o.Name == name })
		out[k] = i >= 0 && len(infos[i].Dimensions) == 0
	}
	return out
}

func instanceCount(cfg *modelconfig.ModelConfig) int {
	n := 0
	for _, g := range cfg.GetInstanceGroup() {
		n += int(max(g.GetCount(), 1))
	}
	return max(n, 1)
}

// model is one loaded model version; it holds a reference to the ONNX
// Runtime environment until Close.
type model struct {
	spec      *backend.ModelSpec
	src       modelSource
	inputs    []string      // config order, then state and control inputs; the order inputs are fed to sessions
	outputs   []string      // config order, then state outputs
	always    []int         // indices in outputs of the state outputs, computed for every batch
	outShapes []outputShape // per output: its shape, when the model file fixes it
	scalarIn  []bool        // per input: rank 0 in the model file, one element in the config (scalars)
	scalarOut []bool        // per output: the same
	instances int
	closed    sync.Once

	weights    int64 // the bytes of the initializers, which each session holds (instance.MemoryBytes)
	weightsErr error // why weights is not known
}

func (m *model) NewInstance(ctx context.Context, is backend.InstanceSpec) (backend.Instance, error) {
	gpu := is.Kind == modelconfig.ModelInstanceGroup_KIND_GPU
	plan, err := planSession(m.spec.Config, m.instances, gpu, is.DeviceID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, backend.ErrInvalidInput)
	}
	opts, err := newSessionOptions(plan)
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	var s *ort.DynamicAdvancedSession
	if m.src.path != "" {
		s, err = ort.NewDynamicAdvancedSession(m.src.path, m.inputs, m.outputs, opts)
	} else {
		s, err = ort.NewDynamicAdvancedSessionWithONNXData(m.src.data, m.inputs, m.outputs, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("creating an ONNX Runtime session for %s: %w%s", m.src.file, err, opLibraries(m.spec.Config))
	}
	inst, err := newInstance(m, s)
	if err != nil {
		_ = s.Destroy()
		return nil, err
	}
	return inst, nil
}

func (m *model) Close() error {
	var err error
	m.closed.Do(func() { err = releaseEnv() })
	return err
}
