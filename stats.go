// stats.go is the statistics API: ModelStats, Observer and Server.Stats.

package triton

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
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
	// timeout, the deadline-aware schedule).
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
	// Shed counts the failures that were about time, by [ShedReason].
	Shed Shed
	// Estimates are the dynamic batcher's estimates of execution time, per
	// instance group that has one (see [WithDeadlineAwareBatching]; kept
	// whether or not the schedule uses them).
	Estimates []BatchEstimate
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
	// Responses are a decoupled model's responses by index, from 0
	// (Triton's response_stats; empty for other models).
	Responses []ResponseStats
}

// ResponseStats count the responses of one index of a decoupled model's
// streams (Triton's response_stats entry "<index>"): Success those with
// outputs, Fail error responses, EmptyResponse final flags without outputs,
// Cancel requests cancelled when this would have been their next response.
// Each duration is the time since the stream's previous response (since
// the request arrived, for index 0). ComputeInfer and ComputeOutput split
// that time of the Success and Fail responses at the moment the backend
// sent each: the model's work on it, then the server's (checking the
// outputs, waiting for the consumer to take it).
type ResponseStats struct {
	Index                                int
	Success, Fail, EmptyResponse, Cancel StatDuration
	ComputeInfer, ComputeOutput          StatDuration
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
	// FirstResponse is how long the request waited for its first response:
	// Request for a model that is not decoupled; for a decoupled one the
	// time to its first response, 0 when it sent none.
	FirstResponse time.Duration
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
		Estimates:     v.estimates(),
		Pending:       c.pending.Load(),
		LoadTime:      c.loadTime,
		MetricTags:    maps.Clone(v.cfg.GetMetricTags()),
		ResponseCache: v.cfg.GetResponseCache().GetEnable(),
	}
	if d := c.last.Load(); d != 0 {
		st.LastInference = epoch.Add(time.Duration(d))
	}
	for i := range c.shed {
		st.Shed[i] = c.shed[i].Load()
	}
	batch := func(size int64, b *batchCounter) {
		if n := b.count.Load(); n > 0 {
			st.Batches = append(st.Batches, BatchStats{
				BatchSize:     size,
				ComputeInput:  dur(n, &b.inputNs),
				ComputeInfer:  dur(n, &b.inferNs),
				ComputeOutput: dur(n, &b.outputNs),
			})
		}
	}
	for size := range c.batches {
		batch(int64(size), &c.batches[size])
	}
	var big []int64
	c.bigBatches.Range(func(k, _ any) bool {
		big = append(big, k.(int64))
		return true
	})
	slices.Sort(big)
	for _, size := range big {
		batch(size, c.batch(size))
	}
	if v.dyn != nil {
		st.Queued = v.dyn.Len()
	}
	if p := c.respStats.Load(); p != nil {
		for i, r := range *p {
			rs := ResponseStats{Index: i}
			for k, d := range []*StatDuration{&rs.Success, &rs.Fail, &rs.EmptyResponse, &rs.Cancel} {
				*d = dur(r.count[k].Load(), &r.ns[k])
			}
			n := r.computed.Load()
			rs.ComputeInfer, rs.ComputeOutput = dur(n, &r.infer), dur(n, &r.output)
			st.Responses = append(st.Responses, rs)
		}
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
