package modelmetrics_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/triton-go/triton/modelmetrics"
)

// family creates a family and closes it when the test ends.
func family(t testing.TB, r *modelmetrics.Registry, name string, kind modelmetrics.Kind) *modelmetrics.Family {
	t.Helper()
	f, err := r.Family(name, "help of "+name, kind)
	if err != nil {
		t.Fatalf("Family(%q): %v", name, err)
	}
	t.Cleanup(f.Close)
	return f
}

// metric creates a series and closes its handle when the test ends.
func metric(t testing.TB, f *modelmetrics.Family, labels map[string]string, buckets []float64) *modelmetrics.Metric {
	t.Helper()
	m, err := f.Metric(labels, buckets)
	if err != nil {
		t.Fatalf("Metric(%v, %v): %v", labels, buckets, err)
	}
	t.Cleanup(m.Close)
	return m
}

// scrape returns the text exposition of c's families named names (all of
// them without names), gathered through a pedantic registry.
func scrape(t testing.TB, c prometheus.Collector, names ...string) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if len(names) == 0 || slices.Contains(names, mf.GetName()) {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

// wantErr checks that err has exactly the text want and wraps sentinel.
func wantErr(t *testing.T, what string, err error, want string, sentinel error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %q", what, want)
		return
	}
	if err.Error() != want {
		t.Errorf("%s: error %q, want %q", what, err, want)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: error %q does not wrap %v", what, err, sentinel)
	}
}

// wantErrContains checks that err contains want and wraps sentinel.
func wantErrContains(t *testing.T, what string, err error, want string, sentinel error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, sentinel) {
		t.Errorf("%s: error %v, want one containing %q that wraps %v", what, err, want, sentinel)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[modelmetrics.Kind]string{
		modelmetrics.Counter: "counter", modelmetrics.Gauge: "gauge", modelmetrics.Histogram: "histogram", 7: "Kind(7)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
	// Triton's TRITONSERVER_MetricKind values.
	if modelmetrics.Counter != 0 || modelmetrics.Gauge != 1 || modelmetrics.Histogram != 2 {
		t.Error("the kinds are not Triton's 0, 1, 2")
	}
}

func TestFamilyErrors(t *testing.T) {
	r := modelmetrics.NewRegistry()
	family(t, r, "hist", modelmetrics.Histogram)
	family(t, r, "plain_count", modelmetrics.Gauge)
	for _, tc := range []struct {
		name, help string
		kind       modelmetrics.Kind
		want       string // exact text, or a part of it when contains
		contains   bool
	}{
		{"", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"9lives", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"__reserved", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"has-dash", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"has space", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"ünicode", "h", modelmetrics.Counter, "Invalid metric name", false},
		{"ok", "h", modelmetrics.Kind(3), "Unsupported kind passed to MetricFamily constructor.", false},
		{"ok", "h", modelmetrics.Kind(-1), "Unsupported kind passed to MetricFamily constructor.", false},
		{"nv_inference_request_success", "h", modelmetrics.Counter, `metric family name "nv_inference_request_success" is reserved`, true},
		{"tritongo_x", "h", modelmetrics.Gauge, `names starting with "tritongo_"`, true},
		{"ok", "bad \xff help", modelmetrics.Counter, "not valid UTF-8", true},
		{"hist_bucket", "h", modelmetrics.Counter, `collides with the _bucket series of histogram family "hist"`, true},
		{"hist_sum", "h", modelmetrics.Gauge, `collides with the _sum series of histogram family "hist"`, true},
		{"hist_count", "h", modelmetrics.Histogram, `collides with the _count series of histogram family "hist"`, true},
		{"plain", "h", modelmetrics.Histogram, `histogram family "plain" would export plain_count`, true},
	} {
		f, err := r.Family(tc.name, tc.help, tc.kind)
		what := fmt.Sprintf("Family(%q, %q, %v)", tc.name, tc.help, tc.kind)
		if f != nil {
			t.Errorf("%s returned a family", what)
		}
		if tc.contains {
			wantErrContains(t, what, err, tc.want, modelmetrics.ErrInvalid)
		} else {
			wantErr(t, what, err, tc.want, modelmetrics.ErrInvalid)
		}
	}
	// Valid names, Prometheus's rule: colons, leading underscore, digits after the first.
	for _, name := range []string{"a", "_a", "a:b:c", "A1_b2", "nv", "nvx_y", "hist_total"} {
		family(t, r, name, modelmetrics.Gauge)
	}
}

// TestFamilyOtherKind: Triton's text for a name taken by another kind; the
// existing family is untouched.
func TestFamilyOtherKind(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f := family(t, r, "dup", modelmetrics.Counter)
	metric(t, f, nil, nil).Increment(2)
	for _, k := range []modelmetrics.Kind{modelmetrics.Gauge, modelmetrics.Histogram} {
		_, err := r.Family("dup", "help of dup", k)
		wantErr(t, "Family as "+k.String(), err, "Family name already exists with different type", modelmetrics.ErrInvalid)
	}
	if got := scrape(t, r); !strings.Contains(got, "# TYPE dup counter\ndup 2\n") {
		t.Errorf("the counter changed:\n%s", got)
	}
}

// TestFamilyRefcount: two Family calls, one Close keeps the family and its
// series; the second Close removes both, invalidates the metrics left open
// and frees the name.
func TestFamilyRefcount(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f1, err := r.Family("shared", "shared help", modelmetrics.Gauge)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := r.Family("shared", "shared help", modelmetrics.Gauge)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f2.Metric(map[string]string{"k": "v"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Set(4); err != nil {
		t.Fatal(err)
	}
	f1.Close()
	f1.Close() // idempotent: must not drop f2's reference
	if got := scrape(t, r); !strings.Contains(got, `shared{k="v"} 4`) {
		t.Fatalf("family gone after one of two Close calls:\n%s", got)
	}
	if _, err := f1.Metric(nil, nil); !errors.Is(err, modelmetrics.ErrClosed) {
		t.Errorf("Metric on a closed handle: %v, want ErrClosed", err)
	}
	f2.Close()
	if got := scrape(t, r); got != "" {
		t.Fatalf("family still scraped after the last Close:\n%s", got)
	}
	wantErr(t, "Increment after family closed", m.Increment(1), "Could not increment metric value. Metric has been invalidated.", modelmetrics.ErrClosed)
	wantErr(t, "Set after family closed", m.Set(1), "Could not set metric value. Metric has been invalidated.", modelmetrics.ErrClosed)
	wantErr(t, "Observe after family closed", m.Observe(1), "Could not set metric value. Metric has been invalidated.", modelmetrics.ErrClosed)
	_, err = m.Value()
	wantErr(t, "Value after family closed", err, "Could not get metric value. Metric has been invalidated.", modelmetrics.ErrClosed)
	m.Close() // still fine

	// The name is free again, for another kind too, and starts empty.
	f3 := family(t, r, "shared", modelmetrics.Counter)
	m3 := metric(t, f3, map[string]string{"k": "v"}, nil)
	if v, _ := m3.Value(); v != 0 {
		t.Errorf("new family's metric starts at %v, want 0", v)
	}
	if err := m.Set(1); !errors.Is(err, modelmetrics.ErrClosed) {
		t.Errorf("old metric revived by a new family of its name: %v", err)
	}
}

// TestFamilyOtherHelp: as in Triton (qa test_dup_metric_family_diff_description),
// a second family call with another description gets the existing family,
// which keeps its first description.
func TestFamilyOtherHelp(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f1, err := r.Family("described", "first description", modelmetrics.Counter)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := r.Family("described", "second description", modelmetrics.Counter)
	if err != nil {
		t.Fatalf("second description: %v, want the existing family", err)
	}
	defer f2.Close()
	metric(t, f2, nil, nil)
	f1.Close()
	got := scrape(t, r)
	if !strings.Contains(got, "# HELP described first description\n") || strings.Contains(got, "second description") {
		t.Errorf("want the first description kept:\n%s", got)
	}
}

// TestMetricRefcount: the same labels give the same series; it stays until
// its last handle is closed, then starts again at zero.
func TestMetricRefcount(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f := family(t, r, "dupe", modelmetrics.Counter)
	labels := map[string]string{"a": "1", "b": "2"}
	m1, err := f.Metric(labels, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := f.Metric(map[string]string{"b": "2", "a": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m1.Increment(7.5); err != nil {
		t.Fatal(err)
	}
	if v, _ := m2.Value(); v != 7.5 {
		t.Fatalf("second handle reads %v, want 7.5 (the same series)", v)
	}
	other := metric(t, f, map[string]string{"a": "1", "b": "3"}, nil)
	if v, _ := other.Value(); v != 0 {
		t.Fatalf("other labels read %v, want a series of their own", v)
	}
	m1.Close()
	m1.Close() // idempotent: must not drop m2's reference
	if err := m1.Increment(1); !errors.Is(err, modelmetrics.ErrClosed) {
		t.Errorf("Increment on a closed handle: %v, want ErrClosed", err)
	}
	if got := scrape(t, r); !strings.Contains(got, `dupe{a="1",b="2"} 7.5`) {
		t.Fatalf("series gone while a handle is open:\n%s", got)
	}
	if err := m2.Increment(1); err != nil {
		t.Fatalf("Increment on the open handle: %v", err)
	}
	m2.Close()
	got := scrape(t, r)
	if strings.Contains(got, `b="2"`) || !strings.Contains(got, `dupe{a="1",b="3"} 0`) {
		t.Fatalf("want only the other series left:\n%s", got)
	}
	m3 := metric(t, f, labels, nil)
	if v, _ := m3.Value(); v != 0 {
		t.Errorf("re-created series starts at %v, want 0", v)
	}
}

// TestNoLabels: a series without labels, as pb_utils' Metric() with no
// labels.
func TestNoLabels(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f := family(t, r, "bare", modelmetrics.Gauge)
	m1 := metric(t, f, nil, nil)
	m2 := metric(t, f, map[string]string{}, nil)
	m1.Set(3)
	if v, _ := m2.Value(); v != 3 {
		t.Errorf("nil and empty labels give different series: %v", v)
	}
	if got := scrape(t, r); !strings.Contains(got, "\nbare 3\n") {
		t.Errorf("scrape:\n%s", got)
	}
}

// TestLabelSets: every series of a family has the same label names, until
// all of them are closed.
func TestLabelSets(t *testing.T) {
	r := modelmetrics.NewRegistry()
	f := family(t, r, "labelled", modelmetrics.Counter)
	m, err := f.Metric(map[string]string{"model": "a", "version": "1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, labels := range []map[string]string{nil, {"model": "a"}, {"model": "a", "version": "1", "x": "y"}, {"model": "a", "other": "1"}} {
		_, err := f.Metric(labels, nil)
		wantErrContains(t, fmt.Sprint("Metric", labels), err, "every metric of a family must have the same label names", modelmetrics.ErrInvalid)
	}
	metric(t, f, map[string]string{"model": "b", "version": "2"}, nil).Close()
	m.Close()
	metric(t, f, map[string]string{"other": "1"}, nil) // all closed: a new label set is fine
}

func TestLabelErrors(t *testing.T) {
	r := modelmetrics.NewRegistry()
	c := family(t, r, "c", modelmetrics.Counter)
	h := family(t, r, "h", modelmetrics.Histogram)
	for _, name := range []string{"", "1a", "__name__", "a-b", "a:b", "é"} {
		_, err := c.Metric(map[string]string{name: "v"}, nil)
		wantErr(t, fmt.Sprintf("label %q", name), err, "Invalid label name", modelmetrics.ErrInvalid)
	}
	_, err := h.Metric(map[string]string{"le": "1"}, []float64{1})
	wantErr(t, "histogram label le", err, "Invalid label name", modelmetrics.ErrInvalid)
	metric(t, c, map[string]string{"le": "fine on a counter"}, nil)
	_, err = c.Metric(map[string]string{"le": "\xff"}, nil)
	wantErrContains(t, "non-UTF-8 value", err, `the value of label "le" is not valid UTF-8`, modelmetrics.ErrInvalid)
}

func TestBucketErrors(t *testing.T) {
	r := modelmetrics.NewRegistry()
	c := family(t, r, "c", modelmetrics.Counter)
	g := family(t, r, "g", modelmetrics.Gauge)
	h := family(t, r, "h", modelmetrics.Histogram)
	check := func(what string, f *modelmetrics.Family, buckets []float64, want string, contains bool) {
		t.Helper()
		m, err := f.Metric(nil, buckets)
		if m != nil {
			t.Errorf("%s: got a metric", what)
		}
		if contains {
			wantErrContains(t, what, err, want, modelmetrics.ErrInvalid)
		} else {
			wantErr(t, what, err, want, modelmetrics.ErrInvalid)
		}
	}
	check("counter with buckets", c, []float64{1}, "Unexpected args found in counter Metric constructor.", false)
	check("counter with empty buckets", c, []float64{}, "Unexpected args found in counter Metric constructor.", false)
	check("gauge with buckets", g, []float64{1}, "Unexpected args found in gauge Metric constructor.", false)
	check("histogram without buckets", h, nil, "Bucket boundaries not found in Metric args.", false)
	check("unsorted", h, []float64{2, 1}, "Bucket Boundaries must be strictly sorted", false)
	check("repeated", h, []float64{1, 1}, "Bucket Boundaries must be strictly sorted", false)
	check("+Inf", h, []float64{1, math.Inf(1)}, "bucket boundary +Inf is not a finite number", true)
	check("-Inf", h, []float64{math.Inf(-1), 1}, "bucket boundary -Inf is not a finite number", true)
	check("NaN", h, []float64{math.NaN()}, "bucket boundary NaN is not a finite number", true)
	check("too many", h, make([]float64, modelmetrics.MaxBuckets+1), "more than the 1000 a histogram may have", true)

	many := make([]float64, modelmetrics.MaxBuckets)
	for i := range many {
		many[i] = float64(i)
	}
	metric(t, h, map[string]string{"n": "max"}, many)
	metric(t, h, map[string]string{"n": "none"}, []float64{}) // the +Inf bucket alone

	buckets := []float64{1, 2}
	metric(t, h, map[string]string{"n": "a"}, buckets)
	buckets[0] = 0 // copied: changing the caller's slice changes nothing
	metric(t, h, map[string]string{"n": "a"}, []float64{1, 2})
	_, err := h.Metric(map[string]string{"n": "a"}, []float64{1, 3})
	wantErrContains(t, "same labels, other buckets", err, "already exists with buckets [1 2], not [1 3]", modelmetrics.ErrInvalid)
}

// TestHistogramScrape: cumulative bucket counts, count and sum, with the
// implicit +Inf bucket, values on a boundary counting in that bucket.
func TestHistogramScrape(t *testing.T) {
	r := modelmetrics.NewRegistry()
	h := family(t, r, "latency_ms", modelmetrics.Histogram)
	m := metric(t, h, map[string]string{"model": "m"}, []float64{1, 5, 10})
	for _, v := range []float64{0.5, 1, 3, 5, 7, 100, -2} {
		if err := m.Observe(v); err != nil {
			t.Fatal(err)
		}
	}
	e := metric(t, h, map[string]string{"model": "empty"}, []float64{})
	e.Observe(2)
	want := `# HELP latency_ms help of latency_ms
# TYPE latency_ms histogram
latency_ms_bucket{model="empty",le="+Inf"} 1
latency_ms_sum{model="empty"} 2
latency_ms_count{model="empty"} 1
latency_ms_bucket{model="m",le="1"} 3
latency_ms_bucket{model="m",le="5"} 5
latency_ms_bucket{model="m",le="10"} 6
latency_ms_bucket{model="m",le="+Inf"} 7
latency_ms_sum{model="m"} 114.5
latency_ms_count{model="m"} 7
`
	if got := scrape(t, r); got != want {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
}

func TestCounterGaugeScrape(t *testing.T) {
	r := modelmetrics.NewRegistry()
	c := metric(t, family(t, r, "requests", modelmetrics.Counter), map[string]string{"user": "a\"b\\c\nd"}, nil)
	g := metric(t, family(t, r, "temperature", modelmetrics.Gauge), nil, nil)
	c.Increment(3)
	c.Increment(0.25)
	g.Set(10)
	g.Increment(-12.5)
	want := `# HELP requests help of requests
# TYPE requests counter
requests{user="a\"b\\c\nd"} 3.25
# HELP temperature help of temperature
# TYPE temperature gauge
temperature -2.5
`
	if got := scrape(t, r); got != want {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
	// A family without series is not exported (the text format has no
	// empty families).
	family(t, r, "unused", modelmetrics.Counter)
	if got := scrape(t, r, "unused"); got != "" {
		t.Errorf("empty family scraped:\n%s", got)
	}
}

// TestCollectWith: constant labels are added to every series; a family that
// uses one of their names itself is left out rather than failing the scrape.
func TestCollectWith(t *testing.T) {
	r := modelmetrics.NewRegistry()
	metric(t, family(t, r, "plain", modelmetrics.Counter), map[string]string{"model": "m"}, nil).Increment(1)
	metric(t, family(t, r, "clash", modelmetrics.Gauge), map[string]string{"server_id": "x"}, nil).Set(1)
	h := metric(t, family(t, r, "hist", modelmetrics.Histogram), nil, []float64{1})
	h.Observe(0.5)
	c := collectWith{r, prometheus.Labels{"server_id": "a"}}
	want := `# HELP hist help of hist
# TYPE hist histogram
hist_bucket{server_id="a",le="1"} 1
hist_bucket{server_id="a",le="+Inf"} 1
hist_sum{server_id="a"} 0.5
hist_count{server_id="a"} 1
# HELP plain help of plain
# TYPE plain counter
plain{model="m",server_id="a"} 1
`
	if got := scrape(t, c); got != want {
		t.Errorf("scrape:\n%s\nwant:\n%s", got, want)
	}
}

type collectWith struct {
	r      *modelmetrics.Registry
	labels prometheus.Labels
}

func (c collectWith) Describe(chan<- *prometheus.Desc) {}
func (c collectWith) Collect(ch chan<- prometheus.Metric) {
	c.r.CollectWith(ch, c.labels)
}

// TestRegisterTwice: a Registry is an unchecked collector; it registers
// beside others on a pedantic registry.
func TestRegisterTwice(t *testing.T) {
	r := modelmetrics.NewRegistry()
	metric(t, family(t, r, "one", modelmetrics.Counter), nil, nil)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(r); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "other", Help: "h"})); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 2 {
		t.Errorf("gathered %d series (%v), want 2", n, err)
	}
}
