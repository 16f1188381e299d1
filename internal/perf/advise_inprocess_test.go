package perf

import (
	"bytes"
	"context"
	"errors"
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

// adviseInProcess serves files with the work backends, runs the tool
// with args on it, and returns its status, outputs and the server (closed
// by the test's cleanup).
func adviseInProcess(t *testing.T, files map[string]string, model string, args ...string) (int, string, string, *triton.Server) {
	t.Helper()
	fs := fstest.MapFS{}
	for name, body := range files {
		fs[name] = &fstest.MapFile{Data: []byte(body)}
	}
	srv, err := triton.New(
		triton.WithRepository(fs),
		triton.WithLogger(zap.NewNop()),
		triton.WithBackend("light", work(20_000, 0)),
		triton.WithBackend("heavy", work(300_000, 20_000)),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(model),
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
	st, out, errs, srv := adviseInProcess(t, map[string]string{"m/config.pbtxt": workModel, "m/1/.keep": ""}, "m",
		"--latency-budget", "p99=30ms", "--concurrency-range", "1:16")
	if st != ExitSuccess {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
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
