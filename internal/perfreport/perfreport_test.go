package perfreport

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"image"
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// synthetic is a report of levels 1..n at each batch size: throughput
// 1000·c·b, latency percentiles p50 = 100µs·c·b + 7ns (truncated away in
// the table), p99 = 3·p50, avg = 1.5·p50, and a split whose parts are
// fixed fractions of the average.
func synthetic(n int, batches ...uint64) Report {
	r := Report{
		Model: "m", Version: "1", Source: "in-process", ServerStats: true,
		Settings: []Setting{{"Batch size", "1"}, {"Measurement window", "500 msec"}},
	}
	for _, b := range batches {
		for c := 1; c <= n; c++ {
			p50 := time.Duration(c)*time.Duration(b)*100*time.Microsecond + 7
			avg := p50 * 3 / 2
			r.Steps = append(r.Steps, Step{
				BatchSize: b, Concurrency: uint64(c),
				Throughput: 1000 * float64(c) * float64(b), Requests: 100,
				Latency: Latency{Avg: avg, Percentiles: []Percentile{{50, p50}, {90, p50 * 2}, {95, p50 * 5 / 2}, {99, p50 * 3}}},
				Split: Split{
					Queue: avg / 10, ComputeInput: avg / 20, ComputeInfer: avg / 2,
					ComputeOutput: avg / 20, Network: avg - avg/10 - avg/20 - avg/2 - avg/20,
				},
			})
		}
	}
	return r
}

// TestWrite writes a report of two batch sizes and checks every file:
// PNGs decode with the house size, SVGs are XML, the page has every
// table figure and every SVG and nothing from outside.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	r := synthetic(4, 1, 4)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"throughput.png", "throughput.svg", "latency.png", "latency.svg",
		"latency-vs-batch.png", "latency-vs-batch.svg", "time-split.png", "time-split.svg",
		"report.html",
	}
	if got := Files(r); !slices.Equal(got, want) {
		t.Errorf("Files = %v, want %v", got, want)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if wantAll := append(slices.Clone(want), "report.json"); !sameSet(names, wantAll) {
		t.Errorf("folder holds %v, want %v", names, wantAll)
	}
	checkFiles(t, dir, r)
}

// checkFiles checks the files of a report written into dir.
func checkFiles(t *testing.T, dir string, r Report) {
	t.Helper()
	page := read(t, filepath.Join(dir, "report.html"))
	for _, name := range Files(r) {
		b := read(t, filepath.Join(dir, name))
		switch filepath.Ext(name) {
		case ".png":
			cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
			if err != nil || format != "png" {
				t.Errorf("%s: %v (format %q)", name, err, format)
			} else if cfg.Width != 672 || cfg.Height != 432 {
				t.Errorf("%s: %d×%d, want 672×432", name, cfg.Width, cfg.Height)
			}
		case ".svg":
			if err := wellFormed(b); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if !bytes.Contains(page, inlineSVG(b)) {
				t.Errorf("report.html does not embed %s", name)
			}
		}
	}
	checkPage(t, page, r)
}

// checkPage checks that the page is well-formed XML-ish HTML with no
// external reference, and that its table holds the report's table.
func checkPage(t *testing.T, page []byte, r Report) {
	t.Helper()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).Find(page); m != nil {
		t.Errorf("report.html refers outside itself: %s", m)
	}
	if m := regexp.MustCompile(`(?i)<script|<link|@import|url\(`).Find(page); m != nil {
		t.Errorf("report.html loads something: %s", m)
	}
	if err := wellFormed(page[bytes.Index(page, []byte("<html")):]); err != nil {
		t.Errorf("report.html: %v", err)
	}
	cells := regexp.MustCompile(`<tr>((?:<td class="n">[^<]*</td>)+)</tr>`).FindAllSubmatch(page, -1)
	var got [][]string
	for _, c := range cells {
		var row []string
		for _, m := range regexp.MustCompile(`<td class="n">([^<]*)</td>`).FindAllSubmatch(c[1], -1) {
			row = append(row, html.UnescapeString(string(m[1])))
		}
		got = append(got, row)
	}
	_, want := r.table()
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("table rows\n got %q\nwant %q", got, want)
	}
	for _, s := range r.Settings {
		if !bytes.Contains(page, []byte("<tr><th>"+html.EscapeString(s.Name)+"</th><td>"+html.EscapeString(s.Value)+"</td></tr>")) {
			t.Errorf("report.html lacks the setting %q", s)
		}
	}
}

// wellFormed parses b as XML to its end. The HTML page passes too: it
// has no void elements but <meta>, which the parser is told about.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.AutoClose = []string{"meta"}
	d.Entity = xml.HTMLEntity
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestTable checks the table's columns and its figures' format: the
// CSV's whole microseconds (truncated) and six significant digits.
func TestTable(t *testing.T) {
	r := synthetic(2, 1)
	r.Steps[1].Throughput = 1234567.9
	head, rows := r.table()
	wantHead := "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency"
	if got := strings.Join(head, ","); got != wantHead {
		t.Errorf("head\n got %s\nwant %s", got, wantHead)
	}
	// Step 2: avg 300.010µs; queue avg/10, input and output avg/20,
	// infer avg/2, network the rest.
	want := []string{"2", "1.23457e+06", "0", "90", "30", "15", "150", "15", "0", "200", "400", "500", "600", "300"}
	if !slices.Equal(rows[1], want) {
		t.Errorf("row\n got %q\nwant %q", rows[1], want)
	}

	r = synthetic(1, 2, 1)
	r.RateMode, r.ServerStats, r.Decoupled = true, false, true
	for i := range r.Steps {
		r.Steps[i].RequestRate, r.Steps[i].ResponseThroughput, r.Steps[i].Label = 12.5, 99.5, "cfg"
	}
	head, rows = r.table()
	wantHead = "Configuration,Batch Size,Request Rate,Inferences/Second,Response Throughput,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency"
	if got := strings.Join(head, ","); got != wantHead {
		t.Errorf("head\n got %s\nwant %s", got, wantHead)
	}
	if rows[0][1] != "1" || rows[1][1] != "2" || rows[0][2] != "12.5" || rows[0][4] != "99.5" {
		t.Errorf("rows %q: want batch 1 then 2, rate 12.5, response throughput 99.5", rows)
	}
}

// TestSeries checks that each figure's points are the report's figures.
func TestSeries(t *testing.T) {
	r := synthetic(3, 1)
	// Steps out of order: curves follow the load.
	r.Steps[0], r.Steps[2] = r.Steps[2], r.Steps[0]

	f := r.throughputFigure()
	wantCurves(t, f, map[string][]xy{"": {{1, 1000}, {2, 2000}, {3, 3000}}})
	if f.name != "throughput" || f.xLabel != "concurrency (requests in flight)" {
		t.Errorf("throughput figure %q, x %q", f.name, f.xLabel)
	}

	// p50 = 100.007µs·c: under a millisecond at most 900µs: µs.
	f = r.latencyFigure()
	if f.yLabel != "latency (µs)" {
		t.Errorf("latency y label %q", f.yLabel)
	}
	p50 := func(c float64) float64 { return (c*100_000 + 7) / 1000 }
	avgUS := func(c int64) float64 { return float64((c*100_000+7)*3/2) / 1000 }
	wantCurves(t, f, map[string][]xy{
		"p50": {{1, p50(1)}, {2, p50(2)}, {3, p50(3)}},
		"avg": {{1, avgUS(1)}, {2, avgUS(2)}, {3, avgUS(3)}},
		"p99": {{1, 3 * p50(1)}, {2, 3 * p50(2)}, {3, 3 * p50(3)}},
	})
	if _, ok := r.batchFigure(); ok {
		t.Error("latency-vs-batch drawn for one batch size")
	}

	// The split: a bar per step, a segment per part that is not zero.
	f = r.splitFigure()
	if !slices.Equal(f.labels, []string{"1", "2", "3"}) || !slices.Equal(f.groups, []barGroup{{"", 3}}) {
		t.Errorf("split labels %q, groups %v", f.labels, f.groups)
	}
	var parts []string
	for _, s := range f.bars {
		parts = append(parts, s.label)
	}
	if want := []string{"server queue", "compute input", "compute infer", "compute output", "network + server overhead"}; !slices.Equal(parts, want) {
		t.Errorf("split parts %q, want %q", parts, want)
	}
	steps := r.sortedSteps()
	for i, s := range steps {
		if got, want := f.bars[2].values[i], float64(s.Split.ComputeInfer)/1000; got != want {
			t.Errorf("step %d: compute infer %v µs, want %v", i, got, want)
		}
		var sum float64
		for _, seg := range f.bars {
			sum += seg.values[i]
		}
		if d := sum - float64(s.Latency.Avg)/1000; d > 1e-9 || d < -1e-9 {
			t.Errorf("step %d: bar height %v µs, want the average latency %v", i, sum, float64(s.Latency.Avg)/1000)
		}
	}

	// Rate mode: x is the request rate.
	rr := synthetic(2, 1)
	rr.RateMode = true
	rr.Steps[0].RequestRate, rr.Steps[1].RequestRate = 50, 100
	wantCurves(t, rr.throughputFigure(), map[string][]xy{"": {{50, 1000}, {100, 2000}}})
}

// TestSeriesBatches: several batch sizes give a curve per batch size and
// latency against batch size.
func TestSeriesBatches(t *testing.T) {
	r := synthetic(2, 8, 1, 4)
	wantCurves(t, r.throughputFigure(), map[string][]xy{
		"batch 1": {{1, 1000}, {2, 2000}},
		"batch 4": {{1, 4000}, {2, 8000}},
		"batch 8": {{1, 8000}, {2, 16000}},
	})
	// Latencies reach 4.8ms: ms.
	f := r.latencyFigure()
	if f.yLabel != "latency (ms)" || len(f.curves) != 9 {
		t.Fatalf("latency figure: y %q, %d curves, want ms and 9", f.yLabel, len(f.curves))
	}
	ms := func(c, b float64) float64 { return (c*b*100_000 + 7) / 1e6 }
	wantCurves(t, f, map[string][]xy{
		"batch 1 p50": {{1, ms(1, 1)}, {2, ms(2, 1)}},
		"batch 8 p99": {{1, 3 * ms(1, 8)}, {2, 3 * ms(2, 8)}},
	})
	f, ok := r.batchFigure()
	if !ok {
		t.Fatal("no latency-vs-batch figure")
	}
	// Two levels: p99 against batch size, a curve per concurrency.
	wantCurves(t, f, map[string][]xy{
		"concurrency 1": {{1, 3 * ms(1, 1)}, {4, 3 * ms(1, 4)}, {8, 3 * ms(1, 8)}},
		"concurrency 2": {{1, 3 * ms(2, 1)}, {4, 3 * ms(2, 4)}, {8, 3 * ms(2, 8)}},
	})
	if len(f.curves) != 2 {
		t.Errorf("%d curves, want 2", len(f.curves))
	}
	// One level: p50, avg, p99 against batch size.
	r = synthetic(1, 1, 2)
	f, _ = r.batchFigure()
	if len(f.curves) != 3 || f.curves[0].label != "p50" || f.curves[2].label != "p99" {
		t.Errorf("one level: curves %v", f.curves)
	}
	if f := r.splitFigure(); !slices.Equal(f.labels, []string{"1", "1"}) || !slices.Equal(f.groups, []barGroup{{"batch 1", 1}, {"batch 2", 1}}) {
		t.Errorf("split labels %q, groups %v", f.labels, f.groups)
	}
}

// wantCurves checks the curves named in want (by label) have exactly
// those points, within rounding.
func wantCurves(t *testing.T, f figure, want map[string][]xy) {
	t.Helper()
	for label, pts := range want {
		i := slices.IndexFunc(f.curves, func(c curve) bool { return c.label == label })
		if i < 0 {
			t.Errorf("%s: no curve %q", f.name, label)
			continue
		}
		got := f.curves[i].points
		ok := len(got) == len(pts)
		for j := 0; ok && j < len(got); j++ {
			ok = got[j].x == pts[j].x && near(got[j].y, pts[j].y)
		}
		if !ok {
			t.Errorf("%s: curve %q\n got %v\nwant %v", f.name, label, got, pts)
		}
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9*max(1, b) && d > -1e-9*max(1, b)
}

// TestAdd: runs of other batch sizes into one folder accumulate; a run
// of the same batch size replaces its steps; another model starts over,
// and the figure of several batch sizes goes.
func TestAdd(t *testing.T) {
	dir := t.TempDir()
	b1 := synthetic(2, 1)
	if _, err := Add(dir, b1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "latency-vs-batch.png")); err == nil {
		t.Error("latency-vs-batch.png written for one batch size")
	}
	b4 := synthetic(2, 4)
	b4.Settings[0].Value = "4"
	got, err := Add(dir, b4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 4 || !slices.Equal(got.batchSizes(), []uint64{1, 4}) {
		t.Fatalf("merged %d steps of batch sizes %v", len(got.Steps), got.batchSizes())
	}
	if got.Settings[0].Value != "1, 4" || got.Settings[1].Value != "500 msec" {
		t.Errorf("merged settings %v", got.Settings)
	}
	checkFiles(t, dir, got)
	if _, err := os.Stat(filepath.Join(dir, "latency-vs-batch.svg")); err != nil {
		t.Error(err)
	}
	back, err := Read(dir)
	if err != nil || len(back.Steps) != 4 || back.Steps[3].Latency.Avg != got.Steps[3].Latency.Avg {
		t.Errorf("Read: %v, %d steps", err, len(back.Steps))
	}

	// Batch size 4 again, three levels: replaces the earlier 4.
	again := synthetic(3, 4)
	got, _ = Add(dir, again)
	if len(got.Steps) != 5 {
		t.Errorf("rerun of batch 4: %d steps, want 2 + 3", len(got.Steps))
	}

	// Another model: the folder is its alone.
	other := synthetic(2, 1)
	other.Model = "other"
	got, _ = Add(dir, other)
	if len(got.Steps) != 2 {
		t.Errorf("another model: %d steps, want 2", len(got.Steps))
	}
	for _, ext := range []string{".png", ".svg"} {
		if _, err := os.Stat(filepath.Join(dir, "latency-vs-batch"+ext)); err == nil {
			t.Errorf("latency-vs-batch%s left from the other model's report", ext)
		}
	}

	// A data file that cannot be read is an error, not overwritten.
	os.WriteFile(filepath.Join(dir, "report.json"), []byte("{"), 0o644)
	if _, err := Add(dir, b1); err == nil || !strings.Contains(err.Error(), "report.json") {
		t.Errorf("Add over a broken report.json: %v", err)
	}
}

func TestWriteNoSteps(t *testing.T) {
	if err := Write(t.TempDir(), Report{Model: "m"}); err == nil {
		t.Error("Write of a report without steps succeeded")
	}
}

// TestBatchFigureThinned: a long sweep keeps eight levels against batch
// size, the first and the last among them.
func TestBatchFigureThinned(t *testing.T) {
	r := synthetic(20, 1, 2)
	f, _ := r.batchFigure()
	var got []string
	for _, c := range f.curves {
		got = append(got, c.label)
	}
	want := []string{"concurrency 1", "concurrency 3", "concurrency 6", "concurrency 9", "concurrency 11", "concurrency 14", "concurrency 17", "concurrency 20"}
	if !slices.Equal(got, want) {
		t.Errorf("curves %q, want %q", got, want)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 260000, "0 50k 100k 150k 200k 250k"},
		{0, 187, "0 50 100 150"},
		{0, 1.3, "0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{0, 32000, "0 5k 10k 15k 20k 25k 30k"},
		{0, 0.004, "0 0.0005 0.0010 0.0015 0.0020 0.0025 0.0030 0.0035 0.0040"},
		{0, 14.5, "0 2 4 6 8 10 12 14"},
		{0, 2.6e6, "0 0.5M 1.0M 1.5M 2.0M 2.5M"},
		{0, 9000, "0 2000 4000 6000 8000"},
	} {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(tt.lo, tt.hi) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("ticks of [%v, %v]: %s, want %s", tt.lo, tt.hi, s, tt.want)
		}
	}
}
