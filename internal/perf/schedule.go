package perf

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// schedule.go is the request-rate schedule: the gaps between intended send
// times. Poisson gaps come from the generator perf_analyzer uses
// (std::mt19937 with its default seed and libstdc++'s
// exponential_distribution), so a rate step offers the same arrival
// pattern on every run and as perf_analyzer does.

// gapSource yields the gap before each scheduled request, in ns.
type gapSource interface {
	next() int64
}

// constantGaps is 1/rate, truncated to whole ns as duration_cast does.
type constantGaps int64

func (g constantGaps) next() int64 { return int64(g) }

func newConstant(rate float64) constantGaps {
	return constantGaps(max(int64(1.0/rate*1e9), 1))
}

// poissonGaps draws exponential gaps with mean 1/rate.
type poissonGaps struct {
	rng    mt19937
	lambda float64
}

func newPoisson(rate float64) *poissonGaps {
	g := &poissonGaps{lambda: rate}
	g.rng.seed(5489)
	return g
}

func (g *poissonGaps) next() int64 {
	// generate_canonical<double, 53> over a 32-bit engine: two draws.
	sum := float64(g.rng.next())
	sum += float64(g.rng.next()) * (1 << 32)
	u := sum / (1 << 64)
	if u >= 1 {
		u = math.Nextafter(1, 0)
	}
	x := -math.Log(1-u) / g.lambda
	return int64(x * 1e9)
}

// intervalGaps cycles through the gaps of a --request-intervals file.
type intervalGaps struct {
	gaps []int64
	i    int
}

func (g *intervalGaps) next() int64 {
	d := g.gaps[g.i]
	g.i = (g.i + 1) % len(g.gaps)
	return d
}

// readIntervals reads a --request-intervals file: one gap per line, in µs.
func readIntervals(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open request intervals file '%s'", path)
	}
	defer f.Close()
	var gaps []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		us, err := strconv.ParseUint(line, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("request intervals file '%s': %q is not a whole number of microseconds", path, line)
		}
		gaps = append(gaps, int64(us)*1000)
	}
	if len(gaps) == 0 {
		return nil, fmt.Errorf("request intervals file '%s' is empty", path)
	}
	return gaps, nil
}

// intervalsRate is the rate perf_analyzer reports for custom intervals:
// count·1e9/Σns, with integer division.
func intervalsRate(gaps []int64) float64 {
	var total int64
	for _, g := range gaps {
		total += g
	}
	if total == 0 {
		return 0
	}
	return float64(int64(len(gaps)) * 1_000_000_000 / total)
}

// mt19937 is the 32-bit Mersenne Twister, as std::mt19937.
type mt19937 struct {
	mt  [624]uint32
	idx int
}

func (m *mt19937) seed(s uint32) {
	m.mt[0] = s
	for i := 1; i < len(m.mt); i++ {
		m.mt[i] = 1812433253*(m.mt[i-1]^(m.mt[i-1]>>30)) + uint32(i)
	}
	m.idx = len(m.mt)
}

func (m *mt19937) next() uint32 {
	const n, mid = 624, 397
	if m.idx >= n {
		for i := range n {
			y := m.mt[i]&0x80000000 | m.mt[(i+1)%n]&0x7fffffff
			v := m.mt[(i+mid)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			m.mt[i] = v
		}
		m.idx = 0
	}
	y := m.mt[m.idx]
	m.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}
