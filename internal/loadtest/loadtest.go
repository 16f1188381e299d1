package loadtest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Run makes b.N calls of do from c goroutines, reports the metrics req/s,
// p50-µs and p99-µs (and allocations), and returns the mean latency. The
// first error fails the benchmark.
func Run(b *testing.B, c int, do func() error) time.Duration {
	b.ReportAllocs()
	lat := make([][]time.Duration, c)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := do(); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p/100*float64(len(all))))]) / float64(time.Microsecond)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
	return sum / time.Duration(len(all))
}

// Mean returns the mean latency of n calls of do from c goroutines, for a
// baseline measured outside a benchmark of its own.
func Mean(c, n int, do func() error) time.Duration {
	var next, total atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				_ = do()
				total.Add(int64(time.Since(t0)))
			}
		})
	}
	wg.Wait()
	return time.Duration(total.Load() / int64(n))
}
