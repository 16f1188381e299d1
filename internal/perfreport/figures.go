package perfreport

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"time"
)

// figures.go turns a Report into what each figure shows, as numbers:
// curves of points, or stacks of bar segments. Drawing (plot.go) adds
// only style, so the tests check the data here.

// A figure is one picture: its file name (without extension), titles,
// and either curves or bars.
type figure struct {
	name           string
	title          string
	xLabel, yLabel string
	curves         []curve
	// bars: one stack per step, one segment per part, bottom first;
	// labels are the bars' x labels, groups split them into runs of
	// one configuration, drawn apart.
	bars   []segment
	labels []string
	groups []barGroup
}

// A barGroup is a run of n consecutive bars of one configuration; its
// name ("" for the only one) is written under them.
type barGroup struct {
	name string
	n    int
}

// A curve is a line through points, drawn in its group's colour with
// its metric's dashes and marker.
type curve struct {
	label  string
	group  int // colour
	metric int // dashes and marker
	points []xy
}

type xy struct{ x, y float64 }

// A segment is one part of every bar (queue, compute, ...), its height
// in each bar.
type segment struct {
	label  string
	color  color.Color
	values []float64
}

// A group is the steps of one curve: one label and batch size, in the
// order of their load.
type group struct {
	name  string // "" when the report has one group
	steps []Step
}

// groups splits the steps by label and batch size.
func (r *Report) groups() []group {
	var gs []group
	multiBatch := len(r.batchSizes()) > 1
	for _, s := range r.sortedSteps() {
		if n := len(gs); n > 0 && gs[n-1].steps[0].Label == s.Label && gs[n-1].steps[0].BatchSize == s.BatchSize {
			gs[n-1].steps = append(gs[n-1].steps, s)
			continue
		}
		name := s.Label
		if multiBatch {
			if name != "" {
				name += ", "
			}
			name += fmt.Sprintf("batch %d", s.BatchSize)
		}
		gs = append(gs, group{name: name, steps: []Step{s}})
	}
	if len(gs) == 1 {
		gs[0].name = ""
	}
	return gs
}

// A unit is how durations are shown on an axis.
type unit struct {
	name string
	per  time.Duration
}

// unitFor picks µs below a millisecond, ms above.
func unitFor(longest time.Duration) unit {
	if longest < time.Millisecond {
		return unit{"µs", time.Microsecond}
	}
	return unit{"ms", time.Millisecond}
}

func (u unit) of(d time.Duration) float64 { return float64(d) / float64(u.per) }

// The latency metrics drawn, in legend order.
var latencyMetrics = []struct {
	name string
	get  func(Latency) (time.Duration, bool)
}{
	{"p50", func(l Latency) (time.Duration, bool) { return l.Percentile(50) }},
	{"avg", func(l Latency) (time.Duration, bool) { return l.Avg, true }},
	{"p99", func(l Latency) (time.Duration, bool) { return l.Percentile(99) }},
}

func (r *Report) loadLabel() string {
	if r.RateMode {
		return "request rate (requests/s)"
	}
	return "concurrency (requests in flight)"
}

func (r *Report) loadName() string {
	if r.RateMode {
		return "request rate"
	}
	return "concurrency"
}

// longest is the largest latency a figure shows, for its unit.
func (r *Report) longest() time.Duration {
	var d time.Duration
	for i := range r.Steps {
		s := &r.Steps[i]
		for _, m := range latencyMetrics {
			if v, ok := m.get(s.Latency); ok {
				d = max(d, v)
			}
		}
	}
	return d
}

// throughputFigure is inferences/s against the load, a curve per group.
func (r *Report) throughputFigure() figure {
	f := figure{
		name:   "throughput",
		title:  "Throughput against " + r.loadName(),
		xLabel: r.loadLabel(),
		yLabel: "throughput (inferences/s)",
	}
	for i, g := range r.groups() {
		c := curve{label: g.name, group: i}
		for j := range g.steps {
			c.points = append(c.points, xy{r.level(&g.steps[j]), g.steps[j].Throughput})
		}
		f.curves = append(f.curves, c)
	}
	return f
}

// latencyFigure is p50, average and p99 latency against the load, for
// each group.
func (r *Report) latencyFigure() figure {
	u := unitFor(r.longest())
	f := figure{
		name:   "latency",
		title:  "Latency against " + r.loadName(),
		xLabel: r.loadLabel(),
		yLabel: "latency (" + u.name + ")",
	}
	gs := r.groups()
	for i, g := range gs {
		for k, m := range latencyMetrics {
			c := curve{label: joinLabel(g.name, m.name), group: i, metric: k}
			if len(gs) == 1 {
				c.group = k // one group: a colour per metric
			}
			for j := range g.steps {
				if v, ok := m.get(g.steps[j].Latency); ok {
					c.points = append(c.points, xy{r.level(&g.steps[j]), u.of(v)})
				}
			}
			if len(c.points) > 0 {
				f.curves = append(f.curves, c)
			}
		}
	}
	return f
}

func joinLabel(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// batchFigure is latency against batch size, drawn when the steps have
// several batch sizes: at one load level (and label), p50, average and
// p99; at several, p99 alone, a curve per level. ok is false for one
// batch size.
func (r *Report) batchFigure() (f figure, ok bool) {
	if len(r.batchSizes()) < 2 {
		return f, false
	}
	u := unitFor(r.longest())
	f = figure{
		name:   "latency-vs-batch",
		title:  "Latency against batch size",
		xLabel: "batch size",
		yLabel: "latency (" + u.name + ")",
	}
	type key struct {
		label string
		level float64
	}
	var keys []key
	byKey := map[key][]Step{}
	for _, s := range r.sortedSteps() {
		k := key{s.Label, r.level(&s)}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], s)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.label, b.label), cmp.Compare(a.level, b.level)) })
	metrics := latencyMetrics
	if len(keys) > 1 {
		metrics = latencyMetrics[2:] // p99
		f.title = "p99 latency against batch size"
		keys = spread(keys, maxBatchCurves)
	}
	for i, k := range keys {
		name := ""
		if len(keys) > 1 {
			name = joinLabel(k.label, r.loadName()+" "+strconv.FormatFloat(k.level, 'g', -1, 64))
		}
		steps := byKey[k]
		slices.SortStableFunc(steps, func(a, b Step) int { return cmp.Compare(a.BatchSize, b.BatchSize) })
		for j, m := range metrics {
			// A curve per level: colour, dashes and marker all change,
			// so that levels stay apart past the palette's seven colours.
			c := curve{label: name, group: i, metric: i}
			if len(keys) == 1 {
				c.label, c.group, c.metric = m.name, j, j
			}
			for _, s := range steps {
				if v, ok := m.get(s.Latency); ok {
					c.points = append(c.points, xy{float64(s.BatchSize), u.of(v)})
				}
			}
			if len(c.points) > 0 {
				f.curves = append(f.curves, c)
			}
		}
	}
	return f, true
}

// maxBatchCurves is the most load levels drawn against batch size; a
// longer sweep is thinned to that many, first and last kept.
const maxBatchCurves = 8

// spread keeps n of xs, evenly spaced, the first and the last among them.
func spread[T any](xs []T, n int) []T {
	if len(xs) <= n {
		return xs
	}
	out := make([]T, n)
	for i := range n {
		out[i] = xs[i*(len(xs)-1)/(n-1)]
	}
	return out
}

// The parts of the time split, bottom first: the server's, then the
// client's, then the rest. Colours are Okabe and Ito's, which stay apart
// for colour-blind readers; the rest is grey.
var splitParts = []struct {
	label string
	color color.Color
	get   func(Split) time.Duration
}{
	{"server queue", rgb(0xE69F00), func(s Split) time.Duration { return s.Queue }},
	{"compute input", rgb(0x56B4E9), func(s Split) time.Duration { return s.ComputeInput }},
	{"compute infer", rgb(0x0072B2), func(s Split) time.Duration { return s.ComputeInfer }},
	{"compute output", rgb(0x009E73), func(s Split) time.Duration { return s.ComputeOutput }},
	{"cache hit", rgb(0xCC79A7), func(s Split) time.Duration { return s.CacheHit }},
	{"cache miss", rgb(0xD55E00), func(s Split) time.Duration { return s.CacheMiss }},
	{"client send", rgb(0xF0E442), func(s Split) time.Duration { return s.ClientSend }},
	{"client receive", rgb(0xBBAA22), func(s Split) time.Duration { return s.ClientRecv }},
	{"network + server overhead", color.Gray{Y: 0xA8}, func(s Split) time.Duration { return s.Network }},
}

func rgb(c uint32) color.RGBA {
	return color.RGBA{R: uint8(c >> 16), G: uint8(c >> 8), B: uint8(c), A: 0xff}
}

// splitFigure stacks each step's split: a bar per step, in the table's
// order, a segment per part that is not zero in every step.
func (r *Report) splitFigure() figure {
	steps := r.sortedSteps()
	var longest time.Duration
	for _, s := range steps {
		var sum time.Duration
		for _, p := range splitParts {
			sum += p.get(s.Split)
		}
		longest = max(longest, sum)
	}
	u := unitFor(longest)
	f := figure{
		name:   "time-split",
		title:  "Where an average request's time goes",
		xLabel: r.loadName(),
		yLabel: "average time per request (" + u.name + ")",
	}
	gs := r.groups()
	for _, g := range gs {
		for j := range g.steps {
			f.labels = append(f.labels, strconv.FormatFloat(r.level(&g.steps[j]), 'g', -1, 64))
		}
		f.groups = append(f.groups, barGroup{g.name, len(g.steps)})
	}
	for _, p := range splitParts {
		seg := segment{label: p.label, color: p.color}
		nonzero := false
		for _, g := range gs {
			for _, s := range g.steps {
				v := p.get(s.Split)
				nonzero = nonzero || v != 0
				seg.values = append(seg.values, u.of(v))
			}
		}
		if p.label == "network + server overhead" && !r.ServerStats {
			seg.label = "response wait (no server statistics)"
		}
		if nonzero {
			f.bars = append(f.bars, seg)
		}
	}
	return f
}

// figures are the report's figures, in the page's order.
func (r *Report) figures() []figure {
	fs := []figure{r.throughputFigure(), r.latencyFigure()}
	if f, ok := r.batchFigure(); ok {
		fs = append(fs, f)
	}
	return append(fs, r.splitFigure())
}
