package pytorch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/modelconfig"
)

// Name is the backend's name in config.pbtxt (`backend: "pytorch"`); the
// platforms "pytorch_libtorch" and "libtorch", and a version folder
// holding model.pt, map to it.
const Name = "pytorch"

// DefaultModelFilename is the model file looked for in a version folder
// when the config names none.
const DefaultModelFilename = "model.pt"

func init() { backend.Register(Name, New()) }

// Backend serves TorchScript models with libtorch, reached through the
// shim library (see the package documentation). The zero value is not
// usable; create one with [New]. Importing this package registers a
// default Backend under [Name]; give a server a configured one with
// triton.WithBackend(pytorch.Name, pytorch.New(...)).
//
// The shim is loaded once per process, by the first model to load, and
// stays loaded (libtorch cannot be unloaded); every Backend value of the
// process shares it. Load and NewInstance may be called concurrently.
type Backend struct {
	shim       string
	backendDir string
}

// Option configures a [Backend].
type Option func(*Backend)

// WithShim sets the path of the shim library (libtriton_pytorch.so, built
// by scripts/build-torch-shim.sh). Without it the backend searches
// $TRITONGO_PYTORCH_SHIM, the backend directory, a checkout's copy and the
// user's cache folder, in the order the package documentation gives.
func WithShim(path string) Option { return func(b *Backend) { b.shim = path } }

// WithBackendDirectory sets a folder laid out as Triton's backend
// directory: the shim is looked for at dir/pytorch/libtriton_pytorch.so
// (cmd/tritonserver's --backend-directory). [WithShim] and
// $TRITONGO_PYTORCH_SHIM take precedence over it.
func WithBackendDirectory(dir string) Option { return func(b *Backend) { b.backendDir = dir } }

// New returns a Backend.
func New(opts ...Option) *Backend {
	b := &Backend{}
	for _, o := range opts {
		o(b)
	}
	return b
}

var (
	_ backend.Backend  = (*Backend)(nil)
	_ backend.Model    = (*model)(nil)
	_ backend.Instance = (*instance)(nil)
)

// aotiPlatform is Triton's platform of AOTInductor packages (model.pt2),
// which repository.Normalize gives this backend as Triton's core does.
const aotiPlatform = "torch_aoti"

// errAOTI is the error of a torch_aoti model.
func errAOTI(model string) error {
	return fmt.Errorf("model '%s': platform '%s' (a PyTorch AOTInductor package, model.pt2) needs libtorch 2's AOTInductor runtime; "+
		"the shim runs TorchScript (model.pt) with the libtorch of this machine (Debian's libtorch-dev): %w", model, aotiPlatform, errors.ErrUnsupported)
}

// errGPU is the error of a KIND_GPU instance.
func errGPU(model string) error {
	return fmt.Errorf("model '%s': KIND_GPU instances need libtorch built with CUDA and a CUDA device; "+
		"the shim is built against the CPU libtorch of this machine (Debian's libtorch-dev), "+
		"so use KIND_CPU or KIND_MODEL in instance_group: %w", model, errors.ErrUnsupported)
}

// Load opens the shim, reads the model's parameters, loads the TorchScript
// file and checks the configuration against forward's arguments (Triton's
// naming conventions and errors). The module it loaded serves the first
// instance.
func (b *Backend) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if spec.Config.GetPlatform() == aotiPlatform {
		return nil, errAOTI(spec.Name)
	}
	for _, g := range spec.Config.GetInstanceGroup() {
		if g.GetKind() == modelconfig.ModelInstanceGroup_KIND_GPU {
			return nil, errGPU(spec.Name)
		}
	}
	shim, err := findShim(b.shim, b.backendDir)
	if err != nil {
		return nil, fmt.Errorf("model '%s': %w", spec.Name, err)
	}
	if err := torchrun.Open(shim); err != nil {
		return nil, fmt.Errorf("model '%s': %w", spec.Name, err)
	}
	set, err := parseSettings(spec.Name, spec.Config)
	if err != nil {
		return nil, err
	}
	m := &model{spec: spec, set: set, log: spec.Logger}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	if err := m.locate(); err != nil {
		return nil, err
	}
	m.logSettings()
	m.first, err = m.load()
	if err != nil {
		return nil, errors.Join(err, m.removeTemp())
	}
	if m.first.Training() {
		m.log.Warn(fmt.Sprintf("model '%s': the TorchScript module was saved in training mode and runs so, as under Triton "+
			"(dropout and batch norm as in training); call .eval() on it before torch.jit.save to serve it in eval mode", spec.Name))
	}
	args := m.first.Arguments()
	as := make([]argument, len(args))
	var copied []string
	for i, a := range args {
		as[i] = argument{name: a.Name, typ: a.Type, printed: a.Printed}
		if a.Copied {
			copied = append(copied, a.Name)
		}
	}
	if len(copied) > 0 {
		m.log.Info(fmt.Sprintf("model '%s': forward may write in place or keep the arguments %q (TorchScript's alias analysis): "+
			"they are copied before each forward, the others passed without a copy", spec.Name, copied))
	}
	if m.plan, err = makePlan(spec.Name, spec.Config, as); err != nil {
		return nil, errors.Join(err, m.first.Close(), m.removeTemp())
	}
	for _, w := range m.plan.warnings {
		m.log.Warn(w)
	}
	return m, nil
}

// model is one loaded model version.
type model struct {
	spec *backend.ModelSpec
	set  settings
	plan *plan
	log  *zap.Logger
	path string // the file libtorch loads
	file string // for messages: the path, or "<model>/<version>/<name>"
	temp bool   // path is a copy of a file from a repository not on disk

	mu sync.Mutex
	// mu protects the following.
	first  *torchrun.Module // loaded by Load, for the first instance (or the shared one)
	shared bool             // first is shared by every instance (ENABLE_WEIGHT_SHARING)
	loads  int              // modules loaded, for tests of weight sharing
	closed bool
}

// locate finds the model file: the version folder's path on disk, or a
// temporary copy of it for a repository that is only an fs.FS.
func (m *model) locate() error {
	name := m.spec.ModelFilename(DefaultModelFilename)
	if dir := m.spec.VersionDir(); dir != "" {
		m.path = filepath.Join(dir, filepath.FromSlash(name))
		m.file = m.path
		if !isFile(m.path) {
			return unavailablef("unable to find '%s' for model instance '%s'", m.path, m.spec.Name)
		}
		return nil
	}
	m.file = path.Join(m.spec.Name, fmt.Sprint(m.spec.Version), name)
	vfs, err := m.spec.VersionFS()
	if err != nil {
		return err
	}
	data, err := fs.ReadFile(vfs, name)
	if err != nil {
		return unavailablef("unable to find '%s' for model instance '%s'", m.file, m.spec.Name)
	}
	f, err := os.CreateTemp("", "triton-pytorch-*.pt")
	if err != nil {
		return fmt.Errorf("model '%s': copying %s to load it: %w", m.spec.Name, m.file, err)
	}
	m.path, m.temp = f.Name(), true
	_, err = f.Write(data)
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(fmt.Errorf("model '%s': copying %s to load it: %w", m.spec.Name, m.file, err), m.removeTemp())
	}
	return nil
}

func (m *model) removeTemp() error {
	if !m.temp {
		return nil
	}
	m.temp = false
	return os.Remove(m.path)
}

// load loads the module once more, with Triton's error for a file libtorch
// refuses.
func (m *model) load() (*torchrun.Module, error) {
	mod, err := torchrun.Load(m.path, m.set.options())
	if err != nil {
		return nil, fmt.Errorf("failed to load model '%s': %w", m.spec.Name, err)
	}
	m.mu.Lock()
	m.loads++
	m.mu.Unlock()
	return mod, nil
}

// options are the module's torchrun options.
func (s settings) options() torchrun.Options {
	tri := func(t tristate) torchrun.Tristate {
		switch t {
		case on:
			return torchrun.True
		case off:
			return torchrun.False
		}
		return torchrun.Unset
	}
	return torchrun.Options{
		InferenceMode:             s.inferenceMode,
		DisableOptimizedExecution: s.disableOptimized,
		JITExecutor:               tri(s.jitExecutor),
		JITProfiling:              tri(s.jitProfiling),
		TensorFuser:               tri(s.tensorFuser),
	}
}

// logSettings logs the parameters as Triton's backend does (when the
// config has any), and applies the thread counts, once per process.
func (m *model) logSettings() {
	name := m.spec.Name
	s := m.set
	if len(m.spec.Config.GetParameters()) > 0 {
		state := func(b bool) string {
			if b {
				return "enabled"
			}
			return "disabled"
		}
		m.log.Info(fmt.Sprintf("Optimized execution is %s for model instance '%s'", state(!s.disableOptimized), name))
		m.log.Info(fmt.Sprintf("Cache Cleaning is %s for model instance '%s'", state(s.cacheCleaning), name))
		m.log.Info(fmt.Sprintf("Inference Mode is %s for model instance '%s'", state(s.inferenceMode), name))
		m.log.Info(fmt.Sprintf("cuDNN is %s for model instance '%s'", state(!s.disableCUDNN), name))
		for _, t := range []struct {
			what string
			v    tristate
		}{{"Tensor fuser", s.tensorFuser}, {"Jit profiling", s.jitProfiling}, {"Jit executor", s.jitExecutor}} {
			if t.v != unset {
				m.log.Info(fmt.Sprintf("%s is %s for model instance '%s'", t.what, state(t.v == on), name))
			}
		}
		if s.weightSharing {
			m.log.Info(fmt.Sprintf("Weight sharing is enabled for model instance '%s'", name))
		}
		if s.cacheCleaning || s.disableCUDNN {
			m.log.Info(fmt.Sprintf("%s and %s only act on GPU instances; model '%s' runs on the CPU, where they have no effect",
				ParamEnableCacheCleaning, ParamDisableCUDNN, name))
		}
	}
	if s.intraOpThreads == 0 && s.interOpThreads == 0 {
		return
	}
	intraSet, interSet, err := torchrun.SetThreads(s.intraOpThreads, s.interOpThreads)
	if err != nil {
		// libtorch refuses a count (the inter-op one once inter-op work
		// has started); what was applied before is still reported below.
		m.log.Warn(fmt.Sprintf("setting libtorch's thread counts for model '%s': %v", name, err))
	}
	for _, t := range []struct {
		key, what, pool string
		n               int
		set             bool
	}{
		{ParamIntraOpThreadCount, "Intra op", "intra-op", s.intraOpThreads, intraSet},
		{ParamInterOpThreadCount, "Inter op", "inter-op", s.interOpThreads, interSet},
	} {
		switch {
		case t.n == 0, err != nil && !t.set: // nothing asked, or the warning above covers it
		case t.set:
			m.log.Info(fmt.Sprintf("%s thread count is set to %d for model instance '%s'", t.what, t.n, name))
		default:
			m.log.Warn(fmt.Sprintf("%s %d of model '%s' is not applied: libtorch's %s thread count is set once per process, and an earlier model has set it",
				t.key, t.n, name, t.pool))
		}
	}
}

// NewInstance returns an instance running on the CPU (KIND_CPU and
// KIND_MODEL; KIND_GPU is refused). The first instance takes the module
// Load loaded; the others load their own, or share it with
// ENABLE_WEIGHT_SHARING.
func (m *model) NewInstance(ctx context.Context, is backend.InstanceSpec) (backend.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if is.Kind == modelconfig.ModelInstanceGroup_KIND_GPU {
		return nil, errGPU(m.spec.Name)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("model '%s' is closed", m.spec.Name)
	}
	var mod *torchrun.Module
	switch {
	case m.set.weightSharing:
		if m.shared {
			m.log.Info(fmt.Sprintf("Reusing TorchScript model for instance '%s'", is.Name))
		}
		mod, m.shared = m.first, true
	case m.first != nil:
		mod, m.first = m.first, nil
	}
	m.mu.Unlock()
	if mod != nil {
		return newInstance(m, mod, m.set.weightSharing), nil
	}
	mod, err := m.load()
	if err != nil {
		return nil, err
	}
	return newInstance(m, mod, false), nil
}

// Close releases the module Load loaded when no instance took it (or the
// shared one) and the temporary copy of the model file.
func (m *model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var err error
	if m.first != nil {
		err = m.first.Close()
		m.first = nil
	}
	return errors.Join(err, m.removeTemp())
}
