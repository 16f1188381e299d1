package fil_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/fil"
	"github.com/triton-go/triton/backend/fil/lightgbm"
	"github.com/triton-go/triton/backend/fil/xgboost"
	"github.com/triton-go/triton/tensor"
)

// benchModel is a model of the batching benchmark: its file in a FIL
// repository, the config's parameters, and how to open its forest
// directly (the limit: the library on pre-formed batches).
type benchModel struct {
	name, modelType, file, target string
	features                      int
	rows                          int // rows per phase of a round
	open                          func(t testing.TB) fil.Forest
}

// servedRepo writes a repository of m twice: m.name with dynamic batching
// (max_batch_size 64) and m.name+"_b1" without, one instance each.
func servedRepo(tb testing.TB, m benchModel) string {
	tb.Helper()
	dir := tb.TempDir()
	data, err := os.ReadFile(m.file)
	if err != nil {
		tb.Fatal(err)
	}
	for name, batching := range map[string]string{m.name: "dynamic_batching { max_queue_delay_microseconds: 200 }", m.name + "_b1": ""} {
		if err := os.MkdirAll(filepath.Join(dir, name, "1"), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "1", m.target), data, 0o644); err != nil {
			tb.Fatal(err)
		}
		cfg := fmt.Sprintf(`name: %q
backend: "fil"
max_batch_size: 64
input [ { name: "input__0" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters [ { key: "model_type" value: { string_value: %q } }, { key: "is_classifier" value: { string_value: "true" } },
  { key: "predict_proba" value: { string_value: "true" } }, { key: "threshold" value: { string_value: "0.5" } } ]
%s`, name, m.features, m.modelType, batching)
		if err := os.WriteFile(filepath.Join(dir, name, "config.pbtxt"), []byte(cfg), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// benchBatching measures, in rounds that alternate the order, the rows
// per second of: the forest's own Predict on pre-formed batches of 64
// rows (the limit); the server with dynamic batching under 64 callers of
// one row each; the same callers without batching. It reports the
// medians and the ratios to the limit, and where the batched server's
// time goes: the share of it its instance spent executing batches (busy)
// and the execution time per row (exec-µs/row, the mean over all
// batches) beside the limit's (limit-µs/row, the mean over rounds).
func benchBatching(b *testing.B, m benchModel) {
	forest := m.open(b)
	defer forest.Close()
	srv, err := triton.New(triton.WithModelRepository(servedRepo(b, m)), triton.WithLogger(zap.NewNop()))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const callers, batch = 64, 64
	perRound := m.rows
	rows := make([]float32, batch*m.features)
	for i := range rows {
		rows[i] = rng.Float32()*4 - 2
	}
	out := make([]float32, batch*forest.Outputs())
	limit := func() float64 {
		start := time.Now()
		for range perRound / batch {
			if err := forest.Predict(rows, batch, out); err != nil {
				b.Fatal(err)
			}
		}
		return float64(perRound/batch*batch) / time.Since(start).Seconds()
	}
	var batchedWall time.Duration // the batched phases', for the instance's busy share
	served := func(model string) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		if model == m.name {
			defer func() { batchedWall += time.Since(start) }()
		}
		for c := range callers {
			wg.Go(func() {
				in, _ := tensor.From(fil.InputName, tensor.Shape{1, int64(m.features)}, rows[(c%batch)*m.features:(c%batch+1)*m.features])
				req := &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}}
				for range perRound / callers {
					if _, err := srv.Infer(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(perRound/callers*callers) / time.Since(start).Seconds()
	}
	var lim, dyn, one, rDyn, rOne []float64
	round := 0
	for b.Loop() {
		var l, d, o float64
		if round%2 == 0 {
			l, d, o = limit(), served(m.name), served(m.name+"_b1")
		} else {
			o, d, l = served(m.name+"_b1"), served(m.name), limit()
		}
		round++
		lim, dyn, one = append(lim, l), append(dyn, d), append(one, o)
		rDyn, rOne = append(rDyn, d/l), append(rOne, o/l)
	}
	med := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	if st, err := srv.Stats(m.name, 0); err == nil && len(st) == 1 && st[0].ExecutionCount > 0 {
		b.ReportMetric(float64(st[0].InferenceCount)/float64(st[0].ExecutionCount), "rows/batch")
		var busy time.Duration
		for _, x := range st[0].Batches {
			busy += x.ComputeInput.Total + x.ComputeInfer.Total + x.ComputeOutput.Total
		}
		b.ReportMetric(float64(busy)/float64(batchedWall), "busy")
		b.ReportMetric(float64(busy.Nanoseconds())/float64(st[0].InferenceCount)/1e3, "exec-µs/row")
		perRow := 0.0
		for _, l := range lim {
			perRow += 1e6 / l / float64(len(lim))
		}
		b.ReportMetric(perRow, "limit-µs/row")
	}
	b.ReportMetric(med(lim), "limit-rows/s")
	b.ReportMetric(med(dyn), "batched-rows/s")
	b.ReportMetric(med(one), "batch1-rows/s")
	b.ReportMetric(med(rDyn), "batched/limit")
	b.ReportMetric(med(rOne), "batch1/limit")
}

// BenchmarkBatchingLightGBM is the batching benchmark on the LightGBM
// binary fixture model (our reader).
// Run: go test -run '^$' -bench BatchingLightGBM -benchtime 5x ./backend/fil
func BenchmarkBatchingLightGBM(b *testing.B) {
	file := filepath.Join("lightgbm", "testdata", "binary", "binary", "model.txt")
	benchBatching(b, benchModel{name: "lgb", modelType: "lightgbm", file: file, target: "model.txt", features: 28, rows: 20000,
		open: func(tb testing.TB) fil.Forest {
			f, err := lightgbm.Load(file)
			if err != nil {
				tb.Fatal(err)
			}
			return f
		}})
}

// BenchmarkBatchingXGBoost is the batching benchmark on the example
// repository's fraud_trees (20 trees of depth 4 over 12 features), whose
// limit is XGBoost's C API on pre-formed batches of 64 rows.
// Run: go test -run '^$' -bench BatchingXGBoost -benchtime 5x ./backend/fil
func BenchmarkBatchingXGBoost(b *testing.B) {
	file := filepath.Join("..", "..", "examples", "model_repository", "fraud_trees", "1", "xgboost.json")
	benchBatching(b, benchModel{name: "xgb", modelType: "xgboost_json", file: file, target: "xgboost.json", features: 12, rows: 20000,
		open: openJSON(file)})
}

// BenchmarkBatchingXGBoostLarge is the batching benchmark on a model of
// production size: 500 trees of depth 8 over 32 features, which
// scripts/gen-fil-bench-model.py trains with python3-xgboost into a
// temporary folder (about 20 s) before the rounds start. Here a row costs
// XGBoost several microseconds, and the server's cost per one-row request
// is a small share of it.
// Run: go test -run '^$' -bench BatchingXGBoostLarge -benchtime 5x ./backend/fil
func BenchmarkBatchingXGBoostLarge(b *testing.B) {
	file := filepath.Join(b.TempDir(), "xgboost.json")
	script := filepath.Join("..", "..", "scripts", "gen-fil-bench-model.py")
	if out, err := exec.Command("/usr/bin/python3", script, file).CombinedOutput(); err != nil {
		b.Fatalf("%s (needs python3-xgboost: scripts/deps.sh): %v\n%s", script, err, out)
	}
	benchBatching(b, benchModel{name: "xgb_large", modelType: "xgboost_json", file: file, target: "xgboost.json", features: 32, rows: 64 * 64,
		open: openJSON(file)})
}

// openJSON opens an XGBoost JSON model as the limit's forest.
func openJSON(file string) func(testing.TB) fil.Forest {
	return func(tb testing.TB) fil.Forest {
		f, err := xgboost.Load(file, xgboost.Options{Format: xgboost.JSON})
		if err != nil {
			tb.Fatal(err)
		}
		return f
	}
}
