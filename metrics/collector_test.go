package metrics_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
)

// TestCollectorCountsBatchedWork: one instance held busy by a first
// request, nine more queue and run as one batch of nine: ten requests, ten
// inferences, two executions.
func TestCollectorCountsBatchedWork(t *testing.T) {
	g := newGated()
	srv := newServer(t, model("m", "gated", 16, 1, "dynamic_batching { }"), triton.WithBackend("gated", g.backend()))
	c := metrics.NewCollector(srv, metrics.Config{})
	defer c.Close()

	first := goInfer(srv, context.Background(), request(t, "m", "first"))
	<-g.started
	var queued []chan result
	for i := range 9 {
		queued = append(queued, goInfer(srv, context.Background(), request(t, "m", fmt.Sprint("q", i))))
	}
	waitQueued(t, srv, "m", 9)
	if got := value(t, gather(t, c), "nv_inference_pending_request_count", "model=m"); got != 9 {
		t.Errorf("pending = %v while 9 requests wait, want 9", got)
	}
	const wait = 5 * time.Millisecond
	time.Sleep(wait) // every queued request waits at least this long
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, ch := range append(queued, first) {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}

	err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP nv_inference_count Number of inferences performed (does not include cached requests)
# TYPE nv_inference_count counter
nv_inference_count{model="m",version="1"} 10
# HELP nv_inference_exec_count Number of model executions performed (does not include cached requests)
# TYPE nv_inference_exec_count counter
nv_inference_exec_count{model="m",version="1"} 2
# HELP nv_inference_pending_request_count Instantaneous number of pending requests awaiting execution per-model.
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="m",version="1"} 0
# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="m",reason="BACKEND",version="1"} 0
nv_inference_request_failure{model="m",reason="CANCELED",version="1"} 0
nv_inference_request_failure{model="m",reason="OTHER",version="1"} 0
nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 0
# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="m",version="1"} 10
`), "nv_inference_count", "nv_inference_exec_count", "nv_inference_pending_request_count",
		"nv_inference_request_failure", "nv_inference_request_success")
	if err != nil {
		t.Error(err)
	}

	mfs := gather(t, c)
	st, _ := srv.Stats("m", 1)
	queue := value(t, mfs, "nv_inference_queue_duration_us", "model=m")
	if min := float64(9 * wait / time.Microsecond); queue < min {
		t.Errorf("queue duration %v µs, want at least %v (9 requests waited %v each)", queue, min, wait)
	}
	if want := float64(st[0].Queue.Total.Microseconds()); queue != want {
		t.Errorf("queue duration %v µs, want the snapshot's %v µs", queue, want)
	}
	reqDur := value(t, mfs, "nv_inference_request_duration_us", "model=m")
	if reqDur < queue {
		t.Errorf("request duration %v µs < queue duration %v µs", reqDur, queue)
	}
	if v := value(t, mfs, "nv_inference_compute_infer_duration_us", "model=m"); v < float64(wait/time.Microsecond) {
		t.Errorf("compute infer %v µs; the first execution alone was held %v", v, wait)
	}
	for _, name := range []string{"nv_inference_compute_input_duration_us", "nv_inference_compute_output_duration_us"} {
		if v := value(t, mfs, name, "model=m"); v < 0 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if v := value(t, mfs, "nv_model_load_duration_secs", "model=m"); v <= 0 || v > 60 {
		t.Errorf("load duration %v s, want a small positive number", v)
	}
}

// TestCollectorFailuresByReason causes one failure of each reason.
func TestCollectorFailuresByReason(t *testing.T) {
	g := newGated()
	srv := newServer(t, model("m", "gated", 8, 1, `dynamic_batching { default_queue_policy { max_queue_size: 1 } }`),
		triton.WithBackend("gated", g.backend()))
	c := metrics.NewCollector(srv, metrics.Config{})
	defer c.Close()

	// OTHER: an invalid request (no such input).
	bad := request(t, "m", "bad")
	bad.Inputs[0].Name = "NOPE"
	if _, err := srv.Infer(context.Background(), bad); err == nil {
		t.Fatal("invalid request succeeded")
	}
	// Hold the instance, then CANCELED: a queued request whose ctx ends.
	first := goInfer(srv, context.Background(), request(t, "m", "first"))
	<-g.started
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := goInfer(srv, ctx, request(t, "m", "cancelled"))
	waitQueued(t, srv, "m", 1)
	cancel()
	if r := <-cancelled; triton.CodeOf(r.err) != triton.Cancelled {
		t.Fatalf("cancelled request: %v", r.err)
	}
	// REJECTED: the queue holds one request; a second is refused.
	kept := goInfer(srv, context.Background(), request(t, "m", "kept"))
	waitQueued(t, srv, "m", 1)
	if _, err := srv.Infer(context.Background(), request(t, "m", "rejected")); triton.CodeOf(err) != triton.Unavailable {
		t.Fatalf("request beyond max_queue_size: %v", err)
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, ch := range []chan result{first, kept} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	// BACKEND: the backend fails the request.
	g.release <- struct{}{}
	if _, err := srv.Infer(context.Background(), request(t, "m", "fail")); err == nil {
		t.Fatal("failing request succeeded")
	}
	<-g.started // kept
	<-g.started // fail

	err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="m",reason="BACKEND",version="1"} 1
nv_inference_request_failure{model="m",reason="CANCELED",version="1"} 1
nv_inference_request_failure{model="m",reason="OTHER",version="1"} 1
nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 1
# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="m",version="1"} 2
# HELP nv_inference_count Number of inferences performed (does not include cached requests)
# TYPE nv_inference_count counter
nv_inference_count{model="m",version="1"} 2
# HELP nv_inference_exec_count Number of model executions performed (does not include cached requests)
# TYPE nv_inference_exec_count counter
nv_inference_exec_count{model="m",version="1"} 3
`), "nv_inference_request_failure", "nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count")
	if err != nil {
		t.Error(err)
	}
}

// TestCollectorMetricTags: each metric_tags entry becomes a _<tag> label
// on every per-model family (keys that cannot be label names are left
// out); the four failure series exist at 0 before any request.
func TestCollectorMetricTags(t *testing.T) {
	srv := newServer(t, merge(
		model("plain", "mirror", 8, 1, ""),
		model("tagged", "mirror", 8, 1, `metric_tags { key: "team" value: "vision" }
metric_tags { key: "tier" value: "gold" }
metric_tags { key: "not-a-label" value: "x" }`),
	), triton.WithBackend("mirror", mirror))
	c := metrics.NewCollector(srv, metrics.Config{})
	defer c.Close()

	err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="plain",reason="BACKEND",version="1"} 0
nv_inference_request_failure{model="plain",reason="CANCELED",version="1"} 0
nv_inference_request_failure{model="plain",reason="OTHER",version="1"} 0
nv_inference_request_failure{model="plain",reason="REJECTED",version="1"} 0
nv_inference_request_failure{_team="vision",_tier="gold",model="tagged",reason="BACKEND",version="1"} 0
nv_inference_request_failure{_team="vision",_tier="gold",model="tagged",reason="CANCELED",version="1"} 0
nv_inference_request_failure{_team="vision",_tier="gold",model="tagged",reason="OTHER",version="1"} 0
nv_inference_request_failure{_team="vision",_tier="gold",model="tagged",reason="REJECTED",version="1"} 0
# HELP nv_inference_request_success Number of successful inference requests, all batch sizes
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="plain",version="1"} 0
nv_inference_request_success{_team="vision",_tier="gold",model="tagged",version="1"} 0
`), "nv_inference_request_failure", "nv_inference_request_success")
	if err != nil {
		t.Error(err)
	}
	mfs := gather(t, c)
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "nv_inference") && !strings.HasPrefix(mf.GetName(), "nv_model") {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, []string{"model=tagged"}) && !hasLabels(m, []string{"_team=vision", "_tier=gold"}) {
				t.Errorf("%s: series %v lacks the tag labels", mf.GetName(), m.GetLabel())
			}
		}
	}
}

// specHelp is spec §5.2's HELP text and type of every family a Collector
// exports by default on a machine without a GPU.
var specHelp = map[string]struct{ typ, help string }{
	"nv_inference_request_success":            {"counter", "Number of successful inference requests, all batch sizes"},
	"nv_inference_request_failure":            {"counter", "Number of failed inference requests, all batch sizes"},
	"nv_inference_count":                      {"counter", "Number of inferences performed (does not include cached requests)"},
	"nv_inference_exec_count":                 {"counter", "Number of model executions performed (does not include cached requests)"},
	"nv_inference_request_duration_us":        {"counter", "Cumulative inference request duration in microseconds (includes cached requests)"},
	"nv_inference_queue_duration_us":          {"counter", "Cumulative inference queuing duration in microseconds (includes cached requests)"},
	"nv_inference_compute_input_duration_us":  {"counter", "Cumulative compute input duration in microseconds (does not include cached requests)"},
	"nv_inference_compute_infer_duration_us":  {"counter", "Cumulative compute inference duration in microseconds (does not include cached requests)"},
	"nv_inference_compute_output_duration_us": {"counter", "Cumulative inference compute output duration in microseconds (does not include cached requests)"},
	"nv_inference_pending_request_count":      {"gauge", "Instantaneous number of pending requests awaiting execution per-model."},
	"nv_model_load_duration_secs":             {"gauge", "Model load time in seconds"},
	"nv_pinned_memory_pool_total_bytes":       {"gauge", "Pinned memory pool total memory size, in bytes"},
	"nv_pinned_memory_pool_used_bytes":        {"gauge", "Pinned memory pool used memory size, in bytes"},
}

// specHelpLinux adds the CPU families, exported on Linux.
var specHelpLinux = map[string]struct{ typ, help string }{
	"nv_cpu_utilization":        {"gauge", "CPU utilization rate [0.0 - 1.0]"},
	"nv_cpu_memory_total_bytes": {"gauge", "CPU total memory (RAM), in bytes"},
	"nv_cpu_memory_used_bytes":  {"gauge", "CPU used memory (RAM), in bytes"},
}

// TestCollectorExposition reads /metrics as Prometheus does, through
// promhttp: counters keep their bare names (no _total), HELP and TYPE are
// the spec's.
func TestCollectorExposition(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	if _, err := srv.Infer(context.Background(), request(t, "m", "a")); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	// Prometheus 3's Accept header: it prefers OpenMetrics, which promhttp
	// serves only when EnableOpenMetrics is set.
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, body)
	}
	// Triton's own names may contain _total (nv_gpu_memory_total_bytes);
	// none may end in it.
	if m := regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?[a-z_]+_total[ {]`).FindAllString(body, -1); m != nil {
		t.Errorf("names with a _total suffix: %q", m)
	}
	want := maps.Clone(specHelp)
	if runtime.GOOS == "linux" {
		maps.Copy(want, specHelpLinux)
	}
	for name, f := range want {
		t.Run(name, func(t *testing.T) {
			for _, line := range []string{"# HELP " + name + " " + f.help + "\n", "# TYPE " + name + " " + f.typ + "\n"} {
				if !strings.Contains(body, line) {
					t.Errorf("exposition lacks %q", line)
				}
			}
		})
	}
	if !strings.Contains(body, `nv_inference_request_success{model="m",version="1"} 1`+"\n") {
		t.Errorf("no success line in:\n%s", body)
	}
}

// TestCollectorCacheFamilies: the cache families exist only for a model
// whose config enables the response cache, and only with counters on.
func TestCollectorCacheFamilies(t *testing.T) {
	cacheFamilies := []string{"nv_cache_num_hits_per_model", "nv_cache_num_misses_per_model", "nv_cache_hit_duration_per_model", "nv_cache_miss_duration_per_model"}
	for _, tc := range []struct {
		name    string
		extra   string
		cfg     metrics.Config
		present bool
	}{
		{"no cache", "", metrics.Config{}, false},
		{"cache disabled", "response_cache { enable: false }", metrics.Config{}, false},
		{"cache enabled", "response_cache { enable: true }", metrics.Config{}, true},
		{"cache enabled, counters off", "response_cache { enable: true }", metrics.Config{DisableCounters: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, model("m", "mirror", 8, 1, tc.extra), triton.WithBackend("mirror", mirror))
			tc.cfg.DisableGPU = true
			mfs := gather(t, metrics.NewCollector(srv, tc.cfg))
			for _, name := range cacheFamilies {
				if mf := family(mfs, name); (mf != nil) != tc.present {
					t.Errorf("%s present: %v, want %v", name, mf != nil, tc.present)
				} else if mf != nil && value(t, mfs, name, "model=m", "version=1") != 0 {
					t.Errorf("%s is not 0 without cache traffic", name)
				}
			}
		})
	}
}

// TestCollectorSwitches: each Config switch removes its families and only
// those.
func TestCollectorSwitches(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	durations := []string{"nv_inference_request_duration_us", "nv_inference_queue_duration_us", "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us", "nv_inference_compute_output_duration_us"}
	cpu := []string{"nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"}
	always := []string{"nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count", "nv_inference_exec_count", "nv_inference_pending_request_count", "nv_model_load_duration_secs", "nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes", "tritongo_metrics_dropped_model_versions"}
	for _, tc := range []struct {
		name   string
		cfg    metrics.Config
		absent []string
	}{
		{"defaults", metrics.Config{DisableGPU: true}, nil},
		{"DisableCounters", metrics.Config{DisableGPU: true, DisableCounters: true}, durations},
		{"DisableCPU", metrics.Config{DisableGPU: true, DisableCPU: true}, cpu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := familyNames(gather(t, metrics.NewCollector(srv, tc.cfg)))
			present := slices.Concat(always, durations)
			if runtime.GOOS == "linux" {
				present = append(present, cpu...)
			}
			for _, name := range present {
				if got, want := slices.Contains(names, name), !slices.Contains(tc.absent, name); got != want {
					t.Errorf("%s present: %v, want %v", name, got, want)
				}
			}
			for _, name := range names {
				if strings.HasPrefix(name, "nv_gpu") || name == "nv_energy_consumption" {
					t.Errorf("GPU family %s with DisableGPU", name)
				}
			}
		})
	}
}

// TestCollectorMaxSeries: beyond MaxSeries, model versions are dropped in
// name/version order and counted.
func TestCollectorMaxSeries(t *testing.T) {
	files := merge(
		model("a", "mirror", 8, 1, "version_policy { all { } }"),
		model("b", "mirror", 8, 1, ""),
	)
	files["a/2/x"] = ""
	srv := newServer(t, files, triton.WithBackend("mirror", mirror))
	for _, tc := range []struct {
		max     int
		kept    []string
		dropped float64
	}{
		{0, []string{"a/1", "a/2", "b/1"}, 0},
		{3, []string{"a/1", "a/2", "b/1"}, 0},
		{2, []string{"a/1", "a/2"}, 1},
		{1, []string{"a/1"}, 2},
	} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			mfs := gather(t, metrics.NewCollector(srv, metrics.Config{MaxSeries: tc.max, DisableGPU: true, DisableCPU: true}))
			if got := value(t, mfs, "tritongo_metrics_dropped_model_versions"); got != tc.dropped {
				t.Errorf("dropped = %v, want %v", got, tc.dropped)
			}
			var kept []string
			for _, m := range family(mfs, "nv_inference_request_success").GetMetric() {
				var mv [2]string
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "model":
						mv[0] = l.GetValue()
					case "version":
						mv[1] = l.GetValue()
					}
				}
				kept = append(kept, mv[0]+"/"+mv[1])
			}
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("exported %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestCollectorCPU reads the machine's CPU and memory (Linux).
func TestCollectorCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU metrics read /proc")
	}
	srv := newServer(t, nil)
	c := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	for scrape := range 2 { // the first since boot, the second since the first
		mfs := gather(t, c)
		if u := value(t, mfs, "nv_cpu_utilization"); u < 0 || u > 1 {
			t.Errorf("scrape %d: utilization %v outside [0, 1]", scrape, u)
		}
		total, used := value(t, mfs, "nv_cpu_memory_total_bytes"), value(t, mfs, "nv_cpu_memory_used_bytes")
		if total < 1<<20 || used <= 0 || used > total {
			t.Errorf("scrape %d: memory used %v of %v bytes", scrape, used, total)
		}
		for _, name := range []string{"nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes"} {
			if v := value(t, mfs, name); v != 0 {
				t.Errorf("%s = %v; there is no pinned pool", name, v)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCollectorGPU reads the real GPUs through NVML: the GPU families are
// absent on a machine without a driver (and nothing fails), present with a
// gpu_uuid label on one with.
func TestCollectorGPU(t *testing.T) {
	srv := newServer(t, nil)
	c := metrics.NewCollector(srv, metrics.Config{})
	mfs := gather(t, c)
	gpuFamilies := []string{"nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes", "nv_gpu_power_usage", "nv_gpu_power_limit", "nv_energy_consumption"}
	if !metrics.NVMLAvailable() {
		for _, name := range gpuFamilies {
			if family(mfs, name) != nil {
				t.Errorf("%s present without NVML", name)
			}
		}
	} else {
		for _, m := range family(mfs, "nv_gpu_memory_total_bytes").GetMetric() {
			uuid := m.GetLabel()[0]
			if uuid.GetName() != "gpu_uuid" || !strings.HasPrefix(uuid.GetValue(), "GPU-") || m.GetGauge().GetValue() <= 0 {
				t.Errorf("GPU memory series %v", m)
			}
			t.Logf("%s: %v bytes", uuid.GetValue(), m.GetGauge().GetValue())
		}
		for _, m := range family(mfs, "nv_gpu_utilization").GetMetric() {
			if u := m.GetGauge().GetValue(); u < 0 || u > 1 {
				t.Errorf("utilization %v outside [0, 1]", u)
			}
		}
		t.Logf("GPU families: %v", slices.DeleteFunc(familyNames(mfs), func(n string) bool { return !slices.Contains(gpuFamilies, n) }))
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, name := range gpuFamilies {
		if family(gather(t, c), name) != nil {
			t.Errorf("%s present after Close", name)
		}
	}
}

// TestCollectorFakeGPUs feeds readings in NVML's units and checks Triton's:
// utilization 0-1, watts, joules since the collector started, gpu_uuid
// labels; a field a GPU does not report is absent.
func TestCollectorFakeGPUs(t *testing.T) {
	srv := newServer(t, nil)
	energy := uint64(1_000_000) // mJ at construction
	var mu sync.Mutex
	gpus := &metrics.FakeGPUs{Read: func() []metrics.GPUReading {
		mu.Lock()
		defer mu.Unlock()
		return []metrics.GPUReading{
			{
				UUID:               "GPU-aaaa",
				Have:               metrics.HaveUtilization | metrics.HaveMemory | metrics.HavePower | metrics.HavePowerLimit | metrics.HaveEnergy,
				UtilizationPercent: 37, MemoryTotal: 80 << 30, MemoryUsed: 3 << 30,
				PowerMilliwatts: 123_456, PowerLimitMilliwatts: 700_000, EnergyMillijoules: energy,
			},
			{UUID: "GPU-bbbb", Have: metrics.HaveMemory, MemoryTotal: 16 << 30, MemoryUsed: 0},
		}
	}}
	c := metrics.NewCollectorWithGPUs(srv, metrics.Config{DisableCPU: true}, gpus)
	mu.Lock()
	energy += 250_500 // 250.5 J since construction
	mu.Unlock()
	err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP nv_energy_consumption GPU energy consumption in joules since the Triton Server started
# TYPE nv_energy_consumption counter
nv_energy_consumption{gpu_uuid="GPU-aaaa"} 250.5
# HELP nv_gpu_memory_total_bytes GPU total memory, in bytes
# TYPE nv_gpu_memory_total_bytes gauge
nv_gpu_memory_total_bytes{gpu_uuid="GPU-aaaa"} 8.589934592e+10
nv_gpu_memory_total_bytes{gpu_uuid="GPU-bbbb"} 1.7179869184e+10
# HELP nv_gpu_memory_used_bytes GPU used memory, in bytes
# TYPE nv_gpu_memory_used_bytes gauge
nv_gpu_memory_used_bytes{gpu_uuid="GPU-aaaa"} 3.221225472e+09
nv_gpu_memory_used_bytes{gpu_uuid="GPU-bbbb"} 0
# HELP nv_gpu_power_limit GPU power management limit in watts
# TYPE nv_gpu_power_limit gauge
nv_gpu_power_limit{gpu_uuid="GPU-aaaa"} 700
# HELP nv_gpu_power_usage GPU power usage in watts
# TYPE nv_gpu_power_usage gauge
nv_gpu_power_usage{gpu_uuid="GPU-aaaa"} 123.456
# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-aaaa"} 0.37
`), "nv_energy_consumption", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes", "nv_gpu_power_limit", "nv_gpu_power_usage", "nv_gpu_utilization")
	if err != nil {
		t.Error(err)
	}
	if err := c.Close(); err != nil || gpus.Closed != 1 {
		t.Errorf("Close: %v, closed %d times", err, gpus.Closed)
	}
	c.Close()
	if gpus.Closed != 1 {
		t.Errorf("a second Close closed the GPUs again")
	}
	if n := testutil.CollectAndCount(c, "nv_gpu_utilization"); n != 0 {
		t.Errorf("%d GPU series after Close", n)
	}
}

// TestCollectorConcurrentScrapes scrapes while requests run and models
// report (for -race).
func TestCollectorConcurrentScrapes(t *testing.T) {
	srv := newServer(t, merge(
		model("direct", "mirror", 8, 2, ""),
		model("batched", "mirror", 8, 2, "dynamic_batching { }"),
	), triton.WithBackend("mirror", mirror))
	c := metrics.NewCollector(srv, metrics.Config{})
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				m := []string{"direct", "batched"}[(i+j)%2]
				if _, err := srv.Infer(context.Background(), request(t, m, "x")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	mfs := gather(t, c)
	if got := value(t, mfs, "nv_inference_request_success", "model=direct") + value(t, mfs, "nv_inference_request_success", "model=batched"); got != 800 {
		t.Errorf("%v successes, want 800", got)
	}
}

// TestCollectorAfterServerClose: scraping a closed server fails nothing,
// and its last statistics stay readable.
func TestCollectorAfterServerClose(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	c := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	l := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true})
	l.Attach(srv)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if got := value(t, gather(t, c, l), "nv_inference_request_success", "model=m"); got != 0 {
		t.Errorf("success = %v", got)
	}
}
