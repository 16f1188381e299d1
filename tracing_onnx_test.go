//go:build cgo

package triton_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

const addSubONNXConfig = `name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
%s`

// twiceConfig is an ensemble of two add_sub steps: (A+B, A-B), then their
// sum and difference, 2A and 2B.
const twiceConfig = `name: "twice"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "B" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "A2" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "B2" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "add_sub" model_version: -1
    input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
    output_map { key: "OUTPUT0" value: "S" } output_map { key: "OUTPUT1" value: "D" } },
  { model_name: "add_sub" model_version: -1
    input_map { key: "INPUT0" value: "S" } input_map { key: "INPUT1" value: "D" }
    output_map { key: "OUTPUT0" value: "A2" } output_map { key: "OUTPUT1" value: "B2" } }
] }`

// onnxTraced serves add_sub.onnx (with extra config text) and the twice
// ensemble from a folder, traced with the global settings set (the zero
// settings.Trace: without a tracer).
func onnxTraced(t testing.TB, extra string, set settings.Trace) (*triton.Server, *trace.Tracer, string) {
	t.Helper()
	var store *settings.Store
	if set != (settings.Trace{}) {
		store = settings.NewStore(nil)
		set.File = filepath.Join(t.TempDir(), "trace.json")
		store.SetTraceDefaults(set)
	}
	srv, tr := onnxServer(t, extra, store)
	return srv, tr, set.File
}

// onnxServer serves add_sub.onnx (with extra config text) and the twice
// ensemble from a folder, with a tracer following store's settings (none
// for a nil store).
func onnxServer(t testing.TB, extra string, store *settings.Store) (*triton.Server, *trace.Tracer) {
	t.Helper()
	model := filepath.Join("backend", "onnxruntime", "testdata", "models", "add_sub.onnx")
	testenv.Need(t, model, "the ONNX test models are committed under backend/onnxruntime/testdata")
	testenv.NeedLibrary(t)
	onnx, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"add_sub/config.pbtxt": fmt.Appendf(nil, addSubONNXConfig, extra),
		"add_sub/1/model.onnx": onnx,
		"twice/config.pbtxt":   []byte(twiceConfig),
		"twice/1/.keep":        nil,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tr *trace.Tracer
	if store != nil {
		if tr, err = trace.New(store, trace.Config{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := triton.New(triton.WithModelRepository(dir), triton.WithTracer(tr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if tr != nil {
			tr.Close(context.Background())
		}
	})
	return srv, tr
}

func fp32Inputs(t testing.TB, a, b string, rows int, f func(i int) (float32, float32)) []tensor.Tensor {
	x, y := make([]float32, 16*rows), make([]float32, 16*rows)
	for i := range x {
		x[i], y[i] = f(i)
	}
	ta, err1 := tensor.From(a, tensor.Shape{int64(rows), 16}, x)
	tb, err2 := tensor.From(b, tensor.Shape{int64(rows), 16}, y)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return []tensor.Tensor{ta, tb}
}

// TestTraceONNXEnsemble: an ensemble of two ONNX Runtime steps is a trace
// with two children whose parent_id is its id, all written together, the
// children's requests inside the ensemble's compute.
func TestTraceONNXEnsemble(t *testing.T) {
	srv, tr, file := onnxTraced(t, "", allOn)
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "twice", ID: "ens1",
		Inputs: fp32Inputs(t, "A", "B", 1, func(i int) (float32, float32) { return float32(i), 1 })})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := resp.Output("B2"); len(out.Data) != 64 {
		t.Fatalf("B2 %v", out.Shape)
	}
	f := closeAndParse(t, tr, file)
	if len(f.order) != 3 {
		t.Fatalf("%d traces, want the ensemble's and its two steps'", len(f.order))
	}
	ens := f.byID[f.order[0]]
	checkCore(t, ens, "twice", "ens1", 1)
	for _, id := range f.order[1:] {
		step := f.byID[id]
		checkCore(t, step, "add_sub", "ens1", 1)
		if step.parent != ens.id {
			t.Errorf("step %d: parent_id %d, want %d", id, step.parent, ens.id)
		}
		if step.ns["REQUEST_START"] < ens.ns["REQUEST_START"] || step.ns["REQUEST_END"] > ens.ns["REQUEST_END"] {
			t.Errorf("step %d outside the ensemble's request", id)
		}
	}
	if a, b := f.byID[f.order[1]], f.byID[f.order[2]]; a.ns["REQUEST_END"] > b.ns["REQUEST_START"] {
		t.Error("the second step started before the first ended")
	}
}

// TestTraceONNXTensors: at level TENSORS the inputs are traced when queued
// and the outputs when the response is built, with Triton's rendering.
func TestTraceONNXTensors(t *testing.T) {
	set := allOn
	set.Level |= settings.TraceTensors
	srv, tr, file := onnxTraced(t, "dynamic_batching { }", set)
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add_sub", ID: "t1",
		Inputs: fp32Inputs(t, "INPUT0", "INPUT1", 1, func(i int) (float32, float32) { return float32(i) / 4, 0.5 })}); err != nil {
		t.Fatal(err)
	}
	x := closeAndParse(t, tr, file).byRequest("t1")
	checkCore(t, x, "add_sub", "t1", 1)
	want := []string{"REQUEST_START", "QUEUE_START", "TENSOR_QUEUE_INPUT:INPUT0", "TENSOR_QUEUE_INPUT:INPUT1",
		"COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END",
		"TENSOR_BACKEND_OUTPUT:OUTPUT0", "TENSOR_BACKEND_OUTPUT:OUTPUT1", "REQUEST_END"}
	if got := strings.Join(x.events, " "); got != strings.Join(want, " ") {
		t.Errorf("records\n%s\nwant\n%s", got, strings.Join(want, " "))
	}
	in0 := "FP32 1,16 0,0.25,0.5,0.75,1,1.25,1.5,1.75,2,2.25,2.5,2.75,3,3.25,3.5,3.75"
	out1 := "FP32 1,16 -0.5,-0.25,0,0.25,0.5,0.75,1,1.25,1.5,1.75,2,2.25,2.5,2.75,3,3.25"
	if x.tensors["TENSOR_QUEUE_INPUT:INPUT0"] != in0 || x.tensors["TENSOR_BACKEND_OUTPUT:OUTPUT1"] != out1 {
		t.Errorf("INPUT0 %q\nOUTPUT1 %q", x.tensors["TENSOR_QUEUE_INPUT:INPUT0"], x.tensors["TENSOR_BACKEND_OUTPUT:OUTPUT1"])
	}
}

// TestTraceONNXUnderLoad: concurrent clients of a dynamically batched
// model, every 4th request traced: each trace is complete and ordered, and
// requests that ran in one batch share its compute stamps. With
// TRACE_EXAMPLE_OUT set, the file is copied there (docs/tracing.md's
// example).
func TestTraceONNXUnderLoad(t *testing.T) {
	srv, tr, file := onnxTraced(t, "dynamic_batching { max_queue_delay_microseconds: 500 }",
		settings.Trace{Level: settings.TraceTimestamps, Rate: 4, Count: -1})
	const clients, each = 8, 25
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				req := &triton.InferRequest{Model: "add_sub", ID: fmt.Sprintf("c%d-%d", c, i),
					Inputs: fp32Inputs(t, "INPUT0", "INPUT1", 1, func(j int) (float32, float32) { return float32(j), float32(c) })}
				if _, err := srv.Infer(context.Background(), req); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f := closeAndParse(t, tr, file)
	if len(f.order) != clients*each/4 {
		t.Errorf("%d traces, want %d", len(f.order), clients*each/4)
	}
	for _, id := range f.order {
		x := f.byID[id]
		checkCore(t, x, "add_sub", x.requestID, 1)
	}
	if out := os.Getenv("TRACE_EXAMPLE_OUT"); out != "" {
		b, _ := os.ReadFile(file)
		os.WriteFile(out, b, 0o644)
	}
}

// BenchmarkInferTracingInterleavedONNX is BenchmarkInferTracingInterleaved
// on the ONNX add_sub model of the example repository (16 FP32 elements,
// one instance, 8–11 µs a request), a model that does some work.
//
// Run: go test -run '^$' -bench InferTracingInterleavedONNX -benchtime 600x -count 3 .
func BenchmarkInferTracingInterleavedONNX(b *testing.B) {
	req := &triton.InferRequest{Model: "add_sub", Inputs: fp32Inputs(b, "INPUT0", "INPUT1", 1, func(i int) (float32, float32) { return float32(i), 1 })}
	for _, bc := range traceCases {
		b.Run(bc.name, func(b *testing.B) {
			var srvs [2]*triton.Server
			var stores [2]*settings.Store
			for i := range srvs {
				stores[i] = settings.NewStore(nil)
				stores[i].SetTraceDefaults(traceOff)
				srvs[i], _ = onnxServer(b, "", stores[i])
			}
			interleavedRatio(b, 1000, srvs, stores, req, bc.set)
		})
	}
}
