package advisor

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Budget is a limit on one statistic of the latency clients see: p99=50ms
// bounds the 99th percentile at 50 ms. The zero value is no budget: the
// advice then maximises throughput alone (the offline profile).
type Budget struct {
	// Percentile is 50, 90, 95 or 99; 0 bounds the average.
	Percentile int
	// Limit is the bound; 0 means no budget.
	Limit time.Duration
}

// ParseBudget reads a budget written STAT=DURATION: p50, p90, p95, p99 or
// avg, then a Go duration with its unit (50ms, 500us, 1.5s).
func ParseBudget(s string) (Budget, error) {
	stat, val, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return Budget{}, fmt.Errorf("latency budget %q is not STAT=DURATION (p99=50ms, p95=20ms, avg=10ms)", s)
	}
	var b Budget
	switch stat = strings.ToLower(strings.TrimSpace(stat)); stat {
	case "avg", "mean":
	case "p50", "p90", "p95", "p99":
		b.Percentile, _ = strconv.Atoi(stat[1:])
	default:
		return Budget{}, fmt.Errorf("latency budget %q: the statistic is one of avg, p50, p90, p95, p99, not %q", s, stat)
	}
	d, err := time.ParseDuration(strings.TrimSpace(val))
	if err != nil {
		return Budget{}, fmt.Errorf("latency budget %q: %q is not a duration with its unit (50ms, 500us, 1s)", s, val)
	}
	if d <= 0 {
		return Budget{}, fmt.Errorf("latency budget %q: the limit must be positive", s)
	}
	b.Limit = d
	return b, nil
}

// Stat names the statistic: "avg", "p99", ...
func (b Budget) Stat() string {
	if b.Percentile == 0 {
		return "avg"
	}
	return "p" + strconv.Itoa(b.Percentile)
}

// String is the budget as ParseBudget reads it, or "none".
func (b Budget) String() string {
	if b.Limit == 0 {
		return "none"
	}
	return b.Stat() + "=" + formatDuration(b.Limit)
}

// Of returns m's latency in the budget's statistic (the average when
// there is no budget).
func (b Budget) Of(m *Measurement) time.Duration {
	switch b.Percentile {
	case 50:
		return m.P50
	case 90:
		return m.P90
	case 95:
		return m.P95
	case 99:
		return m.P99
	}
	return m.Avg
}

// Meets reports whether m answered requests within the budget.
func (b Budget) Meets(m *Measurement) bool {
	if m.Throughput <= 0 {
		return false
	}
	return b.Limit == 0 || b.Of(m) <= b.Limit
}

// formatDuration writes d briefly: 50ms, 1.5ms, 500µs, 2s.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d >= time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d >= time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "µs"
	}
	return d.String()
}

// formatMS writes a latency in ms with three significant digits or more:
// 0.312 ms, 5.10 ms, 48.2 ms, 1234 ms.
func formatMS(d time.Duration) string {
	ms := float64(d) / 1e6
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64)
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	}
	return strconv.FormatFloat(ms, 'f', 0, 64)
}
