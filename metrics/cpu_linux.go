//go:build linux

package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// cpuReader reads the machine's CPU time and memory from /proc as Triton
// does: utilization is the busy share of CPU time (user, nice, system,
// irq, softirq, steal over those plus idle and iowait) between two
// consecutive scrapes, since boot on the first; used memory is MemTotal
// minus MemAvailable.
type cpuReader struct {
	fs procfs.FS

	mu sync.Mutex
	// mu protects the following.
	busy, total float64 // CPU seconds at the previous scrape
	util        float64 // the last utilization computed
}

func newCPUReader() *cpuReader {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	return &cpuReader{fs: fs}
}

// collect sends the CPU families; a family whose /proc file cannot be read
// is absent from this scrape.
func (r *cpuReader) collect(ch chan<- prometheus.Metric, d *fixedDescs) {
	if util, ok := r.utilization(); ok {
		ch <- prometheus.MustNewConstMetric(d.cpuUtil, prometheus.GaugeValue, util)
	}
	mi, err := r.fs.Meminfo()
	if err == nil && mi.MemTotalBytes != nil && mi.MemAvailableBytes != nil {
		total, avail := *mi.MemTotalBytes, *mi.MemAvailableBytes
		ch <- prometheus.MustNewConstMetric(d.cpuMemTotal, prometheus.GaugeValue, float64(total))
		ch <- prometheus.MustNewConstMetric(d.cpuMemUsed, prometheus.GaugeValue, float64(total-min(avail, total)))
	}
}

func (r *cpuReader) utilization() (float64, bool) {
	st, err := r.fs.Stat()
	if err != nil {
		return 0, false
	}
	c := st.CPUTotal
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	total := busy + c.Idle + c.Iowait
	r.mu.Lock()
	defer r.mu.Unlock()
	// Two scrapes within one clock tick see no time pass: keep the last
	// value rather than divide by zero.
	if dt := total - r.total; dt > 0 {
		r.util = min(max((busy-r.busy)/dt, 0), 1)
		r.busy, r.total = busy, total
	}
	return r.util, true
}
