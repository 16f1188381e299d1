package perf

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestMT19937(t *testing.T) {
	// std::mt19937's first output with the default seed, and its 10000th
	// (the check value the C++ standard gives).
	var m mt19937
	m.seed(5489)
	if got := m.next(); got != 3499211612 {
		t.Errorf("first = %d", got)
	}
	for range 9998 {
		m.next()
	}
	if got := m.next(); got != 4123659995 {
		t.Errorf("10000th = %d", got)
	}
}

func TestGaps(t *testing.T) {
	if got := newConstant(3).next(); got != 333333333 {
		t.Errorf("constant gap at 3/s = %d", got)
	}
	a, b := newPoisson(200), newPoisson(200)
	var sum float64
	const n = 100_000
	for range n {
		x := a.next()
		if x != b.next() {
			t.Fatal("two schedules at the same rate differ")
		}
		if x < 0 {
			t.Fatalf("negative gap %d", x)
		}
		sum += float64(x)
	}
	if mean := sum / n; math.Abs(mean-5e6)/5e6 > 0.02 {
		t.Errorf("mean gap %v ns, want 5e6 ± 2%%", mean)
	}
	g := &intervalGaps{gaps: []int64{1e6, 3e6}}
	if g.next() != 1e6 || g.next() != 3e6 || g.next() != 1e6 {
		t.Error("intervals do not cycle")
	}
	if got := intervalsRate([]int64{1e6, 3e6}); got != 500 {
		t.Errorf("intervals rate = %v", got)
	}
	p := filepath.Join(t.TempDir(), "iv")
	os.WriteFile(p, []byte("1000\n\n3000\n"), 0o644)
	if gaps, err := readIntervals(p); err != nil || len(gaps) != 2 || gaps[1] != 3e6 {
		t.Errorf("readIntervals = %v, %v", gaps, err)
	}
	os.WriteFile(p, []byte("1.5\n"), 0o644)
	if _, err := readIntervals(p); err == nil {
		t.Error("fractional microseconds accepted")
	}
}
