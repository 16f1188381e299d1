// triton.go is the entry to the package: Server, New, Close and Shutdown.
//
// The package in one paragraph: a Server publishes a table of models read
// without locks; each model has versions built from the repository by a
// backend; each version has an instance pool and, as its config says, a
// dynamic batcher or a sequence scheduler (package batcher) in front of
// it. Infer finds the version, checks the request against the config,
// schedules it, runs it on a free instance on its own goroutine, and checks
// what the backend produced. Model control replaces versions by building
// the new ones completely, publishing them, and retiring the old ones once
// their requests are done.
//
// Where the rest lives:
//
//   - options.go: every option of New.
//   - infer.go: Infer, the request path from validation to response;
//     model.go: the Model handle.
//   - table.go: the published table of models, which requests read
//     without locks, and how a request enters its model version.
//   - control.go: model control — Load, Unload, Index, the startup load
//     and the repository poller; build.go: building a model version.
//   - version.go: a loaded version and its retirement; instances.go: its
//     instance pool (take, execute, restart after a panic).
//   - batching.go: the dynamic batcher's hand-off to the batch's first
//     request; sequence.go: the sequence batcher's control and state
//     tensors around batcher.Sequence.
//   - cache.go (response cache), ensembles.go, caller.go (BLS),
//     labels.go; the input/output contract every request and response is
//     checked against is package internal/signature.
//   - metadata.go: metadata, configs and readiness of models; stats.go:
//     the statistics API; counters.go: the hot-path counters behind it.
//   - errors.go: Error, Code and CodeOf; gate.go: admission and drain.

package triton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/triton-go/triton/modelmetrics"
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
	life    *lifecycle           // nil: neither ControlExplicit nor a memory budget
	epoch   time.Time            // when New began: the zero of the server's clock (memory.go)
	cache   *responsecache.Cache // nil: no response cache
	metrics *modelmetrics.Registry

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
	cancel context.CancelCauseFunc
	ops    sync.WaitGroup
	bg     sync.WaitGroup
	// retiring holds the versions draining after a reload or an unload
	// (*version → struct{}), which no table lists any more.
	retiring sync.Map

	once    sync.Once
	closeMu sync.Mutex
	// closeMu protects the following.
	closeErr error
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
	// Lifecycle failures are the user's to read, not the library's call
	// stack: the server's log lines carry no Go stack traces, whatever the
	// logger's configuration (zap's production config adds them at Error).
	s := &Server{opts: o, log: o.logger.WithOptions(zap.AddStacktrace(zapcore.FatalLevel)), metrics: modelmetrics.NewRegistry()}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.epoch = time.Now()
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
	explicit := o.control.Mode == ControlExplicit
	if o.loadOnDemand && !explicit {
		return nil, &Error{Code: InvalidArgument, Err: errors.New("WithLoadOnDemand needs explicit model control (ControlExplicit)")}
	}
	if explicit || o.memoryBudget > 0 {
		s.life = newLifecycle(o.memoryBudget)
	}
	s.table.Store(&modelTable{models: map[string]*modelEntry{}})
	if err := s.loadStartupModels(withTrigger(s.ctx, TriggerStartup)); err != nil {
		_ = s.Close()
		return nil, err
	}
	if o.control.Mode == ControlPoll {
		s.bg.Go(s.poll)
	}
	if explicit {
		s.bg.Go(s.reap)
	}
	return s, nil
}

// NewFromDir is New(WithModelRepository(dir)) plus opts.
func NewFromDir(dir string, opts ...Option) (*Server, error) {
	return New(append([]Option{WithModelRepository(dir)}, opts...)...)
}

// ModelMetrics returns the server's registry of model-defined metrics
// (Triton's custom metrics): the one its models receive as
// backend.ModelSpec.Metrics. Package metrics' Collector exports it beside
// the server's own families; an application that serves metrics another
// way can register it on its own prometheus.Registry. It is never nil, and
// stays readable after the server closes.
func (s *Server) ModelMetrics() *modelmetrics.Registry { return s.metrics }

// Live reports whether the server is up: true from the return of [New] until
// [Server.Shutdown] or [Server.Close] begins.
func (s *Server) Live() bool { return !s.closing.Load() }

// Ready reports whether the server takes inference requests. With strict
// readiness (the default) every model the server was asked to load must have
// all its versions ready; otherwise a live server is ready.
//
// Loading and unloading while the server runs do not make it flap (Triton's
// server#7014): a model loaded for the first time counts once it serves or
// fails, a model being reloaded by what its serving versions are, and a
// model being unloaded not at all, as once it is unloaded.
func (s *Server) Ready(ctx context.Context) bool {
	if s.closing.Load() || s.draining.Load() {
		return false
	}
	if !s.opts.strictReadiness {
		return true
	}
	for _, e := range s.table.Load().models {
		switch {
		case e.state == stateUnloaded || e.state == stateUnloading:
			continue // unloaded on purpose: not expected to be ready
		case e.state == stateLoading && len(e.versions) == 0 && len(e.failures) == 0:
			continue // a first load: the server was ready without the model
		}
		if len(e.failed()) > 0 || len(e.versions) == 0 {
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

// Drain makes the server report not ready from now on while it keeps
// serving every request, so that load balancers stop sending it traffic
// before [Server.Shutdown]; Shutdown then skips its drain period
// ([WithDrainPeriod]). A program that owns listeners calls Drain, waits for
// the endpoints to be withdrawn, stops accepting on its listeners and lets
// the requests they took finish, and only then calls Shutdown, so that no
// request that reached a listener is refused.
func (s *Server) Drain() { s.draining.Store(true) }

// Shutdown stops the server gracefully. First the server reports not
// ready while it keeps serving for the drain period ([WithDrainPeriod]), so
// that load balancers stop sending it traffic; then new requests are
// refused with Unavailable ([ErrServerClosed]) while every admitted request
// runs to its end, in the serving versions and in those still retiring
// after a reload or an unload; then lifecycle operations are cancelled and
// instances, models and backends are closed. If ctx ends first, Shutdown
// returns ctx.Err() and the server keeps draining; call [Server.Close] to
// stop it at once. Shutdown may be called more than once.
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
	var vs []*version
	for _, e := range s.table.Load().models {
		for _, v := range e.versions {
			v.gate.close()
			vs = append(vs, v)
		}
	}
	s.retiring.Range(func(v, _ any) bool {
		vs = append(vs, v.(*version)) // its gate is closed already
		return true
	})
	for _, v := range vs {
		select {
		case <-v.gate.drained:
			continue // drained already: ctx ending does not matter
		default:
		}
		select {
		case <-v.gate.drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Close()
}

// Close stops the server now. Lifecycle operations and the poller are
// cancelled. Requests that have not begun executing are answered with
// Unavailable ([ErrServerClosed]): those waiting for an instance, those
// queued in a dynamic batcher, STARTs waiting for room for a sequence and
// the requests of sequences waiting behind them, in every version: the
// serving ones, and those still retiring after a reload or an unload, whose
// graceful drain Close cuts short. Executions already running are waited
// for (backends see their request's context, not this call); then every
// instance and model is closed. Close returns the errors of closing the
// serving versions (those of retiring versions are logged). It may be
// called more than once; later calls return the same result.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.closing.Store(true)
		s.cancel(ErrServerClosed)
		s.ops.Wait() // loads see s.ctx end and clean up after themselves
		s.bg.Wait()  // the poller, and versions retiring (they see s.ctx end and close)
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
