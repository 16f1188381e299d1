package perfreport

import (
	"bytes"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// plot.go draws a figure with gonum/plot, in internal/benchplot's style:
// the same size, a grid, plotutil's colours, dashes and markers, linear
// axes from zero, ticks at the measured values. The legend stands right
// of the plot, where it hides no data.

// The size of every figure: 672×432 pixels at vgimg's 96 dots an inch.
const (
	width  = 7 * vg.Inch
	height = 4.5 * vg.Inch
	dpi    = 96
)

// maxValueTicks is the most measured values labelled on an x axis;
// beyond it the axis gets gonum's default ticks.
const maxValueTicks = 16

// png and svg render a figure in each format.
func (f *figure) png() ([]byte, error) {
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))}
	return f.render(c)
}

func (f *figure) svg() ([]byte, error) {
	return f.render(vgsvg.New(width, height))
}

func (f *figure) render(c vg.CanvasWriterTo) ([]byte, error) {
	if err := f.draw(draw.New(c)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// draw builds the plot and its legend and draws them on dc.
func (f *figure) draw(dc draw.Canvas) error {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = f.xLabel
	p.Y.Label.Text = f.yLabel
	grid := plotter.NewGrid()
	if f.bars != nil {
		grid.Vertical.Color = nil // bars need no lines through them
	}
	p.Add(grid)
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.Padding = vg.Points(2)
	var err error
	if f.bars != nil {
		err = f.addBars(p, &leg)
	} else {
		err = f.addCurves(p, &leg)
	}
	if err != nil {
		return err
	}
	// A linear axis starts at zero, so that heights compare.
	p.Y.Min = math.Min(p.Y.Min, 0)
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	p.Y.Max += (p.Y.Max - p.Y.Min) * 0.04
	p.Y.Tick.Marker = niceTicks{}

	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	lw := leg.Rectangle(dc).Size().X
	if lw == 0 {
		p.Draw(dc)
		return nil
	}
	pad := vg.Points(10)
	p.Draw(draw.Crop(dc, 0, -(lw + 2*pad), 0, 0))
	// The legend's top at the plot area's, below the title.
	top := p.Title.TextStyle.Height(p.Title.Text) + p.Title.Padding + pad
	leg.Draw(draw.Crop(dc, dc.Size().X-lw-pad, -pad, 0, -top))
	return nil
}

func (f *figure) addCurves(p *plot.Plot, leg *plot.Legend) error {
	var xs []float64
	for _, c := range f.curves {
		xys := make(plotter.XYs, len(c.points))
		for i, pt := range c.points {
			xys[i] = plotter.XY{X: pt.x, Y: pt.y}
			xs = append(xs, pt.x)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(c.group)
		line.Dashes = plotutil.Dashes(c.metric)
		points.Color = plotutil.Color(c.group)
		points.Shape = plotutil.Shape(c.metric)
		points.Radius = vg.Points(3)
		if len(xys) > 1 {
			p.Add(line)
		}
		p.Add(points)
		if c.label != "" {
			leg.Add(c.label, line, points)
		}
	}
	// Room around the data, so that no point sits on the frame.
	pad := (p.X.Max - p.X.Min) * 0.04
	if pad == 0 {
		pad = math.Max(math.Abs(p.X.Min)*0.1, 0.5)
	}
	p.X.Min, p.X.Max = p.X.Min-pad, p.X.Max+pad
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if len(xs) <= maxValueTicks {
		ticks := make(plot.ConstantTicks, len(xs))
		for i, x := range xs {
			ticks[i] = plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)}
		}
		p.X.Tick.Marker = ticks
	}
	return nil
}

// groupGap is the space between the bars of two configurations, in bar
// slots.
const groupGap = 0.8

// addBars stacks the segments, one bar per label, the groups apart with
// their names under them; the legend lists the segments top first, as
// they stand.
func (f *figure) addBars(p *plot.Plot, leg *plot.Legend) error {
	slots := float64(len(f.labels)) + groupGap*float64(len(f.groups)-1)
	// Bars take 60% of their slot in a plot area about 4.5 inches wide.
	w := min(vg.Points(40), vg.Length(0.6*4.5*72/max(slots, 1)))
	thumbs := make([]plot.Thumbnailer, len(f.bars))
	var ticks plot.ConstantTicks
	pos, start := 0.0, 0
	for _, g := range f.groups {
		var below *plotter.BarChart
		for k, s := range f.bars {
			b, err := plotter.NewBarChart(plotter.Values(s.values[start:start+g.n]), w)
			if err != nil {
				return err
			}
			b.XMin = pos
			b.Color = s.color
			b.LineStyle.Width = vg.Points(0.5)
			b.LineStyle.Color = color.White
			if below != nil {
				b.StackOn(below)
			}
			below = b
			p.Add(b)
			if thumbs[k] == nil {
				thumbs[k] = b
			}
		}
		for j := range g.n {
			ticks = append(ticks, plot.Tick{Value: pos + float64(j), Label: f.labels[start+j]})
		}
		if g.name != "" {
			// On the line below the levels, centred under the group.
			ticks = append(ticks, plot.Tick{Value: pos + float64(g.n-1)/2, Label: "\n" + g.name})
		}
		pos += float64(g.n) + groupGap
		start += g.n
	}
	for i := len(f.bars) - 1; i >= 0; i-- {
		leg.Add(f.bars[i].label, thumbs[i])
	}
	p.X.Tick.Marker = ticks
	p.X.Tick.Width, p.X.Tick.Length, p.X.Width = 0, 0, 0
	p.X.Min, p.X.Max = -0.6, pos-groupGap-0.4
	return nil
}

// niceTicks labels a linear axis every 1, 2 or 5 times a power of ten,
// eight intervals at most, in the fewest digits ("250k", "0.5M", "0.2").
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, k := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = k * mag
	}
	// Thousands and millions as k and M on axes that reach 10k and 1M.
	div, suffix := 1.0, ""
	switch {
	case hi >= 1e6 && step >= 1e5:
		div, suffix = 1e6, "M"
	case hi >= 1e4 && step >= 1e2:
		div, suffix = 1e3, "k"
	}
	decimals := max(0, int(-math.Floor(math.Log10(step/div)+1e-9)))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi*(1+1e-12); i++ {
		v := i * step
		label := "0"
		if v != 0 {
			label = strconv.FormatFloat(v/div, 'f', decimals, 64) + suffix
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}
