package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
)

// scrape serves reg through promhttp, as cmd/tritonserver does, and
// returns the status and body of one GET /metrics.
func scrape(t *testing.T, reg *prometheus.Registry) (int, string) {
	t.Helper()
	ts := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// twoServers starts two real servers with a model "m" each (b's with a
// metric tag), after n and 2n requests.
func twoServers(t *testing.T) (a, b *triton.Server) {
	a = newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	b = newServer(t, model("m", "mirror", 8, 1, `metric_tags { key: "team" value: "vision" }`), triton.WithBackend("mirror", mirror))
	for i, srv := range []*triton.Server{a, b, b} {
		if _, err := srv.Infer(context.Background(), request(t, "m", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// TestCollectorsSameLabelsRefused: a second Collector exporting the same
// series (no ConstLabels on either) is refused at Register, and the
// registry keeps serving the first one's metrics: it used to accept both
// and answer every scrape with 500.
func TestCollectorsSameLabelsRefused(t *testing.T) {
	a, b := twoServers(t)
	ca := metrics.NewCollector(a, metrics.Config{DisableGPU: true})
	cb := metrics.NewCollector(b, metrics.Config{DisableGPU: true})
	defer ca.Close()
	defer cb.Close()
	reg := prometheus.NewRegistry()
	if err := reg.Register(ca); err != nil {
		t.Fatal(err)
	}
	err := reg.Register(cb)
	if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) || are.ExistingCollector != ca {
		t.Fatalf("second Register: %v, want an AlreadyRegisteredError naming the first collector", err)
	}
	code, body := scrape(t, reg)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	if !strings.Contains(body, `nv_inference_request_success{model="m",version="1"} 1`+"\n") {
		t.Errorf("the first collector's series are missing:\n%s", body)
	}
	if !reg.Unregister(ca) {
		t.Error("Unregister did not find the collector")
	}
	if err := reg.Register(cb); err != nil {
		t.Errorf("Register after the first was unregistered: %v", err)
	}
}

// TestCollectorsConstLabels: two servers' Collectors and Latencies on one
// registry, each with its own ConstLabels, scrape as one /metrics with
// every series once, labelled by server.
func TestCollectorsConstLabels(t *testing.T) {
	la := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, Summaries: true, ConstLabels: prometheus.Labels{"server_id": "a"}})
	lb := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, Summaries: true, ConstLabels: prometheus.Labels{"server_id": "b"}})
	a := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror), triton.WithObserver(la))
	b := newServer(t, model("m", "mirror", 8, 1, `metric_tags { key: "team" value: "vision" }`),
		triton.WithBackend("mirror", mirror), triton.WithObserver(lb))
	for i, srv := range []*triton.Server{a, b, b} {
		if _, err := srv.Infer(context.Background(), request(t, "m", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	labels := prometheus.Labels{"server_id": "a"}
	ca := metrics.NewCollector(a, metrics.Config{DisableGPU: true, ConstLabels: labels})
	labels["server_id"] = "changed" // the Collector keeps its copy
	cb := metrics.NewCollector(b, metrics.Config{DisableGPU: true, ConstLabels: prometheus.Labels{"server_id": "b"}})
	defer ca.Close()
	defer cb.Close()
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{ca, cb, la, lb} {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	code, body := scrape(t, reg)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	want := []string{
		`nv_inference_request_success{model="m",server_id="a",version="1"} 1`,
		`nv_inference_request_success{_team="vision",model="m",server_id="b",version="1"} 2`,
		`nv_inference_request_failure{model="m",reason="BACKEND",server_id="a",version="1"} 0`,
		`nv_pinned_memory_pool_total_bytes{server_id="a"} 0`,
		`nv_pinned_memory_pool_total_bytes{server_id="b"} 0`,
		`tritongo_metrics_dropped_model_versions{server_id="b"} 0`,
		`tritongo_request_stage_seconds_count{model="m",server_id="a",stage="queue",version="1"} 1`,
		`tritongo_request_stage_seconds_count{model="m",server_id="b",stage="queue",version="1"} 2`,
		`nv_inference_request_summary_us_count{model="m",server_id="b",version="1"} 2`,
		`tritongo_latency_dropped_model_versions{server_id="a"} 0`,
	}
	if runtime.GOOS == "linux" {
		want = append(want, `nv_cpu_memory_total_bytes{server_id="a"} `, `nv_cpu_memory_total_bytes{server_id="b"} `)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("exposition lacks %q", w)
		}
	}
	if strings.Contains(body, "changed") {
		t.Error("the Collector follows a caller's later change to its ConstLabels map")
	}
	// A pedantic registry accepts them too (the tagged series included).
	gather(t, ca, cb, la, lb)
}

// TestCollectorInvalidConstLabels: a label name the Collector uses itself,
// or one Prometheus would refuse, fails at Register with an error naming
// it, for Collector and Latencies alike.
func TestCollectorInvalidConstLabels(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	for _, name := range []string{"model", "version", "reason", "gpu_uuid", "_team", "__name__", "bad-name", "1x", ""} {
		c := metrics.NewCollector(srv, metrics.Config{DisableGPU: true, ConstLabels: prometheus.Labels{name: "x"}})
		err := prometheus.NewRegistry().Register(c)
		if err == nil || !strings.Contains(err.Error(), `Config.ConstLabels: "`+name+`"`) {
			t.Errorf("ConstLabels %q: Register: %v", name, err)
		}
		// Collected anyway (an unchecked registry of the caller's own):
		// the scrape says why instead of exporting something wrong.
		ch := make(chan prometheus.Metric, 10)
		c.Collect(ch)
		close(ch)
		for m := range ch {
			if err := m.Write(new(dto.Metric)); err == nil || !strings.Contains(err.Error(), "ConstLabels") {
				t.Errorf("ConstLabels %q: collected metric: %v", name, err)
			}
		}
		c.Close()
	}
	for _, name := range []string{"model", "stage", "quantile", "le"} {
		l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, StageHistograms: true, ConstLabels: prometheus.Labels{name: "x"}})
		err := prometheus.NewRegistry().Register(l)
		if err == nil || !strings.Contains(err.Error(), `LatencyConfig.ConstLabels: "`+name+`"`) {
			t.Errorf("LatencyConfig.ConstLabels %q: Register: %v", name, err)
		}
		l.ObserveRequest(triton.RequestStats{Model: "m", Version: 1}) // records nothing, panics never
	}
}
