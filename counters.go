// counters.go holds the counters the request path updates, the request
// path's clock, and the record of every finished request.

package triton

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton/batcher"
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
	inferences, executions  atomic.Uint64
	last                    atomic.Int64 // the last success, as time since epoch
	pending                 atomic.Int64
	batches                 []batchCounter // by batch size, 1..min(max, denseBatches)
	bigBatches              sync.Map       // batch sizes above denseBatches: int64 → *batchCounter
	cacheHit, cacheMiss     atomic.Uint64
	cacheHitNs, cacheMissNs durationCounter
	loadTime                time.Duration
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
	}
	for _, o := range v.observers {
		o.ObserveRequest(RequestStats{
			Model: v.name, Version: v.number, Err: err, Reason: reason,
			BatchSize: rows, ExecutedBatchSize: t.executed,
			Request: total, Queue: q, ComputeInput: in, ComputeInfer: inf, ComputeOutput: out,
			CacheHit: t.cacheHit,
		})
	}
}

// failureReason classifies a failed request for the statistics.
func failureReason(err error, executed bool) FailureReason {
	switch {
	case errors.Is(err, batcher.ErrQueueFull), errors.Is(err, batcher.ErrTimeout):
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
