package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/internal/testenv"
)

// TestMemoryBudgetFlags: --model-memory-budget, --model-load-on-demand and
// --model-keep-alive on the binary, over HTTP. Three 4 MiB ONNX models
// under a budget of two: each request loads its model on demand, the
// third evicts the first, the repository index says why, a request for
// the first loads it again, and the metrics count it all.
func TestMemoryBudgetFlags(t *testing.T) {
	testenv.NeedLibrary(t)
	repo := t.TempDir()
	if out, err := exec.Command("/usr/bin/python3", filepath.Join("..", "..", "scripts", "gen-budget-models.py"), repo, "3").CombinedOutput(); err != nil {
		t.Fatalf("gen-budget-models.py: %v\n%s", err, out)
	}
	s := startBinary(t, "--model-repository="+repo, "--model-control-mode=explicit",
		"--model-memory-budget=9Mi", "--model-load-on-demand=true", "--model-keep-alive=-1")
	body := `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,1024],"data":[` + strings.Repeat("0.5,", 1023) + `0.5]}]}`
	infer := func(model string) {
		t.Helper()
		if code, _, out := s.do(http.MethodPost, "/v2/models/"+model+"/infer", "application/json", []byte(body), nil); code != http.StatusOK {
			t.Fatalf("infer %s: %d %s", model, code, out)
		}
	}
	for _, m := range []string{"model_00", "model_01", "model_02"} {
		infer(m)
	}
	code, _, out := s.do(http.MethodPost, "/v2/repository/index", "application/json", []byte(`{}`), nil)
	if code != http.StatusOK {
		t.Fatalf("index: %d %s", code, out)
	}
	var index []struct{ Name, Version, State, Reason string }
	if err := json.Unmarshal(out, &index); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, e := range index {
		states[e.Name] = e.State + " " + e.Reason
	}
	if got := states["model_00"]; got != "UNAVAILABLE evicted to make room for 'model_02' in the memory budget" {
		t.Errorf("model_00 in the index: %q (%s)", got, out)
	}
	if states["model_01"] != "READY " || states["model_02"] != "READY " {
		t.Errorf("index %s", out)
	}
	infer("model_00") // back on demand, evicting model_01 (the colder)
	resp, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	metrics := string(raw)
	for _, want := range []string{
		`tritongo_model_memory_budget_bytes 9.437184e+06`,
		`tritongo_model_loads_total{model="model_00",trigger="on_demand"} 2`,
		`tritongo_model_evictions_total{model="model_00",reason="memory_budget"} 1`,
		`tritongo_model_thrash_total{model="model_00"} 1`,
		`tritongo_model_on_demand_wait_seconds_count{model="model_00"} 2`,
		`tritongo_model_memory_bytes{model="model_00",version="1"} 4.194304e+06`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %q in the metrics:\n%s", want, grepLines(metrics, "tritongo_model"))
		}
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
