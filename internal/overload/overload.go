package overload

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton"
)

// DefaultMaxOutstanding is the cap on requests in flight when
// [Spec.MaxOutstanding] is 0: far above what a server that answers within
// the deadlines holds (rate × deadline, a few thousand for the benchmarks
// of issue #46), low enough that a server that stops answering costs
// some tens of MiB of goroutine stacks, not the machine.
const DefaultMaxOutstanding = 10000

// Spec describes one open-loop run. Rate, Duration and Deadline are
// required.
type Spec struct {
	// Rate is the mean arrival rate, in requests a second.
	Rate float64
	// Duration is how long requests arrive: arrivals are drawn from the
	// start of the run until Duration has passed.
	Duration time.Duration
	// Deadline is each request's deadline, counted from its scheduled
	// arrival: the context do receives ends then (context.WithDeadline).
	Deadline time.Duration
	// MaxOutstanding caps the requests in flight: an arrival that finds
	// that many calls of do still running is not made, and is counted in
	// [Result.Capped]. 0 means [DefaultMaxOutstanding].
	MaxOutstanding int
	// Seed seeds the arrival times' random source; the same seed and rate
	// give the same schedule.
	Seed uint64
	// Sleep, when set, waits between arrivals instead of a timer:
	// [PreciseSleep] for benchmarks. It cannot be interrupted, so a
	// cancelled run notices only at the next arrival. nil means a timer
	// that also watches Run's context.
	Sleep func(time.Duration)
}

// Result is what became of the requests of one run. Every arrival is
// counted exactly once: Arrivals = Good + Late + Refused + Expired +
// Cancelled + Failed + Capped.
type Result struct {
	// Duration is the Spec's: the time over which requests arrived, the
	// denominator of [Result.Offered] and [Result.Goodput].
	Duration time.Duration
	// Arrivals is the number of arrivals scheduled within Duration.
	Arrivals int
	// Good counts the calls that succeeded within their deadline, Late
	// those that succeeded after it.
	Good, Late int
	// Refused counts the calls that failed with code Unavailable (a full
	// queue, a request the schedule turned away), Expired those that
	// failed with DeadlineExceeded, Cancelled those that failed with
	// Cancelled, and Failed those with any other code, as
	// [triton.CodeOf] classifies their errors.
	Refused, Expired, Cancelled, Failed int
	// FirstFailure is the first error counted in Failed, nil when none.
	FirstFailure error
	// Capped counts the arrivals not made because MaxOutstanding calls
	// were in flight.
	Capped int
	// P50 and P99 are the median and 99th percentile latency of the good
	// calls (nearest rank), from scheduled arrival to return; zero when
	// there are none.
	P50, P99 time.Duration
	// LagP99 and MaxLag are the 99th percentile and the largest of how
	// far behind its scheduled arrival the generator made an arrival:
	// its own lateness (a busy machine, a coarse timer, a pause), which
	// the latencies include.
	LagP99, MaxLag time.Duration
	// Elapsed is the time from the start of the run until the last call
	// returned.
	Elapsed time.Duration
}

// Offered returns the arrival rate achieved, in requests a second:
// Arrivals over Duration (Capped included: they were offered).
func (r Result) Offered() float64 { return float64(r.Arrivals) / r.Duration.Seconds() }

// Goodput returns the good calls a second: Good over Duration.
func (r Result) Goodput() float64 { return float64(r.Good) / r.Duration.Seconds() }

// Run offers do requests as a Poisson process described by s, and returns
// what became of them once every call has returned. Call n (0, 1, …, in
// the order of arrival) runs on a goroutine of its own with a context that
// ends at its deadline or when ctx ends; do should return an error whose
// code [triton.CodeOf] gives (the server's and the clients' errors, and
// context errors, all do). Cancelling ctx stops the arrivals; the
// result then covers the arrivals made so far, and the error is ctx's.
// An invalid Spec is an error before anything starts.
func Run(ctx context.Context, s Spec, do func(ctx context.Context, n int) error) (Result, error) {
	switch {
	case !(s.Rate > 0):
		return Result{}, errors.New("overload: Spec.Rate must be positive")
	case s.Duration <= 0:
		return Result{}, errors.New("overload: Spec.Duration must be positive")
	case s.Deadline <= 0:
		return Result{}, errors.New("overload: Spec.Deadline must be positive")
	case s.MaxOutstanding < 0:
		return Result{}, errors.New("overload: Spec.MaxOutstanding must not be negative")
	}
	limit := int64(s.MaxOutstanding)
	if limit == 0 {
		limit = DefaultMaxOutstanding
	}
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))

	expect := min(int(s.Rate*s.Duration.Seconds())+16, 1<<20)
	var t tally
	t.good = make([]time.Duration, 0, expect)
	lags := make([]time.Duration, 0, expect) // each arrival's, in order
	var outstanding atomic.Int64
	var wg sync.WaitGroup
	var timer *time.Timer
	if s.Sleep == nil {
		timer = time.NewTimer(time.Hour)
		defer timer.Stop()
	}

	res := Result{Duration: s.Duration}
	start := time.Now()
	elapsed := 0.0 // seconds from start to the next arrival
	for n := 0; ; n++ {
		elapsed += rng.ExpFloat64() / s.Rate
		offset := time.Duration(elapsed * float64(time.Second))
		if offset >= s.Duration {
			break
		}
		at := start.Add(offset)
		if d := time.Until(at); d > 0 {
			if s.Sleep != nil {
				s.Sleep(d)
			} else {
				timer.Reset(d)
				select {
				case <-ctx.Done():
				case <-timer.C:
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		lags = append(lags, time.Since(at))
		res.Arrivals++
		if outstanding.Load() >= limit {
			res.Capped++
			continue
		}
		outstanding.Add(1)
		wg.Go(func() {
			defer outstanding.Add(-1)
			deadline := at.Add(s.Deadline)
			rctx, cancel := context.WithDeadline(ctx, deadline)
			err := do(rctx, n)
			end := time.Now()
			cancel()
			t.add(err, end.Sub(at), end.After(deadline))
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)

	res.Good, res.Late = len(t.good), t.late
	res.Refused, res.Expired, res.Cancelled, res.Failed = t.refused, t.expired, t.cancelled, t.failed
	res.FirstFailure = t.firstFailure
	if len(t.good) > 0 {
		slices.Sort(t.good)
		res.P50, res.P99 = rank(t.good, 0.50), rank(t.good, 0.99)
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		res.LagP99, res.MaxLag = rank(lags, 0.99), lags[len(lags)-1]
	}
	return res, ctx.Err()
}

// tally gathers the outcomes of the calls of one run.
type tally struct {
	mu sync.Mutex
	// mu protects the following.
	good                                      []time.Duration // latencies of the good calls
	late, refused, expired, cancelled, failed int
	firstFailure                              error
}

// add records one call's outcome: its error, its latency from scheduled
// arrival, and whether it returned after its deadline.
func (t *tally) add(err error, latency time.Duration, afterDeadline bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		if afterDeadline {
			t.late++
		} else {
			t.good = append(t.good, latency)
		}
		return
	}
	switch triton.CodeOf(err) {
	case triton.Unavailable:
		t.refused++
	case triton.DeadlineExceeded:
		t.expired++
	case triton.Cancelled:
		t.cancelled++
	default:
		t.failed++
		if t.firstFailure == nil {
			t.firstFailure = err
		}
	}
}

// rank returns the nearest-rank p-quantile of sorted, which is not empty.
func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
