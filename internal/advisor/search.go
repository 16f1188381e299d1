package advisor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Measurement is what one load level gave: the client's figures for the
// model the load is sent to, and the statistics extension's for the
// model being tuned.
type Measurement struct {
	// Concurrency is the number of requests kept outstanding.
	Concurrency int
	// Throughput is in inferences a second.
	Throughput float64
	// Latencies as clients saw them.
	Avg, P50, P90, P95, P99 time.Duration
	// Stable reports whether the windows agreed within the stability
	// threshold; an unstable measurement is shown marked and still
	// counts.
	Stable bool
	// Queue and Compute are the tuned model's average time a request in
	// the queue and in execution (input, infer, output).
	Queue, Compute time.Duration
	// Batches are the tuned model's executions by batch size.
	Batches []BatchTime
	// Shares are the other models that executed during the measurement
	// (an ensemble's steps, the models a BLS model calls), largest share
	// first; empty for a model that calls none.
	Shares []Share
}

// AvgBatch is the tuned model's rows an execution (0 without executions).
func (m *Measurement) AvgBatch() float64 {
	var rows, execs uint64
	for _, b := range m.Batches {
		rows += uint64(b.Size) * b.Count
		execs += b.Count
	}
	if execs == 0 {
		return 0
	}
	return float64(rows) / float64(execs)
}

// Share is one composing model's part of a pipeline's compute.
type Share struct {
	Model string
	// Compute is its total compute (infer) time over the measurement;
	// Share that time over the sum of every composing model's.
	Compute time.Duration
	Share   float64
	// Executions and Inferences are its batches and rows.
	Executions, Inferences uint64
}

// Dominant returns the model with the largest share, or "".
func Dominant(shares []Share) string {
	best := -1
	for i, s := range shares {
		if best < 0 || s.Compute > shares[best].Compute {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return shares[best].Model
}

// Measurer is how the search touches the server. Advise calls it from one
// goroutine.
type Measurer interface {
	// Apply reloads the tuned model with c's settings (the rest of its
	// configuration unchanged). On failure the previous settings are
	// assumed to still serve, as a failed reload leaves them.
	Apply(ctx context.Context, c Candidate) error
	// Measure runs the load at a concurrency until it is stable (or
	// clearly over the budget) and returns what the last windows gave.
	Measure(ctx context.Context, concurrency int) (Measurement, error)
}

// Request is what to advise on.
type Request struct {
	// Model is the model whose configuration is tuned; Pipeline, when
	// set, is the model the load is sent to (an ensemble of Model, or a
	// BLS model calling it).
	Model, Pipeline string
	// Kind is the instance group kind for the snippet (KIND_CPU when
	// empty).
	Kind   string
	Budget Budget
	// Original is the model's settings as loaded, and Baseline what they
	// gave at concurrency 1; the profile is chosen from it.
	Original Candidate
	Baseline Measurement
	// MaxInstances bounds the instance count (2 when 0), and
	// MaxConcurrency the load (256 when 0).
	MaxInstances, MaxConcurrency int
	// Observe, when set, is called after each measurement.
	Observe func(*Point)
}

// Stages of the search, in order.
const (
	StageBaseline    = "baseline"
	StageInstances   = "instances"
	StageBatch       = "batch"
	StageRefine      = "refine"
	StageConfirm     = "confirm"
	StageConcurrency = "concurrency"
	StageRecheck     = "recheck"
)

// The confirmation stage measures the confirmTop best candidates
// confirmRounds more times each.
const (
	confirmTop    = 3
	confirmRounds = 2
)

// Point is one measured candidate.
type Point struct {
	// N numbers the points from 1 in the order measured.
	N         int
	Stage     string
	Candidate Candidate
	Measurement
	// Err is the reload's failure (nothing was measured).
	Err error
	// Within reports whether the point met the budget.
	Within bool
}

// Advice is the search's result.
type Advice struct {
	Model, Pipeline, Kind string
	Budget                Budget
	Profile               Profile
	// Points are every measurement, in order; Baseline is the first.
	Points []*Point
	// Curve is the latency-against-batch curve (Batch 1 without
	// dynamic batching), Knee its knee and Steps its steps.
	Curve []CurvePoint
	Knee  int
	Steps []KneeStep
	// Fit is the compute line through the curve's batches; FitOK is
	// false when too few batch sizes were executed to fit it.
	Fit   Fit
	FitOK bool
	// Finals are the best candidates, measured again (stage D).
	Finals []*Final
	// Chosen is the advice, Met whether it meets the budget (when no
	// point does, Chosen is the point with the lowest latency), and
	// Reason a line saying why it was chosen.
	Chosen *Final
	Met    bool
	Reason string
	// HoldsUpTo is the highest concurrency up to which the chosen
	// settings met the budget at every concurrency measured.
	HoldsUpTo int
	// Peak is the chosen settings' measurement at another concurrency
	// with the most throughput within the budget, when it beats the
	// medians the choice was made on.
	Peak *Point
	// Notes are things the search ran into (a batch size that failed
	// to load, a model without a batch dimension).
	Notes []string
	// Loads counts reloads; Elapsed is the search's time.
	Loads   int
	Elapsed time.Duration
}

// Pays reports whether the search found that batching pays: the fit
// exists and says so.
func (a *Advice) Pays() bool { return a.FitOK && a.Fit.Pays() }

// perInstance is the number of batches a batched candidate is measured
// with for each instance: clients for one batch running and one filling
// behind it. With only one, an instance waits, after each batch, for its
// clients to send again (Model Analyzer's quick search loads 2 ×
// max_batch_size × instances for the same reason).
const perInstance = 2

// noise is the throughput margin within which two points are taken as
// equal: the run-to-run spread of a measurement on a shared machine.
const noise = 0.05

// Advise searches for the settings of req.Model with the highest
// throughput within req.Budget, through m. The search is staged (see the
// package documentation). On an error (ctx ending included) it returns
// the advice so far with the error.
func Advise(ctx context.Context, req Request, m Measurer) (*Advice, error) {
	if req.MaxInstances <= 0 {
		req.MaxInstances = 2
	}
	if req.MaxConcurrency <= 0 {
		req.MaxConcurrency = 256
	}
	start := time.Now()
	s := &search{ctx: ctx, req: req, m: m, cur: req.Original, a: &Advice{
		Model: req.Model, Pipeline: req.Pipeline, Kind: req.Kind, Budget: req.Budget,
	}}
	base := req.Baseline
	base.Concurrency = max(base.Concurrency, 1)
	s.add(StageBaseline, req.Original, base, nil)
	s.a.Profile = ChooseProfile(req.Budget, req.Budget.Of(&base))
	err := s.run()
	if err == nil {
		err = s.confirm()
	}
	s.choose()
	if err == nil {
		err = s.concurrencies()
	}
	if err == nil {
		err = s.recheck()
	}
	s.finish()
	s.a.Elapsed = time.Since(start)
	return s.a, err
}

type search struct {
	ctx context.Context
	req Request
	m   Measurer
	a   *Advice
	cur Candidate // the settings serving now
}

func (s *search) add(stage string, c Candidate, m Measurement, err error) *Point {
	p := &Point{N: len(s.a.Points) + 1, Stage: stage, Candidate: c, Measurement: m, Err: err}
	p.Within = err == nil && s.req.Budget.Meets(&p.Measurement)
	s.a.Points = append(s.a.Points, p)
	if s.req.Observe != nil {
		s.req.Observe(p)
	}
	return p
}

// measure applies c (unless it serves already) and measures it at
// concurrency conc, or returns the point already measured. A failed
// reload comes back as a point with Err set; only the Measurer's errors
// end the search.
func (s *search) measure(stage string, c Candidate, conc int) (*Point, error) {
	conc = max(1, min(conc, s.req.MaxConcurrency))
	for _, p := range s.a.Points {
		if p.Err == nil && p.Concurrency == conc && p.Candidate.Equal(c) {
			return p, nil
		}
	}
	return s.measureAgain(stage, c, conc)
}

// measureAgain measures c at conc even when it was measured before.
func (s *search) measureAgain(stage string, c Candidate, conc int) (*Point, error) {
	conc = max(1, min(conc, s.req.MaxConcurrency))
	if !c.Equal(s.cur) {
		s.a.Loads++
		if err := s.m.Apply(s.ctx, c); err != nil {
			if cerr := s.ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return s.add(stage, c, Measurement{Concurrency: conc}, err), nil
		}
		s.cur = c
	}
	m, err := s.m.Measure(s.ctx, conc)
	if err != nil {
		return nil, err
	}
	m.Concurrency = conc
	return s.add(stage, c, m, nil), nil
}

// latency is the budget's statistic of p (the average without a budget).
func (s *search) latency(p *Point) time.Duration { return s.req.Budget.Of(&p.Measurement) }

// better orders two candidates whose throughputs are within noise of
// each other: the shorter queue delay first (no dynamic batching counts
// as none), as the delay is what a request waits when the load is too
// light to fill a batch, then the lower latency, then the higher
// throughput.
func better(c Candidate, lat time.Duration, ips float64, o Candidate, olat time.Duration, oips float64) bool {
	d, od := c.waits(), o.waits()
	switch {
	case d != od:
		return d < od
	case lat != olat:
		return lat < olat
	}
	return ips > oips
}

// best returns the point of pts to build on: among those within the
// budget, the ones within noise of the highest throughput, and of those
// the best by [better]. It returns nil when none is within the budget.
func (s *search) best(pts []*Point) *Point {
	var top float64
	for _, p := range pts {
		if p.Within {
			top = max(top, p.Throughput)
		}
	}
	var b *Point
	for _, p := range pts {
		if !p.Within || p.Throughput < (1-noise)*top {
			continue
		}
		switch {
		case b == nil, better(p.Candidate, s.latency(p), p.Throughput, b.Candidate, s.latency(b), b.Throughput):
			b = p
		}
	}
	return b
}

func (s *search) stage(names ...string) []*Point {
	var out []*Point
	for _, p := range s.a.Points {
		if slices.Contains(names, p.Stage) {
			out = append(out, p)
		}
	}
	return out
}

func (s *search) note(format string, args ...any) {
	s.a.Notes = append(s.a.Notes, fmt.Sprintf(format, args...))
}

func (s *search) run() error {
	req, prof := s.req, s.a.Profile
	orig := req.Original

	// Stage A: instances without dynamic batching, at one and two
	// requests an instance, until an instance more adds under 5%.
	var prevTop float64
	for n := 1; n <= req.MaxInstances; n++ {
		c := Candidate{Instances: n, MaxBatch: orig.MaxBatch}
		var top float64
		failed := false
		for _, conc := range []int{n, 2 * n} {
			p, err := s.measure(StageInstances, c, conc)
			if err != nil {
				return err
			}
			if p.Err != nil {
				s.note("%d instances failed to load: %v", n, p.Err)
				failed = true
				break
			}
			top = max(top, p.Throughput)
		}
		if failed || (n > 1 && top < prevTop*(1+noise)) {
			break
		}
		prevTop = max(prevTop, top)
	}
	one := s.best(s.stage(StageInstances))
	if one == nil {
		return nil
	}
	inst := one.Candidate.Instances
	if orig.MaxBatch == 0 {
		s.note("max_batch_size is 0: the model takes no batch dimension, so only instances were swept")
		return nil
	}

	// Stage B: the curve, batch b at 2b requests an instance, up to the
	// first batch over the budget or two steps that added under 5%.
	first, err := s.measure(StageInstances, Candidate{Instances: inst, MaxBatch: orig.MaxBatch}, perInstance*inst)
	if err != nil {
		return err
	}
	curvePts := []*Point{first}
	s.a.Curve = []CurvePoint{{Batch: 1, Throughput: first.Throughput, Latency: s.latency(first)}}
	for _, b := range prof.Batches {
		c := Candidate{Instances: inst, MaxBatch: b, Dynamic: true, Preferred: []int{b}, Delay: prof.Delay}
		p, err := s.measure(StageBatch, c, perInstance*b*inst)
		if err != nil {
			return err
		}
		if p.Err != nil {
			s.note("max_batch_size %d failed to load: %v", b, p.Err)
			break
		}
		curvePts = append(curvePts, p)
		s.a.Curve = append(s.a.Curve, CurvePoint{Batch: b, Throughput: p.Throughput, Latency: s.latency(p)})
		if !p.Within || perInstance*b*inst >= req.MaxConcurrency || s.saturated() {
			break
		}
	}
	var times []BatchTime
	for _, p := range curvePts {
		times = append(times, p.Batches...)
	}
	s.a.Knee, s.a.Steps = Knee(s.a.Curve)
	s.a.Fit, s.a.FitOK = FitBatches(times)

	// Stage C: around the best batch within the budget, the other delays,
	// an instance less and more, no preferred size, and room for twice
	// the batch. Skipped when batching does not pay.
	if s.a.FitOK && !s.a.Fit.Pays() {
		return nil
	}
	bp := s.best(curvePts[1:])
	if bp == nil {
		return nil
	}
	bb := bp.Candidate.MaxBatch
	tried := []*Point{bp}
	for _, d := range prof.Delays {
		p, err := s.measure(StageRefine, Candidate{Instances: inst, MaxBatch: bb, Dynamic: true, Preferred: []int{bb}, Delay: d}, perInstance*bb*inst)
		if err != nil {
			return err
		}
		tried = append(tried, p)
	}
	delay := bp.Candidate.Delay
	if p := s.best(tried); p != nil {
		delay = p.Candidate.Delay
	}
	tried = tried[:0]
	for _, n := range []int{inst - 1, inst, inst + 1} {
		if n < 1 || n > req.MaxInstances {
			continue
		}
		p, err := s.measure(StageRefine, Candidate{Instances: n, MaxBatch: bb, Dynamic: true, Preferred: []int{bb}, Delay: delay}, perInstance*bb*n)
		if err != nil {
			return err
		}
		tried = append(tried, p)
	}
	if p := s.best(tried); p != nil {
		inst = p.Candidate.Instances
	}
	if _, err := s.measure(StageRefine, Candidate{Instances: inst, MaxBatch: bb, Dynamic: true, Delay: delay}, perInstance*bb*inst); err != nil {
		return err
	}
	if _, err := s.measure(StageRefine, Candidate{Instances: inst, MaxBatch: 2 * bb, Dynamic: true, Preferred: []int{bb}, Delay: delay}, 2*perInstance*bb*inst); err != nil {
		return err
	}
	return nil
}

// saturated reports whether the curve's last two steps both added less
// throughput than the noise: larger batches would only add latency. (The
// knee comes earlier: past it, throughput still grows, only more slowly
// than latency, and the budget may allow it.)
func (s *search) saturated() bool {
	_, steps := Knee(s.a.Curve)
	n := len(steps)
	return n >= 2 && steps[n-1].ThroughputUp < noise && steps[n-2].ThroughputUp < noise
}

// top returns the n best candidates within the budget, each at the
// concurrency where it had its highest throughput, best first. When
// batching does not pay, only candidates without dynamic batching count
// (unless none is within the budget): a batch then computes no faster
// than its rows one by one, so what a batched candidate seems to gain is
// the load it was measured at, or the machine's drift.
func (s *search) top(n int) []*Final {
	unbatched := false
	if s.a.FitOK && !s.a.Fit.Pays() {
		unbatched = slices.ContainsFunc(s.a.Points, func(p *Point) bool { return p.Within && !p.Candidate.Dynamic })
	}
	var out []*Final
	for _, p := range s.a.Points {
		if !p.Within || (unbatched && p.Candidate.Dynamic) {
			continue
		}
		i := slices.IndexFunc(out, func(f *Final) bool { return f.Candidate.Equal(p.Candidate) })
		switch {
		case i < 0:
			out = append(out, &Final{Candidate: p.Candidate, Concurrency: p.Concurrency, Points: []*Point{p}})
		case p.Throughput > out[i].Points[0].Throughput:
			out[i] = &Final{Candidate: p.Candidate, Concurrency: p.Concurrency, Points: []*Point{p}}
		}
	}
	slices.SortStableFunc(out, func(a, b *Final) int {
		switch ta, tb := a.Points[0].Throughput, b.Points[0].Throughput; {
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return 0
	})
	return out[:min(n, len(out))]
}

// confirm is stage D: the best candidates measured again, in rounds that
// rotate their order, so that a machine whose speed drifts (a shared VM
// does, by 2–3× within minutes) cannot make one lucky measurement the
// advice. Each candidate's figures become the medians of its
// measurements.
func (s *search) confirm() error {
	finals := s.top(confirmTop)
	s.a.Finals = finals
	if len(finals) < 2 {
		return nil
	}
	for round := range confirmRounds {
		for i := range finals {
			f := finals[(i+round)%len(finals)]
			p, err := s.measureAgain(StageConfirm, f.Candidate, f.Concurrency)
			if err != nil {
				return err
			}
			if p.Err == nil {
				f.Points = append(f.Points, p)
			}
		}
	}
	return nil
}

// choose picks the advice among the confirmed candidates: the highest
// median throughput within the budget, and within noise of it the best
// by [better] (the shortest queue delay, then the lowest median latency).
// With no candidate within the budget it shows the point with the lowest
// latency.
func (s *search) choose() {
	a := s.a
	if a.Finals == nil {
		a.Finals = s.top(confirmTop) // the search ended before stage D
	}
	var top float64
	for _, f := range a.Finals {
		f.summarize(a.Budget)
		if f.Within {
			top = max(top, f.Throughput)
		}
	}
	for _, f := range a.Finals {
		if !f.Within || f.Throughput < (1-noise)*top {
			continue
		}
		if c := a.Chosen; c == nil || better(f.Candidate, f.Latency, f.Throughput, c.Candidate, c.Latency, c.Throughput) {
			a.Chosen = f
		}
	}
	if a.Chosen != nil {
		a.Met = true
		return
	}
	var low *Point
	for _, p := range a.Points {
		if p.Err == nil && p.Throughput > 0 && (low == nil || s.latency(p) < s.latency(low)) {
			low = p
		}
	}
	if low != nil {
		a.Chosen = &Final{Candidate: low.Candidate, Concurrency: low.Concurrency, Points: []*Point{low}}
		a.Chosen.summarize(a.Budget)
	}
}

// concurrencies is stage E: the chosen settings at concurrency 1, then
// at two, four and eight times the chosen concurrency, up to the first
// over the budget; HoldsUpTo is where they stopped meeting it.
func (s *search) concurrencies() error {
	f := s.a.Chosen
	if f == nil || !s.a.Met {
		return nil
	}
	c, conc := f.Candidate, f.Concurrency
	if _, err := s.measure(StageConcurrency, c, 1); err != nil {
		return err
	}
	for range 3 {
		if conc >= s.req.MaxConcurrency {
			break
		}
		conc *= 2
		q, err := s.measure(StageConcurrency, c, conc)
		if err != nil {
			return err
		}
		if !q.Within {
			break
		}
	}
	return nil
}

// drift is how far the baseline may move between the start and the end
// of the search before the advice warns that the machine's speed changed.
const drift = 0.25

// recheck measures the baseline again at the end: a machine whose speed
// changed during the search (a shared VM's does) made its figures hard
// to compare, and the report says so.
func (s *search) recheck() error {
	base := s.a.Points[0]
	p, err := s.measureAgain(StageRecheck, base.Candidate, base.Concurrency)
	if err != nil || p.Err != nil || base.Throughput <= 0 {
		return err
	}
	if r := p.Throughput / base.Throughput; r < 1-drift || r > 1/(1-drift) {
		s.note("the baseline gave %.1f infer/s at the start and %.1f at the end (#%d): the machine's speed changed during the advice, so figures measured far apart compare poorly; on a shared machine, run it again", base.Throughput, p.Throughput, p.N)
	}
	return nil
}

// finish writes why the advice was chosen and how far it holds.
func (s *search) finish() {
	a := s.a
	f := a.Chosen
	if f == nil {
		return
	}
	stat := a.Budget.Stat()
	if !a.Met {
		a.Reason = fmt.Sprintf("no setting measured met %s; #%d had the lowest %s, %s ms, and is shown instead",
			a.Budget, f.Points[0].N, stat, formatMS(f.Latency))
		return
	}
	within := "within " + a.Budget.String()
	if a.Budget.Limit == 0 {
		within = "(no latency budget)"
	}
	what := "its measurement"
	if len(f.Points) > 1 {
		what = fmt.Sprintf("the medians of its %d measurements (%s)", len(f.Points), pointList(f.Points))
	}
	var top *Final
	for _, g := range a.Finals {
		if g.Within && (top == nil || g.Throughput > top.Throughput) {
			top = g
		}
	}
	if top == f || top == nil {
		a.Reason = fmt.Sprintf("the highest throughput %s", within)
	} else {
		why := "the lowest " + stat
		if f.Candidate.waits() < top.Candidate.waits() {
			why = "a shorter queue delay (what a request waits when the load is too light to fill a batch)"
		}
		a.Reason = fmt.Sprintf("within %.0f%% (the measurements' noise) of the highest throughput %s, %.1f infer/s (#%d), with %s",
			noise*100, within, top.Throughput, top.Points[0].N, why)
	}
	if a.FitOK && !a.Fit.Pays() && !f.Candidate.Dynamic {
		a.Reason += " without dynamic batching (which does not pay here, so only such settings were compared)"
	}
	a.Reason += fmt.Sprintf(": %.1f infer/s at %s %s ms, concurrency %d, by %s", f.Throughput, stat, formatMS(f.Latency), f.Concurrency, what)
	var same []*Point
	for _, p := range a.Points {
		if p.Err == nil && p.Candidate.Equal(f.Candidate) && p.Stage != StageConfirm {
			same = append(same, p)
		}
	}
	slices.SortStableFunc(same, func(x, y *Point) int { return x.Concurrency - y.Concurrency })
	for _, p := range same {
		if !p.Within {
			break
		}
		a.HoldsUpTo = p.Concurrency
	}
	for _, p := range same {
		if p.Within && p.Concurrency != f.Concurrency && p.Throughput > f.Throughput && (a.Peak == nil || p.Throughput > a.Peak.Throughput) {
			a.Peak = p
		}
	}
}

func pointList(ps []*Point) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "#" + strconv.Itoa(p.N)
	}
	return strings.Join(s, ", ")
}

// Final is a candidate the advice may be, at one concurrency, with every
// measurement of it there and their medians.
type Final struct {
	Candidate   Candidate
	Concurrency int
	// Points are its measurements, the search's first.
	Points []*Point
	// Throughput and Latency (the budget's statistic) are the medians
	// of the Points; Within whether that latency meets the budget.
	Throughput float64
	Latency    time.Duration
	Within     bool
}

func (f *Final) summarize(b Budget) {
	ts := make([]float64, len(f.Points))
	ls := make([]time.Duration, len(f.Points))
	for i, p := range f.Points {
		ts[i], ls[i] = p.Throughput, b.Of(&p.Measurement)
	}
	f.Throughput, f.Latency = median(ts), median(ls)
	f.Within = f.Throughput > 0 && (b.Limit == 0 || f.Latency <= b.Limit)
}

// median is the middle value (the mean of the two middle ones for an
// even count).
func median[T float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	n := len(ys)
	if n%2 == 1 {
		return ys[n/2]
	}
	return (ys[n/2-1] + ys[n/2]) / 2
}
