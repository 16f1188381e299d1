package perfreport

import (
	"bytes"
	"html/template"
	"math"
	"slices"
	"strconv"
	"time"
)

// html.go writes report.html: one file that needs nothing else (CSS
// inline, figures as inline SVG, no scripts, no links), so it can be
// mailed or attached to an issue as it is.

// table is the steps as perf_analyzer's CSV has them: the same columns
// (with label and batch size first when they vary), the same figures (µs
// truncated, throughput with six significant digits), in the order of
// the curves rather than of throughput.
func (r *Report) table() (head []string, rows [][]string) {
	steps := r.sortedSteps()
	labels := slices.ContainsFunc(steps, func(s Step) bool { return s.Label != "" })
	batches := len(r.batchSizes()) > 1
	if labels {
		head = append(head, "Configuration")
	}
	if batches {
		head = append(head, "Batch Size")
	}
	if r.RateMode {
		head = append(head, "Request Rate")
	} else {
		head = append(head, "Concurrency")
	}
	head = append(head, "Inferences/Second")
	if r.Decoupled {
		head = append(head, "Response Throughput")
	}
	head = append(head, "Client Send")
	if r.ServerStats {
		head = append(head, "Network+Server Send/Recv", "Server Queue", "Server Compute Input", "Server Compute Infer", "Server Compute Output")
		if r.Cache {
			head = append(head, "Server Cache Hit", "Server Cache Miss")
		}
	}
	head = append(head, "Client Recv")
	var ps []int
	if len(steps) > 0 {
		for _, p := range steps[0].Latency.Percentiles {
			ps = append(ps, p.P)
			head = append(head, "p"+strconv.Itoa(p.P)+" latency")
		}
	}
	head = append(head, "Avg latency")
	for _, s := range steps {
		var row []string
		if labels {
			row = append(row, s.Label)
		}
		if batches {
			row = append(row, strconv.FormatUint(s.BatchSize, 10))
		}
		if r.RateMode {
			row = append(row, double(s.RequestRate))
		} else {
			row = append(row, strconv.FormatUint(s.Concurrency, 10))
		}
		row = append(row, double(s.Throughput))
		if r.Decoupled {
			row = append(row, double(s.ResponseThroughput))
		}
		sp := s.Split
		row = append(row, us(sp.ClientSend))
		if r.ServerStats {
			row = append(row, us(sp.Network), us(sp.Queue), us(sp.ComputeInput), us(sp.ComputeInfer), us(sp.ComputeOutput))
			if r.Cache {
				row = append(row, us(sp.CacheHit), us(sp.CacheMiss))
			}
		}
		row = append(row, us(sp.ClientRecv))
		for _, p := range ps {
			v, ok := s.Latency.Percentile(p)
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, us(v))
		}
		row = append(row, us(s.Latency.Avg))
		rows = append(rows, row)
	}
	return head, rows
}

// us is a duration in whole microseconds, truncated, as the CSV has it.
func us(d time.Duration) string { return strconv.FormatInt(int64(d/time.Microsecond), 10) }

// double is a number as a default C++ stream prints it, as the CSV has
// it: six significant digits ("1407.84", "10", "1.23457e+06").
func double(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 0):
		if x > 0 {
			return "inf"
		}
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// A pageFigure is a figure on the page: its SVG, inline.
type pageFigure struct {
	Title string
	Name  string
	SVG   template.HTML
}

type page struct {
	Title     string
	Settings  []Setting
	Head      []string
	Rows      [][]string
	Figures   []pageFigure
	HasServer bool
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 2em auto; max-width: 72em; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; }
th { background: #f4f4f4; text-align: left; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
figure { margin: 1.5em 0; }
figure svg { width: 100%; max-width: 672px; height: auto; display: block; }
figcaption { color: #555; font-size: 0.9em; }
p.note { color: #555; font-size: 0.9em; max-width: 50em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<h2>Settings</h2>
<table>
{{- range .Settings}}
<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>
{{- end}}
</table>
<h2>Results</h2>
<p class="note">One row per stable step. Times are in microseconds, truncated, and
throughputs per second, as perf_analyzer's CSV file has them.{{if .HasServer}}
Network+Server Send/Recv is the client's wait for the response less the time the
server accounted for (queue, compute, cache).{{end}}</p>
<div class="scroll">
<table>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{- range .Rows}}
<tr>{{range .}}<td class="n">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
</div>
<h2>Figures</h2>
{{- range .Figures}}
<figure>
{{.SVG}}
<figcaption>{{.Title}} ({{.Name}}.png, {{.Name}}.svg)</figcaption>
</figure>
{{- end}}
</body>
</html>
`))

// html renders the page with the figures' SVGs.
func (r *Report) html(figs []figure, svgs [][]byte) ([]byte, error) {
	head, rows := r.table()
	pg := page{Title: r.title(), Settings: r.Settings, Head: head, Rows: rows, HasServer: r.ServerStats}
	for i, f := range figs {
		pg.Figures = append(pg.Figures, pageFigure{Title: f.title, Name: f.name, SVG: template.HTML(inlineSVG(svgs[i]))})
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, pg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// inlineSVG is an SVG file as an element of an HTML page: from <svg on,
// without the XML declaration and comments before it.
func inlineSVG(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		return b[i:]
	}
	return b
}
