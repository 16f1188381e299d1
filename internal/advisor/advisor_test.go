package advisor

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseBudget(t *testing.T) {
	tests := []struct {
		in   string
		want Budget
		str  string
		err  string
	}{
		{in: "p99=50ms", want: Budget{99, 50 * time.Millisecond}, str: "p99=50ms"},
		{in: "p95=20ms", want: Budget{95, 20 * time.Millisecond}, str: "p95=20ms"},
		{in: "avg=10ms", want: Budget{0, 10 * time.Millisecond}, str: "avg=10ms"},
		{in: "mean=1.5ms", want: Budget{0, 1500 * time.Microsecond}, str: "avg=1.5ms"},
		{in: " P90 = 500us ", want: Budget{90, 500 * time.Microsecond}, str: "p90=500µs"},
		{in: "p50=2s", want: Budget{50, 2 * time.Second}, str: "p50=2s"},
		{in: "p99=1.5s", want: Budget{99, 1500 * time.Millisecond}, str: "p99=1.5s"},
		{in: "p99", err: "is not STAT=DURATION"},
		{in: "p98=1ms", err: "the statistic is one of"},
		{in: "max=1ms", err: "the statistic is one of"},
		{in: "p99=50", err: "not a duration with its unit"},
		{in: "p99=fast", err: "not a duration with its unit"},
		{in: "p99=0s", err: "must be positive"},
		{in: "p99=-5ms", err: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBudget(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseBudget(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseBudget(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != tt.str {
				t.Errorf("String() = %q, want %q", got.String(), tt.str)
			}
			if back, err := ParseBudget(got.String()); err != nil || back != got {
				t.Errorf("ParseBudget(String()) = %+v, %v; want %+v", back, err, got)
			}
		})
	}
	if s := (Budget{}).String(); s != "none" {
		t.Errorf("zero budget String() = %q", s)
	}
}

func TestBudgetOfAndMeets(t *testing.T) {
	m := &Measurement{Throughput: 10, Avg: 1, P50: 2, P90: 3, P95: 4, P99: 5}
	for p, want := range map[int]time.Duration{0: 1, 50: 2, 90: 3, 95: 4, 99: 5} {
		if got := (Budget{Percentile: p}).Of(m); got != want {
			t.Errorf("Budget{%d}.Of = %v, want %v", p, got, want)
		}
	}
	if !(Budget{99, 5}).Meets(m) || (Budget{99, 4}).Meets(m) {
		t.Error("Meets: the limit is inclusive")
	}
	if !(Budget{}).Meets(m) {
		t.Error("no budget: every measurement with throughput meets it")
	}
	if (Budget{}).Meets(&Measurement{}) {
		t.Error("a measurement without throughput meets nothing")
	}
}

func TestChooseProfile(t *testing.T) {
	ms := time.Millisecond
	us := time.Microsecond
	tests := []struct {
		name   string
		budget Budget
		alone  time.Duration
		want   string
		delays []time.Duration
		delay  time.Duration
	}{
		{"no budget", Budget{}, 50 * ms, "offline", []time.Duration{5 * ms, 10 * ms, 20 * ms, 50 * ms}, 10 * ms},
		{"5ms", Budget{99, 5 * ms}, 100 * us, "real-time", []time.Duration{0, 50 * us, 100 * us}, 100 * us},
		{"50ms", Budget{99, 50 * ms}, 300 * us, "online", []time.Duration{500 * us, ms, 2 * ms, 5 * ms}, ms},
		{"1s", Budget{0, time.Second}, 10 * ms, "offline", []time.Duration{5 * ms, 10 * ms, 20 * ms, 50 * ms}, 10 * ms},
		{"200ms is offline", Budget{95, 200 * ms}, ms, "offline", []time.Duration{5 * ms, 10 * ms, 20 * ms, 50 * ms}, 10 * ms},
		{"slow model steps down", Budget{99, 50 * ms}, 20 * ms, "real-time", []time.Duration{0, 50 * us, 100 * us}, 100 * us},
		{"slow model, offline to online", Budget{99, 300 * ms}, 100 * ms, "online", []time.Duration{500 * us, ms, 2 * ms, 5 * ms}, ms},
		{"real-time cannot step down", Budget{99, 2 * ms}, ms, "real-time", []time.Duration{0, 50 * us, 100 * us}, 100 * us},
		{"delays capped at a quarter", Budget{99, 12 * ms}, 100 * us, "online", []time.Duration{500 * us, ms, 2 * ms}, ms},
		{"curve delay capped", Budget{99, 3 * ms}, 10 * us, "real-time", []time.Duration{0, 50 * us, 100 * us}, 100 * us},
		{"only 0 left", Budget{99, 100 * us}, 10 * us, "real-time", []time.Duration{0}, 0},
		{"real-time curve delay capped", Budget{99, 300 * us}, 10 * us, "real-time", []time.Duration{0, 50 * us}, 50 * us},
		{"offline: a quarter of 200ms keeps every delay", Budget{99, 200 * ms}, 10 * ms, "offline", []time.Duration{5 * ms, 10 * ms, 20 * ms, 50 * ms}, 10 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ChooseProfile(tt.budget, tt.alone)
			if p.Name != tt.want {
				t.Fatalf("profile %s (%s), want %s", p.Name, p.Why, tt.want)
			}
			if !equalDurations(p.Delays, tt.delays) || p.Delay != tt.delay {
				t.Errorf("delays %v (curve %v), want %v (curve %v)", p.Delays, p.Delay, tt.delays, tt.delay)
			}
		})
	}
	// The profiles are copies: changing one leaves the table alone.
	p := ChooseProfile(Budget{}, 0)
	p.Batches[0] = 999
	if ChooseProfile(Budget{}, 0).Batches[0] == 999 {
		t.Error("ChooseProfile returned the table's own slice")
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func curve(batches []int, ips []float64, latMS []float64) []CurvePoint {
	out := make([]CurvePoint, len(batches))
	for i := range batches {
		out[i] = CurvePoint{Batch: batches[i], Throughput: ips[i], Latency: time.Duration(latMS[i] * 1e6)}
	}
	return out
}

func TestKnee(t *testing.T) {
	b := []int{1, 2, 4, 8, 16}
	tests := []struct {
		name  string
		curve []CurvePoint
		want  int
		gains []float64
	}{
		{
			name:  "ideal batching: latency flat",
			curve: curve(b, []float64{1000, 2000, 4000, 8000, 16000}, []float64{1, 1, 1, 1, 1}),
			want:  16, gains: []float64{math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)},
		},
		{
			name:  "no gain: latency doubles with the batch",
			curve: curve(b, []float64{1000, 1000, 1000, 1000, 1000}, []float64{1, 2, 4, 8, 16}),
			want:  1, gains: []float64{0, 0, 0, 0},
		},
		{
			name:  "knee at 8",
			curve: curve(b, []float64{1000, 1900, 3400, 5000, 5600}, []float64{1, 1.05, 1.2, 1.6, 2.9}),
			want:  8, gains: []float64{18, 0.7894736842 / 0.1428571428, 0.4705882353 / 0.3333333333, 0.12 / 0.8125},
		},
		{
			// Little's law with concurrency doubling: ×1.5 throughput
			// is ×1.33 latency (gain 1.5); ×1.3 is ×1.54 (gain 0.56).
			name:  "Little's law: √2 per doubling",
			curve: curve([]int{1, 2, 4}, []float64{1000, 1500, 1950}, []float64{1, 1.3333333333, 2.0512820513}),
			want:  2, gains: []float64{1.5, 0.3 / 0.5384615385},
		},
		{
			name:  "a poor first step, then batching pays: the knee is the last good step",
			curve: curve(b, []float64{1000, 1100, 3000, 6000, 12000}, []float64{1, 2, 2, 2, 2}),
			want:  16, gains: []float64{0.1, math.Inf(1), math.Inf(1), math.Inf(1)},
		},
		{
			name:  "noise between good steps",
			curve: curve(b, []float64{1000, 1140, 1540, 2420, 2590}, []float64{1, 1.87, 3.12, 1.56, 3.07}),
			want:  8, gains: []float64{0.14 / 0.87, (1540.0/1140 - 1) / (3.12/1.87 - 1), math.Inf(1), (2590.0/2420 - 1) / (3.07/1.56 - 1)},
		},
		{
			name:  "throughput falls",
			curve: curve([]int{1, 2, 4}, []float64{1000, 1800, 1700}, []float64{1, 1.1, 1.0}),
			want:  2, gains: []float64{8, 0},
		},
		{name: "one point", curve: curve([]int{1}, []float64{1000}, []float64{1}), want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			knee, steps := Knee(tt.curve)
			if knee != tt.want {
				t.Errorf("knee %d, want %d (steps %+v)", knee, tt.want, steps)
			}
			if len(steps) != len(tt.gains) {
				t.Fatalf("%d steps, want %d", len(steps), len(tt.gains))
			}
			for i, s := range steps {
				if g := tt.gains[i]; !(s.Gain == g || math.Abs(s.Gain-g) < 1e-5*math.Max(1, g)) {
					t.Errorf("step to %d: gain %v, want %v", s.Batch, s.Gain, g)
				}
			}
		})
	}
	if k, s := Knee(nil); k != 0 || s != nil {
		t.Errorf("Knee(nil) = %d, %v", k, s)
	}
}

// linear returns executions of sizes whose time is fixed + perRow × size.
func linear(fixed, perRow time.Duration, count uint64, sizes ...int) []BatchTime {
	var out []BatchTime
	for _, s := range sizes {
		out = append(out, BatchTime{Size: s, Count: count, Total: time.Duration(count) * (fixed + perRow*time.Duration(s))})
	}
	return out
}

func TestFitBatches(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name          string
		times         []BatchTime
		ok, pays      bool
		fixed, perRow time.Duration
		share         float64
	}{
		{name: "fixed cost dominates: pays", times: linear(2000*us, 100*us, 10, 1, 2, 4, 8, 16),
			ok: true, pays: true, fixed: 2000 * us, perRow: 100 * us, share: 2000.0 / 2100},
		{name: "linear: does not pay", times: linear(0, 1000*us, 10, 1, 2, 4, 8),
			ok: true, pays: false, fixed: 0, perRow: 1000 * us, share: 0},
		{name: "small intercept: does not pay", times: linear(50*us, 1000*us, 10, 1, 2, 4, 8),
			ok: true, pays: false, fixed: 50 * us, perRow: 1000 * us, share: 50.0 / 1050},
		{name: "a tenth fixed: pays", times: linear(100*us, 900*us, 10, 1, 2, 4),
			ok: true, pays: true, fixed: 100 * us, perRow: 900 * us, share: 0.1},
		{name: "flat: pays", times: linear(3000*us, 0, 10, 1, 4, 16),
			ok: true, pays: true, fixed: 3000 * us, perRow: 0, share: 1},
		{name: "superlinear (a row costs more in a bigger batch): does not pay",
			times: []BatchTime{{1, 10, 10 * 68 * time.Millisecond}, {2, 10, 10 * 142 * time.Millisecond},
				{4, 10, 10 * 340 * time.Millisecond}, {8, 10, 10 * 750 * time.Millisecond}},
			ok: true, pays: false, share: 0},
		{name: "one size", times: linear(time.Millisecond, us, 10, 1), ok: false},
		{name: "too few executions of the second size", times: append(linear(time.Millisecond, us, 10, 1), linear(time.Millisecond, us, 4, 8)...), ok: false},
		{name: "merged across measurements", times: append(linear(time.Millisecond, 0, 3, 1, 8), linear(time.Millisecond, 0, 3, 1, 8)...),
			ok: true, pays: true, fixed: time.Millisecond, share: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := FitBatches(tt.times)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v (fit %+v)", ok, tt.ok, f)
			}
			if !ok {
				return
			}
			if f.Pays() != tt.pays {
				t.Errorf("Pays() = %v, want %v (fit %+v, share %v)", f.Pays(), tt.pays, f, f.FixedShare())
			}
			if tt.fixed != 0 || tt.perRow != 0 {
				if d := f.Fixed - tt.fixed; d < -us || d > us {
					t.Errorf("Fixed %v, want %v", f.Fixed, tt.fixed)
				}
				if d := f.PerRow - tt.perRow; d < -us || d > us {
					t.Errorf("PerRow %v, want %v", f.PerRow, tt.perRow)
				}
			}
			if got := f.FixedShare(); math.Abs(got-tt.share) > 0.01 && !(tt.share == 0 && got <= 0) {
				t.Errorf("FixedShare() = %v, want %v", got, tt.share)
			}
		})
	}
	f := Fit{Fixed: 900 * us, PerRow: 100 * us}
	if got := f.RowCost(1); got != 1 {
		t.Errorf("RowCost(1) = %v", got)
	}
	if got := f.RowCost(9); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("RowCost(9) = %v, want 0.2 ((900/9 + 100) / 1000)", got)
	}
}

func TestSnippet(t *testing.T) {
	tests := []struct {
		name string
		c    Candidate
		kind string
		want string
	}{
		{"dynamic with preferred", Candidate{Instances: 2, MaxBatch: 64, Dynamic: true, Preferred: []int{16, 32}, Delay: time.Millisecond}, "",
			`max_batch_size: 64
dynamic_batching {
  preferred_batch_size: [ 16, 32 ]
  max_queue_delay_microseconds: 1000
}
instance_group [ { count: 2 kind: KIND_CPU } ]
`},
		{"dynamic, delay only", Candidate{Instances: 1, MaxBatch: 8, Dynamic: true, Delay: 100 * time.Microsecond}, "KIND_GPU",
			`max_batch_size: 8
dynamic_batching {
  max_queue_delay_microseconds: 100
}
instance_group [ { count: 1 kind: KIND_GPU } ]
`},
		{"no dynamic batching", Candidate{Instances: 3, MaxBatch: 8, Preferred: []int{4}, Delay: time.Second}, "KIND_CPU",
			`max_batch_size: 8
instance_group [ { count: 3 kind: KIND_CPU } ]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Snippet(tt.kind); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCandidateEqual(t *testing.T) {
	a := Candidate{Instances: 2, MaxBatch: 8, Dynamic: true, Preferred: []int{8}, Delay: time.Millisecond}
	b := a
	b.Preferred = []int{8}
	if !a.Equal(b) {
		t.Error("same settings, different slices: not equal")
	}
	b.Delay = 0
	if a.Equal(b) {
		t.Error("different delays: equal")
	}
	// Without dynamic batching the batching fields do not matter.
	x := Candidate{Instances: 1, MaxBatch: 8, Preferred: []int{4}, Delay: 5}
	y := Candidate{Instances: 1, MaxBatch: 8}
	if !x.Equal(y) {
		t.Error("no dynamic batching: preferred and delay should not count")
	}
}
