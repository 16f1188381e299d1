package modelmetrics_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/triton-go/triton/modelmetrics"
)

// TestKindOps: which operation each kind has, with Triton's texts
// (core src/metric_family.cc) for the ones it lacks.
func TestKindOps(t *testing.T) {
	const (
		ok          = ""
		negCounter  = "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values."
		counterSet  = "TRITONSERVER_METRIC_KIND_COUNTER does not support Set"
		counterObs  = "TRITONSERVER_METRIC_KIND_COUNTER does not support Observe"
		gaugeObs    = "TRITONSERVER_METRIC_KIND_GAUGE does not support Observe"
		histInc     = "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment"
		histSet     = "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Set"
		histValue   = "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value"
		unsupported = "unsupported"
	)
	type op struct {
		name string
		do   func(m *modelmetrics.Metric) error
	}
	ops := []op{
		{"Increment(2)", func(m *modelmetrics.Metric) error { return m.Increment(2) }},
		{"Increment(0)", func(m *modelmetrics.Metric) error { return m.Increment(0) }},
		{"Increment(-1)", func(m *modelmetrics.Metric) error { return m.Increment(-1) }},
		{"Increment(NaN)", func(m *modelmetrics.Metric) error { return m.Increment(math.NaN()) }},
		{"Set(5)", func(m *modelmetrics.Metric) error { return m.Set(5) }},
		{"Observe(1)", func(m *modelmetrics.Metric) error { return m.Observe(1) }},
		{"Value()", func(m *modelmetrics.Metric) error { _, err := m.Value(); return err }},
	}
	for _, tc := range []struct {
		kind    modelmetrics.Kind
		buckets []float64
		want    []string // per op
		final   float64  // Value after the ops that succeed, in order; NaN: no Value
	}{
		{modelmetrics.Counter, nil, []string{ok, ok, negCounter, negCounter, counterSet, counterObs, ok}, 2},
		{modelmetrics.Gauge, nil, []string{ok, ok, ok, ok, ok, gaugeObs, ok}, 5},
		{modelmetrics.Histogram, []float64{1}, []string{histInc, histInc, histInc, histInc, histSet, ok, histValue}, math.NaN()},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			r := modelmetrics.NewRegistry()
			m := metric(t, family(t, r, "m", tc.kind), nil, tc.buckets)
			for i, o := range ops {
				err := o.do(m)
				switch want := tc.want[i]; {
				case want == ok:
					if err != nil {
						t.Errorf("%s: %v, want success", o.name, err)
					}
				case want == negCounter:
					wantErr(t, o.name, err, want, modelmetrics.ErrInvalid)
				default:
					wantErr(t, o.name, err, want, errors.ErrUnsupported)
				}
			}
			if math.IsNaN(tc.final) {
				return
			}
			if v, err := m.Value(); err != nil || v != tc.final {
				t.Errorf("Value() = %v, %v; want %v", v, err, tc.final)
			}
		})
	}
}

// TestGaugeNegative: a gauge goes below zero, and Increment after Set adds.
func TestGaugeNegative(t *testing.T) {
	r := modelmetrics.NewRegistry()
	m := metric(t, family(t, r, "g", modelmetrics.Gauge), nil, nil)
	m.Increment(-3)
	m.Set(-1.5)
	m.Increment(0.5)
	if v, _ := m.Value(); v != -1 {
		t.Errorf("Value() = %v, want -1", v)
	}
}

// TestHotOpsDoNotAllocate: Increment, Set, Observe and Value allocate
// nothing, failing or not.
func TestHotOpsDoNotAllocate(t *testing.T) {
	r := modelmetrics.NewRegistry()
	c := metric(t, family(t, r, "c", modelmetrics.Counter), map[string]string{"a": "b"}, nil)
	g := metric(t, family(t, r, "g", modelmetrics.Gauge), nil, nil)
	h := metric(t, family(t, r, "h", modelmetrics.Histogram), nil, []float64{1, 2, 4, 8})
	closed := metric(t, family(t, r, "x", modelmetrics.Gauge), nil, nil)
	closed.Close()
	for name, f := range map[string]func(){
		"counter":     func() { c.Increment(1); c.Value() },
		"gauge":       func() { g.Increment(-1); g.Set(2); g.Value() },
		"histogram":   func() { h.Observe(3) },
		"refused":     func() { c.Set(1); c.Increment(-1); h.Value(); g.Observe(1) },
		"invalidated": func() { closed.Set(1); closed.Increment(1); closed.Observe(1); closed.Value() },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// TestConcurrent: many goroutines update shared series through their own
// handles while others scrape and create and close series; the final
// values are exact (run with -race).
func TestConcurrent(t *testing.T) {
	const (
		goroutines = 8
		perG       = 2000
	)
	r := modelmetrics.NewRegistry()
	cf := family(t, r, "c", modelmetrics.Counter)
	gf := family(t, r, "g", modelmetrics.Gauge)
	hf := family(t, r, "h", modelmetrics.Histogram)
	c := metric(t, cf, map[string]string{"k": "shared"}, nil)
	g := metric(t, gf, map[string]string{"k": "shared"}, nil)
	metric(t, hf, map[string]string{"k": "shared"}, []float64{0.5, 1.5})

	var writers, others sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, goroutines+2)
	for i := range goroutines {
		writers.Go(func() {
			mc, err := cf.Metric(map[string]string{"k": "shared"}, nil)
			if err != nil {
				errs <- err
				return
			}
			defer mc.Close()
			mg, _ := gf.Metric(map[string]string{"k": "shared"}, nil)
			defer mg.Close()
			mh, _ := hf.Metric(map[string]string{"k": "shared"}, []float64{0.5, 1.5})
			defer mh.Close()
			for j := range perG {
				if err := mc.Increment(1); err != nil {
					errs <- err
					return
				}
				d := 2.0
				if j%2 == 1 {
					d = -2
				}
				mg.Increment(d)
				mh.Observe(float64(i % 3)) // 0, 1 or 2: one per bucket
			}
		})
	}
	others.Go(func() { // scrapes meanwhile
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := scrape(t, r); !strings.Contains(s, "# TYPE c counter") {
				errs <- fmt.Errorf("scrape without the counter:\n%s", s)
				return
			}
		}
	})
	others.Go(func() { // churns other series of the same family
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			m, err := cf.Metric(map[string]string{"k": fmt.Sprint("churn", n%10)}, nil)
			if err != nil {
				errs <- err
				return
			}
			m.Increment(1)
			m.Close()
		}
	})
	writers.Wait()
	close(stop)
	others.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := c.Value(); v != goroutines*perG {
		t.Errorf("counter = %v, want %d", v, goroutines*perG)
	}
	if v, _ := g.Value(); v != 0 {
		t.Errorf("gauge = %v, want 0", v)
	}
	got := scrape(t, r, "h")
	n := goroutines * perG
	want := fmt.Sprintf(`h_bucket{k="shared",le="0.5"} %d
h_bucket{k="shared",le="1.5"} %d
h_bucket{k="shared",le="+Inf"} %d
`, n*3/8, n*6/8, n) // goroutines 0,3,6 observe 0; 1,4,7 observe 1; 2,5 observe 2
	if !strings.Contains(got, want) || !strings.Contains(got, fmt.Sprintf("h_count{k=\"shared\"} %d\n", n)) ||
		!strings.Contains(got, fmt.Sprintf("h_sum{k=\"shared\"} %d\n", 3*perG*1+2*perG*2)) {
		t.Errorf("histogram:\n%s\nwant buckets:\n%s", got, want)
	}
}

// BenchmarkOps: the hot operations, on one series shared by all
// goroutines (the contended case) and serially.
func BenchmarkOps(b *testing.B) {
	r := modelmetrics.NewRegistry()
	c := metric(b, family(b, r, "c", modelmetrics.Counter), map[string]string{"model": "m"}, nil)
	g := metric(b, family(b, r, "g", modelmetrics.Gauge), nil, nil)
	h := metric(b, family(b, r, "h", modelmetrics.Histogram), nil, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000})
	for name, op := range map[string]func(){
		"CounterIncrement": func() { c.Increment(1) },
		"GaugeSet":         func() { g.Set(3) },
		"HistogramObserve": func() { h.Observe(42) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
				}
			})
		})
	}
}
