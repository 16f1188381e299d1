package backendtest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// double is a backend whose models double INPUT (FP32) into OUTPUT, on
// the whole batch at once.
var double = backend.Func(func(ctx context.Context, b *backend.Batch) error {
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

// doubleModel is a model for double: its config (as repository.ParseConfig
// would return it) and two requests, with a check of their values.
func doubleModel() backendtest.Model {
	cfg := &modelconfig.ModelConfig{
		Name:         "double",
		MaxBatchSize: 4,
		Input:        []*modelconfig.ModelInput{{Name: "INPUT", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{2}}},
		Output:       []*modelconfig.ModelOutput{{Name: "OUTPUT", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{2}}},
	}
	request := func(xs ...float32) backendtest.Request {
		in, _ := tensor.From("INPUT", tensor.Shape{int64(len(xs) / 2), 2}, xs)
		return backendtest.Request{
			Inputs: []tensor.Tensor{in},
			Check: func(outs []tensor.Tensor) error {
				ys, err := tensor.View[float32](outs[0])
				if err != nil {
					return err
				}
				for i, x := range xs {
					if ys[i] != 2*x {
						return fmt.Errorf("OUTPUT[%d] = %v, want %v", i, ys[i], 2*x)
					}
				}
				return nil
			},
		}
	}
	return backendtest.Model{Config: cfg, Requests: []backendtest.Request{request(1, 2), request(3, 4, 5, 6)}}
}

// In a backend's tests, backendtest.Run(t, double, doubleModel()) runs
// the checks as subtests; Check runs them without a *testing.T.
func Example() {
	fmt.Println(backendtest.Check(double, doubleModel()))
	// Output: <nil>
}

// A backend that gets the datatype of its output wrong fails the checks,
// and the report says where and how.
func ExampleCheck() {
	wrong := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		if err := double(ctx, b); err != nil {
			return err
		}
		for _, r := range b.Requests {
			for i := range r.Outputs() {
				r.Outputs()[i].DataType = tensor.Int32
			}
		}
		return nil
	})
	err := backendtest.Check(wrong, doubleModel())
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Println(first)
	// Output:
	// backendtest: load: model "double" version 1, instance double_0, batch [Requests[0]], Requests[0]: backend produced output 'OUTPUT' with data-type 'INT32', but model 'double' declares 'FP32' (12 times in all)
}
