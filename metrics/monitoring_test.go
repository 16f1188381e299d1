package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
)

// exportedNames gathers every family the package can export (a cached
// model, fake GPUs, every latency family on) and returns the names a query
// may use: each family's name, plus _bucket/_sum/_count for histograms and
// _sum/_count for summaries.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, FirstResponseHistogram: true, StageHistograms: true})
	srv := newServer(t, merge(model("m", "mirror", 8, 1, ""), model("cached", "mirror", 8, 1, "response_cache { enable: true }")),
		triton.WithBackend("mirror", mirror), triton.WithObserver(l))
	l.Attach(srv)
	infer(t, srv, "m", 1)
	gpus := &metrics.FakeGPUs{Read: func() []metrics.GPUReading {
		return []metrics.GPUReading{{UUID: "GPU-0", Have: metrics.HaveUtilization | metrics.HaveMemory | metrics.HavePower | metrics.HavePowerLimit | metrics.HaveEnergy}}
	}}
	names := map[string]bool{}
	for _, mf := range gather(t, metrics.NewCollectorWithGPUs(srv, metrics.Config{}, gpus), l) {
		n := mf.GetName()
		names[n] = true
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n+"_sum"], names[n+"_count"] = true, true
		}
	}
	return names
}

// metricRef finds the metric names in a PromQL expression: ours all start
// with nv_ or tritongo_.
var metricRef = regexp.MustCompile(`\b(nv|tritongo)_[a-z0-9_]+\b`)

// checkExpr checks that expr uses at least one metric and only exported
// ones, and returns those it uses.
func checkExpr(t *testing.T, where, expr string, exported map[string]bool) []string {
	t.Helper()
	refs := metricRef.FindAllString(expr, -1)
	if len(refs) == 0 {
		t.Errorf("%s: expression uses no metric of ours: %s", where, expr)
	}
	for _, r := range refs {
		if !exported[r] {
			t.Errorf("%s: %s is not a metric the package exports (in %s)", where, r, expr)
		}
	}
	return refs
}

// TestMonitoringExamples parses examples/monitoring's dashboard and alert
// rules and checks them against the families the package exports.
func TestMonitoringExamples(t *testing.T) {
	exported := exportedNames(t)

	t.Run("grafana-dashboard.json", func(t *testing.T) {
		data, err := os.ReadFile("../examples/monitoring/grafana-dashboard.json")
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			SchemaVersion int `json:"schemaVersion"`
			Inputs        []struct {
				Name, Type, PluginID string
			} `json:"__inputs"`
			Panels []struct {
				Type, Title string
				Datasource  *struct{ UID string }
				Targets     []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(data, &dash); err != nil {
			t.Fatalf("not valid JSON: %v", err)
		}
		if dash.SchemaVersion < 36 {
			t.Errorf("schemaVersion %d", dash.SchemaVersion)
		}
		if !slices.ContainsFunc(dash.Inputs, func(in struct{ Name, Type, PluginID string }) bool {
			return in.Name == "DS_PROMETHEUS" && in.Type == "datasource"
		}) {
			t.Errorf("no DS_PROMETHEUS datasource input: %+v", dash.Inputs)
		}
		used := map[string]bool{}
		for _, p := range dash.Panels {
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q does not use ${DS_PROMETHEUS}", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				for _, r := range checkExpr(t, "panel "+p.Title, tg.Expr, exported) {
					used[r] = true
				}
			}
		}
		for _, want := range []string{
			"nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count", "nv_inference_exec_count",
			"nv_inference_request_duration_us", "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us",
			"nv_inference_queue_summary_us", "tritongo_request_stage_seconds_bucket", "nv_inference_pending_request_count",
			"nv_gpu_utilization", "nv_gpu_memory_used_bytes", "nv_cpu_utilization", "nv_cpu_memory_used_bytes", "nv_model_load_duration_secs",
		} {
			if !used[want] {
				t.Errorf("no panel uses %s", want)
			}
		}
	})

	t.Run("alerts.yml", func(t *testing.T) {
		data, err := os.ReadFile("../examples/monitoring/alerts.yml")
		if err != nil {
			t.Fatal(err)
		}
		var rules struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert, Expr, For string
					Labels           map[string]string
					Annotations      map[string]string
				}
			}
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true) // promtool rejects unknown fields too
		if err := dec.Decode(&rules); err != nil {
			t.Fatalf("not valid rules YAML: %v", err)
		}
		if len(rules.Groups) == 0 {
			t.Fatal("no rule groups")
		}
		var alerts []string
		for _, g := range rules.Groups {
			if g.Name == "" || len(g.Rules) == 0 {
				t.Errorf("group %q is empty or unnamed", g.Name)
			}
			for _, r := range g.Rules {
				alerts = append(alerts, r.Alert)
				if r.Alert == "" || r.Expr == "" || r.For == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
					t.Errorf("rule %q lacks alert, expr, for, a severity label or a summary", r.Alert)
				}
				checkExpr(t, "alert "+r.Alert, r.Expr, exported)
			}
		}
		for _, want := range []string{"TritonQueueTimeHigh", "TritonFailureRateHigh", "TritonBatchEfficiencyLow", "TritonPendingRequestsPilingUp"} {
			if !slices.Contains(alerts, want) {
				t.Errorf("no alert %s", want)
			}
		}
	})
}
