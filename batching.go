// batching.go is dynamic batching: the hand-off from batcher.Dynamic to
// the batch's first request, which runs it for all.

package triton

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/modelconfig"
)

// A model with dynamic_batching queues its requests in a batcher.Dynamic.
// The batcher's scheduler goroutine forms a batch when an instance is free
// and hands it to the batch's first request, the leader, whose goroutine is
// waiting anyway: the leader runs Execute for the whole batch, then wakes
// the others, which each build their own response. So no goroutine sits
// between the batcher and the backend, and the batch's one gather copy
// (backend.Batch.Input) and per-request output views
// (backend.Batch.SetOutput) are the only data movement.
//
// An instance that queues (backend.Queuer) also takes full batches while it
// runs one: its leader offers it to the batcher (batcher.Dynamic.Offer)
// before running; a full batch queued behind is handed to its own leader,
// which gathers its inputs and calls Execute at once, and the backend runs
// it as soon as the batch ahead ends. Each batch that ends withdraws the
// offers and, while batches still run on the instance, offers it again, so
// that up to queueDepth batches wait behind the running one; the last to
// end puts the instance back.

// batchWork is one dispatched batch on its way to its leader.
type batchWork struct {
	slot   *slot
	behind bool // queued behind a running batch (batcher.Dynamic.Offer)
	calls  []*call
	reqs   []*backend.Request
	batch  backend.Batch
}

var workPool = sync.Pool{New: func() any { return new(batchWork) }}

// micros converts a config's microseconds to a duration, the largest one
// for values beyond it (a uint64 of microseconds can overflow one).
func micros(us uint64) time.Duration {
	return time.Duration(min(us, math.MaxInt64/uint64(time.Microsecond))) * time.Microsecond
}

// batcherConfig translates dynamic_batching into the batcher's terms.
func batcherConfig(cfg *modelconfig.ModelConfig) batcher.Config {
	db := cfg.GetDynamicBatching()
	bc := batcher.Config{
		MaxBatchSize:    int64(cfg.GetMaxBatchSize()),
		MaxQueueDelay:   micros(db.GetMaxQueueDelayMicroseconds()),
		PriorityLevels:  int(db.GetPriorityLevels()),
		DefaultPriority: int(db.GetDefaultPriorityLevel()),
		DefaultPolicy:   queuePolicy(db.GetDefaultQueuePolicy()),
	}
	for _, p := range db.GetPreferredBatchSize() {
		bc.PreferredSizes = append(bc.PreferredSizes, int64(p))
	}
	for lvl, p := range db.GetPriorityQueuePolicy() {
		if bc.Policies == nil {
			bc.Policies = map[int]batcher.QueuePolicy{}
		}
		bc.Policies[int(lvl)] = queuePolicy(p)
	}
	return bc
}

func queuePolicy(p *modelconfig.ModelQueuePolicy) batcher.QueuePolicy {
	qp := batcher.QueuePolicy{
		DefaultTimeout:       micros(p.GetDefaultTimeoutMicroseconds()),
		AllowTimeoutOverride: p.GetAllowTimeoutOverride(),
		MaxQueueSize:         int(p.GetMaxQueueSize()),
	}
	if p.GetTimeoutAction() == modelconfig.ModelQueuePolicy_DELAY {
		qp.TimeoutAction = batcher.Delay
	}
	return qp
}

// startBatcher creates the version's dynamic batcher, when its config asks
// for one: dynamic_batching, or a sequence model that batches, whose ready
// requests batch as its strategy says. It must run after start (the batcher
// takes instances from idle) and after the sequencer is made.
func (v *version) startBatcher() error {
	var bc batcher.Config
	switch {
	case v.cfg.GetDynamicBatching() != nil:
		bc = batcherConfig(v.cfg)
	case v.seq != nil:
		var ok bool
		if bc, ok = v.seq.cfg.Batching(); !ok {
			return nil
		}
	default:
		return nil
	}
	if v.cfg.GetDynamicBatching().GetPreserveOrdering() {
		v.order = batcher.NewOrder(func(c *call) { c.wake <- struct{}{} })
		if v.decoupled {
			v.turns = new(turns)
		}
	}
	bc.DeadlineAware = v.aware && v.seq == nil
	env := batcher.Env[*call, *slot]{
		Size:       func(c *call) int64 { return c.req.BatchSize },
		Compatible: func(a, b *call) bool { return v.sig.Compatible(a.req.Inputs, b.req.Inputs) },
		Expired:    func(c *call) error { return c.ctx.Err() },
		Drop: func(c *call, err error) {
			if cause := v.stopped(); cause != nil && errors.Is(err, batcher.ErrClosed) {
				err = cause // why the version stopped: the server closed, no instance left
			}
			v.stats.pending.Add(-1)
			c.req.Fail(err)
			v.release(c)
		},
		Dispatch: func(s *slot, batch []*call) { v.handOff(s, batch, false) },
		Queue:    func(s *slot, batch []*call) { v.handOff(s, batch, true) },
		Deadline: func(c *call) time.Time { d, _ := c.ctx.Deadline(); return d },
		Group:    func(s *slot) int { return s.group },
	}
	d, err := batcher.NewDynamic(bc, env, v.idle)
	if err != nil {
		return fmt.Errorf("dynamic_batching: %w", err)
	}
	v.dyn = d
	if v.seq == nil && !v.shared {
		// A sequence's next request reads the state its previous one
		// leaves, so it must not be gathered before that one has run; a
		// rate-limited instance is granted resources per execution.
		for _, s := range v.pool {
			s.queues = !s.passive && s.limit == nil && backend.Queue(s.instance())
		}
	}
	return nil
}

// handOff hands a formed batch to its first request, the leader, to run
// on s (behind: queued behind the batch s runs).
func (v *version) handOff(s *slot, batch []*call, behind bool) {
	if s.queues {
		s.running.Add(1)
	}
	w := workPool.Get().(*batchWork)
	w.slot, w.behind = s, behind
	w.calls = append(w.calls[:0], batch...)
	leader := batch[0]
	leader.work = w
	leader.wake <- struct{}{}
}

// inferBatched queues the request and waits for its answer, leading its
// batch if the batcher makes it the leader.
func (v *version) inferBatched(ctx context.Context, req *InferRequest, c *call, t *timing) (*InferResponse, error) {
	c.ctx = ctx
	if v.order != nil {
		c.ticket = v.order.Issue()
	}
	if err := v.dyn.Enqueue(&c.node, c, int(min(req.Priority, 1<<30)), req.Timeout); err != nil {
		v.stats.pending.Add(-1)
		if v.order != nil {
			v.order.Skip(c.ticket)
		}
		rows := c.req.BatchSize
		v.putCall(c)
		if err == batcher.ErrPriority {
			err = fmt.Errorf("priority %d is not a priority level of model '%s' (levels 1 to %d): %w",
				req.Priority, v.name, max(v.cfg.GetDynamicBatching().GetPriorityLevels(), 1), err)
		}
		return nil, v.fail(t, rows, v.errorf(req, classify(err, Unavailable), err))
	}
	done := ctx.Done()
	for {
		select {
		case <-c.wake:
		case <-done:
			if v.dyn.Remove(&c.node) {
				v.stats.pending.Add(-1)
				if v.order != nil {
					v.order.Skip(c.ticket)
				}
				rows := c.req.BatchSize
				v.putCall(c)
				return nil, v.fail(t, rows, v.errorf(req, classify(ctx.Err(), Cancelled), ctx.Err()))
			}
			done = nil // already dispatched: it will be answered
			continue
		}
		if w := c.work; w != nil {
			c.work = nil
			v.lead(w)
			continue // then wait for our own answer
		}
		break
	}
	t.computeStart, t.inputsDone, t.inferDone, t.computeEnd, t.executed = c.ran.computeStart, c.ran.inputsDone, c.ran.inferDone, c.ran.computeEnd, c.ran.executed
	return v.answer(req, c, t, 0)
}

// lead runs a dispatched batch on its instance and answers its requests.
func (v *version) lead(w *batchWork) {
	w.reqs = w.reqs[:0]
	for _, c := range w.calls {
		w.reqs = append(w.reqs, &c.req)
	}
	w.batch.Reset(true, w.reqs)
	w.batch.SetLayouts(v.sig.Layouts)
	w.batch.SetBehind(w.behind)
	// A batch of several requests is not cancelled by any one of them (the
	// others still want their answers), but once all of them are.
	ctx, release := newBatchContext(w.calls)
	defer release()
	var ran timing
	ran.computeStart = now()
	v.stats.pending.Add(-int64(len(w.calls)))
	if w.slot.queues && !w.behind {
		v.offer(w.slot, queueDepth) // full batches may queue behind this one
	}
	fault := v.execute(ctx, w.slot, &w.batch)
	ran.computeEnd = now() // before put, which may form and dispatch the next batch
	if fault == nil && !w.behind {
		v.dyn.Observe(w.slot, w.batch.Size(), ran.computeEnd-ran.computeStart)
	}
	v.endBatch(w.slot, fault)
	in, inf := w.batch.Marks()
	ran.inputsDone, ran.inferDone = sinceEpoch(in), sinceEpoch(inf)
	if q := w.batch.Queued(); q > 0 {
		// The batch waited behind another on the instance once its inputs
		// were ready: queue time (Triton's, for a batch formed ahead of
		// its instance), not compute time.
		ran.computeStart += q
		if ran.inputsDone != 0 {
			ran.inputsDone += q
		}
	}
	ran.executed = w.batch.Size()
	v.stats.execution(ran.executed, &ran)
	for _, c := range w.calls {
		c.ran = ran
		v.release(c)
	}
	clear(w.calls)
	clear(w.reqs)
	w.batch.Reset(false, nil)
	w.slot = nil
	workPool.Put(w)
}

// queueDepth is how many full batches may queue behind the one an
// instance that queues runs: Triton's payload queue holds twice as many
// batches as the model has instances. Two, so that a short batch leaves
// time for two goroutine wake-ups (the leader of a batch handing on the
// instance's offer, the next leader submitting its batch) before the
// batch queued behind it is done.
const queueDepth = 2

// offer opens n of the offers of s (see queueDepth).
func (v *version) offer(s *slot, n int) {
	for range n {
		v.dyn.Offer(s)
	}
}

// endBatch ends a batch on s: the instance goes back (put) unless batches
// queued behind this one still run on it, which may then have one more
// queued behind them. The last batch to end passes on a panic of any.
func (v *version) endBatch(s *slot, fault *panicked) {
	if !s.queues {
		v.put(s, fault)
		return
	}
	s.qmu.Lock()
	v.dyn.Withdraw(s) // no batch is handed to s while this is decided
	if fault != nil && s.fault == nil {
		s.fault = fault
	}
	left := s.running.Add(-1)
	if left > 0 {
		if s.fault == nil {
			v.offer(s, queueDepth+1-int(left))
		}
		s.qmu.Unlock()
		return
	}
	fault, s.fault = s.fault, nil
	s.qmu.Unlock()
	v.put(s, fault)
}

// release hands a finished request its answer: at once, or, with
// preserve_ordering, once every request that arrived before it has had
// its own.
func (v *version) release(c *call) {
	if v.order == nil {
		c.wake <- struct{}{}
		return
	}
	v.order.Done(c.ticket, c)
}
