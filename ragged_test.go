package triton_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

const raggedConfig = `backend: "ragged" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [
  { kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO target_name: "OFFSETS" data_type: TYPE_INT32 source_input: "INPUT0" },
  { kind: BATCH_MAX_ELEMENT_COUNT_AS_SHAPE target_name: "LONGEST" data_type: TYPE_FP32 source_input: "INPUT0" }
]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
batch_output [ { target_name: "OUTPUT0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT0" } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { }
model_warmup [ { name: "three" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 3 ] zero_data: true } } } ]`

// TestRaggedBatching: requests of different lengths share one batch as
// Triton's ragged batching forms it: the model sees the elements of all of
// them in one rank-1 tensor, finds where each request's elements lie from
// the batch input the server made (OFFSETS), answers with one rank-1
// output, and the server cuts that output back into each request's shape
// (batch_output). The warm-up sample runs the same way, before any of it.
func TestRaggedBatching(t *testing.T) { synctest.Test(t, testRaggedBatching) }

func testRaggedBatching(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 10)
	var batches [][]int32 // OFFSETS of each batch
	var longest []tensor.Shape
	warm := true
	model := backend.Func(func(_ context.Context, b *backend.Batch) error {
		if warm { // the warm-up sample, while the server loads
			warm = false
			if off, err := b.Input("OFFSETS"); err != nil || !off.Shape.Equal(tensor.Shape{2}) {
				return fmt.Errorf("warm-up OFFSETS %v: %v", off.Shape, err)
			}
			return b.SetOutput(int32s(t, "OUTPUT0", tensor.Shape{3}, 0, 0, 0))
		}
		started <- struct{}{}
		if b.Requests[0].ID == "first" {
			<-gate
		}
		x, err := b.Input("INPUT0")
		if err != nil {
			return err
		}
		off, err := b.Input("OFFSETS")
		if err != nil {
			return err
		}
		l, err := b.Input("LONGEST")
		if err != nil {
			return err
		}
		longest = append(longest, l.Shape.Clone())
		xs, _ := tensor.View[int32](x)
		offs, _ := tensor.View[int32](off)
		batches = append(batches, slices.Clone(offs))
		// Each element plus 100 times the index of its request.
		out := make([]int32, len(xs))
		for r := range len(offs) - 1 {
			for j := offs[r]; j < offs[r+1]; j++ {
				out[j] = xs[j] + 100*int32(r)
			}
		}
		return b.SetOutput(int32s(t, "OUTPUT0", tensor.Shape{int64(len(out))}, out...))
	})
	srv := newServer(t, map[string]string{"r/config.pbtxt": raggedConfig, "r/1/x": ""}, triton.WithBackend("ragged", model))
	req := func(id string, rows, width int) *triton.InferRequest {
		r := rowsRequest(t, id, rows, width, 1)
		r.Model = "r"
		return r
	}
	first := goInfer(srv, context.Background(), req("first", 1, 1))
	<-started
	reqs := []*triton.InferRequest{req("x", 1, 2), req("y", 1, 3), req("z", 2, 2)}
	var results []chan result
	for i, r := range reqs {
		results = append(results, goInfer(srv, context.Background(), r))
		waitQueued(t, srv, "r", i+1)
	}
	close(gate)
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	for i, ch := range results {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		out, ok := r.resp.Output("OUTPUT0")
		if !ok {
			t.Fatalf("%s: no output", reqs[i].ID)
		}
		in, _ := tensor.View[int32](reqs[i].Inputs[0])
		want := make([]int32, len(in))
		for j, v := range in {
			want[j] = v + 100*int32(i)
		}
		got, _ := tensor.View[int32](out)
		if !out.Shape.Equal(reqs[i].Inputs[0].Shape) || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v %v (its own elements, its index in the batch)", reqs[i].ID, out.Shape, got, reqs[i].Inputs[0].Shape, want)
		}
	}
	if want := [][]int32{{0, 1}, {0, 2, 5, 9}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Errorf("offsets of the batches %v, want %v", batches, want)
	}
	if want := []tensor.Shape{{1}, {4}}; !slices.EqualFunc(longest, want, tensor.Shape.Equal) {
		t.Errorf("BATCH_MAX_ELEMENT_COUNT_AS_SHAPE shapes %v, want %v", longest, want)
	}
}
