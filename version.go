package triton

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// version is one loaded model version: the backend model, one worker
// goroutine per instance, the queue that feeds them and the gate that admits
// requests.
//
// Requests reach the workers through queue; whichever worker is free takes
// the next call, so a formed batch always goes to the first free instance.
// Each worker drives exactly one backend.Instance, which is what makes the
// "never concurrent Execute on one instance" promise cheap: there is no lock
// around Execute because only one goroutine ever calls it.
//
// Lifecycle: the version serves while its gate is open. Retiring closes the
// gate (new requests fail with Unavailable), waits until every admitted
// request has been answered, then closes the queue, which ends the workers,
// and closes instances and the model. Aborting (Close, or the last instance
// failing for good) answers the queued calls with an error instead of
// running them. The queue is closed only once the gate has drained, so no
// request can send on a closed queue; the workers range over it, which keeps
// the request path free of select statements.
type version struct {
	name    string
	number  int64
	cfg     *modelconfig.ModelConfig
	sig     signature
	backend string
	model   backend.Model
	log     *zap.Logger

	gate     *gate
	queue    chan *call
	aborted  atomic.Pointer[error] // set: workers answer calls with this error instead of running them
	workers  sync.WaitGroup
	live     atomic.Int32 // workers still running
	pool     []*worker    // every instance, including passive ones
	qclosed  sync.Once
	closed   sync.Once
	closeErr error // set inside closed
}

// call is one request on its way through a version. The goroutine that
// holds a call last returns it to callPool: the caller after a normal
// answer, the worker when the caller gave up while the call was queued.
type call struct {
	ctx   context.Context
	state atomic.Uint32
	done  chan struct{} // receives one value when the worker has answered
	req   backend.Request
	reqs  [1]*backend.Request
	batch backend.Batch
	in    []tensor.Tensor // storage for reshaped inputs
}

const (
	callQueued uint32 = iota
	callTaken
	callAbandoned
)

var callPool = sync.Pool{New: func() any {
	c := &call{done: make(chan struct{}, 1)}
	c.reqs[0] = &c.req
	return c
}}

func getCall() *call {
	c := callPool.Get().(*call)
	c.state.Store(callQueued)
	return c
}

func putCall(c *call) {
	c.ctx = nil
	c.req.Reset()
	c.req.Inputs = nil
	c.req.RequestedOutputs = nil
	c.req.Parameters = nil
	c.req.ID = ""
	clear(c.in)
	c.in = c.in[:0]
	callPool.Put(c)
}

// worker drives one backend instance.
type worker struct {
	v       *version
	spec    backend.InstanceSpec
	passive bool

	// inst is written by the worker goroutine (restart) and by version.close
	// after the worker has stopped; only they call Execute and Close on it.
	// Readiness checks read it from other goroutines, hence the lock.
	mu sync.Mutex
	// mu protects the following.
	inst backend.Instance // nil once closed
}

func (w *worker) instance() backend.Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inst
}

func (w *worker) setInstance(inst backend.Instance) {
	w.mu.Lock()
	w.inst = inst
	w.mu.Unlock()
}

// queueCap bounds the calls waiting for a free instance. A full queue makes
// Infer wait (honouring its context); explicit queue limits are the dynamic
// batcher's job.
const queueCap = 1024

func newVersion(name string, number int64, cfg *modelconfig.ModelConfig, backendName string, m backend.Model, log *zap.Logger) *version {
	return &version{
		name:    name,
		number:  number,
		cfg:     cfg,
		sig:     compileSignature(cfg),
		backend: backendName,
		model:   m,
		log:     log,
		gate:    newGate(),
		queue:   make(chan *call, queueCap),
	}
}

// start launches one worker goroutine per non-passive instance.
func (v *version) start() {
	for _, w := range v.pool {
		if w.passive {
			continue
		}
		v.live.Add(1)
		v.workers.Go(w.run)
	}
}

func (w *worker) run() {
	v := w.v
	for c := range v.queue {
		if !c.state.CompareAndSwap(callQueued, callTaken) {
			putCall(c) // the caller gave up while the call was queued
			continue
		}
		if cause := v.aborted.Load(); cause != nil {
			c.req.Fail(*cause)
			c.done <- struct{}{}
			continue
		}
		healthy := w.execute(c)
		c.done <- struct{}{}
		if !healthy && !w.restart() {
			w.retire()
			return
		}
	}
}

// execute runs one call on the instance and reports whether the instance is
// still usable (it is not after a panic).
func (w *worker) execute(c *call) (healthy bool) {
	b := &c.batch
	panicked, err := w.safeExecute(c.ctx, b)
	if err != nil {
		for _, r := range b.Requests {
			r.Fail(err)
		}
	}
	return !panicked
}

// safeExecute calls Execute, turning a panic into an error.
func (w *worker) safeExecute(ctx context.Context, b *backend.Batch) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("backend panic: %v", r)
			w.v.log.Error("backend panicked during execute; recreating the instance",
				zap.String("instance", w.spec.Name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		}
	}()
	return false, w.inst.Execute(ctx, b)
}

// restart replaces the instance after a panic. It reports false when a new
// instance could not be created; the worker then retires.
func (w *worker) restart() bool {
	v := w.v
	old := w.inst
	w.setInstance(nil)
	if err := closeInstance(old); err != nil {
		v.log.Warn("closing a panicked instance failed", zap.String("instance", w.spec.Name), zap.Error(err))
	}
	inst, err := newInstance(context.Background(), v.model, w.spec)
	if err != nil {
		v.log.Error("recreating the instance failed; it stays down", zap.String("instance", w.spec.Name), zap.Error(err))
		return false
	}
	w.setInstance(inst)
	v.log.Info("instance recreated", zap.String("instance", w.spec.Name))
	return true
}

// retire ends a worker whose instance is gone. The last one to go takes the
// version out of service, answering the queued calls with an error, since
// nothing is left to run them.
func (w *worker) retire() {
	v := w.v
	if v.live.Add(-1) > 0 {
		return
	}
	v.log.Error("no instance left; the model version is no longer ready")
	v.abort(fmt.Errorf("model '%s' version %d has no working instance left", v.name, v.number))
}

// abort stops admission, answers every queued call with cause and returns
// once no request is left inside the gate; then it closes the queue.
func (v *version) abort(cause error) {
	v.aborted.CompareAndSwap(nil, &cause)
	v.gate.close()
	v.drain(cause)
	v.qclosed.Do(func() { close(v.queue) })
}

// drain answers queued calls with err until every admitted request has left
// the gate. The gate must be closed. A closed queue means an earlier abort
// has drained everything already.
func (v *version) drain(err error) {
	for {
		select {
		case c, ok := <-v.queue:
			if !ok {
				return
			}
			if !c.state.CompareAndSwap(callQueued, callTaken) {
				putCall(c)
				continue
			}
			c.req.Fail(err)
			c.done <- struct{}{}
		case <-v.gate.drained:
			return
		}
	}
}

// ready reports whether the version takes requests and its instances are
// healthy.
func (v *version) ready(ctx context.Context) bool {
	if v.gate.isClosed() || v.live.Load() == 0 {
		return false
	}
	// Readiness checks run outside the workers; Readier implementations
	// must be safe for that (the backend package documents it).
	for _, w := range v.pool {
		if inst := w.instance(); inst != nil && !w.passive {
			if backend.Ready(ctx, inst) != nil {
				return false
			}
		}
	}
	return true
}

// retire closes the version gracefully: no new requests, wait for the
// admitted ones to finish (or ctx to end), then stop and close.
func (v *version) retire(ctx context.Context) error {
	v.gate.close()
	select {
	case <-v.gate.drained:
	case <-ctx.Done():
		return ctx.Err()
	}
	return v.close(ErrServerClosed)
}

// close stops the version now: queued calls are answered with cause,
// running executions are waited for, instances and the model are closed.
// It may be called more than once and concurrently; every call returns
// once the version is closed.
func (v *version) close(cause error) error {
	v.closed.Do(func() {
		v.abort(cause)
		v.workers.Wait()
		var errs []error
		for _, w := range v.pool {
			inst := w.instance()
			w.setInstance(nil)
			if err := closeInstance(inst); err != nil {
				errs = append(errs, fmt.Errorf("closing instance %s: %w", w.spec.Name, err))
			}
		}
		if err := safeClose(v.model.Close); err != nil {
			errs = append(errs, fmt.Errorf("closing model: %w", err))
		}
		v.closeErr = errors.Join(errs...)
	})
	return v.closeErr
}

func closeInstance(inst backend.Instance) error {
	if inst == nil {
		return nil
	}
	return safeClose(inst.Close)
}

// safeClose calls a backend's Close, turning a panic into an error.
func safeClose(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend panic in Close: %v", r)
		}
	}()
	return f()
}

// newInstance creates and warms one instance, turning panics into errors.
func newInstance(ctx context.Context, m backend.Model, spec backend.InstanceSpec) (inst backend.Instance, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend panic creating instance %s: %v", spec.Name, r)
			if inst != nil {
				_ = closeInstance(inst)
				inst = nil
			}
		}
	}()
	inst, err = m.NewInstance(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("creating instance %s: %w", spec.Name, err)
	}
	if inst == nil {
		return nil, fmt.Errorf("creating instance %s: backend returned no instance", spec.Name)
	}
	if err := backend.Warmup(ctx, inst); err != nil {
		_ = closeInstance(inst)
		return nil, fmt.Errorf("warming up instance %s: %w", spec.Name, err)
	}
	return inst, nil
}

// activeInstances counts the instances that take requests.
func (v *version) activeInstances() int {
	n := 0
	for _, w := range v.pool {
		if !w.passive {
			n++
		}
	}
	return n
}
