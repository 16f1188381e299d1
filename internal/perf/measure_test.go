package perf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func us(v ...uint64) []sample {
	var s []sample
	for i, x := range v {
		s = append(s, sample{start: int64(i) * 10, end: int64(i)*10 + int64(x)*1000, responses: 1})
	}
	return s
}

func TestSummarizeWindow(t *testing.T) {
	samples := us(100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)
	samples[0].flags = flagDelayed
	samples[1].flags = flagSeqEnd | flagDelayed
	s := summarizeWindow(windowInput{
		samples: samples, durationNS: 1e9, batch: 2, percentile: -1,
		completed: 10, reqNS: 5_500_000, sent: 12, idle: []int64{600e6, 800e6}, libStats: true,
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	c := s.client
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"count", c.requestCount, 10},
		{"avg ns", c.avgLatencyNS, 550_000},
		{"std us", c.stdUS, 302}, // sample standard deviation of 100..1000 µs
		{"p50", mustP(t, c, 50), 600_000},
		{"p90", mustP(t, c, 90), 900_000},
		{"p95", mustP(t, c, 95), 1_000_000},
		{"p99", mustP(t, c, 99), 1_000_000},
		{"stabilizing", s.stabilizingNS, 550_000},
		{"delayed", c.delayedCount, 2},
		{"sequences", c.sequenceCount, 1},
		{"responses", c.responseCount, 10},
		{"avg request", c.avgRequestNS, 550_000},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %d, want %d", ch.name, ch.got, ch.want)
		}
	}
	if c.inferPerSec != 20 || s.sendRate != 12 || math.Abs(s.overheadPct-30) > 1e-9 {
		t.Errorf("throughput %v, send rate %v, overhead %v", c.inferPerSec, s.sendRate, s.overheadPct)
	}
	// Throughput is computed in single precision, as perf_analyzer does.
	s = summarizeWindow(windowInput{samples: us(1, 1, 1), durationNS: 3_000_000_001, batch: 1, percentile: -1})
	if want := float64(float32(3) / (float32(3_000_000_001) / 1e9)); s.client.inferPerSec != want {
		t.Errorf("throughput %v, want %v", s.client.inferPerSec, want)
	}
}

func mustP(t *testing.T, c clientStats, p int) uint64 {
	t.Helper()
	v, ok := c.percentile(p)
	if !ok {
		t.Fatalf("no p%d in %v", p, c.percentiles)
	}
	return v
}

func TestSummarizeWindowEdges(t *testing.T) {
	s := summarizeWindow(windowInput{durationNS: 1e9, batch: 1, percentile: -1})
	if s.err != errNoSamples {
		t.Errorf("empty window: err %v", s.err)
	}
	warned := false
	s = summarizeWindow(windowInput{samples: us(5), durationNS: 1e9, batch: 1, percentile: -1, singleWarning: func() { warned = true }})
	if s.client.stdUS != math.MaxUint64 || !warned {
		t.Errorf("one sample: std %d, warned %v", s.client.stdUS, warned)
	}
	s = summarizeWindow(windowInput{samples: us(100, 200, 300, 400, 500, 600, 700, 800, 900, 1000), durationNS: 1e9, batch: 1, percentile: 85})
	var ps []int
	for _, p := range s.client.percentiles {
		ps = append(ps, p.p)
	}
	if !slices.Equal(ps, []int{50, 85, 90, 95, 99}) || s.stabilizingNS != mustP(t, s.client, 85) || s.stabilizingNS != 900_000 { // index round(0.85·9) = 8
		t.Errorf("--percentile 85: %v, stabilizing %d", ps, s.stabilizingNS)
	}
	if got := overheadPct(100, []int64{200}); got != 0 {
		t.Errorf("idle beyond the window: %v", got)
	}
}

func TestStability(t *testing.T) {
	tests := []struct {
		name         string
		ips          []float64
		lat          []uint64
		checkLatency bool
		want         bool
	}{
		{"stable", []float64{100, 105, 109}, []uint64{1000, 1050, 1090}, true, true},
		{"too few windows", []float64{100, 100}, []uint64{1, 1}, true, false},
		{"throughput spread", []float64{100, 100, 111}, []uint64{1000, 1000, 1000}, true, false},
		{"latency spread", []float64{100, 100, 100}, []uint64{1000, 1000, 1200}, true, false},
		{"latency not checked", []float64{100, 100, 100}, []uint64{1000, 1000, 1200}, false, true},
		{"failed window", []float64{100, 0, 100}, []uint64{1000, math.MaxUint64, 1000}, false, false},
		{"only the last three count", []float64{1, 100, 101, 102}, []uint64{9, 1000, 1000, 1000}, true, true},
	}
	for _, tt := range tests {
		ls := loadStatus{ips: tt.ips, lat: tt.lat}
		if got := ls.stable(0.1, tt.checkLatency); got != tt.want {
			t.Errorf("%s: stable = %v, want %v", tt.name, got, tt.want)
		}
	}
	ls := loadStatus{}
	ls.add(status{err: errNoSamples})
	if ls.ips[0] != 0 || ls.lat[0] != math.MaxUint64 {
		t.Errorf("failed window recorded as %v %v", ls.ips, ls.lat)
	}
	ms := uint64(1_000_000)
	limits := []struct {
		lat   []uint64
		limit uint64
		want  bool
	}{
		{[]uint64{5 * ms, 9 * ms, 10 * ms}, 10, true},
		{[]uint64{5 * ms, 9 * ms, 9 * ms}, 10, false},
		{[]uint64{50 * ms, 50 * ms, 50 * ms}, 0, false},
		{[]uint64{50 * ms, 50 * ms}, 10, false},
	}
	for _, l := range limits {
		ls := loadStatus{ips: make([]float64, len(l.lat)), lat: l.lat}
		if got := ls.overLimit(l.limit); got != l.want {
			t.Errorf("overLimit(%v, %d) = %v", l.lat, l.limit, got)
		}
	}
}

func TestMerge(t *testing.T) {
	w := func(lat []uint64, dur uint64, completed, avgReq uint64, queue uint64) status {
		s := status{batchSize: 2, concurrency: 4}
		s.client.latencies = lat
		s.client.requestCount = uint64(len(lat))
		s.client.durationNS = dur
		s.client.completedCount = completed
		s.client.avgRequestNS = avgReq
		s.overheadPct = 10
		s.server = serverStats{successCount: completed, queueCount: completed, queueNS: queue,
			composing: []composingStats{{modelID{"a", "1"}, serverStats{successCount: 1}}}}
		return s
	}
	m := mergeStatuses([]status{
		w([]uint64{1000, 3000}, 1e9, 10, 1000, 500),
		w([]uint64{2000}, 1e9, 30, 2000, 700),
		w([]uint64{500, 4000}, 2e9, 0, 0, 0),
	}, -1, true)
	if !slices.Equal(m.client.latencies, []uint64{500, 1000, 2000, 3000, 4000}) {
		t.Errorf("pooled latencies %v", m.client.latencies)
	}
	if m.client.requestCount != 5 || m.client.inferPerSec != 2.5 || m.client.avgLatencyNS != 2100 || m.stabilizingNS != 2100 {
		t.Errorf("merged client %+v", m.client)
	}
	if m.client.avgRequestNS != 1750 || m.client.completedCount != 40 {
		t.Errorf("library averages weighted by completed requests: %d over %d", m.client.avgRequestNS, m.client.completedCount)
	}
	if m.server.queueNS != 1200 || m.server.successCount != 40 || len(m.server.composing) != 1 || m.server.composing[0].stats.successCount != 3 {
		t.Errorf("server sums %+v", m.server)
	}
	if m.overheadPct != 10 || m.concurrency != 4 {
		t.Errorf("overhead %v concurrency %d", m.overheadPct, m.concurrency)
	}
}

func TestSortAndMergeLatencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 100, 5000, 100_000} {
		a := make([]uint64, n)
		for i := range a {
			switch i % 3 {
			case 0:
				a[i] = rng.Uint64N(1 << 20)
			case 1:
				a[i] = rng.Uint64N(1 << 40)
			default:
				a[i] = rng.Uint64()
			}
		}
		want := slices.Clone(a)
		slices.Sort(want)
		sortLatencies(a)
		if !slices.Equal(a, want) {
			t.Fatalf("radix sort of %d values differs", n)
		}
		parts := [][]uint64{a[:n/3], a[n/3 : n/2], a[n/2:], nil}
		for _, p := range parts {
			slices.Reverse(p)
			slices.Sort(p)
		}
		if got := mergeSorted(parts); !slices.Equal(got, want) {
			t.Fatalf("merge of %d values differs", n)
		}
	}
}
