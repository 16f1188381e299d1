package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := `goos: linux
# a comment
BenchmarkX/a=1-2   	     100	     12.5 ns/op	   3 allocs/op	 0.97 ratio
BenchmarkX/a=1
BenchmarkX/a=2     	     100	     20 ns/op
PASS
`
	rs, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d results, want 2: %+v", len(rs), rs)
	}
	if rs[0].name != "BenchmarkX/a=1" || rs[1].name != "BenchmarkX/a=2" {
		t.Errorf("names %q, %q: the -GOMAXPROCS suffix should go, nothing else", rs[0].name, rs[1].name)
	}
	if v := rs[0].values; v["ns/op"] != 12.5 || v["allocs/op"] != 3 || v["ratio"] != 0.97 {
		t.Errorf("values %v", v)
	}

	for _, bad := range []string{
		"BenchmarkX-2 100 12.5",        // a value without its unit
		"BenchmarkX-2 many 12.5 ns/op", // no iteration count
		"BenchmarkX-2 100 fast ns/op",  // a value that is not a number
	} {
		if _, err := parse(strings.NewReader(bad)); err == nil {
			t.Errorf("parse(%q) succeeded", bad)
		}
	}
}

func sampleSpec() spec {
	return spec{
		In: "sample.txt", Out: "sample.png",
		Title: "sample", XLabel: "callers", YLabel: "req/s",
		Metric: "req/s", LogX: true, LogY: true,
		Curves: []curve{
			{Label: "fast", Match: regexp.MustCompile(`^BenchmarkLoad/fast/c(?P<x>[0-9]+)$`)},
			{Label: "slow", Match: regexp.MustCompile(`^BenchmarkLoad/slow/c(?P<x>[0-9]+)$`)},
		},
	}
}

func TestPoints(t *testing.T) {
	f, err := os.Open("testdata/sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	s := sampleSpec()
	fast, err := s.points(rs, s.Curves[0])
	if err != nil {
		t.Fatal(err)
	}
	slow, err := s.points(rs, s.Curves[1])
	if err != nil {
		t.Fatal(err)
	}
	want := []point{{x: 1, median: 1100, low: 1000, high: 1200}, {x: 16, median: 10000, low: 10000, high: 10000}}
	if len(fast) != 2 || fast[0] != want[0] || fast[1] != want[1] {
		t.Errorf("fast: %+v, want %+v", fast, want)
	}
	want = []point{{x: 1, median: 100, low: 100, high: 100}, {x: 16, median: 800, low: 700, high: 900}}
	if len(slow) != 2 || slow[0] != want[0] || slow[1] != want[1] {
		t.Errorf("slow: %+v, want %+v (names without a suffix count too)", slow, want)
	}

	s.Curves = append(s.Curves, curve{Label: "renamed", Match: regexp.MustCompile(`^BenchmarkGone/c(?P<x>[0-9]+)$`)})
	if _, err := s.render(rs); err == nil {
		t.Error("a curve that matches no result rendered")
	}
	s = sampleSpec()
	s.Metric = "MB/s"
	if _, err := s.render(rs); err == nil {
		t.Error("a metric the results do not have rendered")
	}
}

// TestPointsFromUnits: a curve with Units takes its points from the units
// of one benchmark's lines, x from each unit's name.
func TestPointsFromUnits(t *testing.T) {
	in := `BenchmarkCost/rec-2 5 0 ns/op 10 batch1-ms/page 14 batch16-ms/page 1.4 batch16-ratio
BenchmarkCost/rec-2 5 0 ns/op 12 batch1-ms/page 15 batch16-ms/page 1.25 batch16-ratio
BenchmarkCost/det-2 5 0 ns/op 99 batch1-ms/page
`
	rs, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := spec{In: "cost.txt"}
	c := curve{Match: regexp.MustCompile(`^BenchmarkCost/rec$`), Units: regexp.MustCompile(`^batch(?P<x>[0-9]+)-ms/page$`)}
	ps, err := s.points(rs, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []point{{x: 1, median: 11, low: 10, high: 12}, {x: 16, median: 14.5, low: 14, high: 15}}
	if len(ps) != 2 || ps[0] != want[0] || ps[1] != want[1] {
		t.Errorf("got %+v, want %+v (the ratio unit and det's line left out)", ps, want)
	}
}

// checkPNG decodes a plot and checks its size and that something was drawn.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got, want := img.Bounds(), image.Rect(0, 0, 672, 432); got != want {
		t.Errorf("%s: %v, want %v (7×4.5 in at 96 dpi)", path, got, want)
	}
	colours := map[[4]uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 3 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	if len(colours) < 4 {
		t.Errorf("%s: %d colours: nothing drawn?", path, len(colours))
	}
}

func TestDrawSample(t *testing.T) {
	out := t.TempDir()
	written, err := drawAll("testdata", out, []spec{sampleSpec()})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || written[0] != filepath.Join(out, "sample.png") {
		t.Fatalf("wrote %v", written)
	}
	checkPNG(t, written[0])
}

// TestSpecs draws the plots of docs/performance.md from the committed
// benchmark output, so that a spec and its file cannot drift apart.
func TestSpecs(t *testing.T) {
	written, err := drawAll("../../docs/bench", t.TempDir(), specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(specs) {
		t.Fatalf("wrote %d plots, want %d", len(written), len(specs))
	}
	for _, path := range written {
		checkPNG(t, path)
	}
}
