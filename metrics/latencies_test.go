package metrics_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/tensor"
)

// latencyServer serves the given repository with backend "sleep" (a
// mirror that sleeps d per execution) and l installed and attached.
func latencyServer(t *testing.T, l *metrics.Latencies, d time.Duration, files map[string]string, opts ...triton.Option) *triton.Server {
	t.Helper()
	srv := newServer(t, files, append([]triton.Option{triton.WithBackend("sleep", sleeper(d)), triton.WithObserver(l)}, opts...)...)
	l.Attach(srv)
	return srv
}

// infer sends n requests to model, one after another.
func infer(t *testing.T, srv *triton.Server, model string, n int) {
	t.Helper()
	for range n {
		if _, err := srv.Infer(context.Background(), request(t, model, "ok")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLatenciesSummaries: the five summaries count the successful requests
// only, in microseconds, with the configured quantiles.
func TestLatenciesSummaries(t *testing.T) {
	const n, sleep = 20, 2 * time.Millisecond
	l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, Quantiles: map[float64]float64{0.5: 0.05, 0.9: 0.01}})
	srv := latencyServer(t, l, sleep, model("m", "sleep", 8, 1, ""))
	start := time.Now()
	infer(t, srv, "m", n)
	elapsed := time.Since(start)
	bad := request(t, "m", "bad")
	bad.Inputs[0].Name = "NOPE"
	for range 3 {
		if _, err := srv.Infer(context.Background(), bad); err == nil {
			t.Fatal("invalid request succeeded")
		}
	}

	mfs := gather(t, l)
	for _, name := range []string{"nv_inference_request_summary_us", "nv_inference_queue_summary_us", "nv_inference_compute_input_summary_us", "nv_inference_compute_infer_summary_us", "nv_inference_compute_output_summary_us"} {
		s := series(t, mfs, name, "model=m", "version=1").GetSummary()
		if s.GetSampleCount() != n {
			t.Errorf("%s count = %d, want %d (failures are not recorded)", name, s.GetSampleCount(), n)
		}
		var qs []float64
		for _, q := range s.GetQuantile() {
			qs = append(qs, q.GetQuantile())
		}
		if !slices.Equal(qs, []float64{0.5, 0.9}) {
			t.Errorf("%s quantiles %v, want [0.5 0.9]", name, qs)
		}
	}
	req := series(t, mfs, "nv_inference_request_summary_us", "model=m").GetSummary()
	if lo, hi := float64(n*sleep/time.Microsecond), float64(elapsed/time.Microsecond); req.GetSampleSum() < lo || req.GetSampleSum() > hi {
		t.Errorf("request summary sum %v µs, want within [%v, %v]", req.GetSampleSum(), lo, hi)
	}
	infer := series(t, mfs, "nv_inference_compute_infer_summary_us", "model=m").GetSummary()
	if median := infer.GetQuantile()[0].GetValue(); median < float64(sleep/time.Microsecond) {
		t.Errorf("compute infer median %v µs < the backend's sleep %v", median, sleep)
	}
}

// TestLatenciesStageHistograms: tritongo_request_stage_seconds counts each
// stage of each successful request, in seconds, in the configured buckets.
func TestLatenciesStageHistograms(t *testing.T) {
	const n, sleep = 10, 2 * time.Millisecond
	l := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, Buckets: []float64{0.001, 0.1, 10}})
	srv := latencyServer(t, l, sleep, model("m", "sleep", 8, 1, ""))
	start := time.Now()
	infer(t, srv, "m", n)
	elapsed := time.Since(start)

	mfs := gather(t, l)
	for _, stage := range []string{"request", "queue", "compute_input", "compute_infer", "compute_output"} {
		h := series(t, mfs, "tritongo_request_stage_seconds", "model=m", "version=1", "stage="+stage).GetHistogram()
		if h.GetSampleCount() != n {
			t.Errorf("%s: count %d, want %d", stage, h.GetSampleCount(), n)
		}
		var bounds []float64
		for _, b := range h.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if !slices.Equal(bounds, []float64{0.001, 0.1, 10}) {
			t.Errorf("%s: buckets %v", stage, bounds)
		}
	}
	req := series(t, mfs, "tritongo_request_stage_seconds", "stage=request").GetHistogram()
	if lo, hi := (n * sleep).Seconds(), elapsed.Seconds(); req.GetSampleSum() < lo || req.GetSampleSum() > hi {
		t.Errorf("request sum %v s, want within [%v, %v]", req.GetSampleSum(), lo, hi)
	}
	if got := req.GetBucket()[0].GetCumulativeCount(); got != 0 {
		t.Errorf("%d requests under 1 ms; each slept %v", got, sleep)
	}
	if got := req.GetBucket()[2].GetCumulativeCount(); got != n {
		t.Errorf("%d requests under 10 s, want %d", got, n)
	}
}

// TestLatenciesFirstResponseBuckets: Triton's default buckets, or the
// model_metrics buckets a model's config sets.
func TestLatenciesFirstResponseBuckets(t *testing.T) {
	const n, sleep = 5, 2 * time.Millisecond
	l := metrics.NewLatencies(metrics.LatencyConfig{FirstResponseHistogram: true})
	srv := latencyServer(t, l, sleep, merge(
		model("plain", "sleep", 8, 1, ""),
		model("custom", "sleep", 8, 1, `model_metrics {
  metric_control [ {
    metric_identifier { family: "nv_inference_first_response_histogram_ms" }
    histogram_options { buckets: [ 1, 1000, 60000 ] }
  } ]
}`),
	))
	infer(t, srv, "plain", n)
	infer(t, srv, "custom", n)

	mfs := gather(t, l)
	for _, tc := range []struct {
		model  string
		bounds []float64
		counts []uint64
	}{
		{"plain", []float64{100, 500, 2000, 5000}, []uint64{n, n, n, n}},
		{"custom", []float64{1, 1000, 60000}, []uint64{0, n, n}},
	} {
		h := series(t, mfs, "nv_inference_first_response_histogram_ms", "model="+tc.model, "version=1").GetHistogram()
		var bounds []float64
		var counts []uint64
		for _, b := range h.GetBucket() {
			bounds, counts = append(bounds, b.GetUpperBound()), append(counts, b.GetCumulativeCount())
		}
		if !slices.Equal(bounds, tc.bounds) || h.GetSampleCount() != n {
			t.Errorf("%s: buckets %v, count %d; want %v, %d", tc.model, bounds, h.GetSampleCount(), tc.bounds, n)
		}
		if tc.model == "custom" && !slices.Equal(counts, tc.counts) {
			t.Errorf("%s: cumulative counts %v, want %v (each request took over %v)", tc.model, counts, tc.counts, sleep)
		}
		if sum := h.GetSampleSum(); sum < float64(n*sleep/time.Millisecond) {
			t.Errorf("%s: sum %v ms, want at least %v", tc.model, sum, n*sleep/time.Millisecond)
		}
	}
}

// TestLatenciesCacheModel: Triton has no request summary for a model with
// the response cache enabled; its other summaries remain.
func TestLatenciesCacheModel(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true})
	srv := latencyServer(t, l, 0, model("cached", "sleep", 8, 1, "response_cache { enable: true }"))
	infer(t, srv, "cached", 2)
	mfs := gather(t, l)
	if mf := family(mfs, "nv_inference_request_summary_us"); mf != nil {
		t.Errorf("request summary for a cache-enabled model: %v", mf)
	}
	if c := series(t, mfs, "nv_inference_queue_summary_us", "model=cached").GetSummary().GetSampleCount(); c != 2 {
		t.Errorf("queue summary count %d, want 2", c)
	}
}

// TestLatenciesMaxSeries: the first MaxSeries model versions to answer are
// recorded; later ones are dropped and counted.
func TestLatenciesMaxSeries(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, FirstResponseHistogram: true, Summaries: true, MaxSeries: 1})
	srv := latencyServer(t, l, 0, merge(model("a", "sleep", 8, 1, ""), model("b", "sleep", 8, 1, "")))
	infer(t, srv, "b", 2)
	infer(t, srv, "a", 2)
	infer(t, srv, "b", 1)
	mfs := gather(t, l)
	if got := value(t, mfs, "tritongo_latency_dropped_model_versions"); got != 1 {
		t.Errorf("dropped %v, want 1", got)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if hasLabels(m, []string{"model=a"}) {
				t.Errorf("%s has a series for the dropped model a", mf.GetName())
			}
		}
	}
	if c := series(t, mfs, "nv_inference_first_response_histogram_ms", "model=b").GetHistogram().GetSampleCount(); c != 3 {
		t.Errorf("b's count %d, want 3", c)
	}
}

// TestLatenciesUnload: a version's series go when it unloads (the server
// is attached), and its slot under MaxSeries is freed.
func TestLatenciesUnload(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, FirstResponseHistogram: true, Summaries: true, MaxSeries: 1})
	srv := latencyServer(t, l, 0, merge(model("a", "sleep", 8, 1, ""), model("b", "sleep", 8, 1, "")),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("a", "b"))
	infer(t, srv, "a", 1)
	infer(t, srv, "b", 1) // dropped: a holds the only slot
	if err := srv.Unload(context.Background(), "a", nil); err != nil {
		t.Fatal(err)
	}
	mfs := gather(t, l)
	if got := value(t, mfs, "tritongo_latency_dropped_model_versions"); got != 1 {
		t.Errorf("dropped %v, want 1 (b)", got)
	}
	for _, mf := range mfs {
		if len(mf.GetMetric()) > 0 && mf.GetName() != "tritongo_latency_dropped_model_versions" {
			t.Errorf("%s still has series after a unloaded: %v", mf.GetName(), mf.GetMetric())
		}
	}
	if err := srv.Unload(context.Background(), "b", nil); err != nil {
		t.Fatal(err)
	}
	if got := value(t, gather(t, l), "tritongo_latency_dropped_model_versions"); got != 0 {
		t.Errorf("dropped %v after b unloaded, want 0", got)
	}
	if err := srv.Load(context.Background(), "b", nil); err != nil {
		t.Fatal(err)
	}
	infer(t, srv, "b", 1) // the freed slot is b's now
	if c := series(t, gather(t, l), "nv_inference_first_response_histogram_ms", "model=b").GetHistogram().GetSampleCount(); c != 1 {
		t.Errorf("b's count %d after reload, want 1", c)
	}
}

// TestLatenciesZeroConfig: the zero LatencyConfig records nothing.
func TestLatenciesZeroConfig(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{})
	srv := latencyServer(t, l, 0, model("m", "sleep", 8, 1, ""))
	infer(t, srv, "m", 3)
	if names := familyNames(gather(t, l)); !slices.Equal(names, []string{"tritongo_latency_dropped_model_versions"}) {
		t.Errorf("families %v", names)
	}
}

// TestLatenciesObserveAllocs: after a version's first request, recording a
// request allocates nothing, with every family on.
func TestLatenciesObserveAllocs(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, StageHistograms: true, FirstResponseHistogram: true})
	model := strings.Clone("noop") // not a constant: as a request's model name is
	rs := triton.RequestStats{Model: model, Version: 1, BatchSize: 1, ExecutedBatchSize: 1,
		Request: 300 * time.Microsecond, Queue: 10 * time.Microsecond, ComputeInput: 5 * time.Microsecond,
		ComputeInfer: 250 * time.Microsecond, ComputeOutput: 5 * time.Microsecond}
	l.ObserveRequest(rs)
	if allocs := testing.AllocsPerRun(10000, func() { l.ObserveRequest(rs) }); allocs != 0 {
		t.Errorf("ObserveRequest allocates %v times per call, want 0", allocs)
	}
	if c := testutil.CollectAndCount(l, "tritongo_request_stage_seconds"); c != 5 {
		t.Errorf("%d stage series, want 5", c)
	}
}

// TestLatenciesConcurrent records from many goroutines while scraping (for
// -race) and checks no observation is lost.
func TestLatenciesConcurrent(t *testing.T) {
	l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, StageHistograms: true, FirstResponseHistogram: true})
	srv := latencyServer(t, l, 0, merge(model("a", "sleep", 8, 2, ""), model("b", "sleep", 8, 2, "dynamic_batching { }")))
	reg := prometheus.NewRegistry()
	reg.MustRegister(l)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				if _, err := srv.Infer(context.Background(), request(t, []string{"a", "b"}[(i+j)%2], "x")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	mfs := gather(t, l)
	var total uint64
	for _, m := range family(mfs, "nv_inference_first_response_histogram_ms").GetMetric() {
		total += m.GetHistogram().GetSampleCount()
	}
	var stages uint64
	for _, m := range family(mfs, "tritongo_request_stage_seconds").GetMetric() {
		if hasLabels(m, []string{"stage=queue"}) {
			stages += m.GetHistogram().GetSampleCount()
		}
	}
	if total != 400 || stages != 400 {
		t.Errorf("recorded %d first responses, %d queue stages; want 400", total, stages)
	}
}

// TestLatenciesFirstResponseDecoupled: for a decoupled model the
// first-response histogram observes the time to the first response, not
// the whole request, and a request that sent no response is not observed.
func TestLatenciesFirstResponseDecoupled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := metrics.NewLatencies(metrics.LatencyConfig{FirstResponseHistogram: true, StageHistograms: true})
		srv := newServer(t, map[string]string{
			"repeat/config.pbtxt": testmodels.RepeatConfig,
			"repeat/1/model":      "",
		}, triton.WithBackend("repeat", &testmodels.Repeat{}), triton.WithObserver(l))
		l.Attach(srv)
		stream := func(vals []int32, delays []uint32) int {
			in, err1 := tensor.From("IN", tensor.Shape{int64(len(vals))}, vals)
			delay, err2 := tensor.From("DELAY", tensor.Shape{int64(len(vals))}, delays)
			wait, err3 := tensor.From("WAIT", tensor.Shape{1}, []uint32{0})
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, err := range srv.InferStream(t.Context(), &triton.InferRequest{Model: "repeat", Inputs: []tensor.Tensor{in, delay, wait}}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			return n
		}
		if n := stream([]int32{1, 2, 3}, []uint32{30, 10, 200}); n != 3 {
			t.Fatalf("%d responses, want 3", n)
		}
		if n := stream(nil, nil); n != 0 {
			t.Fatalf("%d responses to an empty request, want 0", n)
		}

		mfs := gather(t, l)
		h := series(t, mfs, "nv_inference_first_response_histogram_ms", "model=repeat", "version=1").GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 30 {
			t.Errorf("first response count %d, sum %v ms; want 1, 30 (the first response, not the 240 ms request; none for the empty request)", h.GetSampleCount(), h.GetSampleSum())
		}
		if c := h.GetBucket()[0].GetCumulativeCount(); c != 1 {
			t.Errorf("%d first responses under 100 ms, want 1", c)
		}
		req := series(t, mfs, "tritongo_request_stage_seconds", "model=repeat", "stage=request").GetHistogram()
		if req.GetSampleCount() != 2 || req.GetSampleSum() != 0.24 {
			t.Errorf("request stage count %d, sum %v s; want 2, 0.24", req.GetSampleCount(), req.GetSampleSum())
		}
	})
}
