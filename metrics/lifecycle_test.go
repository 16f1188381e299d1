package metrics_test

import (
	"context"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/metrics"
)

// reporting is mirror with a Model that reports 1 MiB.
type reporting struct{}

func (reporting) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return reportingModel{}, nil
}

type reportingModel struct{ backend.Func }

func (reportingModel) MemoryBytes() (int64, error) { return 1 << 20, nil }
func (reportingModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return mirror, nil
}

// The lifecycle families: a budget of two models, three loads (one on
// demand, which evicts the least recently used), and the waits.
func TestLifecycleFamilies(t *testing.T) {
	srv := newServer(t, merge(model("a", "rep", 8, 1, ""), model("b", "rep", 8, 1, ""), model("c", "rep", 8, 1, "")),
		triton.WithBackend("rep", reporting{}), triton.WithMemoryBudget(2<<20), triton.WithLoadOnDemand(true),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		if err := srv.Load(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Infer(ctx, request(t, "c", "")); err != nil {
		t.Fatal(err)
	}
	mfs := gather(t, metrics.NewCollector(srv, metrics.Config{DisableGPU: true, DisableCPU: true}))
	for name, want := range map[string]float64{
		"tritongo_model_memory_budget_bytes":   2 << 20,
		"tritongo_model_memory_resident_bytes": 2 << 20,
	} {
		if got := value(t, mfs, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, mfs, "tritongo_model_memory_bytes", "model=c", "version=1"); got != 1<<20 {
		t.Errorf("c's bytes %v", got)
	}
	if got := value(t, mfs, "tritongo_model_loads_total", "model=c", "trigger=on_demand"); got != 1 {
		t.Errorf("c's on-demand loads %v", got)
	}
	if got := value(t, mfs, "tritongo_model_loads_total", "model=a", "trigger=explicit"); got != 1 {
		t.Errorf("a's explicit loads %v", got)
	}
	if got := value(t, mfs, "tritongo_model_evictions_total", "model=a", "reason=memory_budget"); got != 1 {
		t.Errorf("a's evictions %v", got)
	}
	h := series(t, mfs, "tritongo_model_on_demand_wait_seconds", "model=c").GetHistogram()
	if h.GetSampleCount() != 1 || len(h.GetBucket()) != len(triton.OnDemandWaitBounds) {
		t.Errorf("c's wait histogram %v", h)
	}
}
