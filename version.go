// version.go is one loaded model version: its gate, its schedulers, and how
// it retires and closes.

package triton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/cgo/malloctrim"
	"github.com/triton-go/triton/internal/signature"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// version is one loaded model version: the backend model, its instance
// pool (instances.go), its schedulers and the gate that admits requests.
//
// The version serves while its gate is open. Retiring closes the gate (new
// requests fail with Unavailable) and waits until every admitted request has
// left; aborting also ends its ctx, which wakes the requests waiting for
// an instance, and drops what its batchers queue: those requests fail. Instances and the model are closed once the gate has
// drained, so Close never races an Execute.
type version struct {
	name    string
	number  int64
	cfg     *modelconfig.ModelConfig
	sig     *signature.Signature
	backend string
	model   backend.Model
	log     *zap.Logger

	gate *gate
	idle chan *slot   // free instances; capacity = active instances, so putting one back never blocks
	live atomic.Int32 // active instances still usable
	pool []*slot      // every instance, including passive ones
	// mem is what the version holds, in bytes (memory.go), set before it
	// is published; memReported tells its backend reported it. lastUsed
	// is when its last request ended (its load before any), as the
	// server's clock reads it, and uses counts its requests: both kept
	// under ControlExplicit or a memory budget. heat is the eviction
	// order's view of uses (memory.go), under the lifecycle's lock.
	mem         int64
	memReported bool
	lastUsed    atomic.Int64
	uses        atomic.Uint64
	heat        heat
	// ctx is the version's lifetime, a child of the server's: abort ends
	// it with its cause (the server's close ends it with
	// ErrServerClosed). Requests waiting for an instance give up when it
	// ends, and the version's own background work (recreating an instance
	// after a panic) runs under it, so nothing it starts outlives it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// shared: the version has one instance, safe for concurrent Execute
	// calls, that every request uses without taking it (ensembles).
	shared bool
	// decoupled: model_transaction_policy { decoupled: true }; requests
	// carry a response sender and answer through streams (stream.go).
	decoupled bool

	seq   *sequencer                     // nil: not a sequence (stateful) model
	dyn   *batcher.Dynamic[*call, *slot] // nil: no dynamic batching
	order *batcher.Order[*call]          // nil: no preserve_ordering
	turns *turns                         // a decoupled model's preserve_ordering (stream.go); nil: none

	calls     sync.Pool // of *call
	stats     *counters
	aware     bool // the dynamic batcher is deadline-aware (deadlines.go)
	observers []Observer
	tracer    *trace.Tracer        // nil: no tracing
	cache     *responsecache.Cache // nil: the version does not cache
	labels    map[string][]string  // output name → class labels (label_filename)

	closeOnce sync.Once
	closeErr  error // set inside closeOnce
}

// call holds what one request needs on its way through Execute, recycled
// through its version's pool so that the request path does not allocate it.
// The pool is the version's, not the process's: a call's wake channel
// belongs to the goroutines that made it, and under testing/synctest a
// channel made in one bubble must never be used from another.
type call struct {
	req   backend.Request
	reqs  [1]*backend.Request
	batch backend.Batch
	in    []tensor.Tensor // storage for reshaped inputs

	// Used when the version batches (batching.go).
	ctx    context.Context
	node   batcher.Node[*call]
	wake   chan struct{} // one value per event: lead a batch, or answered
	work   *batchWork    // set when this request leads a batch
	ticket uint64        // arrival number, with preserve_ordering
	ran    timing        // when its batch ran, set by the leader

	// stream is the request's response stream (decoupled models). A call
	// with a stream is never recycled: the backend may still hold its
	// Request after the stream ends.
	stream *backend.Stream
}

func newCall() any {
	c := &call{wake: make(chan struct{}, 1)}
	c.reqs[0] = &c.req
	return c
}

func (v *version) getCall() *call { return v.calls.Get().(*call) }

func (v *version) putCall(c *call) {
	if c.stream != nil {
		return // left to the GC; see call.stream
	}
	c.ctx, c.work, c.ticket, c.ran = nil, nil, 0, timing{}
	c.req.Reset()
	// run sets every field again; dropping the references is for the GC.
	c.req.Inputs, c.req.RequestedOutputs, c.req.Parameters, c.req.ID, c.req.SequenceIDString = nil, nil, nil, "", ""
	clear(c.in)
	c.in = c.in[:0]
	c.batch.Reset(false, nil)
	v.calls.Put(c)
}

// newVersion makes a version whose lifetime ends at the latest with
// parent's (the server's).
func newVersion(parent context.Context, name string, number int64, cfg *modelconfig.ModelConfig, sig *signature.Signature, backendName string, m backend.Model, log *zap.Logger) *version {
	ctx, cancel := context.WithCancelCause(parent)
	return &version{
		ctx:     ctx,
		cancel:  cancel,
		name:    name,
		number:  number,
		cfg:     cfg,
		sig:     sig,
		backend: backendName,
		model:   m,
		log:     log,
		gate:    newGate(),
		stats:   newCounters(int64(cfg.GetMaxBatchSize())),
		calls:   sync.Pool{New: newCall},

		decoupled: cfg.GetModelTransactionPolicy().GetDecoupled(),
	}
}

// abort stops the version taking work: no new requests, and the ones
// waiting for an instance fail with cause. It may be called more than once;
// the first cause wins.
func (v *version) abort(cause error) {
	v.cancel(cause) // the first cause stays
	v.gate.close()
	if v.dyn != nil {
		v.dyn.Close() // queued requests are answered with cause
	}
	if v.seq != nil {
		v.seq.sched.Abort() // STARTs waiting for room fail
	}
}

// ready reports whether the version takes requests and its instances are
// healthy.
func (v *version) ready(ctx context.Context) bool {
	if v.gate.isClosed() || v.live.Load() == 0 {
		return false
	}
	// Readiness checks run beside executions; Readier implementations must
	// be safe for that (the backend package documents it).
	for _, s := range v.pool {
		if inst := s.instance(); inst != nil && !s.passive {
			if backend.Ready(ctx, inst) != nil {
				return false
			}
		}
	}
	return true
}

// retire closes the version gracefully: no new requests; the admitted ones
// run to their end; then it closes. When ctx ends first (the server is
// closing), it closes at once instead: the requests still queued fail with
// Unavailable, executions running are waited for.
func (v *version) retire(ctx context.Context) error {
	v.gate.close()
	select {
	case <-v.gate.drained:
	case <-ctx.Done():
	}
	return v.close(ErrServerClosed)
}

// stopped returns why the version stopped taking work (nil while it
// serves).
func (v *version) stopped() error { return context.Cause(v.ctx) }

// close stops the version: waiting requests fail with cause, running
// executions finish, then instances and the model are closed. It may be
// called more than once and concurrently; every call returns once the
// version is closed.
func (v *version) close(cause error) error {
	v.closeOnce.Do(func() {
		v.abort(cause)
		<-v.gate.drained
		if v.seq != nil {
			v.seq.sched.Close() // tells the backend of the sequences still live
		}
		var errs []error
		for _, s := range v.pool {
			if s.limit != nil {
				s.limit.Unregister()
			}
			inst := s.instance()
			s.setInstance(nil)
			if err := closeInstance(inst); err != nil {
				errs = append(errs, fmt.Errorf("closing instance %s: %w", s.spec.Name, err))
			}
		}
		if err := safeClose(v.model.Close); err != nil {
			errs = append(errs, fmt.Errorf("closing model: %w", err))
		}
		malloctrim.Trim() // what a native runtime freed goes back to the system
		v.closeErr = errors.Join(errs...)
	})
	return v.closeErr
}
