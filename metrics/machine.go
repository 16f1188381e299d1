package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collectMachine sends the machine families: read now, or, with
// Config.Interval set, the last reading while it is younger than the
// interval.
func (c *Collector) collectMachine(ch chan<- prometheus.Metric) {
	if c.cfg.Interval <= 0 {
		c.readMachine(ch)
		return
	}
	c.machineMu.Lock()
	defer c.machineMu.Unlock()
	if c.machineAt.IsZero() || time.Since(c.machineAt) >= c.cfg.Interval {
		buf := make(chan prometheus.Metric)
		done := make(chan []prometheus.Metric)
		go func() {
			var got []prometheus.Metric
			for m := range buf {
				got = append(got, m)
			}
			done <- got
		}()
		c.readMachine(buf)
		close(buf)
		c.machine, c.machineAt = <-done, time.Now()
	}
	for _, m := range c.machine {
		ch <- m
	}
}

// readMachine reads the pinned-memory, CPU and GPU families.
func (c *Collector) readMachine(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.fixed.pinnedTotal, prometheus.GaugeValue, 0)
	ch <- prometheus.MustNewConstMetric(c.fixed.pinnedUsed, prometheus.GaugeValue, 0)
	if c.cpu != nil {
		c.cpu.collect(ch, c.fixed)
	}
	c.collectGPUs(ch)
}
