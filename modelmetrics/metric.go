package modelmetrics

import (
	"errors"
	"math"
	"sort"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric is one handle to a series of a family (one set of label values),
// returned by [Family.Metric]. Which operations it has depends on the
// family's kind, as in Triton:
//
//	            Increment      Set   Observe   Value
//	Counter     v >= 0 only    -     -         yes
//	Gauge       any v          yes   -         yes
//	Histogram   -              -     yes       -
//
// An operation the kind lacks fails with Triton's text (such as
// "TRITONSERVER_METRIC_KIND_COUNTER does not support Set"), wrapping
// [errors.ErrUnsupported]. Once the handle is closed, or its family closed
// to zero references, every operation fails with Triton's "Metric has been
// invalidated" text, wrapping [ErrClosed].
//
// The methods are safe for concurrent use. Increment, Set, Observe and
// Value take no lock and do not allocate, failing or not.
type Metric struct {
	s      *series
	closed atomic.Bool // set under the registry's mutex
}

// series is one time series: the value of a counter or gauge, or a
// histogram's buckets and sum.
type series struct {
	fam         *family
	key         string
	labelValues []string // in the order of fam.labelNames

	bits   atomic.Uint64   // math.Float64bits of the value; a histogram's sum
	bounds []float64       // histogram: bucket upper bounds
	counts []atomic.Uint64 // histogram: observations per bucket (not cumulative), +Inf last

	refs int // under the registry's mutex
}

// invalid reports whether m may no longer be used.
func (m *Metric) invalid() bool { return m.closed.Load() || m.s.fam.dead.Load() }

// Increment adds v to a counter (v >= 0, not NaN) or a gauge (any v).
func (m *Metric) Increment(v float64) error {
	if m.invalid() {
		return errIncrementInvalid
	}
	switch m.s.fam.kind {
	case Counter:
		if !(v >= 0) {
			return errCounterNegative
		}
	case Histogram:
		return errHistogramIncrement
	}
	m.s.add(v)
	return nil
}

// Set sets a gauge to v.
func (m *Metric) Set(v float64) error {
	if m.invalid() {
		return errSetInvalid
	}
	switch m.s.fam.kind {
	case Counter:
		return errCounterSet
	case Histogram:
		return errHistogramSet
	}
	m.s.bits.Store(math.Float64bits(v))
	return nil
}

// Observe records v in a histogram: v counts in every bucket whose upper
// bound is >= v (NaN only in +Inf), and adds to the sum.
func (m *Metric) Observe(v float64) error {
	if m.invalid() {
		return errObserveInvalid
	}
	switch m.s.fam.kind {
	case Counter:
		return errCounterObserve
	case Gauge:
		return errGaugeObserve
	}
	s := m.s
	s.counts[sort.SearchFloat64s(s.bounds, v)].Add(1)
	s.add(v)
	return nil
}

// Value returns a counter's or a gauge's value.
func (m *Metric) Value() (float64, error) {
	if m.invalid() {
		return 0, errValueInvalid
	}
	if m.s.fam.kind == Histogram {
		return 0, errHistogramValue
	}
	return math.Float64frombits(m.s.bits.Load()), nil
}

// Close drops this handle's reference to the series; when the last goes,
// the series disappears from scrapes (and a later [Family.Metric] with the
// same labels starts again at zero). Close is idempotent, and also fine
// after the family was closed.
func (m *Metric) Close() {
	s := m.s
	fam := s.fam
	r := fam.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed.Load() {
		return
	}
	m.closed.Store(true)
	if fam.dead.Load() {
		return // the family took its series with it
	}
	s.refs--
	if s.refs > 0 {
		return
	}
	delete(fam.series, s.key)
	r.series--
	if len(fam.series) == 0 {
		fam.labelNames, fam.desc = nil, nil
	}
}

// add adds v to the float64 in bits.
func (s *series) add(v float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// metric returns the series as a Prometheus metric of desc, or nil if the
// values do not fit desc (which the checks in Family.Metric rule out).
//
// A histogram's count is the sum of its bucket counts as read, so the
// buckets and the count always agree; the sum may lag or lead them by the
// observations in flight during the read.
func (s *series) metric(desc *prometheus.Desc, kind Kind) prometheus.Metric {
	var m prometheus.Metric
	var err error
	switch kind {
	case Counter, Gauge:
		t := prometheus.CounterValue
		if kind == Gauge {
			t = prometheus.GaugeValue
		}
		m, err = prometheus.NewConstMetric(desc, t, math.Float64frombits(s.bits.Load()), s.labelValues...)
	case Histogram:
		buckets := make(map[float64]uint64, len(s.bounds))
		var count uint64
		for i, b := range s.bounds {
			count += s.counts[i].Load()
			buckets[b] = count
		}
		count += s.counts[len(s.bounds)].Load()
		m, err = prometheus.NewConstHistogram(desc, count, math.Float64frombits(s.bits.Load()), buckets, s.labelValues...)
	}
	if err != nil {
		return nil
	}
	return m
}

// Triton's texts for the metric operations (core src/metric_family.cc,
// Metric::Value, Increment, Set and Observe). Observe's invalidated text
// is Triton's too: it says "set".
var (
	errValueInvalid     = &metricError{"Could not get metric value. Metric has been invalidated.", ErrClosed}
	errIncrementInvalid = &metricError{"Could not increment metric value. Metric has been invalidated.", ErrClosed}
	errSetInvalid       = &metricError{"Could not set metric value. Metric has been invalidated.", ErrClosed}
	errObserveInvalid   = errSetInvalid

	errCounterNegative    = &metricError{"TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.", ErrInvalid}
	errHistogramIncrement = &metricError{"TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment", errors.ErrUnsupported}
	errCounterSet         = &metricError{"TRITONSERVER_METRIC_KIND_COUNTER does not support Set", errors.ErrUnsupported}
	errHistogramSet       = &metricError{"TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Set", errors.ErrUnsupported}
	errCounterObserve     = &metricError{"TRITONSERVER_METRIC_KIND_COUNTER does not support Observe", errors.ErrUnsupported}
	errGaugeObserve       = &metricError{"TRITONSERVER_METRIC_KIND_GAUGE does not support Observe", errors.ErrUnsupported}
	errHistogramValue     = &metricError{"TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value", errors.ErrUnsupported}
)
