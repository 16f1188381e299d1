package batcher

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEstimatorConverges: on batches that cost 2 ms plus 0.1 ms a row
// with ±5 % noise and one batch in eight 10× slower (outliers), the fit
// lands within 5 % of the true line, and a prediction lies above the
// line (most of the noise) but far below the outliers.
func TestEstimatorConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	truth := func(rows int64) time.Duration { return 2*time.Millisecond + time.Duration(rows)*100*time.Microsecond }
	var e Estimator
	for i := range 200 {
		rows := int64(1 + rng.IntN(32))
		d := time.Duration(float64(truth(rows)) * (0.95 + 0.1*rng.Float64()))
		if i%8 == 7 {
			d *= 10
		}
		e.Observe(rows, d)
	}
	fixed, perRow, margin, n := e.Fit()
	if n != window {
		t.Errorf("fit on %d batches, want the window of %d", n, window)
	}
	if diff := fixed - 2*time.Millisecond; diff < -100*time.Microsecond || diff > 100*time.Microsecond {
		t.Errorf("fixed cost %v, want 2ms ± 5%%", fixed)
	}
	if diff := perRow - 100*time.Microsecond; diff < -5*time.Microsecond || diff > 5*time.Microsecond {
		t.Errorf("cost a row %v, want 100µs ± 5%%", perRow)
	}
	for _, rows := range []int64{1, 16, 32} {
		got, ok := e.Estimate(rows)
		lo := time.Duration(float64(truth(rows)) * 1.03)
		if !ok || got < lo || got > 2*truth(rows) {
			t.Errorf("Estimate(%d) = %v, %v; want between %v and twice the truth %v (margin %v)", rows, got, ok, lo, 2*truth(rows), margin)
		}
	}
}

// TestEstimatorFollows: a model that becomes three times slower is
// predicted slower within the window.
func TestEstimatorFollows(t *testing.T) {
	var e Estimator
	for i := range 64 {
		rows := int64(1 + i%16)
		e.Observe(rows, time.Millisecond+time.Duration(rows)*50*time.Microsecond)
	}
	before, _ := e.Estimate(16)
	for i := range window {
		rows := int64(1 + i%16)
		e.Observe(rows, 3*(time.Millisecond+time.Duration(rows)*50*time.Microsecond))
	}
	after, _ := e.Estimate(16)
	if want := 3 * (time.Millisecond + 16*50*time.Microsecond); after < want || after > want+want/10 || after < 2*before {
		t.Errorf("after the model slowed 3×: Estimate(16) = %v (before %v), want about %v", after, before, want)
	}
}

// TestEstimatorWarmUp: no prediction before MinSamples batches; batches of
// one size scale by rows beyond it and keep its time below it.
func TestEstimatorWarmUp(t *testing.T) {
	var e Estimator
	for i := range MinSamples - 1 {
		e.Observe(8, 4*time.Millisecond)
		if _, ok := e.Estimate(8); ok {
			t.Fatalf("a prediction after %d batches", i+1)
		}
	}
	e.Observe(8, 4*time.Millisecond)
	for rows, want := range map[int64]time.Duration{1: 4 * time.Millisecond, 8: 4 * time.Millisecond, 16: 8 * time.Millisecond} {
		if got, ok := e.Estimate(rows); !ok || got != want {
			t.Errorf("one size seen: Estimate(%d) = %v, %v; want %v", rows, got, ok, want)
		}
	}
	e.Observe(0, time.Second) // ignored: no rows
	e.Observe(4, -1)          // ignored: no time
	if _, _, _, n := e.Fit(); n != MinSamples {
		t.Errorf("%d samples after two invalid ones, want %d", n, MinSamples)
	}
}

// TestMedian checks the quickselect against sorting on random slices of
// every length up to 40, with repeated values.
func TestMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 1; n <= 40; n++ {
		for range 50 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(rng.IntN(10))
			}
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			want := sorted[n/2]
			if n%2 == 0 {
				want = (sorted[n/2-1] + sorted[n/2]) / 2
			}
			if got := median(slices.Clone(xs)); got != want {
				t.Fatalf("median(%v) = %v, want %v", xs, got, want)
			}
		}
	}
}
