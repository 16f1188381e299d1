// counters.go holds the counters the request path updates, the request
// path's clock, and the record of every finished request.

package triton

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/trace"
)

// durationCounter accumulates nanoseconds; counts live elsewhere when they
// are shared (all successful requests count in Queue and the compute
// stages).
type durationCounter struct{ ns atomic.Int64 }

func (d *durationCounter) add(t time.Duration) {
	if t != 0 { // most stages are often zero (no wait, no marks): skip the atomic
		d.ns.Add(int64(t))
	}
}

// epoch anchors the request path's clock: time.Since on it reads only the
// monotonic clock, about half the cost of time.Now on the machines we
// measured, and a request reads it two to four times.
var epoch = time.Now()

// now returns the monotonic time since epoch.
func now() time.Duration { return time.Since(epoch) }

// counters are a version's statistics, updated with atomics on the request
// path.
type counters struct {
	success, fail           atomic.Uint64
	successNs, failNs       durationCounter
	queueNs, inputNs        durationCounter
	inferNs, outputNs       durationCounter
	failures                [5]atomic.Uint64 // by FailureReason
	shed                    [shedReasons]atomic.Uint64
	lastRefusal             atomic.Int64 // now() of the last refusal by the deadline-aware schedule
	inferences, executions  atomic.Uint64
	last                    atomic.Int64 // the last success, as time since epoch
	pending                 atomic.Int64
	batches                 []batchCounter // by batch size, 1..min(max, denseBatches)
	bigBatches              sync.Map       // batch sizes above denseBatches: int64 → *batchCounter
	cacheHit, cacheMiss     atomic.Uint64
	cacheHitNs, cacheMissNs durationCounter
	loadTime                time.Duration

	// Responses of decoupled models by index (Triton's response_stats):
	// read lock-free, grown under respMu.
	respStats atomic.Pointer[[]*responseStat]
	respMu    sync.Mutex
}

// responseKind is how one response of a decoupled model went.
type responseKind uint8

const (
	responseSuccess responseKind = iota // outputs
	responseFail                        // an error
	responseEmpty                       // a final flag without outputs
	responseCancel                      // the request was cancelled before it
	responseKinds
)

// responseStat counts the responses of one index: each kind's count and
// duration, and, for responses with outputs or an error, their split into
// compute_infer (the model's work, up to Send) and compute_output (from
// Send until the response was ready for the client).
type responseStat struct {
	count         [responseKinds]atomic.Uint64
	ns            [responseKinds]durationCounter
	infer, output durationCounter
	computed      atomic.Uint64 // responses split into infer and output
}

// responseCounter follows one stream's responses.
type responseCounter struct {
	n         int
	last      time.Duration // when the previous response came (the request's start before the first)
	cancelled bool          // the request was cancelled after its last response
}

// response records the next response of a stream: its index's count, and
// the time since the previous response (or, for the first, since the
// request arrived, which is also the request's first-response latency).
// sent is when the backend sent it (0 for a response the server made): it
// splits the time of a success or failure into compute_infer and
// compute_output as Triton's response_stats do.
func (c *counters) response(rs *responseCounter, kind responseKind, t *timing, sent time.Duration) {
	at := now()
	if rs.n == 0 {
		rs.last = t.start
		t.firstResponse = at
	}
	s := c.responseStat(rs.n)
	s.count[kind].Add(1)
	s.ns[kind].add(at - rs.last)
	if sent != 0 && (kind == responseSuccess || kind == responseFail) {
		sent = min(max(sent, rs.last), at) // clocks read on two goroutines
		s.computed.Add(1)
		s.infer.add(sent - rs.last)
		s.output.add(at - sent)
	}
	rs.last = at
	rs.n++
}

// responseStat returns the counters of response index i.
func (c *counters) responseStat(i int) *responseStat {
	if p := c.respStats.Load(); p != nil && i < len(*p) {
		return (*p)[i]
	}
	c.respMu.Lock()
	defer c.respMu.Unlock()
	var cur []*responseStat
	if p := c.respStats.Load(); p != nil {
		cur = *p
	}
	if i < len(cur) {
		return cur[i]
	}
	grown := make([]*responseStat, i+1, max(i+1, 2*len(cur)))
	copy(grown, cur)
	for j := len(cur); j <= i; j++ {
		grown[j] = new(responseStat)
	}
	grown = grown[:i+1]
	c.respStats.Store(&grown)
	return grown[i]
}

type batchCounter struct {
	count                      atomic.Uint64
	inputNs, inferNs, outputNs durationCounter
}

// denseBatches is the largest batch size whose counters are allocated up
// front. Larger sizes get theirs when they first run: max_batch_size may be
// anything up to 2^31-1, and counters for every size up to it would be
// tens of GB.
const denseBatches = 1024

func newCounters(maxBatch int64) *counters {
	return &counters{batches: make([]batchCounter, min(max(maxBatch, 1), denseBatches)+1)}
}

// batch returns the counters of one batch size (at least 1).
func (c *counters) batch(size int64) *batchCounter {
	if size < int64(len(c.batches)) {
		return &c.batches[size]
	}
	if b, ok := c.bigBatches.Load(size); ok {
		return b.(*batchCounter)
	}
	b, _ := c.bigBatches.LoadOrStore(size, new(batchCounter))
	return b.(*batchCounter)
}

// timing is when a request reached each stage, as times since epoch (0:
// not reached).
type timing struct {
	start, queued, computeStart, inputsDone, inferDone, computeEnd time.Duration
	executed                                                       int64 // batch size it ran in
	cacheHit                                                       bool
	firstResponse                                                  time.Duration // a decoupled model's first response (0: none, or not decoupled)
	tr                                                             *trace.Trace  // nil: not traced
}

// sinceEpoch converts a backend's mark to the request path's clock.
func sinceEpoch(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(epoch)
}

// stages splits a timing into Triton's stage durations.
func (t *timing) stages() (queue, input, infer, output time.Duration) {
	if t.computeStart == 0 {
		return 0, 0, 0, 0
	}
	queue = t.computeStart - t.queued
	inferStart, inferEnd := t.computeStart, t.computeEnd
	if t.inputsDone != 0 {
		input, inferStart = t.inputsDone-t.computeStart, t.inputsDone
	}
	if t.inferDone != 0 {
		output, inferEnd = t.computeEnd-t.inferDone, t.inferDone
	}
	return queue, input, inferEnd - inferStart, output
}

// execution records one batch execution of the given size.
func (c *counters) execution(size int64, t *timing) {
	c.executions.Add(1)
	if size < 1 {
		return
	}
	_, in, inf, out := t.stages()
	b := c.batch(size)
	b.count.Add(1)
	b.inputNs.add(in)
	b.inferNs.add(inf)
	b.outputNs.add(out)
}

// finish records a finished request and tells the observers. end is when
// it finished; zero means now.
func (v *version) finish(t *timing, rows int64, err error, end time.Duration) {
	if end == 0 {
		end = now()
	}
	if t.tr != nil {
		traceStages(t)
	}
	c := v.stats
	total := end - t.start
	q, in, inf, out := t.stages()
	reason := NoFailure
	if err == nil {
		c.success.Add(1)
		c.successNs.add(total)
		c.queueNs.add(q)
		c.inputNs.add(in)
		c.inferNs.add(inf)
		c.outputNs.add(out)
		if t.executed > 0 { // cache hits count as successes, not inferences
			c.inferences.Add(uint64(rows))
		}
		c.last.Store(int64(end))
	} else {
		reason = failureReason(err, t.computeStart != 0)
		c.fail.Add(1)
		c.failNs.add(total)
		c.failures[reason].Add(1)
		if r, ok := shedReason(err, t.computeStart != 0); ok {
			v.noteShed(r, err)
		}
	}
	first := total
	if v.decoupled {
		first = 0
		if t.firstResponse != 0 {
			first = t.firstResponse - t.start
		}
	}
	for _, o := range v.observers {
		o.ObserveRequest(RequestStats{
			Model: v.name, Version: v.number, Err: err, Reason: reason,
			BatchSize: rows, ExecutedBatchSize: t.executed,
			Request: total, Queue: q, ComputeInput: in, ComputeInfer: inf, ComputeOutput: out,
			CacheHit: t.cacheHit, FirstResponse: first,
		})
	}
}

// failureReason classifies a failed request for the statistics.
func failureReason(err error, executed bool) FailureReason {
	switch {
	case errors.Is(err, batcher.ErrQueueFull), errors.Is(err, batcher.ErrTimeout), errors.Is(err, batcher.ErrWouldMiss):
		return FailureRejected
	}
	switch CodeOf(err) {
	case Cancelled, DeadlineExceeded:
		return FailureCanceled
	}
	if executed {
		return FailureBackend
	}
	return FailureOther
}
