package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The size of every plot: 672×432 pixels at vgimg's 96 dots an inch.
const (
	width  = 7 * vg.Inch
	height = 4.5 * vg.Inch
)

// A spec declares one plot.
type spec struct {
	In, Out        string // file names, under -in and -out
	Title          string
	XLabel, YLabel string
	Metric         string  // the unit plotted, as the benchmark printed it ("req/s", "ns/op")
	Scale          float64 // the metric is multiplied by it (0 means 1), e.g. 1e-3 for ns to µs
	LogX, LogY     bool
	LegendLeft     bool    // legend in the top left corner instead of the top right
	LegendBottom   bool    // legend at the bottom instead of the top
	Headroom       float64 // the share of the y axis above the data, left for the legend (0 to <1)
	Curves         []curve
	Target         target // a horizontal line, when its Label is set
}

// A target is a value the curves are held to, drawn across the plot.
type target struct {
	Label string
	Y     float64
}

// A curve is the results whose names match a pattern.
type curve struct {
	Label string
	// Match selects the results (names without the -GOMAXPROCS suffix).
	// A group named x gives a point's x; without one, every match is at X.
	Match *regexp.Regexp
	X     float64
	// Units, when set, selects the values of each result instead of the
	// spec's Metric: one point for each unit it matches, its group named x
	// giving the point's x (a benchmark that reports "batch4-ms/page" and
	// "batch16-ms/page" from interleaved rounds).
	Units *regexp.Regexp
}

// A point is the runs of one benchmark: their median, lowest and highest.
type point struct{ x, median, low, high float64 }

// points gathers a curve's points in the order of x.
func (s *spec) points(rs []result, c curve) ([]point, error) {
	scale := s.Scale
	if scale == 0 {
		scale = 1
	}
	xi := c.Match.SubexpIndex("x")
	runs := map[float64][]float64{}
	for _, r := range rs {
		m := c.Match.FindStringSubmatch(r.name)
		if m == nil {
			continue
		}
		if c.Units != nil {
			for unit, v := range r.values {
				if u := c.Units.FindStringSubmatch(unit); u != nil {
					x, err := strconv.ParseFloat(u[c.Units.SubexpIndex("x")], 64)
					if err != nil {
						return nil, fmt.Errorf("%s: x of %s's %s: %w", s.In, r.name, unit, err)
					}
					runs[x] = append(runs[x], v*scale)
				}
			}
			continue
		}
		v, ok := r.values[s.Metric]
		if !ok {
			return nil, fmt.Errorf("%s: %s has no %s", s.In, r.name, s.Metric)
		}
		x := c.X
		if xi >= 0 {
			var err error
			if x, err = strconv.ParseFloat(m[xi], 64); err != nil {
				return nil, fmt.Errorf("%s: x of %s: %w", s.In, r.name, err)
			}
		}
		runs[x] = append(runs[x], v*scale)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no result matches %s (curve %q)", s.In, c.Match, c.Label)
	}
	var ps []point
	for x, vs := range runs {
		slices.Sort(vs)
		ps = append(ps, point{x: x, median: median(vs), low: vs[0], high: vs[len(vs)-1]})
	}
	slices.SortFunc(ps, func(a, b point) int { return cmpFloat(a.x, b.x) })
	return ps, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// median of sorted values: the mean of the two middle ones for an even count.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// render draws a spec's curves from the results.
func (s *spec) render(rs []result) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = s.Title
	p.X.Label.Text = s.XLabel
	p.Y.Label.Text = s.YLabel
	p.Legend.Top = !s.LegendBottom
	p.Legend.Left = s.LegendLeft
	if !s.LegendLeft {
		p.Legend.XOffs = -vg.Points(6) // clear of the frame's right edge
	}
	p.Add(plotter.NewGrid())
	var xs []float64
	for i, c := range s.Curves {
		ps, err := s.points(rs, c)
		if err != nil {
			return nil, err
		}
		xys := make(plotter.XYs, len(ps))
		errs := make(plotter.YErrors, len(ps))
		spread := false
		for j, pt := range ps {
			xys[j] = plotter.XY{X: pt.x, Y: pt.median}
			errs[j].Low, errs[j].High = pt.median-pt.low, pt.high-pt.median
			spread = spread || pt.high > pt.low
			xs = append(xs, pt.x)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		points.Radius = vg.Points(3)
		if len(ps) > 1 {
			p.Add(line)
		}
		p.Add(points)
		p.Legend.Add(c.Label, line, points)
		if spread {
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYs
				plotter.YErrors
			}{xys, errs})
			if err != nil {
				return nil, err
			}
			bars.Color = plotutil.Color(i)
			p.Add(bars)
		}
	}
	if s.Target.Label != "" {
		f := plotter.NewFunction(func(float64) float64 { return s.Target.Y })
		f.Color = color.Gray{Y: 96}
		f.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(f)
		p.Legend.Add(s.Target.Label, f)
	}
	// Room around the data, so that no point sits on the frame, and above
	// it for the legend when asked.
	if s.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = p.X.Min/1.25, p.X.Max*1.25
	} else {
		pad := (p.X.Max - p.X.Min) * 0.04
		p.X.Min, p.X.Max = p.X.Min-pad, p.X.Max+pad
	}
	p.X.Tick.Marker = valueTicks(xs)
	if s.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*1.5
		p.Y.Max = p.Y.Min * math.Pow(p.Y.Max/p.Y.Min, 1/(1-s.Headroom))
	} else {
		// A linear axis starts at zero, so that heights compare.
		p.Y.Min = math.Min(p.Y.Min, 0)
		p.Y.Max += (p.Y.Max - p.Y.Min) * 0.04
		p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-s.Headroom)
	}
	return p, nil
}

// valueTicks labels the x axis at the benchmarks' own parameter values.
func valueTicks(xs []float64) plot.ConstantTicks {
	slices.Sort(xs)
	xs = slices.Compact(xs)
	ticks := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		ticks[i] = plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)}
	}
	return ticks
}

// decadeTicks labels a log axis at 1, 10, 100, 1k, …, with minor ticks at
// 2–9 times each.
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for k := 1.0; k < 10; k++ {
			v := k * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 {
				t.Label = siLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// siLabel writes a power of ten as 1, 10, 100, 1k, 10k, …, 1M, …
func siLabel(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// drawAll renders every spec from its file under in to a PNG under out.
func drawAll(in, out string, specs []spec) ([]string, error) {
	var written []string
	for i := range specs {
		s := &specs[i]
		f, err := os.Open(filepath.Join(in, s.In))
		if err != nil {
			return written, err
		}
		rs, err := parse(f)
		f.Close()
		if err != nil {
			return written, fmt.Errorf("%s: %w", s.In, err)
		}
		p, err := s.render(rs)
		if err != nil {
			return written, err
		}
		path := filepath.Join(out, s.Out)
		if err := p.Save(width, height, path); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}
