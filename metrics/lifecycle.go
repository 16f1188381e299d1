package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/triton-go/triton"
)

// lifecycleDescs are the descriptors of the memory and lifecycle families,
// with a Collector's constant labels.
type lifecycleDescs struct {
	budget, resident, model, loads, evictions, thrashes, waits *prometheus.Desc
}

func newLifecycleDescs(labels prometheus.Labels) *lifecycleDescs {
	d := func(name, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, vars, labels)
	}
	return &lifecycleDescs{
		budget:    d(nameMemBudget, helpMemBudget),
		resident:  d(nameMemResident, helpMemResident),
		model:     d(nameMemModel, helpMemModel, labelModel, labelVersion),
		loads:     d(nameLoads, helpLoads, labelModel, labelTrigger),
		evictions: d(nameEvictions, helpEvictions, labelModel, labelReason),
		thrashes:  d(nameThrashes, helpThrashes, labelModel),
		waits:     d(nameDemandWait, helpDemandWait, labelModel),
	}
}

func (l *lifecycleDescs) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{l.budget, l.resident, l.model, l.loads, l.evictions, l.thrashes, l.waits} {
		ch <- d
	}
}

// collectLifecycle sends the memory and lifecycle families of a server
// that accounts them (triton.MemoryUsage.Accounted).
func (c *Collector) collectLifecycle(ch chan<- prometheus.Metric) {
	u := c.srv.Memory()
	if !u.Accounted {
		return
	}
	l := c.life
	ch <- prometheus.MustNewConstMetric(l.budget, prometheus.GaugeValue, float64(u.Budget))
	ch <- prometheus.MustNewConstMetric(l.resident, prometheus.GaugeValue, float64(u.Resident))
	bytes := map[[2]string]int64{} // a version both serving and retiring (a reload of it) once
	for _, m := range u.Models {
		bytes[[2]string{m.Name, strconv.FormatInt(m.Version, 10)}] += m.Bytes
	}
	for k, n := range bytes {
		ch <- prometheus.MustNewConstMetric(l.model, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for name, cs := range u.Counts {
		for trigger, n := range cs.Loads {
			ch <- prometheus.MustNewConstMetric(l.loads, prometheus.CounterValue, float64(n), name, trigger)
		}
		for reason, n := range cs.Evictions {
			ch <- prometheus.MustNewConstMetric(l.evictions, prometheus.CounterValue, float64(n), name, reason)
		}
		ch <- prometheus.MustNewConstMetric(l.thrashes, prometheus.CounterValue, float64(cs.Thrashes), name)
		if cs.Waits > 0 {
			buckets := make(map[float64]uint64, len(triton.OnDemandWaitBounds))
			for i, b := range triton.OnDemandWaitBounds {
				buckets[b.Seconds()] = cs.WaitBuckets[i]
			}
			ch <- prometheus.MustNewConstHistogram(l.waits, cs.Waits, cs.WaitTotal.Seconds(), buckets, name)
		}
	}
}
