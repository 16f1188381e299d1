package metrics_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/modelmetrics"
)

// TestModelMetricsScraped: a family created through srv.ModelMetrics() is
// scraped through the Collector beside the nv_* families, and disappears
// once closed.
func TestModelMetricsScraped(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	if _, err := srv.Infer(context.Background(), request(t, "m", "a")); err != nil {
		t.Fatal(err)
	}
	col := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	defer col.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)

	fam, err := srv.ModelMetrics().Family("custom_tokens", "Tokens generated", modelmetrics.Counter)
	if err != nil {
		t.Fatal(err)
	}
	m, err := fam.Metric(map[string]string{"model": "m"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Increment(42); err != nil {
		t.Fatal(err)
	}
	h, err := fam.Metric(map[string]string{"model": "n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, body := scrape(t, reg)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	for _, want := range []string{
		`nv_inference_request_success{model="m",version="1"} 1` + "\n",
		"# HELP custom_tokens Tokens generated\n# TYPE custom_tokens counter\n",
		`custom_tokens{model="m"} 42` + "\n",
		`custom_tokens{model="n"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}

	m.Close()
	h.Close()
	fam.Close()
	code, body = scrape(t, reg)
	if code != http.StatusOK || strings.Contains(body, "custom_tokens") || !strings.Contains(body, "nv_inference_request_success") {
		t.Errorf("after Close: %d, want the nv_* families without custom_tokens:\n%s", code, body)
	}
}

// TestModelMetricsConstLabels: the Collector's ConstLabels are added to the
// model families, so two servers share a registry; a family that uses a
// ConstLabels name itself is left out instead of failing the scrape.
func TestModelMetricsConstLabels(t *testing.T) {
	a, b := twoServers(t)
	reg := prometheus.NewRegistry()
	for _, srv := range []struct {
		s  *triton.Server
		id string
	}{{a, "a"}, {b, "b"}} {
		col := metrics.NewCollector(srv.s, metrics.Config{DisableGPU: true, ConstLabels: prometheus.Labels{"server_id": srv.id}})
		defer col.Close()
		reg.MustRegister(col)
		for i, name := range []string{"shared_gauge", "clashing"} {
			f, err := srv.s.ModelMetrics().Family(name, "help", modelmetrics.Gauge)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			label := "model"
			if name == "clashing" {
				label = "server_id"
			}
			m, err := f.Metric(map[string]string{label: "m"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			m.Set(float64(i + len(srv.id)))
		}
	}
	code, body := scrape(t, reg)
	if code != http.StatusOK {
		t.Fatalf("scrape: %d\n%s", code, body)
	}
	for _, want := range []string{`shared_gauge{model="m",server_id="a"} 1`, `shared_gauge{model="m",server_id="b"} 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "clashing") {
		t.Errorf("a family using the server_id label was exported:\n%s", body)
	}
}

// TestModelMetricsPedantic pins what the Collector's documentation says: a
// pedantic registry refuses model families, which Describe cannot know.
func TestModelMetricsPedantic(t *testing.T) {
	srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
	col := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	defer col.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather without model families: %v", err)
	}
	f, err := srv.ModelMetrics().Family("late", "help", modelmetrics.Counter)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Metric(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "unregistered descriptor") {
		t.Errorf("pedantic Gather with a model family: %v, want an unregistered-descriptor error", err)
	}
}

// countingBackend is a Go backend that counts its executions in a metric
// family of its own, created through ModelSpec.Metrics at load and closed
// with the model.
type countingBackend struct{ specs chan *backend.ModelSpec }

type countingModel struct {
	fam *modelmetrics.Family
	m   *modelmetrics.Metric
}

func (c countingBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	c.specs <- spec
	fam, err := spec.Metrics.Family("executions", "Executions per model", modelmetrics.Counter)
	if err != nil {
		return nil, err
	}
	m, err := fam.Metric(map[string]string{"model": spec.Name, "version": strconv.FormatInt(spec.Version, 10)}, nil)
	if err != nil {
		fam.Close()
		return nil, err
	}
	return &countingModel{fam: fam, m: m}, nil
}

func (c *countingModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return backend.Func(func(ctx context.Context, b *backend.Batch) error {
		if err := c.m.Increment(1); err != nil {
			return err
		}
		return mirror(ctx, b)
	}), nil
}

func (c *countingModel) Close() error {
	c.m.Close()
	c.fam.Close()
	return nil
}

// TestModelMetricsFromBackend: the server hands its registry to the models
// it loads; what a model creates there is scraped, and leaves the scrape
// when the model unloads and closes it.
func TestModelMetricsFromBackend(t *testing.T) {
	cb := countingBackend{specs: make(chan *backend.ModelSpec, 1)}
	srv := newServer(t, model("counted", "counting", 8, 1, ""), triton.WithBackend("counting", cb),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("counted"))
	if spec := <-cb.specs; spec.Metrics != srv.ModelMetrics() || spec.Metrics == nil {
		t.Fatalf("ModelSpec.Metrics = %p, want the server's registry %p", spec.Metrics, srv.ModelMetrics())
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := srv.Infer(context.Background(), request(t, "counted", id)); err != nil {
			t.Fatal(err)
		}
	}
	col := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
	defer col.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	if _, body := scrape(t, reg); !strings.Contains(body, `executions{model="counted",version="1"} 3`+"\n") {
		t.Fatalf("scrape lacks the model's counter:\n%s", body)
	}
	if err := srv.Unload(context.Background(), "counted", nil); err != nil {
		t.Fatal(err)
	}
	if _, body := scrape(t, reg); strings.Contains(body, "executions") {
		t.Errorf("the model's family outlived its unload:\n%s", body)
	}
	f, err := srv.ModelMetrics().Family("executions", "other", modelmetrics.Gauge)
	if err != nil {
		t.Fatalf("the name is not free after the unload: %v", err)
	}
	f.Close()
}
