package python_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

const countedModel = `
import json
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.requests = pb_utils.MetricFamily("py_requests_total", "requests seen", pb_utils.MetricFamily.COUNTER)
        self.sizes = pb_utils.MetricFamily("py_input_size", "input elements", pb_utils.MetricFamily.HISTOGRAM)
        self.level = pb_utils.MetricFamily("py_level", "last value", pb_utils.MetricFamily.GAUGE)
        labels = {"model": args["model_name"]}
        self.count = self.requests.Metric(labels=labels)
        self.size = self.sizes.Metric(labels=labels, buckets=[1.0, 4.0, 16.0])
        self.gauge = self.level.Metric(labels=labels)

    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "A").as_numpy()
            self.count.increment(1)
            self.size.observe(a.size)
            self.gauge.set(float(a[0]))
            errors = []
            for f in (lambda: self.count.set(1), lambda: self.count.increment(-1), lambda: self.size.value(),
                      lambda: self.requests.Metric(buckets=[1.0])):
                try:
                    f()
                except pb_utils.TritonModelException as e:
                    errors.append(str(e))
            info = {"count": self.count.value(), "gauge": self.gauge.value(), "errors": errors}
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", a),
                pb_utils.Tensor("INFO", np.array([json.dumps(info)], dtype=np.object_))]))
        return out
`

// TestCustomMetrics: MetricFamily counters, gauges and histograms reach
// the server's registry; the kinds' rules hold with Triton's texts.
func TestCustomMetrics(t *testing.T) {
	config := strings.Replace(blsConfig, "output [", `output [ { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] },`, 1)
	srv := newRepo(t).model("counted", config, countedModel).Serve()
	var last map[string]any
	for i := range 3 {
		resp, err := infer(t, srv, "counted", must(tensor.From("A", tensor.Shape{4}, []float32{float32(i), 0, 0, 0})))
		if err != nil {
			t.Fatal(err)
		}
		last = info(t, resp)
	}
	if last["count"] != float64(3) || last["gauge"] != float64(2) {
		t.Errorf("values seen by the model %v", last)
	}
	errs := last["errors"].([]any)
	for i, want := range []string{
		"Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set",
		"Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.",
		"Failed to get metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value",
		"Failed to create metric. Unexpected buckets found.",
	} {
		if i >= len(errs) || errs[i] != want {
			t.Errorf("error %d: %v, want %q", i, errs, want)
		}
	}
	families := gather(t, srv)
	c := families["py_requests_total"]
	if c == nil || c.GetMetric()[0].GetCounter().GetValue() != 3 || c.GetMetric()[0].GetLabel()[0].GetValue() != "counted" {
		t.Errorf("counter %v", c)
	}
	h := families["py_input_size"]
	if h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() != 3 || h.GetMetric()[0].GetHistogram().GetSampleSum() != 12 {
		t.Errorf("histogram %v", h)
	}
	if g := families["py_level"]; g == nil || g.GetMetric()[0].GetGauge().GetValue() != 2 {
		t.Errorf("gauge %v", g)
	}
}

func gather(t *testing.T, srv *triton.Server) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.ModelMetrics())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}
