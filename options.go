// options.go holds every option of New.

package triton

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/ratelimit"
	"github.com/triton-go/triton/repoagent"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/trace"
)

// Option configures a [Server] in [New]. Options are sealed: only this
// package defines them.
type Option interface {
	apply(*options) error
}

type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

type options struct {
	roots           []repository.Root
	mirrors         []Mirror
	logger          *zap.Logger
	backends        map[string]backend.Backend
	startupModels   []string
	strictConfig    bool
	exitOnError     bool
	strictReadiness bool
	rateLimit       *ratelimit.Config
	control         ModelControl
	drainPeriod     time.Duration
	observers       []Observer
	cacheBytes      int64
	loadThreads     int
	loadRetries     int
	configName      string
	id              string
	tracer          *trace.Tracer
	backendDir      string
	repoAgents      map[string]repoagent.Agent
	memoryBudget    int64         // 0: none
	loadOnDemand    bool          // explicit mode: a request loads its model
	keepAlive       time.Duration // server-wide keep_alive; keepAliveSet tells it was given
	keepAliveSet    bool
	deadlineAware   bool
}

func defaultOptions() options {
	return options{
		logger:          zap.NewNop(),
		exitOnError:     true,
		strictReadiness: true,
		loadThreads:     4,
		id:              Name,
		deadlineAware:   true,
	}
}

// WithModelRepository adds model repositories on the local file system, each
// laid out as Triton's (`<dir>/<model>/config.pbtxt`,
// `<dir>/<model>/<version>/...`). It may be given several times; a model
// name must be unique across all repositories.
func WithModelRepository(dirs ...string) Option {
	return optionFunc(func(o *options) error {
		for _, d := range dirs {
			if d == "" {
				return errors.New("WithModelRepository: empty path")
			}
			o.roots = append(o.roots, repository.DirRoot(d))
		}
		return nil
	})
}

// WithRepository adds a model repository held in any file system (an
// embed.FS, an fstest.MapFS, an os.DirFS). Backends that need local paths
// (for external data files) get only the fs.FS for models from such a root.
func WithRepository(fsys fs.FS) Option {
	return optionFunc(func(o *options) error {
		if fsys == nil {
			return errors.New("WithRepository: nil file system")
		}
		o.roots = append(o.roots, repository.FSRoot(fsys))
		return nil
	})
}

// WithLogger sets the logger. The server logs lifecycle events (model load,
// unload, failures, instance restarts), never individual requests. The
// default discards everything.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		o.logger = l
		return nil
	})
}

// WithBackend makes b available to this server under name, the string of
// the `backend:` field in config.pbtxt, overriding a backend registered
// process-wide under the same name with backend.Register.
func WithBackend(name string, b backend.Backend) Option {
	return optionFunc(func(o *options) error {
		if name == "" || b == nil {
			return fmt.Errorf("WithBackend(%q): empty name or nil backend", name)
		}
		if o.backends == nil {
			o.backends = make(map[string]backend.Backend)
		}
		o.backends[name] = b
		return nil
	})
}

// WithRepositoryAgent gives the server a repository agent: a model whose
// configuration names it in model_repository_agents runs it when it loads,
// before its backend loads the files, and fails to load when it fails.
// The agents of [repoagent.Builtin] (Triton's "checksum") are always
// there; an agent given here under one of their names replaces it. A
// model that names an agent the server does not have fails to load, as in
// Triton.
func WithRepositoryAgent(name string, a repoagent.Agent) Option {
	return optionFunc(func(o *options) error {
		if name == "" || a == nil {
			return fmt.Errorf("WithRepositoryAgent(%q): empty name or nil agent", name)
		}
		if o.repoAgents == nil {
			o.repoAgents = repoagent.Builtin()
		}
		o.repoAgents[name] = a
		return nil
	})
}

// WithBackendDirectory names Triton's backend directory (tritonserver's
// --backend-directory) for its Python-based backends: a model whose
// backend is none this server has (compiled in, or given by WithBackend),
// or whose config says runtime: "model.py", is served by the python
// backend with the model.py in <dir>/<backend>/, as Triton serves a
// Python-based backend such as vLLM's: every model naming the backend runs
// that one file, each with its own configuration and model folder, and
// its config's runtime reads "model.py". The program must import the
// python backend (github.com/triton-go/triton/backend/python). Default:
// none, and such a model fails to load as one of an unknown backend.
func WithBackendDirectory(dir string) Option {
	return optionFunc(func(o *options) error {
		o.backendDir = dir
		return nil
	})
}

// WithStartupModels names the models to load when the server starts
// (Triton's --load-model): with [ControlExplicit] only these are loaded
// (none without this option); in the other modes, only these instead of
// every model in the repositories. The name "*" means every model and must
// then be the only name.
func WithStartupModels(names ...string) Option {
	return optionFunc(func(o *options) error {
		for _, n := range names {
			if n == "" {
				return errors.New("WithStartupModels: empty model name")
			}
			if n == "*" && len(names) > 1 {
				return errors.New(`WithStartupModels: "*" must be the only model name`)
			}
		}
		o.startupModels = append(o.startupModels, names...)
		return nil
	})
}

// WithStrictConfig turns Triton's strict model configuration on or off
// (default off). When on, every model needs a complete config.pbtxt; when
// off, backends that can (ONNX Runtime) fill in missing inputs, outputs and
// max_batch_size from the model file, and a model folder without
// config.pbtxt is loaded with the backend its files suggest.
func WithStrictConfig(strict bool) Option {
	return optionFunc(func(o *options) error {
		o.strictConfig = strict
		return nil
	})
}

// WithExitOnError decides what [New] does when a model fails to load. On
// (the default, as Triton's --exit-on-error), New returns the error. Off,
// the server starts with the models that loaded, the failed ones are
// reported not ready with their reason, and (with strict readiness) the
// server is not ready.
func WithExitOnError(exit bool) Option {
	return optionFunc(func(o *options) error {
		o.exitOnError = exit
		return nil
	})
}

// WithStrictReadiness decides what [Server.Ready] means. On (the default, as
// Triton's --strict-readiness), the server is ready only when every model it
// was asked to load is ready; off, it is ready once it has started.
func WithStrictReadiness(strict bool) Option {
	return optionFunc(func(o *options) error {
		o.strictReadiness = strict
		return nil
	})
}

// WithRateLimiter turns on Triton's rate limiter in execution-count mode
// (--rate-limit=execution_count): an instance whose instance_group has a
// rate_limiter runs a batch only when all its resources are available, and
// holds them while it runs; instances of higher priority (lower number)
// are preferred. cfg overrides resource counts, as --rate-limit-resource
// does; by default a resource has as many units as the largest count any
// loaded instance asks for. Without this option rate_limiter settings are
// ignored, as Triton's default (--rate-limit=off) does.
func WithRateLimiter(cfg ratelimit.Config) Option {
	return optionFunc(func(o *options) error {
		o.rateLimit = &cfg
		return nil
	})
}

// ControlMode is how the set of loaded models changes after start
// (Triton's --model-control-mode).
type ControlMode uint8

const (
	// ControlNone loads every model at start (or those of
	// WithStartupModels) and never changes them: Load and Unload are
	// refused. The default.
	ControlNone ControlMode = iota
	// ControlPoll also watches the repositories: models added, removed or
	// changed are loaded, unloaded or reloaded. A folder is acted on once
	// its contents are the same at two polls in a row, so a model still
	// being copied in is never loaded half-written. Load and Unload are
	// refused.
	ControlPoll
	// ControlExplicit loads only WithStartupModels at start; after that,
	// models change only through Server.Load and Server.Unload.
	ControlExplicit
)

// ModelControl configures model management.
type ModelControl struct {
	// Mode is the control mode; the zero value is ControlNone.
	Mode ControlMode
	// PollInterval is how often ControlPoll looks at the repositories
	// (Triton's --repository-poll-secs); 0 means 15 s.
	PollInterval time.Duration
}

// WithModelControl sets the model control mode.
func WithModelControl(mc ModelControl) Option {
	return optionFunc(func(o *options) error {
		if mc.Mode > ControlExplicit || mc.PollInterval < 0 {
			return fmt.Errorf("WithModelControl: invalid mode %d or interval %v", mc.Mode, mc.PollInterval)
		}
		if mc.PollInterval == 0 {
			mc.PollInterval = 15 * time.Second
		}
		o.control = mc
		return nil
	})
}

// WithDrainPeriod sets how long [Server.Shutdown] keeps serving while
// reporting not ready, before it stops taking requests: the time load
// balancers and Kubernetes need to notice and stop routing to the server.
// The default is 0.
func WithDrainPeriod(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d < 0 {
			return fmt.Errorf("WithDrainPeriod: negative period %v", d)
		}
		o.drainPeriod = d
		return nil
	})
}

// WithResponseCache gives the server a response cache of byteSize bytes
// (Triton's --response-cache-byte-size), used by models whose config has
// response_cache { enable: true }. Answers are keyed by model, version and
// every input's name, datatype, shape and bytes, compared in full on a hit
// (a hash collision never returns a wrong answer), evicted least recently
// used first; concurrent identical requests run once and share the answer.
func WithResponseCache(byteSize int64) Option {
	return optionFunc(func(o *options) error {
		if byteSize <= 0 {
			return fmt.Errorf("WithResponseCache: size must be positive, got %d", byteSize)
		}
		o.cacheBytes = byteSize
		return nil
	})
}

// WithObserver installs o to receive a record of every finished request.
// Several observers may be installed; each sees every request.
func WithObserver(o Observer) Option {
	return optionFunc(func(opts *options) error {
		if o == nil {
			return errors.New("WithObserver: nil observer")
		}
		opts.observers = append(opts.observers, o)
		return nil
	})
}

// WithModelLoadThreads sets how many models load at once (Triton's
// --model-load-thread-count, default 4): the models of the startup load
// and of a poll of the repositories are built by up to n workers in
// parallel. n must be at least 1.
func WithModelLoadThreads(n int) Option {
	return optionFunc(func(o *options) error {
		if n < 1 {
			return fmt.Errorf("WithModelLoadThreads: need at least one thread, got %d", n)
		}
		o.loadThreads = n
		return nil
	})
}

// WithModelLoadRetries sets how many times a model version that fails to
// load is tried again before the failure is final (Triton's
// --model-load-retry-count, default 0). Each try builds the version
// afresh: backend model, instances and warm-up; a load cancelled by its
// context or by Close is not retried. n must not be negative.
func WithModelLoadRetries(n int) Option {
	return optionFunc(func(o *options) error {
		if n < 0 {
			return fmt.Errorf("WithModelLoadRetries: negative retry count %d", n)
		}
		o.loadRetries = n
		return nil
	})
}

// WithModelConfigName makes every model read its configuration from
// configs/<name>.pbtxt in its folder when that file exists, and from
// config.pbtxt otherwise (Triton's --model-config-name). The empty name,
// the default, means config.pbtxt always. name is a file name without the
// .pbtxt extension, without path separators.
func WithModelConfigName(name string) Option {
	return optionFunc(func(o *options) error {
		if strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
			return fmt.Errorf("WithModelConfigName: %q is not a file name", name)
		}
		o.configName = name
		return nil
	})
}

// WithServerID names the server in its metadata (Triton's --id): the name
// of Metadata, so of HTTP GET /v2 and gRPC ServerMetadata. The default is
// [Name], "triton".
func WithServerID(id string) Option {
	return optionFunc(func(o *options) error {
		if id == "" {
			return errors.New("WithServerID: empty id")
		}
		o.id = id
		return nil
	})
}

// WithTracer traces requests with t (see package trace): the requests the
// adapters start traces for, and in-process requests t samples; the
// ensemble steps and BLS calls of a traced request are its child traces.
// The application closes t after the server. Without it (or with nil)
// nothing is traced and the request path pays nothing.
func WithTracer(t *trace.Tracer) Option {
	return optionFunc(func(o *options) error {
		o.tracer = t
		return nil
	})
}

// WithMemoryBudget bounds the memory the loaded models hold, in bytes (0:
// no budget). Every loaded model version is accounted for: by what its
// backend reports ([backend.MemoryReporter]: ONNX Runtime its sessions'
// weights, PyTorch its modules' parameters and buffers, Python its stub
// processes' private resident memory), or else by how much the process's
// resident memory grew while it loaded. A load that would pass the budget
// first evicts idle models, the coldest first (under [ControlExplicit]; in
// the other modes nothing is evicted), and fails, with an error naming the
// budget, the model's size and what holds the rest, when the model cannot
// fit. Models named by [WithStartupModels], and models whose config has
// the parameter pinned "true", are never evicted; nor is a model with
// requests in flight or queued, or with live sequences.
func WithMemoryBudget(bytes int64) Option {
	return optionFunc(func(o *options) error {
		if bytes < 0 {
			return fmt.Errorf("WithMemoryBudget: negative budget %d", bytes)
		}
		o.memoryBudget = bytes
		return nil
	})
}

// WithLoadOnDemand makes a request for a model that is in the
// repositories but not loaded load it (only under [ControlExplicit]):
// any number of concurrent requests share one load, each waiting within
// its own deadline, and then run. A model evicted by the memory budget or
// unloaded by its keep_alive comes back the same way.
func WithLoadOnDemand(on bool) Option {
	return optionFunc(func(o *options) error {
		o.loadOnDemand = on
		return nil
	})
}

// WithDeadlineAwareBatching sets whether dynamic batchers are
// deadline-aware (the default: true), unless a model's
// deadline_aware_batching parameter ("true" or "false") says otherwise.
// A deadline-aware batcher learns its model's execution time as a
// function of batch size (per instance group, over its recent batches),
// refuses at once a request that it predicts cannot finish before its
// deadline behind the queue ahead of it (Unavailable; HTTP 503 with
// Retry-After), never puts a request into a batch predicted to end after
// its deadline, and waits for a batch to grow only as long as its
// requests' deadlines allow. A request's deadline is its context's: the
// in-process ctx, the gRPC deadline, or the HTTP client's. Requests
// without one are scheduled as before.
func WithDeadlineAwareBatching(on bool) Option {
	return optionFunc(func(o *options) error {
		o.deadlineAware = on
		return nil
	})
}

// WithKeepAlive unloads a model once it has been idle (no request in
// flight or queued) for d, under [ControlExplicit]; a model's own
// keep_alive parameter ("5m", "30s", "0", "-1"; a number is seconds)
// takes precedence. 0 unloads a model as soon as its last request ends;
// a negative d never does (the default). Pinned models are never
// unloaded this way.
func WithKeepAlive(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		o.keepAlive, o.keepAliveSet = d, true
		return nil
	})
}
