package overload_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/overload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// arrivals runs spec under the fake clock with a do that answers at once,
// and returns each call's arrival time as an offset from the start, in
// the order of n.
func arrivals(t *testing.T, spec overload.Spec) ([]time.Duration, overload.Result) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []time.Duration
		res overload.Result
	)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var err error
		res, err = overload.Run(t.Context(), spec, func(_ context.Context, n int) error {
			mu.Lock()
			defer mu.Unlock()
			for len(got) <= n {
				got = append(got, -1)
			}
			got[n] = time.Since(start)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	return got, res
}

// TestPoissonArrivals checks the schedule's statistics over 20,000
// arrivals at 1,000 a second: the count, the mean gap, the exponential
// distribution's coefficient of variation (1) and its share of gaps longer
// than the mean (1/e); and that under the fake clock every call starts at
// its scheduled time.
func TestPoissonArrivals(t *testing.T) {
	const rate, dur = 1000.0, 20 * time.Second
	got, res := arrivals(t, overload.Spec{Rate: rate, Duration: dur, Deadline: time.Second, Seed: 7})
	want := rate * dur.Seconds()
	if math.Abs(float64(res.Arrivals)-want) > 0.03*want || len(got) != res.Arrivals {
		t.Fatalf("%d arrivals (%d calls), want %.0f ± 3%%", res.Arrivals, len(got), want)
	}
	if res.Good != res.Arrivals || res.MaxLag != 0 || res.LagP99 != 0 || res.P99 != 0 || res.Capped != 0 {
		t.Errorf("result %+v: want every call good, at once, and on time", res)
	}
	if math.Abs(res.Offered()-rate) > 0.03*rate || res.Goodput() != res.Offered() {
		t.Errorf("offered %.1f/s, goodput %.1f/s; want both %.0f ± 3%%", res.Offered(), res.Goodput(), rate)
	}
	gaps := make([]float64, len(got))
	prev := time.Duration(0)
	for i, at := range got {
		if at < prev || at >= dur {
			t.Fatalf("arrival %d at %v, after %v: want increasing times within %v", i, at, prev, dur)
		}
		gaps[i] = (at - prev).Seconds()
		prev = at
	}
	var sum, sq float64
	longer := 0
	for _, g := range gaps {
		sum += g
	}
	mean := sum / float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
		if g > 1/rate {
			longer++
		}
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / mean
	share := float64(longer) / float64(len(gaps))
	t.Logf("%d arrivals: mean gap %.4f ms, cv %.3f, share longer than 1 ms %.3f", len(gaps), mean*1e3, cv, share)
	if math.Abs(mean*rate-1) > 0.03 {
		t.Errorf("mean gap %.4f ms, want 1 ms ± 3%%", mean*1e3)
	}
	if math.Abs(cv-1) > 0.05 {
		t.Errorf("coefficient of variation %.3f, want 1 ± 0.05 (exponential gaps)", cv)
	}
	if math.Abs(share-1/math.E) > 0.02 {
		t.Errorf("share of gaps longer than the mean %.3f, want 1/e ± 0.02", share)
	}
}

// TestSeed: the same seed gives the same schedule, another seed another.
func TestSeed(t *testing.T) {
	spec := overload.Spec{Rate: 500, Duration: time.Second, Deadline: time.Second, Seed: 1}
	a, _ := arrivals(t, spec)
	b, _ := arrivals(t, spec)
	if !slices.Equal(a, b) {
		t.Errorf("two runs with seed 1 differ: %d and %d arrivals", len(a), len(b))
	}
	spec.Seed = 2
	if c, _ := arrivals(t, spec); slices.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same schedule")
	}
}

// TestOutcomes: each call's context carries its deadline (arrival +
// Spec.Deadline), and every outcome lands in its own count, with the
// latencies of the good calls measured from arrival.
func TestOutcomes(t *testing.T) {
	const deadline = 50 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var kinds [6]atomic.Int64
		var badDeadline atomic.Int64
		res, err := overload.Run(t.Context(), overload.Spec{Rate: 200, Duration: 5 * time.Second, Deadline: deadline, Seed: 3},
			func(ctx context.Context, n int) error {
				if dl, ok := ctx.Deadline(); !ok || !dl.Equal(time.Now().Add(deadline)) {
					badDeadline.Add(1)
				}
				kinds[n%6].Add(1)
				switch n % 6 {
				case 0: // good, 10 ms
					time.Sleep(10 * time.Millisecond)
					return nil
				case 1: // good, 20 ms
					time.Sleep(20 * time.Millisecond)
					return nil
				case 2: // late: succeeds, ignoring its deadline
					time.Sleep(deadline + 5*time.Millisecond)
					return nil
				case 3: // expired
					<-ctx.Done()
					return ctx.Err()
				case 4: // refused
					return &triton.Error{Code: triton.Unavailable, Model: "m", Err: errors.New("would miss its deadline")}
				default: // failed otherwise
					return errors.New("boom")
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		if n := badDeadline.Load(); n > 0 {
			t.Errorf("%d calls had no deadline or another than arrival + %v", n, deadline)
		}
		want := overload.Result{
			Good: int(kinds[0].Load() + kinds[1].Load()), Late: int(kinds[2].Load()),
			Expired: int(kinds[3].Load()), Refused: int(kinds[4].Load()), Failed: int(kinds[5].Load()),
		}
		if res.Good != want.Good || res.Late != want.Late || res.Expired != want.Expired ||
			res.Refused != want.Refused || res.Failed != want.Failed || res.Cancelled != 0 {
			t.Errorf("counts %+v, want %+v", res, want)
		}
		if sum := res.Good + res.Late + res.Expired + res.Refused + res.Failed; sum != res.Arrivals || sum < 900 {
			t.Errorf("%d outcomes for %d arrivals, want all of about 1000", sum, res.Arrivals)
		}
		if res.FirstFailure == nil || res.FirstFailure.Error() != "boom" {
			t.Errorf("first failure %v, want boom", res.FirstFailure)
		}
		// Half the good calls take 10 ms, half 20 ms (to within the
		// counts of n % 6 == 0 and 1, which differ by at most one).
		if res.P50 != 10*time.Millisecond && res.P50 != 20*time.Millisecond || res.P99 != 20*time.Millisecond {
			t.Errorf("p50 %v, p99 %v; want 10 or 20 ms and 20 ms", res.P50, res.P99)
		}
	})
}

// TestCap: arrivals beyond MaxOutstanding calls in flight are not made,
// and are counted.
func TestCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight atomic.Int64
		var mu sync.Mutex
		var peak int64
		res, err := overload.Run(t.Context(), overload.Spec{Rate: 100, Duration: 2 * time.Second, Deadline: time.Second, MaxOutstanding: 3, Seed: 4},
			func(ctx context.Context, _ int) error {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
				<-ctx.Done()
				return ctx.Err()
			})
		if err != nil {
			t.Fatal(err)
		}
		if p := peak; p != 3 {
			t.Errorf("%d calls in flight at most, want 3", p)
		}
		// About 100 arrivals a second against 3 a second let through.
		if res.Capped < res.Arrivals/2 || res.Expired+res.Capped != res.Arrivals {
			t.Errorf("%d arrivals: %d capped, %d expired; want most capped, the rest expired", res.Arrivals, res.Capped, res.Expired)
		}
	})
}

// TestCancel: cancelling Run's context stops the arrivals, cancels the
// calls in flight, and Run returns once they have returned.
func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		res, err := overload.Run(ctx, overload.Spec{Rate: 100, Duration: time.Hour, Deadline: time.Hour, Seed: 5},
			func(ctx context.Context, _ int) error {
				<-ctx.Done()
				return ctx.Err()
			})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if res.Arrivals < 50 || res.Cancelled != res.Arrivals || res.Elapsed != time.Second {
			t.Errorf("result %+v: want about 100 arrivals, all cancelled, after 1 s", res)
		}
	})
}

// TestInvalidSpec: a spec without a rate, duration or deadline is an
// error before anything runs.
func TestInvalidSpec(t *testing.T) {
	for name, s := range map[string]overload.Spec{
		"no rate":      {Duration: time.Second, Deadline: time.Second},
		"NaN rate":     {Rate: math.NaN(), Duration: time.Second, Deadline: time.Second},
		"no duration":  {Rate: 1, Deadline: time.Second},
		"no deadline":  {Rate: 1, Duration: time.Second},
		"negative cap": {Rate: 1, Duration: time.Second, Deadline: time.Second, MaxOutstanding: -1},
	} {
		t.Run(name, func(t *testing.T) {
			called := false
			if _, err := overload.Run(t.Context(), s, func(context.Context, int) error { called = true; return nil }); err == nil || called {
				t.Errorf("Run(%+v): error %v, called %v; want an error and no call", s, err, called)
			}
		})
	}
}

// TestPreciseSleep: PreciseSleep sleeps at least as long as asked. (How
// much longer depends on the machine; the benchmarks report it.)
func TestPreciseSleep(t *testing.T) {
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		overload.PreciseSleep(d)
		if got := time.Since(start); got < d {
			t.Errorf("PreciseSleep(%v) returned after %v", d, got)
		}
	}
}
