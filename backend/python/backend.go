package python

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// Name is the backend name of config.pbtxt: backend: "python".
const Name = "python"

// DefaultModelFilename is the model file of a version folder unless
// default_model_filename says otherwise.
const DefaultModelFilename = "model.py"

// DefaultInterpreter is the interpreter stubs run with unless an option or
// the model's EXECUTION_ENV_PATH names another: Debian's python3, which
// the project's scripts give numpy (python3-numpy). Where it does not
// exist, the first python3 on PATH is used.
const DefaultInterpreter = "/usr/bin/python3"

// Triton's defaults (--backend-config=python,...).
const (
	defaultShmSize     = 1 << 20
	defaultShmGrowth   = 1 << 20
	defaultShmLimit    = 1 << 30
	defaultStubTimeout = 30 * time.Second
	defaultRegionName  = "triton_python_backend_shm_region_"
)

func init() { backend.Register(Name, New()) }

// Backend runs Triton Python backend models: one stub process per model
// instance. The zero value is not usable; use New.
type Backend struct {
	python      string
	stubTimeout time.Duration
	shmSize     int64
	shmGrowth   int64
	shmLimit    int64
	regionName  string
	envs        envs // the packed execution environments its models unpacked

	ignored    []string  // --backend-config keys it does not know, logged once (BackendConfig)
	ignoredLog sync.Once // by the first Load
}

// Option configures a Backend.
type Option func(*Backend)

// WithInterpreter makes stubs run with the Python interpreter at path
// (which must have numpy) instead of [DefaultInterpreter]. A model's
// EXECUTION_ENV_PATH parameter still takes precedence for that model.
func WithInterpreter(path string) Option { return func(b *Backend) { b.python = path } }

// WithStubTimeout sets how long a stub may go on running a batch after
// every request of the batch has passed its deadline (or been cancelled)
// before it is considered hung, killed and restarted; and how long a stub
// gets to finalize at unload. Default 30 s (Triton's stub-timeout-seconds).
func WithStubTimeout(d time.Duration) Option { return func(b *Backend) { b.stubTimeout = d } }

// WithSharedMemory sets the shared memory of each stub: each of its two
// regions (server → stub, stub → server) starts at initial bytes and grows
// in steps of growth up to limit. Defaults: 1 MiB, 1 MiB, 1 GiB. A tensor
// that does not fit under the limit fails its request with an error that
// says so.
func WithSharedMemory(initial, growth, limit int64) Option {
	return func(b *Backend) { b.shmSize, b.shmGrowth, b.shmLimit = initial, growth, limit }
}

// New returns a Backend with the given options.
func New(opts ...Option) *Backend {
	b := &Backend{python: "", stubTimeout: defaultStubTimeout, shmSize: defaultShmSize,
		shmGrowth: defaultShmGrowth, shmLimit: defaultShmLimit, regionName: defaultRegionName}
	for _, o := range opts {
		o(b)
	}
	return b
}

// BackendConfig turns tritonserver's --backend-config=python,<key>=<value>
// settings into options, with Triton's checks and messages:
// shm-default-byte-size, shm-growth-byte-size, stub-timeout-seconds,
// shm-region-prefix-name, thread-pool-size and shm_message_queue_size
// (both checked; this backend needs no thread pool or message queue), and
// this backend's own interpreter (as WithInterpreter) and
// shm-max-byte-size (the growth limit). A key it does not know is ignored,
// as Triton's backend ignores it, and logged as a warning when the first
// model loads.
func BackendConfig(settings map[string]string) ([]Option, error) {
	var opts []Option
	size, growth, limit := int64(defaultShmSize), int64(defaultShmGrowth), int64(defaultShmLimit)
	num := func(k, v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("python backend: %s=%s: not an integer", k, v)
		}
		return n, nil
	}
	var ignored []string
	for k, v := range settings {
		var n int64
		var err error
		switch k {
		case "shm-default-byte-size", "shm-growth-byte-size", "shm-max-byte-size", "stub-timeout-seconds", "thread-pool-size", "shm_message_queue_size":
			if n, err = num(k, v); err != nil {
				return nil, err
			}
		}
		switch k {
		case "shm-default-byte-size":
			if n < 1<<20 {
				return nil, errors.New("shm-default-byte-size can't be smaller than 4 MiBs")
			}
			size = n
		case "shm-growth-byte-size":
			if n <= 0 {
				return nil, errors.New("shm-growth-byte-size can't be smaller than or equal to zero.")
			}
			growth = n
		case "shm-max-byte-size":
			limit = n
		case "stub-timeout-seconds":
			if n <= 0 {
				return nil, errors.New("stub-timeout-seconds can't be smaller than or equal to zero.")
			}
			opts = append(opts, WithStubTimeout(time.Duration(n)*time.Second))
		case "thread-pool-size":
			if n < 1 {
				return nil, errors.New("thread-pool-size can't be less than 1.")
			}
		case "shm_message_queue_size":
		case "shm-region-prefix-name":
			if v == "" {
				return nil, errors.New("shm-region-prefix-name must at least contain one character.")
			}
			opts = append(opts, func(b *Backend) { b.regionName = v })
		case "interpreter":
			opts = append(opts, WithInterpreter(v))
		case "default-max-batch-size", "backend-directory":
		default:
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		opts = append(opts, func(b *Backend) { b.ignored = ignored })
	}
	if limit < size {
		return nil, fmt.Errorf("python backend: shm-max-byte-size %d is below shm-default-byte-size %d", limit, size)
	}
	return append(opts, WithSharedMemory(size, growth, limit)), nil
}

var (
	_ backend.Backend         = (*Backend)(nil)
	_ backend.ConfigCompleter = (*Backend)(nil)
	_ backend.Model           = (*model)(nil)
	_ backend.DataTypeKeeper  = (*model)(nil)
)

// model is one loaded version: what every stub of it is started with,
// and the stubs Load started for its instances.
type model struct {
	b          *Backend
	spec       *backend.ModelSpec
	log        *zap.Logger
	file       string // the model file
	python     string
	env        []string
	stubDir    string
	decoupled  bool
	outputs    []string // every output of the config: a request that names none gets these
	tmp        string   // the temporary copy of the model folder, removed on Close; "" when none
	releaseEnv func()   // gives back the unpacked execution environment; nil when none

	mu sync.Mutex
	// mu protects started.
	started map[string]*instance // by name, started by Load until NewInstance takes them

	mistyped sync.Map // output name → struct{}: outputs whose datatype mismatch was logged
}

// KeepDataType passes an output on with the datatype the model produced
// where the config declares another, as Triton's Python backend does (a
// numpy sum is int64 whatever the config says; Triton's bls_decoupled
// examples produce one for a TYPE_INT32 output and their client accepts
// it). The first mismatch of each output is logged, at warning level.
func (m *model) KeepDataType(output string, produced, declared tensor.DataType) bool {
	if _, logged := m.mistyped.LoadOrStore(output, struct{}{}); !logged {
		m.log.Warn("output datatype differs from the config's; passed on as produced, as Triton's Python backend does",
			zap.String("output", output), zap.Stringer("produced", produced), zap.Stringer("declared", declared))
	}
	return true
}

// locate finds the model file of spec's model (withPython: its
// interpreter too, unpacking its environment if need be). A model folder
// that is not on the local file system (a load with file overrides, a
// repository in an fs.FS) is copied to a temporary folder, which the model
// removes when it closes.
func (b *Backend) locate(ctx context.Context, spec *backend.ModelSpec, withPython bool) (_ *model, err error) {
	var tmp string
	if spec.Dir == "" {
		if spec.FS == nil {
			return nil, fmt.Errorf("model '%s' has no files: %w", spec.Name, errors.ErrUnsupported)
		}
		if tmp, err = os.MkdirTemp("", "triton-python-"+spec.Name+"-"); err != nil {
			return nil, fmt.Errorf("model '%s': a folder for its files: %w", spec.Name, err)
		}
		defer func() {
			if err != nil {
				_ = os.RemoveAll(tmp)
			}
		}()
		if err := os.CopyFS(tmp, spec.FS); err != nil {
			return nil, fmt.Errorf("model '%s': copying its files to %s: %w", spec.Name, tmp, err)
		}
		local := *spec
		local.Dir = tmp
		spec = &local
	}
	file := filepath.Join(spec.VersionDir(), filepath.FromSlash(spec.ModelFilename(DefaultModelFilename)))
	if spec.BackendDir != "" && spec.Config.GetRuntime() == DefaultModelFilename {
		file = filepath.Join(spec.BackendDir, DefaultModelFilename) // a Python-based backend's, shared by its models
	}
	if !strings.HasSuffix(file, ".py") {
		return nil, tritonErrorf(codeInvalidArg, "Model name must end with '.py'. Model name is \"%s\".", filepath.Base(file))
	}
	if st, err := os.Stat(file); err != nil || st.IsDir() {
		return nil, fmt.Errorf("Python model file not found in '%s'", file)
	}
	if v, ok := spec.Parameter("FORCE_CPU_ONLY_INPUT_TENSORS"); ok && v != "yes" && v != "no" {
		return nil, tritonErrorf(codeUnsupported, "Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: %s'", v)
	}
	dir, err := stubFiles()
	if err != nil {
		return nil, fmt.Errorf("model '%s': %w", spec.Name, err)
	}
	m := &model{b: b, spec: spec, log: spec.Logger, file: file, stubDir: dir, tmp: tmp,
		decoupled: spec.Config.GetModelTransactionPolicy().GetDecoupled(), started: map[string]*instance{}}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	for _, o := range spec.Config.GetOutput() {
		m.outputs = append(m.outputs, o.GetName())
	}
	if withPython {
		if err := m.choosePython(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// choosePython sets the interpreter m's stubs run with.
func (m *model) choosePython(ctx context.Context) (err error) {
	m.python, m.env, m.releaseEnv, err = m.b.interpreter(ctx, m.spec)
	return err
}

// launch is how a stub of m starts.
func (m *model) launch(instance string) launch {
	b := m.b
	return launch{python: m.python, env: m.env, stubDir: m.stubDir, instance: instance,
		memName: b.regionName + instance + "_", shmSize: b.shmSize, shmGrow: b.shmGrowth, shmLimit: b.shmLimit,
		log: m.log}
}

// args are the args of initialize for one instance.
func (m *model) args(instance string, kind modelconfig.ModelInstanceGroup_Kind) (map[string]string, error) {
	cfg, err := configJSON(m.spec.Config)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"model_config":             cfg,
		"model_instance_kind":      strings.TrimPrefix(kind.String(), "KIND_"),
		"model_instance_name":      instance,
		"model_instance_device_id": "0",
		"model_repository":         m.spec.Dir,
		"model_version":            strconv.FormatInt(m.spec.Version, 10),
		"model_name":               m.spec.Name,
	}, nil
}

// fromElsewhere matches a model.py whose TritonPythonModel may get its
// methods from another module: a class with base classes, or the name
// imported or assigned.
var fromElsewhere = regexp.MustCompile(`(?m)^\s*class\s+TritonPythonModel\s*\(\s*([^)\s]+)|\bimport\b[^\n]*\bTritonPythonModel\b|^\s*TritonPythonModel\s*=`)

// mayAutoComplete reports whether model.py may have an auto_complete_config:
// it names it, or its TritonPythonModel may inherit one (fromElsewhere; a
// base class of just object does not count).
func mayAutoComplete(src []byte) bool {
	if bytes.Contains(src, []byte("auto_complete_config")) {
		return true
	}
	for _, m := range fromElsewhere.FindAllSubmatch(src, -1) {
		if string(m[1]) != "object" {
			return true
		}
	}
	return false
}

// CompleteConfig runs the model's auto_complete_config, when model.py has
// one, in a stub of its own that ends right after (as Triton does).
func (b *Backend) CompleteConfig(ctx context.Context, spec *backend.ModelSpec) error {
	m, err := b.locate(ctx, spec, false)
	if err != nil {
		return err
	}
	defer m.removeFiles()
	src, err := os.ReadFile(m.file)
	if err != nil {
		return err
	}
	if !mayAutoComplete(src) {
		return nil // no stub to start (nor environment to unpack) for a model that has none
	}
	if err := m.choosePython(ctx); err != nil {
		return err
	}
	instance := spec.Name + "_autocomplete"
	p, err := startProc(m.launch(instance), nil)
	if err != nil {
		return err
	}
	defer p.shutdown(b.stubTimeout)
	args, err := m.args(instance, modelconfig.ModelInstanceGroup_KIND_CPU)
	if err != nil {
		return err
	}
	ans, err := m.init(ctx, p, args, true)
	if err != nil {
		return fmt.Errorf("auto-complete of model '%s': %w", spec.Name, err)
	}
	if ans.Config == "" {
		return nil
	}
	return parseConfigJSON(spec.Name, ans.Config, spec.Config)
}

// init sends the init command and reads its answer.
func (m *model) init(ctx context.Context, p *proc, args map[string]string, autoComplete bool) (*stubMsg, error) {
	ans, err := p.command(ctx, &initMsg{Args: args, Path: m.file, ModelDir: m.spec.Dir, BackendDir: m.spec.BackendDir,
		AutoComplete: autoComplete, ShmGrowth: m.b.shmGrowth, ShmLimit: m.b.shmLimit, SendWindow: sendWindow})
	if err != nil {
		return nil, err
	}
	if ans.Op != "ok" {
		return nil, errors.New(ans.Msg)
	}
	return ans, nil
}

// Load checks the model file and starts one initialised stub per instance
// of the config, all at once (each pays Python's start-up in parallel);
// NewInstance then takes them.
func (b *Backend) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	m, err := b.locate(ctx, spec, true)
	if err != nil {
		return nil, err
	}
	b.ignoredLog.Do(func() {
		for _, k := range b.ignored {
			m.log.Warn(fmt.Sprintf("--backend-config=python,%s is not a setting of the python backend; ignored, as Triton ignores it", k))
		}
	})
	custom := filepath.Join(m.spec.Dir, "triton_python_backend_stub") // Triton's per-model stub
	if _, err := os.Stat(custom); err == nil {
		m.log.Warn("the model's own triton_python_backend_stub is not used: this backend's stub is a Python script, run by the model's interpreter (set EXECUTION_ENV_PATH for another Python)",
			zap.String("stub", custom))
	}
	var ins []*instance
	for _, g := range spec.Config.GetInstanceGroup() {
		for i := range int(g.GetCount()) {
			ins = append(ins, newInstance(m, backend.InstanceSpec{Name: fmt.Sprintf("%s_%d", g.GetName(), i),
				Group: g, Kind: g.GetKind(), Index: i, DeviceID: -1}))
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, in := range ins {
		g.Go(func() error { return in.launch(gctx) })
	}
	if err := g.Wait(); err != nil {
		for _, in := range ins {
			_ = in.Close()
		}
		m.removeFiles()
		return nil, err
	}
	for _, in := range ins {
		m.started[in.spec.Name] = in
	}
	m.log.Info("python model loaded", zap.String("file", m.file), zap.String("interpreter", m.python), zap.Int("stubs", len(ins)))
	return m, nil
}

// start starts and initialises a stub for in.
func (m *model) start(ctx context.Context, in *instance) (*proc, error) {
	name := in.spec.Name
	args, err := m.args(name, in.spec.Kind)
	if err != nil {
		return nil, err
	}
	p, err := startProc(m.launch(name), in)
	if err != nil {
		return nil, err
	}
	p.setInitCtx(ctx)
	ans, err := m.init(ctx, p, args, false)
	p.clearInitCtx()
	if err != nil {
		p.shutdown(m.b.stubTimeout)
		return nil, fmt.Errorf("model '%s' instance '%s': %w", m.spec.Name, name, err)
	}
	p.hasReady = ans.IsReady
	return p, nil
}

// NewInstance takes the instance Load started (or starts one).
func (m *model) NewInstance(ctx context.Context, spec backend.InstanceSpec) (backend.Instance, error) {
	m.mu.Lock()
	in := m.started[spec.Name]
	delete(m.started, spec.Name)
	m.mu.Unlock()
	if in != nil {
		return in, nil
	}
	in = newInstance(m, spec)
	if err := in.launch(ctx); err != nil {
		_ = in.Close()
		return nil, err
	}
	return in, nil
}

// Close stops the instances no one took.
func (m *model) Close() error {
	m.mu.Lock()
	left := m.started
	m.started = map[string]*instance{}
	m.mu.Unlock()
	var errs []error
	for _, in := range left {
		errs = append(errs, in.Close())
	}
	m.removeFiles()
	return errors.Join(errs...)
}

// removeFiles gives back the unpacked environment and removes the
// temporary copy of the model folder, if any.
func (m *model) removeFiles() {
	if m.releaseEnv != nil {
		m.releaseEnv()
		m.releaseEnv = nil
	}
	if m.tmp != "" {
		if err := os.RemoveAll(m.tmp); err != nil {
			m.log.Warn("removing the copy of the model's files", zap.String("dir", m.tmp), zap.Error(err))
		}
	}
}
