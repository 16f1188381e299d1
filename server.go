package triton

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/ensemble"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/ratelimit"
	"github.com/triton-go/triton/responsecache"
)

// Name and Version are what [Server.Metadata] reports. Name is Triton's, so
// clients that check it keep working.
const (
	Name    = "triton"
	Version = "0.1.0"
)

// Server hosts a model repository in-process. Its methods are safe for
// concurrent use by any number of goroutines.
//
// A Server is created by [New], which loads the models, and ends with
// [Server.Shutdown] (graceful) or [Server.Close] (immediate). A closed server
// cannot be reused.
type Server struct {
	opts    options
	log     *zap.Logger
	limiter *ratelimit.Limiter   // nil: rate limiting off
	cache   *responsecache.Cache // nil: no response cache

	table    atomic.Pointer[modelTable]
	tableMu  sync.Mutex  // serialises changes to table (readers need no lock)
	locks    sync.Map    // model name → *sync.Mutex: one lifecycle operation per model at a time
	closing  atomic.Bool // no new requests
	draining atomic.Bool // shutting down: not ready, still serving

	// ctx ends when the server closes; loads and the poller watch it. ops
	// counts lifecycle operations in progress, bg the goroutines the server
	// owns (the poller, versions retiring after a reload); Close waits for
	// both.
	ctx    context.Context
	cancel context.CancelFunc
	ops    sync.WaitGroup
	bg     sync.WaitGroup

	once    sync.Once
	closeMu sync.Mutex
	// closeMu protects the following.
	closeErr error
}

// modelTable is an immutable snapshot of the models the server knows.
// Requests read it without locks; changes publish a new table.
type modelTable struct {
	models map[string]*modelEntry
}

// modelEntry is one model: the versions serving it and what the last
// lifecycle operation left behind. Entries are immutable once published;
// changes publish a new entry in a new table (Server.update).
type modelEntry struct {
	name     string
	versions []*version // serving, highest number first
	failures []loadFailure
	state    entryState
	// fingerprint is that of the model folder the serving versions came
	// from; override tells they came from a load with overrides; attempted
	// is the fingerprint of the last load tried, successful or not (polling
	// does not retry a folder that failed until it changes again).
	fingerprint uint64
	override    bool
	attempted   uint64
}

// entryState is what is happening to a model, for the index and for
// requests.
type entryState uint8

const (
	stateServing   entryState = iota // the versions serve (or failed: see failures)
	stateLoading                     // a load is in progress; any serving versions keep serving
	stateUnloading                   // requests are refused; in-flight ones finish
	stateUnloaded                    // unloaded on purpose
)

// loadFailure records why a model (version 0) or one version failed to load.
type loadFailure struct {
	version int64
	err     error
}

// New creates a server and loads the models of its repositories. With
// exit-on-error on (the default) any model failing to load makes New fail;
// otherwise the failures are reported by [Server.Index] and the server
// starts with the models that loaded.
func New(opts ...Option) (*Server, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt.apply(&o); err != nil {
			return nil, &Error{Code: InvalidArgument, Err: err}
		}
	}
	if len(o.roots) == 0 {
		return nil, &Error{Code: InvalidArgument, Err: errors.New("no model repository: use WithModelRepository or WithRepository")}
	}
	s := &Server{opts: o, log: o.logger}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if o.cacheBytes > 0 {
		s.cache = responsecache.New(o.cacheBytes)
	}
	if o.rateLimit != nil {
		l, err := ratelimit.New(*o.rateLimit)
		if err != nil {
			return nil, &Error{Code: InvalidArgument, Err: fmt.Errorf("WithRateLimiter: %w", err)}
		}
		s.limiter = l
	}
	s.table.Store(&modelTable{models: map[string]*modelEntry{}})
	if err := s.loadStartupModels(s.ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if o.control.Mode == ControlPoll {
		s.bg.Go(s.poll)
	}
	return s, nil
}

// NewFromDir is New(WithModelRepository(dir)) plus opts.
func NewFromDir(dir string, opts ...Option) (*Server, error) {
	return New(append([]Option{WithModelRepository(dir)}, opts...)...)
}

// backendFor returns the backend named name: the server's own first, then
// the process-wide registry.
func (s *Server) backendFor(name string) (backend.Backend, bool) {
	if name == ensembleBackend {
		return ensemble.Backend{}, true
	}
	if b, ok := s.opts.backends[name]; ok {
		return b, true
	}
	return backend.Lookup(name)
}

// acquire finds the version a request goes to and admits the request into
// it. The caller must call v.gate.leave() when done. A version retired by a
// reload between reading the table and entering its gate is not an error:
// the lookup is repeated on the newer table.
func (s *Server) acquire(model string, ver int64) (*version, error) {
	for {
		if s.closing.Load() {
			return nil, &Error{Code: Unavailable, Model: model, Err: ErrServerClosed}
		}
		t := s.table.Load()
		v, err := t.find(model, ver)
		if err != nil {
			return nil, err
		}
		if v.gate.enter() {
			return v, nil
		}
		if s.table.Load() == t {
			return nil, &Error{Code: Unavailable, Model: model, Version: v.number,
				Err: fmt.Errorf("Request for unknown model: '%s' version %d is not at ready state", model, v.number)}
		}
	}
}

// find returns the version a request for model and ver goes to, with
// Triton's errors for the ways there is none.
func (t *modelTable) find(model string, ver int64) (*version, error) {
	e := t.models[model]
	if e == nil {
		return nil, &Error{Code: InvalidArgument, Model: model, Err: fmt.Errorf("Request for unknown model: '%s' is not found", model)}
	}
	if e.state == stateUnloading {
		return nil, &Error{Code: Unavailable, Model: model, Version: ver, Err: fmt.Errorf("model '%s' is being unloaded", model)}
	}
	for _, v := range e.versions {
		if (ver == 0 || v.number == ver) && v.live.Load() > 0 {
			return v, nil
		}
		if v.number == ver {
			return nil, &Error{Code: Unavailable, Model: model, Version: ver, Err: fmt.Errorf("Request for unknown model: '%s' version %d is not at ready state", model, ver)}
		}
	}
	if ver == 0 {
		return nil, &Error{Code: NotFound, Model: model, Err: fmt.Errorf("Request for unknown model: '%s' has no available versions", model)}
	}
	return nil, &Error{Code: NotFound, Model: model, Version: ver, Err: fmt.Errorf("Request for unknown model: '%s' version %d is not found", model, ver)}
}

// Live reports whether the server is up: true from the return of [New] until
// [Server.Shutdown] or [Server.Close] begins.
func (s *Server) Live() bool { return !s.closing.Load() }

// Ready reports whether the server takes inference requests. With strict
// readiness (the default) every model the server was asked to load must have
// all its versions ready; otherwise a live server is ready.
func (s *Server) Ready(ctx context.Context) bool {
	if s.closing.Load() || s.draining.Load() {
		return false
	}
	if !s.opts.strictReadiness {
		return true
	}
	for _, e := range s.table.Load().models {
		if e.state == stateUnloaded {
			continue // unloaded on purpose: not expected to be ready
		}
		if e.state != stateServing || len(e.failures) > 0 || len(e.versions) == 0 {
			return false
		}
		for _, v := range e.versions {
			if !v.ready(ctx) {
				return false
			}
		}
	}
	return true
}

// ModelReady reports whether a model version is ready for inference.
// Version 0 asks about the version a request without a version would use
// (the highest-numbered ready one).
func (s *Server) ModelReady(ctx context.Context, model string, ver int64) bool {
	if s.closing.Load() {
		return false
	}
	e := s.table.Load().models[model]
	if e == nil || e.state == stateUnloading {
		return false
	}
	for _, v := range e.versions {
		if (ver == 0 || v.number == ver) && v.ready(ctx) {
			return true
		}
	}
	return false
}

// Shutdown stops the server gracefully. First the server reports not
// ready while it keeps serving for the drain period ([WithDrainPeriod]), so
// that load balancers stop sending it traffic; then new requests are
// refused with Unavailable ([ErrServerClosed]) while every admitted request
// runs to its end; then lifecycle operations are cancelled and instances,
// models and backends are closed. If ctx ends first, Shutdown returns
// ctx.Err() and the server keeps draining; call [Server.Close] to stop it at
// once. Shutdown may be called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.draining.Swap(true) && s.opts.drainPeriod > 0 {
		t := time.NewTimer(s.opts.drainPeriod)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	s.closing.Store(true)
	t := s.table.Load()
	for _, e := range t.models {
		for _, v := range e.versions {
			v.gate.close()
		}
	}
	for _, e := range t.models {
		for _, v := range e.versions {
			select {
			case <-v.gate.drained:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return s.Close()
}

// Close stops the server now: lifecycle operations and the poller are
// cancelled, queued requests are answered with Unavailable
// ([ErrServerClosed]), executions already running are waited for (backends
// see their request's context, not this call), then every instance and
// model is closed. It returns the errors of closing them. Close may be
// called more than once; later calls return the same result.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.closing.Store(true)
		s.cancel()
		s.ops.Wait() // loads see s.ctx end and clean up after themselves
		s.bg.Wait()  // the poller and versions retiring after reloads
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for _, e := range s.table.Load().models {
			for _, v := range e.versions {
				wg.Go(func() {
					if err := v.close(ErrServerClosed); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("model '%s' version %d: %w", v.name, v.number, err))
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		if s.limiter != nil {
			s.limiter.Close()
		}
		s.closeMu.Lock()
		s.closeErr = errors.Join(errs...)
		s.closeMu.Unlock()
		s.log.Info("server closed")
	})
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closeErr
}

// ServerMetadata describes the server, as KServe's server metadata does.
type ServerMetadata struct {
	Name       string
	Version    string
	Extensions []string
}

// Metadata returns the server's name, version and protocol extensions.
func (s *Server) Metadata() ServerMetadata {
	return ServerMetadata{Name: Name, Version: Version, Extensions: slices.Clone(extensions)}
}

// extensions lists the Triton protocol extensions the core supports; the
// adapters report them.
var extensions = []string{"sequence", "parameters"}

// TensorMetadata describes one model input or output as clients see it:
// Shape carries a -1 batch dimension in front when the model batches.
type TensorMetadata struct {
	Name     string
	DataType string
	Shape    []int64
}

// ModelMetadata describes a model, as KServe's model metadata does.
type ModelMetadata struct {
	Name     string
	Versions []string // the loaded versions, as decimal strings, ascending
	Platform string   // config platform, or backend when no platform is set
	Inputs   []TensorMetadata
	Outputs  []TensorMetadata
}

// ModelMetadata describes a loaded model version; version 0 means the one a
// request without a version would use.
func (s *Server) ModelMetadata(model string, ver int64) (ModelMetadata, error) {
	v, e, err := s.find(model, ver)
	if err != nil {
		return ModelMetadata{}, err
	}
	md := ModelMetadata{Name: model, Platform: v.cfg.GetPlatform()}
	if md.Platform == "" {
		md.Platform = v.cfg.GetBackend()
	}
	for i := len(e.versions) - 1; i >= 0; i-- {
		md.Versions = append(md.Versions, strconv.FormatInt(e.versions[i].number, 10))
	}
	for i := range v.sig.inputs {
		ts := &v.sig.inputs[i]
		md.Inputs = append(md.Inputs, TensorMetadata{Name: ts.name, DataType: ts.dtype.String(), Shape: v.sig.fullShape(ts).Clone()})
	}
	for i := range v.sig.outputs {
		ts := &v.sig.outputs[i]
		md.Outputs = append(md.Outputs, TensorMetadata{Name: ts.name, DataType: ts.dtype.String(), Shape: v.sig.fullShape(ts).Clone()})
	}
	return md, nil
}

// ModelConfig returns a copy of the configuration a loaded model version
// runs with: normalized and, unless strict configuration is on, completed by
// its backend. Version 0 means the version a request without a version
// would use.
func (s *Server) ModelConfig(model string, ver int64) (*modelconfig.ModelConfig, error) {
	v, _, err := s.find(model, ver)
	if err != nil {
		return nil, err
	}
	return proto.CloneOf(v.cfg), nil
}

// find returns a loaded version without admitting a request into it.
func (s *Server) find(model string, ver int64) (*version, *modelEntry, error) {
	v, err := s.acquire(model, ver)
	if err != nil {
		return nil, nil, err
	}
	v.gate.leave()
	return v, s.table.Load().models[model], nil
}
