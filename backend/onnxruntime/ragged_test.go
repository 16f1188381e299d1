package onnxruntime_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

const raggedConfig = `backend: "onnxruntime"
max_batch_size: 8
dynamic_batching { preferred_batch_size: [ 5 ] max_queue_delay_microseconds: 60000000 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO target_name: "OFFSETS" data_type: TYPE_INT32 source_input: "X" } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
batch_output [ { target_name: "Y" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "X" } ]
`

// TestRaggedBatching: four requests of different lengths, one of them two
// items long, run as one batch of ragged.onnx, which takes every element
// in one rank-1 tensor and the batch input that says where each request's
// elements lie; each request gets its own elements back in its own shape
// (batch_output), each plus 100 times its place in the batch.
func TestRaggedBatching(t *testing.T) {
	srv := newRepo(t).model("ragged", "ragged.onnx", raggedConfig).serve()
	shapes := []tensor.Shape{{1, 1}, {1, 3}, {2, 2}, {1, 5}}
	places := make([]float32, len(shapes))
	var wg sync.WaitGroup
	for k, shape := range shapes {
		wg.Go(func() {
			n, _ := shape.NumElements()
			in := make([]float32, n)
			for i := range in {
				in[i] = float32(10*k + i)
			}
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "ragged", Inputs: []tensor.Tensor{must(tensor.From("X", shape, in))}})
			if err != nil {
				t.Errorf("request %d: %v", k, err)
				return
			}
			out := output(t, resp, "Y")
			got, err := tensor.View[float32](out)
			if err != nil || !out.Shape.Equal(shape) {
				t.Errorf("request %d: output %v %v, want shape %v", k, out.Shape, err, shape)
				return
			}
			places[k] = got[0] - in[0]
			for i := range got {
				if got[i]-in[i] != places[k] {
					t.Errorf("request %d: output %v for input %v: not one offset for the request", k, got, in)
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(places)
	if !slices.Equal(places, []float32{0, 100, 200, 300}) {
		t.Errorf("offsets the model added %v, want 0, 100, 200 and 300 (each request's place in one batch)", places)
	}
	// One execution of a batch of five rows (the [2, 2] request is two).
	st, err := srv.Stats("ragged", 0)
	if err != nil || len(st) != 1 || st[0].ExecutionCount != 1 || st[0].InferenceCount != 5 {
		t.Errorf("stats %+v %v, want one execution of 5 inferences", st, err)
	}
}

// TestRaggedConfigChecked: what the model file must agree with for ragged
// batching, said at load.
func TestRaggedConfigChecked(t *testing.T) {
	r := newRepo(t)
	r.model("not_rank1", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] allow_ragged_batch: true }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]`)
	r.model("no_target", "ragged.onnx", strings.Replace(raggedConfig, `target_name: "OFFSETS"`, `target_name: "COUNTS"`, 1))
	r.model("target_type", "ragged.onnx", strings.Replace(raggedConfig, `data_type: TYPE_INT32 source_input`, `data_type: TYPE_FP32 source_input`, 1))
	r.model("target_rank", "ragged.onnx", strings.Replace(raggedConfig, `kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO`, `kind: BATCH_ITEM_SHAPE`, 1))
	r.model("unconfigured", "ragged.onnx", strings.Replace(raggedConfig, "batch_input", "# batch_input", 1))
	srv := r.serve(triton.WithExitOnError(false))
	want := map[string]string{
		"not_rank1":    "input 'INPUT0' is ragged (allow_ragged_batch), which the model takes as the batch's elements in one tensor of shape [-1], but the model's is [-1 16]",
		"no_target":    "batch_input target 'COUNTS' is not one of the model's inputs [X OFFSETS]",
		"target_type":  "batch_input target 'OFFSETS' has datatype TYPE_FP32, but the model's is TYPE_INT32",
		"target_rank":  "batch_input target 'OFFSETS' (BATCH_ITEM_SHAPE) has shape [-1 -1], but the model's is [-1]",
		"unconfigured": "model input 'OFFSETS' is not in the configuration",
	}
	reasons := map[string]string{}
	for _, st := range srv.Index(context.Background()) {
		reasons[st.Name] = st.Reason
	}
	for model, part := range want {
		if !strings.Contains(reasons[model], part) {
			t.Errorf("%s: reason %q, want one with %q", model, reasons[model], part)
		}
	}
}
