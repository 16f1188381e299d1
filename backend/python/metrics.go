package python

import (
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/triton-go/triton/modelmetrics"
)

// maxMetricHandles bounds the MetricFamily and Metric objects one stub may
// hold at once.
const maxMetricHandles = 100_000

// customMetrics are the metric families and metrics a model's stubs
// created (pb_utils.MetricFamily), in the server's registry: handles by
// the ids the stub knows them by. A stub's handles close when it ends.
type customMetrics struct {
	reg *modelmetrics.Registry

	mu sync.Mutex
	// mu protects the following.
	next     uint64
	families map[uint64]familyHandle
	metrics  map[uint64]metricHandle
}

type familyHandle struct {
	f     *modelmetrics.Family
	owner *proc
}

type metricHandle struct {
	m     *modelmetrics.Metric
	owner *proc
}

func newCustomMetrics(reg *modelmetrics.Registry) *customMetrics {
	if reg == nil {
		reg = modelmetrics.NewRegistry() // a hand-built spec: metrics work, nobody scrapes them
	}
	return &customMetrics{reg: reg, families: map[uint64]familyHandle{}, metrics: map[uint64]metricHandle{}}
}

// metricMsg handles a stub's metric calls; creation and value() are
// answered, updates are not (the stub checked the kind already).
func (in *instance) metricMsg(p *proc, m *stubMsg) {
	c := in.metrics
	var id uint64
	var value *float64
	var err error
	switch m.Op {
	case "family":
		var f *modelmetrics.Family
		if f, err = c.reg.Family(m.Name, m.Help, modelmetrics.Kind(m.Kind)); err == nil {
			id, err = c.add(func(id uint64) { c.families[id] = familyHandle{f, p} }, f.Close)
		}
	case "metric":
		c.mu.Lock()
		fh, ok := c.families[m.Family]
		c.mu.Unlock()
		if !ok {
			err = errors.New("the metric family was deleted")
			break
		}
		var mt *modelmetrics.Metric
		if mt, err = fh.f.Metric(m.Labels, m.Buckets); err == nil {
			id, err = c.add(func(id uint64) { c.metrics[id] = metricHandle{mt, p} }, mt.Close)
		}
	case "metric_value":
		if mt := c.metric(m.ID); mt == nil {
			err = errors.New("the metric was deleted")
		} else {
			var v float64
			v, err = mt.Value()
			value = &v
		}
	case "metric_op":
		mt := c.metric(m.ID)
		if mt == nil {
			return
		}
		switch m.What {
		case "increment":
			err = mt.Increment(m.Value)
		case "set":
			err = mt.Set(m.Value)
		case "observe":
			err = mt.Observe(m.Value)
		}
		if err != nil {
			in.log.Warn("a metric update of the model failed", zap.Error(err))
		}
		return
	case "family_close":
		c.mu.Lock()
		fh, ok := c.families[m.ID]
		delete(c.families, m.ID)
		c.mu.Unlock()
		if ok {
			fh.f.Close()
		}
		return
	case "metric_close":
		c.mu.Lock()
		mh, ok := c.metrics[m.ID]
		delete(c.metrics, m.ID)
		c.mu.Unlock()
		if ok {
			mh.m.Close()
		}
		return
	}
	msg := replyMsg{Op: "reply", Call: m.Call, ID: id, Value: value}
	if err != nil {
		msg = replyMsg{Op: "reply", Call: m.Call, Error: &wireError{Msg: err.Error(), Code: 3}}
	}
	_ = p.async.send(&msg)
}

// add stores a new handle under a new id, unless the stub holds too many.
func (c *customMetrics) add(store func(uint64), undo func()) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.families)+len(c.metrics) >= maxMetricHandles {
		undo()
		return 0, errors.New("the stub holds too many MetricFamily and Metric objects")
	}
	c.next++
	store(c.next)
	return c.next, nil
}

func (c *customMetrics) metric(id uint64) *modelmetrics.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metrics[id].m
}

// closeOwner closes the handles of a stub that ended (p), or all (nil).
func (c *customMetrics) closeOwner(p *proc) {
	c.mu.Lock()
	var ms []*modelmetrics.Metric
	var fs []*modelmetrics.Family
	for id, h := range c.metrics {
		if p == nil || h.owner == p {
			ms = append(ms, h.m)
			delete(c.metrics, id)
		}
	}
	for id, h := range c.families {
		if p == nil || h.owner == p {
			fs = append(fs, h.f)
			delete(c.families, id)
		}
	}
	c.mu.Unlock()
	for _, m := range ms {
		m.Close()
	}
	for _, f := range fs {
		f.Close()
	}
}
