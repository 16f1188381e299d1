package onnxruntime_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// TestConformance runs the conformance kit on the ONNX Runtime backend
// with committed test models: add_sub with a check of its values, batching
// identities (FP32, FP16, and BYTES through STRING), multi_io (three
// outputs of three datatypes, and a reshape of TEXT from [1] to []), and
// matmul_fixed, which does not batch.
//
// The models have no Failing requests: the backend has no per-request
// failure. Execute runs the batch as one ONNX Runtime call and never calls
// Request.Fail; what ONNX Runtime refuses fails the whole batch (as
// reshape_rows.onnx does for an element count that is not a multiple of
// 4), and a request that passes the server's validation cannot make it
// fail on its own.
func TestConformance(t *testing.T) {
	testenv.NeedLibrary(t)
	backendtest.Run(t, onnxruntime.New(),
		ortModel(t, "add_sub", "add_sub.onnx", `
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]`,
			addSubRequest(t, 1, 0), addSubRequest(t, 3, 1000)),
		ortModel(t, "identity_fp32", "identity_fp32.onnx", `
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
			identityRequest(must(tensor.From("INPUT0", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6}))),
			identityRequest(must(tensor.From("INPUT0", tensor.Shape{1, 3}, []float32{-1, 0, 1e30}))),
			identityRequest(must(tensor.From("INPUT0", tensor.Shape{1, 5}, []float32{9, 8, 7, 6, 5})))),
		ortModel(t, "identity_fp16", "identity_fp16.onnx", `
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]`,
			identityRequest(must(tensor.From("INPUT0", tensor.Shape{1, 2}, []tensor.Float16{tensor.Float16FromFloat32(1.5), tensor.Float16FromFloat32(-2)}))),
			identityRequest(must(tensor.From("INPUT0", tensor.Shape{2, 2}, []tensor.Float16{0, 1, 2, tensor.Float16FromFloat32(65504)})))),
		ortModel(t, "identity_string", "identity_string.onnx", `
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`,
			identityRequest(must(tensor.FromStrings("INPUT0", tensor.Shape{1, 3}, []string{"a", "", "x\x00y"}))),
			identityRequest(must(tensor.FromStrings("INPUT0", tensor.Shape{2, 3}, []string{"\xff\xfe", "plain", "", "b", "cd", "efg"})))),
		ortModel(t, "multi_io", "multi_io.onnx", `
max_batch_size: 8
input [
  { name: "FLOATS" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INTS" data_type: TYPE_INT64 dims: [ 2 ] },
  { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } }
]
output [
  { name: "SCALED" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "SHIFTED" data_type: TYPE_INT64 dims: [ 2 ] },
  { name: "TEXT_OUT" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } }
]`,
			multiIORequest(t, []float32{1, 2, 3, 4}, []int64{10, 20}, "a\x00b"),
			multiIORequest(t, []float32{5, 6, 7, 8, -1, -2, -3, -4}, []int64{30, 40, 50, 60}, "c", "")),
		ortModel(t, "matmul_fixed", "matmul_fixed.onnx", `
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2, 3 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 2, 2 ] } ]`,
			backendtest.Request{
				Inputs: []tensor.Tensor{must(tensor.From("X", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6}))},
				Check:  wantFloats("Y", 22, 28, 49, 64),
			}),
	)
}

// ortModel writes <tmp>/<name>/1/model.onnx, a copy of
// testdata/models/<file>, and returns it as a model of the kit with
// config (name and backend added) parsed, normalized and validated as the
// server does (seqSpec).
func ortModel(t *testing.T, name, file, config string, reqs ...backendtest.Request) backendtest.Model {
	t.Helper()
	spec := seqSpec(t, name, file, fmt.Sprintf("name: %q\nbackend: %q\n%s", name, onnxruntime.Name, config))
	return backendtest.Model{Config: spec.Config, Dir: spec.Dir, Requests: reqs}
}

// addSubRequest is a request of rows rows to add_sub: INPUT0 counts up
// from base, INPUT1 down from it; OUTPUT0 must be their sum, OUTPUT1 their
// difference.
func addSubRequest(t *testing.T, rows int64, base float32) backendtest.Request {
	t.Helper()
	a, b := make([]float32, rows*16), make([]float32, rows*16)
	for i := range a {
		a[i], b[i] = base+float32(i), base-float32(i)/2
	}
	sum, diff := make([]float32, len(a)), make([]float32, len(a))
	for i := range a {
		sum[i], diff[i] = a[i]+b[i], a[i]-b[i]
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{must(tensor.From("INPUT0", tensor.Shape{rows, 16}, a)), must(tensor.From("INPUT1", tensor.Shape{rows, 16}, b))},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				want := map[string][]float32{"OUTPUT0": sum, "OUTPUT1": diff}[o.Name]
				if err := wantFloats(o.Name, want...)([]tensor.Tensor{o}); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// identityRequest is a request to an identity model: OUTPUT0 must be
// INPUT0, shape and bytes.
func identityRequest(in tensor.Tensor) backendtest.Request {
	return backendtest.Request{
		Inputs: []tensor.Tensor{in},
		Check: func(outs []tensor.Tensor) error {
			out := outs[0]
			if !out.Shape.Equal(in.Shape) || !bytes.Equal(out.Data, in.Data) {
				return fmt.Errorf("OUTPUT0 is %v %q, want INPUT0, %v %q", out.Shape, out.Data, in.Shape, in.Data)
			}
			return nil
		},
	}
}

// multiIORequest is a request to multi_io (SCALED = FLOATS * 2, SHIFTED =
// INTS + 1, TEXT_OUT = TEXT), one row per text.
func multiIORequest(t *testing.T, floats []float32, ints []int64, text ...string) backendtest.Request {
	t.Helper()
	rows := int64(len(text))
	scaled, shifted := make([]float32, len(floats)), make([]int64, len(ints))
	for i, f := range floats {
		scaled[i] = 2 * f
	}
	for i, n := range ints {
		shifted[i] = n + 1
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{
			must(tensor.From("FLOATS", tensor.Shape{rows, 4}, floats)),
			must(tensor.From("INTS", tensor.Shape{rows, 2}, ints)),
			must(tensor.FromStrings("TEXT", tensor.Shape{rows, 1}, text)),
		},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				switch o.Name {
				case "SCALED":
					if err := wantFloats("SCALED", scaled...)([]tensor.Tensor{o}); err != nil {
						return err
					}
				case "SHIFTED":
					if got := must(tensor.View[int64](o)); !slices.Equal(got, shifted) {
						return fmt.Errorf("SHIFTED = %v, want %v", got, shifted)
					}
				case "TEXT_OUT":
					// The backend produces the reshaped [rows] (the kit has
					// checked the shape against the config's reshape).
					if got := must(tensor.Strings(o)); !slices.Equal(got, text) {
						return fmt.Errorf("TEXT_OUT = %q, want %q", got, text)
					}
				}
			}
			return nil
		},
	}
}

// wantFloats checks that the first output, named name, holds want.
func wantFloats(name string, want ...float32) func([]tensor.Tensor) error {
	return func(outs []tensor.Tensor) error {
		got, err := tensor.View[float32](outs[0])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s = %v, want %v", name, got, want)
		}
		return nil
	}
}
