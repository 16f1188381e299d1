package perf

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"github.com/triton-go/triton/internal/perfreport"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/client"
)

// The tests below run --advise on a real in-process server with Go
// backends that do real work, in real time. A shared machine makes the
// figures anything, so they check the plumbing only: the reloads through
// the repository extension, the statistics, the report's structure, and
// that the model is left with its own configuration.

// work is a Go backend whose batch costs fixed rounds of arithmetic plus
// perRow rounds a row, then answers each request with its first input as
// OUTPUT0.
func work(fixed, perRow int) backend.Func {
	return func(_ context.Context, b *backend.Batch) error {
		x := uint64(1)
		for range fixed + perRow*len(b.Requests) {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 {
			return errors.New("work: the generator reached 0")
		}
		for _, r := range b.Requests {
			if len(r.Inputs) > 0 {
				out := r.Inputs[0]
				out.Name = "OUTPUT0"
				r.SetOutput(out)
			}
		}
		return nil
	}
}

// blsBackend is a Go BLS model: each request's inputs go to model "m"
// through the server's Caller, and m's outputs are the answer.
type blsBackend struct{}

func (blsBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			resp, err := spec.Caller.Infer(ctx, &backend.InferRequest{Model: "m", Inputs: r.Inputs})
			if err != nil {
				return err
			}
			for _, out := range resp.Outputs {
				r.SetOutput(out)
			}
		}
		return nil
	}), nil
}

// adviseInProcess serves files with the work backends (every model
// loaded), runs the tool with args on model, and returns its status, outputs and the server (closed
// by the test's cleanup).
func adviseInProcess(t *testing.T, files map[string]string, model string, args ...string) (int, string, string, *triton.Server) {
	t.Helper()
	fs := fstest.MapFS{}
	startup := map[string]bool{}
	for name, body := range files {
		fs[name] = &fstest.MapFile{Data: []byte(body)}
		startup[strings.Split(name, "/")[0]] = true
	}
	srv, err := triton.New(
		triton.WithRepository(fs),
		triton.WithLogger(zap.NewNop()),
		triton.WithBackend("light", work(20_000, 0)),
		triton.WithBackend("heavy", work(300_000, 20_000)),
		triton.WithBackend("bls", blsBackend{}),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(slices.Collect(maps.Keys(startup))...),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	var out, errb bytes.Buffer
	dial := func(context.Context, *Config) (client.Conn, error) { return client.Local(srv), nil }
	st := Main(context.Background(), append([]string{"-m", model, "--advise", "-p", "40", "-s", "10000", "-r", "3"}, args...), &out, &errb, dial)
	return st, out.String(), errb.String(), srv
}

const workModel = `name: "m"
backend: "heavy"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]`

func TestAdviseInProcess(t *testing.T) {
	tmp := t.TempDir()
	csvPath, dir := filepath.Join(tmp, "advice.csv"), filepath.Join(tmp, "report")
	st, out, errs, srv := adviseInProcess(t, map[string]string{"m/config.pbtxt": workModel, "m/1/.keep": ""}, "m",
		"--latency-budget", "p99=30ms", "--concurrency-range", "1:16", "-f", csvPath, "--report", dir)
	if st != ExitSuccess {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	// -f: a row per measurement, numbered as the progress lines are.
	measured := regexp.MustCompile(`(?m)^advise: #(\d+) [a-z]+: .*, concurrency \d+: `).FindAllStringSubmatch(errs, -1)
	rows := readCSV(t, csvPath)
	if len(rows) != len(measured)+1 || len(measured) == 0 {
		t.Fatalf("%d CSV lines for %d measurements:\n%v\nstderr:\n%s", len(rows), len(measured), rows, errs)
	}
	if got := strings.Join(rows[0][:5], ","); got != "Point,Stage,Settings,Concurrency,Inferences/Second" {
		t.Errorf("CSV header starts %q", got)
	}
	for i, m := range measured {
		if rows[i+1][0] != m[1] {
			t.Errorf("CSV row %d is point %s, want %s", i+1, rows[i+1][0], m[1])
		}
	}
	if rows[1][1] != "baseline" || rows[1][2] != "1×, max_batch 8, no dynamic batching" || rows[1][3] != "1" {
		t.Errorf("first row %q", rows[1])
	}
	// --report: a curve per candidate, the advice among the settings.
	rep, err := perfreport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]bool{}
	for _, s := range rep.Steps {
		labels[s.Label] = true
	}
	if len(rep.Steps) == 0 || len(rep.Steps) > len(measured) || !labels["1×, max_batch 8, no dynamic batching"] {
		t.Errorf("report steps %+v", rep.Steps)
	}
	if !slices.ContainsFunc(rep.Settings, func(s perfreport.Setting) bool { return s.Name == "Advice" && s.Value != "" }) {
		t.Errorf("report settings %v", rep.Settings)
	}
	for _, name := range []string{"report.html", "throughput.png", "latency.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{`Batching advice for "m"`, "Profile: ", "Measured (", "Chosen: ", "# m: ", "instance_group [ { count: ", " reloads, "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the advice:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "advise: #1 baseline: 1 instance, max_batch_size 8, no dynamic batching, concurrency 1: ") {
		t.Errorf("stderr:\n%s", errs)
	}
	cfg, err := srv.ModelConfig("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetDynamicBatching() != nil || cfg.GetMaxBatchSize() != 8 || len(cfg.GetInstanceGroup()) != 1 || cfg.GetInstanceGroup()[0].GetCount() != 1 {
		t.Errorf("the model was left with\n%v", cfg)
	}
}

// TestAdviseInProcessBLS: a Go BLS model calling m; m executes under
// it, so m is tuned while the load goes to the BLS model.
func TestAdviseInProcessBLS(t *testing.T) {
	files := map[string]string{
		"caller/config.pbtxt": `name: "caller"
backend: "bls"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
instance_group [ { count: 8 kind: KIND_CPU } ]`,
		"caller/1/.keep": "",
		"m/config.pbtxt": workModel,
		"m/1/.keep":      "",
	}
	st, out, errs, srv := adviseInProcess(t, files, "caller", "--latency-budget", "p99=30ms", "--concurrency-range", "1:8")
	if st != ExitSuccess {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	for _, want := range []string{`Batching advice for "m" (through "caller")`, `Tuning "m"`, "# m: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the advice:\n%s", want, out)
		}
	}
	cfg, err := srv.ModelConfig("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetDynamicBatching() != nil || cfg.GetInstanceGroup()[0].GetCount() != 1 {
		t.Errorf("the model was left with\n%v", cfg)
	}
}

func TestAdviseInProcessEnsemble(t *testing.T) {
	files := map[string]string{
		"pipe/config.pbtxt": `name: "pipe"
platform: "ensemble"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "pre" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "mid" } },
  { model_name: "m" model_version: -1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUTPUT0" } }
] }`,
		"pipe/1/.keep": "",
		"pre/config.pbtxt": `name: "pre"
backend: "light"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`,
		"pre/1/.keep":    "",
		"m/config.pbtxt": workModel,
		"m/1/.keep":      "",
	}
	st, out, errs, srv := adviseInProcess(t, files, "pipe", "--latency-budget", "p99=8ms", "--concurrency-range", "1:8")
	if st != ExitSuccess {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	for _, want := range []string{`Batching advice for "m" (through "pipe")`, "Share of the pipeline's compute", `Tuning "m", the largest share.`, "# m: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the advice:\n%s", want, out)
		}
	}
	cfg, err := srv.ModelConfig("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetDynamicBatching() != nil || cfg.GetInstanceGroup()[0].GetCount() != 1 {
		t.Errorf("the model was left with\n%v", cfg)
	}
}

// readCSV reads a whole CSV file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
