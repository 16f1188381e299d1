package backend_test

import (
	"context"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

// A custom Go backend is a function over a batch. This one doubles every
// FP32 element of INPUT into OUTPUT, working on the whole batch at once.
func ExampleFunc() {
	double := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		in, err := b.Input("INPUT")
		if err != nil {
			return err
		}
		xs, err := tensor.View[float32](in)
		if err != nil {
			return err
		}
		out := make([]float32, len(xs))
		for i, x := range xs {
			out[i] = 2 * x
		}
		t, err := tensor.From("OUTPUT", in.Shape, out)
		if err != nil {
			return err
		}
		return b.SetOutput(t)
	})

	// The server builds batches; here we build one by hand.
	in1, _ := tensor.From("INPUT", tensor.Shape{1, 2}, []float32{1, 2})
	in2, _ := tensor.From("INPUT", tensor.Shape{2, 2}, []float32{3, 4, 5, 6})
	r1 := &backend.Request{ID: "a", Inputs: []tensor.Tensor{in1}, BatchSize: 1}
	r2 := &backend.Request{ID: "b", Inputs: []tensor.Tensor{in2}, BatchSize: 2}
	if err := double.Execute(context.Background(), backend.NewBatch(true, r1, r2)); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range []*backend.Request{r1, r2} {
		out := r.Outputs()[0]
		vals, _ := tensor.View[float32](out)
		fmt.Println(r.ID, out.Shape, vals)
	}
	// Output:
	// a [1,2] [2 4]
	// b [2,2] [6 8 10 12]
}

// A backend sets response parameters beside its outputs (Triton's
// response parameters): clients get them in the response's "parameters",
// over HTTP and gRPC alike.
func ExampleRequest_SetParameter() {
	generate := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			out, err := tensor.FromStrings("TEXT", tensor.Shape{1}, []string{"hello"})
			if err != nil {
				return err
			}
			r.SetOutput(out)
			r.SetParameter("finish_reason", "length")
			r.SetParameter("tokens", int64(1))
		}
		return nil
	})

	r := &backend.Request{ID: "a"}
	if err := generate.Execute(context.Background(), backend.NewBatch(false, r)); err != nil {
		fmt.Println(err)
		return
	}
	p := r.ResponseParameters()
	fmt.Println(p["finish_reason"], p["tokens"])
	// Output: length 1
}

// Ragged batching: requests of different lengths share a batch as one
// rank-1 tensor of all their elements, and a batch input the server makes
// (config batch_input) says where each request's elements lie. This model
// sums each request's elements; the server cuts its output back per
// request. The layouts are the ones the server compiles from the config.
func ExampleBatch_Input_ragged() {
	cfg, err := repository.ParseConfig("config.pbtxt", []byte(`max_batch_size: 8
input [ { name: "TOKENS" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO target_name: "OFFSETS" data_type: TYPE_INT32 source_input: "TOKENS" } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 1 ] } ]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	sums := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		tokens, err := b.Input("TOKENS") // every request's elements, one after another
		if err != nil {
			return err
		}
		offsets, err := b.Input("OFFSETS") // [0, end of request 0, end of request 1, ...]
		if err != nil {
			return err
		}
		xs, _ := tensor.View[float32](tokens)
		ends, _ := tensor.View[int32](offsets)
		out := make([]float32, len(ends)-1)
		for r := range out {
			for _, x := range xs[ends[r]:ends[r+1]] {
				out[r] += x
			}
		}
		t, err := tensor.From("SUM", tensor.Shape{int64(len(out)), 1}, out)
		if err != nil {
			return err
		}
		return b.SetOutput(t)
	})

	a, _ := tensor.From("TOKENS", tensor.Shape{1, 2}, []float32{1, 2})
	c, _ := tensor.From("TOKENS", tensor.Shape{1, 3}, []float32{3, 4, 5})
	r1 := &backend.Request{ID: "a", Inputs: []tensor.Tensor{a}, BatchSize: 1}
	r2 := &backend.Request{ID: "b", Inputs: []tensor.Tensor{c}, BatchSize: 1}
	batch := backend.NewBatch(true, r1, r2)
	batch.SetLayouts(map[string]backend.Layout{"TOKENS": {Ragged: true}, "OFFSETS": backend.BatchLayouts(cfg)["OFFSETS"]})
	if err := sums.Execute(context.Background(), batch); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range batch.Requests {
		vals, _ := tensor.View[float32](r.Outputs()[0])
		fmt.Println(r.ID, vals)
	}
	// Output:
	// a [3]
	// b [12]
}
