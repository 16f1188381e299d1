package onnxruntime_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/fuzztensor"
	"github.com/triton-go/triton/tensor"
)

// fuzzModels are the models FuzzInfer sends arbitrary tensors to: BYTES
// and FP16 identities, a reshape that ONNX Runtime refuses for an element
// count that is not a multiple of 4, and a reduction over a variable axis.
var fuzzModels = []struct{ name, file, config string }{
	{"identity_string", "identity_string.onnx", `backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`},
	{"identity_fp16", "identity_fp16.onnx", `backend: "onnxruntime"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP16 dims: [ -1 ] } ]`},
	{"rows", "reshape_rows.onnx", `backend: "onnxruntime"
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]`},
	{"reduce", "reduce_dynamic.onnx", `backend: "onnxruntime"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ -1 ] } ]`},
}

// FuzzInfer sends arbitrary tensors (datatype, shape, bytes) to ONNX
// models through srv.Infer. The process must never crash; an error must be
// InvalidArgument (a bad request) or Internal naming ONNX Runtime's refusal
// to run; a success must hold what the model computes. With fit set, the
// data is cut or repeated to the size the shape needs
// ([fuzztensor.Make]), so that most inputs reach ONNX Runtime rather than
// the server's checks.
func FuzzInfer(f *testing.F) {
	r := newRepo(f)
	for _, m := range fuzzModels {
		r.model(m.name, m.file, m.config)
	}
	srv := r.serve()
	f.Add(uint8(0), uint8(tensor.Bytes), true, []byte{1, 3}, []byte("a\x00bc"))
	f.Add(uint8(0), uint8(tensor.Bytes), false, []byte{1, 1}, []byte{255, 255, 255, 255})
	f.Add(uint8(1), uint8(tensor.FP16), true, []byte{2, 2}, []byte{0, 0x7e, 0, 0xfc}) // NaN, -Inf
	f.Add(uint8(1), uint8(tensor.FP32), true, []byte{1, 2}, []byte{1})                // wrong datatype
	f.Add(uint8(2), uint8(tensor.FP32), true, []byte{2, 4}, []byte{1, 2, 3, 4})
	f.Add(uint8(2), uint8(tensor.FP32), true, []byte{1, 3}, []byte{1})    // not rows of 4
	f.Add(uint8(2), uint8(tensor.FP32), true, []byte{0, 4}, []byte{})     // empty
	f.Add(uint8(3), uint8(tensor.FP32), true, []byte{2, 5, 3}, []byte{7}) // [batch, rows, 3]
	f.Add(uint8(3), uint8(tensor.FP32), true, []byte{1, 2, 2}, []byte{7}) // a last axis the config does not have
	f.Add(uint8(3), uint8(tensor.FP32), true, []byte{2, 0, 3}, []byte{})  // empty
	f.Fuzz(func(t *testing.T, model, dt uint8, fit bool, shape, data []byte) {
		m := fuzzModels[int(model)%len(fuzzModels)]
		name := "INPUT0"
		if m.name == "rows" || m.name == "reduce" {
			name = "X"
		}
		in := fuzztensor.Make(name, tensor.DataType(dt), shape, data, fit)
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: m.name, Inputs: []tensor.Tensor{in}})
		if err != nil {
			switch c := triton.CodeOf(err); {
			case c == triton.InvalidArgument:
			case c == triton.Internal && strings.Contains(err.Error(), "ONNX Runtime failed to run model '"+m.name+"'"):
			case c == triton.Internal && m.name == "reduce" && empty(in) && strings.Contains(err.Error(), "backend produced output 'SUM' with shape"):
				// ONNX Runtime's ReduceSum gives an empty X's shape back
				// unreduced ([2, 0, 3] for [2, 0, 3]); the server refuses
				// an output whose rank the config does not have.
			default:
				t.Fatalf("%s: code %v: %v", m.name, c, err)
			}
			return
		}
		if len(resp.Outputs) != 1 {
			t.Fatalf("%s: %d outputs", m.name, len(resp.Outputs))
		}
		out := resp.Outputs[0]
		if err := out.Validate(); err != nil {
			t.Fatalf("%s: accepted input produced an invalid output: %v", m.name, err)
		}
		var want tensor.Shape
		switch m.name {
		case "rows":
			n, _ := in.Shape.NumElements()
			want = tensor.Shape{n / 4, 4}
		case "reduce":
			want = in.Shape[:2]
		default:
			want = in.Shape
		}
		if !out.Shape.Equal(want) {
			t.Fatalf("%s: input %v gave %v, want %v", m.name, in.Shape, out.Shape, want)
		}
		if m.name != "reduce" && !bytes.Equal(out.Data, in.Data) {
			t.Fatalf("%s: input %v bytes %x came back as %x", m.name, in.Shape, in.Data, out.Data)
		}
	})
}

// empty reports whether t has no elements.
func empty(t tensor.Tensor) bool {
	n, err := t.Shape.NumElements()
	return err == nil && n == 0
}
