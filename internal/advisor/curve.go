package advisor

import (
	"math"
	"slices"
	"time"
)

// CurvePoint is one point of the latency-against-batch curve: the
// throughput and latency measured with batches of Batch requests (the
// model's max_batch_size and preferred size, at a concurrency of Batch
// per instance).
type CurvePoint struct {
	Batch      int
	Throughput float64
	Latency    time.Duration
}

// KneeStep is one step along the curve, from the point before to Batch:
// how much throughput and latency grew, relative to the point before, and
// Gain, the first over the second (+Inf when latency did not grow).
type KneeStep struct {
	Batch                   int
	ThroughputUp, LatencyUp float64 // fractions: 0.5 is +50%
	Gain                    float64
}

// Knee returns the knee of a curve (ascending batch sizes, the first
// point being batch 1) and its steps: the largest batch size whose step
// raised throughput by a larger fraction than it raised latency (Gain ≥
// 1). Past the knee, every step raised latency per request by a larger
// fraction than throughput. A curve without such a step has its knee at
// its first point.
//
// When concurrency doubles with the batch, Little's law (concurrency =
// throughput × latency) makes Gain ≥ 1 the same as throughput growing by
// at least √2 ≈ 1.41 per doubling.
func Knee(curve []CurvePoint) (int, []KneeStep) {
	if len(curve) == 0 {
		return 0, nil
	}
	knee := curve[0].Batch
	steps := make([]KneeStep, 0, len(curve)-1)
	for i := 1; i < len(curve); i++ {
		a, b := curve[i-1], curve[i]
		s := KneeStep{Batch: b.Batch}
		if a.Throughput > 0 {
			s.ThroughputUp = b.Throughput/a.Throughput - 1
		}
		if a.Latency > 0 {
			s.LatencyUp = float64(b.Latency)/float64(a.Latency) - 1
		}
		switch {
		case s.ThroughputUp <= 0:
			s.Gain = 0
		case s.LatencyUp <= 0:
			s.Gain = math.Inf(1)
		default:
			s.Gain = s.ThroughputUp / s.LatencyUp
		}
		steps = append(steps, s)
		if s.Gain >= 1 {
			knee = b.Batch
		}
	}
	return knee, steps
}

// BatchTime is the model's executions of one batch size over a
// measurement: how many, and their total compute (infer) time, from the
// statistics extension's batch statistics.
type BatchTime struct {
	Size  int
	Count uint64
	Total time.Duration
}

// Fit is a straight line through the compute time of a batch against its
// size: time(b) ≈ Fixed + PerRow × b, fitted by least squares on the mean
// time of each batch size executed at least minExecutions times.
type Fit struct {
	Fixed, PerRow time.Duration
	// Sizes is the number of batch sizes the line was fitted on; Largest
	// the largest of them.
	Sizes, Largest int
}

// minExecutions is how many executions of a batch size its mean needs
// to enter the fit.
const minExecutions = 5

// payShare is the fixed share of a batch of one (Fixed ÷ (Fixed +
// PerRow)) under which batching does not pay: with less than a tenth of
// an execution independent of its size, a batch of 8 saves under 9% of
// the compute a row, which the wait for the batch does not repay.
const payShare = 0.1

// FitBatches fits the line through the executions of times, merged by
// batch size. ok is false with fewer than two batch sizes to fit on.
func FitBatches(times []BatchTime) (f Fit, ok bool) {
	merged := map[int]BatchTime{}
	for _, t := range times {
		m := merged[t.Size]
		m.Size = t.Size
		m.Count += t.Count
		m.Total += t.Total
		merged[t.Size] = m
	}
	var xs, ys []float64
	sizes := make([]int, 0, len(merged))
	for s := range merged {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	for _, s := range sizes {
		m := merged[s]
		if m.Count < minExecutions || s <= 0 {
			continue
		}
		xs = append(xs, float64(s))
		ys = append(ys, float64(m.Total)/float64(m.Count))
		f.Largest = s
	}
	f.Sizes = len(xs)
	if len(xs) < 2 {
		return f, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	n := float64(len(xs))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := sxy / sxx
	f.PerRow = time.Duration(math.Round(slope))
	f.Fixed = time.Duration(math.Round(my - slope*mx))
	return f, true
}

// FixedShare is the share of a batch of one's compute that does not
// depend on the batch's size: Fixed ÷ (Fixed + PerRow). It is 1 when the
// time does not grow with the batch, and 0 or less when a batch costs
// nothing (or less than nothing) beyond its rows.
func (f Fit) FixedShare() float64 {
	switch {
	case f.PerRow <= 0:
		return 1
	case f.Fixed <= 0:
		return 0
	}
	return float64(f.Fixed) / float64(f.Fixed+f.PerRow)
}

// Pays reports whether batching pays: the fixed share is at least a
// tenth. When it does not, compute grows linearly with the batch and a
// row costs about as much in any batch.
func (f Fit) Pays() bool { return f.FixedShare() >= payShare }

// RowCost is the compute a row at batch size b, relative to batch 1, by
// the line (1 at b = 1; lower when batching pays).
func (f Fit) RowCost(b int) float64 {
	one := float64(f.Fixed + f.PerRow)
	if one <= 0 || b <= 0 {
		return 1
	}
	return (float64(f.Fixed)/float64(b) + float64(f.PerRow)) / one
}
