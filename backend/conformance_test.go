package backend_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

// TestFuncConformance runs the conformance kit on backend.Func backends:
// an add model that works on the whole batch and fails, on its own, a
// request with a NaN in it, and a BYTES mirror that does not batch.
func TestFuncConformance(t *testing.T) {
	t.Run("add", func(t *testing.T) {
		backendtest.Run(t, addFunc, backendtest.Model{
			Config:   parseConfig(t, addFuncConfig),
			Requests: []backendtest.Request{addFuncRequest(t, 1, 0), addFuncRequest(t, 3, 10), addFuncRequest(t, 4, -5)},
			Failing:  []backendtest.Request{addFuncRequest(t, 2, float32(math.NaN()))},
		})
	})
	t.Run("mirror", func(t *testing.T) {
		backendtest.Run(t, mirrorFunc, backendtest.Model{
			Config: parseConfig(t, mirrorFuncConfig),
			Requests: []backendtest.Request{
				mirrorFuncRequest(t, "a"), mirrorFuncRequest(t, "", "b\x00c", "\xff not UTF-8"),
			},
		})
	})
}

const addFuncConfig = `
name: "add"
backend: "go"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 3 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 3 ] }
]
instance_group [ { kind: KIND_CPU count: 2 } ]
`

const mirrorFuncConfig = `
name: "mirror"
backend: "go"
input [ { name: "IN" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
`

func parseConfig(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg, err := repository.ParseConfig("config.pbtxt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate("config.pbtxt", cfg, repository.ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// addFunc computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 -
// INPUT1 for the whole batch; a request with a NaN in INPUT0 fails on its
// own.
var addFunc = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x0, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	x1, err := b.Input("INPUT1")
	if err != nil {
		return err
	}
	a, err := tensor.View[float32](x0)
	if err != nil {
		return err
	}
	c, err := tensor.View[float32](x1)
	if err != nil {
		return err
	}
	sum, diff := make([]float32, len(a)), make([]float32, len(a))
	for i := range a {
		sum[i], diff[i] = a[i]+c[i], a[i]-c[i]
	}
	row := int64(0)
	for _, r := range b.Requests {
		n := r.BatchSize * x0.Shape[1]
		if slices.ContainsFunc(a[row:row+n], func(v float32) bool { return v != v }) {
			r.Fail(fmt.Errorf("request %q: INPUT0 has a NaN: %w", r.ID, backend.ErrInvalidInput))
		}
		row += n
	}
	for name, vals := range map[string][]float32{"OUTPUT0": sum, "OUTPUT1": diff} {
		out, err := tensor.From(name, x0.Shape, vals)
		if err != nil {
			return err
		}
		if err := b.SetOutput(out); err != nil {
			return err
		}
	}
	return nil
})

// addFuncRequest is a request of rows rows: INPUT0 counts up from base,
// INPUT1 is all 2.
func addFuncRequest(t *testing.T, rows int64, base float32) backendtest.Request {
	t.Helper()
	a, c := make([]float32, rows*3), make([]float32, rows*3)
	for i := range a {
		a[i], c[i] = base+float32(i), 2
	}
	in0, err := tensor.From("INPUT0", tensor.Shape{rows, 3}, a)
	if err != nil {
		t.Fatal(err)
	}
	in1, err := tensor.From("INPUT1", tensor.Shape{rows, 3}, c)
	if err != nil {
		t.Fatal(err)
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{in0, in1},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				got, err := tensor.View[float32](o)
				if err != nil {
					return err
				}
				for i := range a {
					want := a[i] + c[i]
					if o.Name == "OUTPUT1" {
						want = a[i] - c[i]
					}
					if got[i] != want {
						return fmt.Errorf("%s[%d] = %v, want %v", o.Name, i, got[i], want)
					}
				}
			}
			return nil
		},
	}
}

// mirrorFunc returns IN as OUT.
var mirrorFunc = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	in, err := b.Input("IN")
	if err != nil {
		return err
	}
	in.Name = "OUT"
	return b.SetOutput(in)
})

func mirrorFuncRequest(t *testing.T, vals ...string) backendtest.Request {
	t.Helper()
	in, err := tensor.FromStrings("IN", tensor.Shape{int64(len(vals))}, vals)
	if err != nil {
		t.Fatal(err)
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{in},
		Check: func(outs []tensor.Tensor) error {
			got, err := tensor.Strings(outs[0])
			if err != nil {
				return err
			}
			if !slices.Equal(got, vals) {
				return fmt.Errorf("OUT = %q, want %q", got, vals)
			}
			return nil
		},
	}
}
