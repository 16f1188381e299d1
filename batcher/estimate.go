package batcher

import (
	"sync"
	"time"
)

// Estimator predicts how long a model takes to execute a batch of a given
// number of rows, from the batches it ran last: a line fixed + perRow·rows
// fitted with the Theil–Sen estimator (the median of the slopes between
// pairs of batches of different sizes; the intercept is the median of the
// residuals), so that a few slow batches (a page fault, a GC pause, a
// noisy neighbour) move it little. A prediction adds three times the median
// absolute residual, a margin that follows the model's own jitter.
//
// With batches of a single size seen so far, it predicts that size's
// median time for smaller batches and scales it by rows for larger ones.
// It predicts nothing (ok false) before it has [MinSamples] batches.
//
// An Estimator is safe for concurrent use.
type Estimator struct {
	mu      sync.Mutex
	samples [window]sample // a ring of the latest batches
	n       int            // samples held, up to window
	next    int            // the ring's next slot
	added   int            // samples since the last fit
	fit     fit
	// scratch of refit, kept so that a refit allocates nothing
	slopes, res []float64
}

// MinSamples is how many batches an [Estimator] needs before it predicts.
const MinSamples = 8

// window is how many of the latest batches the fit uses: enough for a
// median to shrug off outliers, few enough that the fit follows a model
// whose speed changes (another model loaded beside it), and that a fit (a
// sort of window·(window−1)/2 slopes) costs microseconds.
const window = 32

// refit is how many new samples make the estimator fit again.
const refit = 8

type sample struct {
	rows int64
	d    time.Duration
}

type fit struct {
	ok     bool
	fixed  float64 // ns
	perRow float64 // ns a row
	margin float64 // ns: three times the median absolute residual
	// single: every sample had the same rows (perRow unknown); then
	// fixed is their median and a prediction scales it beyond rows.
	single     bool
	singleRows int64
}

// Observe records that a batch of rows rows took d.
func (e *Estimator) Observe(rows int64, d time.Duration) {
	if rows <= 0 || d <= 0 {
		return
	}
	e.mu.Lock()
	e.samples[e.next] = sample{rows, d}
	e.next = (e.next + 1) % window
	e.n = min(e.n+1, window)
	e.added++
	e.mu.Unlock()
}

// Update fits the line again if refit batches came since the last fit (or
// there was none): Estimate and Fit do it when they find it due, and a
// caller that can afford the fit's few microseconds better than they can
// (a batch's end, rather than a request's admission) calls it first.
func (e *Estimator) Update() {
	e.mu.Lock()
	e.update()
	e.mu.Unlock()
}

// update is Update. e.mu must be held.
func (e *Estimator) update() {
	if e.n >= MinSamples && (e.added >= refit || !e.fit.ok) {
		e.refit()
	}
}

// Estimate returns the predicted execution time of a batch of rows rows,
// margin included, and whether there is a prediction yet.
func (e *Estimator) Estimate(rows int64) (time.Duration, bool) {
	e.mu.Lock()
	e.update()
	f := e.fit
	e.mu.Unlock()
	if !f.ok {
		return 0, false
	}
	return f.predict(rows), true
}

// Fit returns the current line: the fixed cost of a batch, the cost of a
// row, the margin a prediction adds, and the number of batches it rests
// on (0 while there is no prediction).
func (e *Estimator) Fit() (fixed, perRow, margin time.Duration, samples int) {
	e.mu.Lock()
	e.update()
	f, n := e.fit, e.n
	e.mu.Unlock()
	if !f.ok {
		return 0, 0, 0, 0
	}
	return time.Duration(f.fixed), time.Duration(f.perRow), time.Duration(f.margin), n
}

func (f fit) predict(rows int64) time.Duration {
	x := float64(rows)
	var y float64
	if f.single {
		y = f.fixed * max(1, x/float64(f.singleRows))
	} else {
		y = f.fixed + f.perRow*x
	}
	return time.Duration(y + f.margin)
}

// refit fits the line again. e.mu must be held.
func (e *Estimator) refit() {
	e.added = 0
	s := e.samples[:e.n]
	slopes := e.slopes[:0]
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if dx := s[j].rows - s[i].rows; dx != 0 {
				slopes = append(slopes, float64(s[j].d-s[i].d)/float64(dx))
			}
		}
	}
	e.slopes = slopes
	if cap(e.res) < len(s) {
		e.res = make([]float64, window)
	}
	res := e.res[:len(s)]
	f := fit{ok: true}
	if len(slopes) == 0 {
		f.single, f.singleRows = true, s[0].rows
	} else {
		f.perRow = max(median(slopes), 0)
	}
	for i, x := range s {
		res[i] = float64(x.d) - f.perRow*float64(x.rows)
	}
	f.fixed = max(median(res), 0)
	for i := range res {
		res[i] -= f.fixed
		if res[i] < 0 {
			res[i] = -res[i]
		}
	}
	f.margin = 3 * median(res)
	e.fit = f
}

// median returns the median of xs, which it reorders: a quickselect,
// linear on average (a refit's few hundred slopes cost a few
// microseconds, where sorting them cost several times as much).
func median(xs []float64) float64 {
	n := len(xs)
	k := n / 2
	m := nth(xs, k)
	if n%2 == 1 {
		return m
	}
	lo := xs[0] // the largest of xs[:k], all ≤ xs[k] once nth has run
	for _, v := range xs[1:k] {
		lo = max(lo, v)
	}
	return (lo + m) / 2
}

// nth reorders xs so that xs[k] is the value sorting would put there,
// with no larger value before it and no smaller one after, and returns
// it.
func nth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as the pivot, then Hoare's partition.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
