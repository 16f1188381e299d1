package python

// customMetrics: placeholder until the modelmetrics registry lands.
type customMetrics struct{}

func newCustomMetrics(any) *customMetrics { return &customMetrics{} }

func (c *customMetrics) close() {}

func (in *instance) metricMsg(p *proc, m *stubMsg) {
	if m.Call != 0 {
		_ = p.replies.send(replyMsg{Op: "reply", Call: m.Call, Error: &wireError{Msg: "custom metrics are not available", Code: 5}})
	}
}
