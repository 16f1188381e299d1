package triton

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton/batcher"
)

// StatDuration is a count and a cumulative duration, as Triton's statistics
// report them ({"count": n, "ns": total}).
type StatDuration struct {
	Count uint64
	Total time.Duration
}

// Failures counts failed requests by reason, as the reason label of
// Triton's nv_inference_request_failure does.
type Failures struct {
	// Rejected: refused by the scheduler (a full queue, a queue-policy
	// timeout).
	Rejected uint64
	// Canceled: the request's context ended.
	Canceled uint64
	// Backend: the execution failed (an error or panic in the backend, or
	// outputs that break the configuration).
	Backend uint64
	// Other: anything else (an invalid request, the model stopping).
	Other uint64
}

// BatchStats are the executions of one batch size (Triton's batch_stats):
// the three durations share the execution count.
type BatchStats struct {
	BatchSize                                 int64
	ComputeInput, ComputeInfer, ComputeOutput StatDuration
}

// ModelStats are a model version's statistics, the data behind Triton's
// statistics extension and its Prometheus metrics. Counts and durations are
// cumulative since the version was loaded.
type ModelStats struct {
	Name    string
	Version int64
	// LastInference is when the last successful request finished (zero:
	// none yet).
	LastInference time.Time
	// InferenceCount counts the rows of successful executed requests (a
	// request of batch size 4 counts 4); ExecutionCount counts model
	// executions (batches).
	InferenceCount, ExecutionCount uint64
	// Success and Fail are requests and their total durations (from Infer
	// to answer). Queue, ComputeInput, ComputeInfer and ComputeOutput are
	// per successful request: time waiting for an instance or batch, then
	// the stages of its batch's execution (input preparation, the model,
	// output processing, as the backend marks them; unmarked, the whole
	// execution is ComputeInfer).
	Success, Fail, Queue                      StatDuration
	ComputeInput, ComputeInfer, ComputeOutput StatDuration
	// CacheHit and CacheMiss are the response cache's lookups (zero
	// without a cache).
	CacheHit, CacheMiss StatDuration
	Failures            Failures
	// Batches has one entry per batch size executed, ascending.
	Batches []BatchStats
	// Pending counts requests admitted and not yet executing; Queued those
	// waiting in the dynamic batcher's queue.
	Pending int64
	Queued  int
	// LoadTime is how long loading this version took.
	LoadTime time.Duration
	// MetricTags are the config's metric_tags, for metric labels (a copy).
	MetricTags map[string]string
	// ResponseCache reports whether the version has response_cache enabled.
	ResponseCache bool
}

// Observer receives one record per finished request, for distributions
// (histograms, summaries) that cumulative statistics cannot give. It is
// called on the request's goroutine before Infer returns, so it must be
// fast and safe for concurrent use. Install one with [WithObserver].
type Observer interface {
	ObserveRequest(RequestStats)
}

// RequestStats is what an Observer learns about one request.
type RequestStats struct {
	Model   string
	Version int64
	// Err is nil for a successful request; Reason says why one failed.
	Err    error
	Reason FailureReason
	// BatchSize is the request's own batch size; ExecutedBatchSize that of
	// the batch it ran in (0 when it did not run).
	BatchSize, ExecutedBatchSize int64
	// Request is the whole duration; the others are its stages, zero for
	// stages it did not reach.
	Request, Queue, ComputeInput, ComputeInfer, ComputeOutput time.Duration
	// CacheHit reports an answer from the response cache (no execution).
	CacheHit bool
}

// FailureReason is why a request failed; see [Failures].
type FailureReason uint8

// Failure reasons, as Triton's metric labels them.
const (
	NoFailure FailureReason = iota
	FailureRejected
	FailureCanceled
	FailureBackend
	FailureOther
)

// String returns Triton's label: "REJECTED", "CANCELED", "BACKEND", "OTHER"
// (and "" for NoFailure).
func (r FailureReason) String() string {
	return [...]string{"", "REJECTED", "CANCELED", "BACKEND", "OTHER"}[r]
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
	batches                 []batchCounter // by batch size, 1..max
	cacheHit, cacheMiss     atomic.Uint64
	cacheHitNs, cacheMissNs durationCounter
	loadTime                time.Duration
}

type batchCounter struct {
	count                      atomic.Uint64
	inputNs, inferNs, outputNs durationCounter
}

func newCounters(maxBatch int64) *counters {
	return &counters{batches: make([]batchCounter, max(maxBatch, 1)+1)}
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
	if size < 1 || int(size) >= len(c.batches) {
		return
	}
	_, in, inf, out := t.stages()
	b := &c.batches[size]
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

// snapshot reads the version's statistics.
func (v *version) snapshot() ModelStats {
	c := v.stats
	dur := func(n uint64, d *durationCounter) StatDuration {
		return StatDuration{Count: n, Total: time.Duration(d.ns.Load())}
	}
	success := c.success.Load()
	hits := c.cacheHit.Load()
	st := ModelStats{
		Name:           v.name,
		Version:        v.number,
		InferenceCount: c.inferences.Load(),
		ExecutionCount: c.executions.Load(),
		Success:        dur(success, &c.successNs),
		Fail:           dur(c.fail.Load(), &c.failNs),
		Queue:          dur(success, &c.queueNs),
		ComputeInput:   dur(success-hits, &c.inputNs),
		ComputeInfer:   dur(success-hits, &c.inferNs),
		ComputeOutput:  dur(success-hits, &c.outputNs),
		CacheHit:       dur(hits, &c.cacheHitNs),
		CacheMiss:      dur(c.cacheMiss.Load(), &c.cacheMissNs),
		Failures: Failures{
			Rejected: c.failures[FailureRejected].Load(),
			Canceled: c.failures[FailureCanceled].Load(),
			Backend:  c.failures[FailureBackend].Load(),
			Other:    c.failures[FailureOther].Load(),
		},
		Pending:       c.pending.Load(),
		LoadTime:      c.loadTime,
		MetricTags:    maps.Clone(v.cfg.GetMetricTags()),
		ResponseCache: v.cfg.GetResponseCache().GetEnable(),
	}
	if d := c.last.Load(); d != 0 {
		st.LastInference = epoch.Add(time.Duration(d))
	}
	for size := range c.batches {
		b := &c.batches[size]
		if n := b.count.Load(); n > 0 {
			st.Batches = append(st.Batches, BatchStats{
				BatchSize:     int64(size),
				ComputeInput:  dur(n, &b.inputNs),
				ComputeInfer:  dur(n, &b.inferNs),
				ComputeOutput: dur(n, &b.outputNs),
			})
		}
	}
	if v.dyn != nil {
		st.Queued = v.dyn.Len()
	}
	return st
}

// Stats returns the statistics of ready model versions, as Triton's
// statistics extension does: every version of every model for model "",
// every ready version of the model for version 0, else that version.
// Asking for a model or version that is not ready is InvalidArgument,
// with Triton's messages.
func (s *Server) Stats(model string, ver int64) ([]ModelStats, error) {
	t := s.table.Load()
	var out []ModelStats
	if model == "" {
		for _, e := range t.models {
			for _, v := range e.versions {
				out = append(out, v.snapshot())
			}
		}
		slices.SortFunc(out, func(a, b ModelStats) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return int(a.Version - b.Version)
		})
		return out, nil
	}
	e := t.models[model]
	if e == nil || len(e.versions) == 0 {
		return nil, &Error{Code: InvalidArgument, Model: model, Err: fmt.Errorf("requested model '%s' is not available", model)}
	}
	for _, v := range slices.Backward(e.versions) {
		if ver == 0 || v.number == ver {
			out = append(out, v.snapshot())
		}
	}
	if len(out) == 0 {
		return nil, &Error{Code: InvalidArgument, Model: model, Version: ver, Err: fmt.Errorf("requested model version is not available for model '%s'", model)}
	}
	return out, nil
}
