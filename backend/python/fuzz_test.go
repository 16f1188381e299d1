package python_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/fuzztensor"
	"github.com/triton-go/triton/tensor"
)

// fuzzModels are the models FuzzInfer sends arbitrary tensors to: BYTES and
// BOOL identities through numpy, FP16 doubled in numpy (batching), and an
// FP32 model that answers a negative element with a TritonError.
var fuzzModels = []struct{ name, config, source string }{
	{"text", `backend: "python"
input [ { name: "IN" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]`, fuzzSource("x")},
	{"flags", `backend: "python"
input [ { name: "IN" data_type: TYPE_BOOL dims: [ -1, -1 ] } ]
output [ { name: "OUT" data_type: TYPE_BOOL dims: [ -1, -1 ] } ]`, fuzzSource("x")},
	{"half", `backend: "python"
max_batch_size: 4
dynamic_batching { }
input [ { name: "IN" data_type: TYPE_FP16 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP16 dims: [ -1 ] } ]`, fuzzSource("x * np.float16(2)")},
	{"raises", `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]`, fuzzSource("x * np.float32(2)")},
}

// fuzzSource is a model.py whose OUT is expr of x, IN's array; a negative
// element fails the request with a TritonError.
func fuzzSource(expr string) string {
	return `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            if x.dtype.kind == "f" and (x < 0).any():
                out.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("negative input")))
                continue
            out.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", ` + expr + `)]))
        return out
`
}

// FuzzInfer sends arbitrary tensors (datatype, shape, bytes) to Python
// models through srv.Infer and the stub. Neither process may crash; an
// error must be InvalidArgument (a bad request) or the model's own
// TritonError; a success must hold what the model computes. With fit set,
// the data is cut or repeated to the size the shape needs
// ([fuzztensor.Make]), so that most inputs reach numpy rather than the
// server's checks.
func FuzzInfer(f *testing.F) {
	r := newRepo(f)
	for _, m := range fuzzModels {
		r.model(m.name, m.config, m.source)
	}
	srv := r.Serve()
	f.Add(uint8(0), uint8(tensor.Bytes), true, []byte{3}, []byte("a\x00b\xffcd"))
	f.Add(uint8(0), uint8(tensor.Bytes), true, []byte{0}, []byte{})
	f.Add(uint8(0), uint8(tensor.Bytes), false, []byte{1}, []byte{255, 255, 255, 255})
	f.Add(uint8(1), uint8(tensor.Bool), true, []byte{2, 2}, []byte{0, 1, 2, 255})
	f.Add(uint8(1), uint8(tensor.Bool), true, []byte{3}, []byte{1})                               // a rank the config does not have
	f.Add(uint8(2), uint8(tensor.FP16), true, []byte{2, 3}, []byte{0, 0x7e, 0xff, 0x7b, 0, 0x3c}) // NaN, 65504
	f.Add(uint8(2), uint8(tensor.FP16), true, []byte{1, 2}, []byte{0, 0xbc})                      // -1
	f.Add(uint8(3), uint8(tensor.FP32), true, []byte{4}, []byte{0, 0, 0x80, 0xbf})                // -1
	f.Add(uint8(3), uint8(tensor.FP32), true, []byte{2}, []byte{0, 0, 0x80, 0x3f})
	f.Add(uint8(3), uint8(tensor.Int64), true, []byte{2}, []byte{1}) // wrong datatype
	f.Fuzz(func(t *testing.T, model, dt uint8, fit bool, shape, data []byte) {
		m := fuzzModels[int(model)%len(fuzzModels)]
		in := fuzztensor.Make("IN", tensor.DataType(dt), shape, data, fit)
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: m.name, Inputs: []tensor.Tensor{in}})
		if err != nil {
			switch c := triton.CodeOf(err); {
			case c == triton.InvalidArgument:
			case c == triton.Internal && strings.HasSuffix(err.Error(), "negative input") && in.DataType.Size() > 1:
			default:
				t.Fatalf("%s: code %v: %v", m.name, c, err)
			}
			return
		}
		out := floatsOrBytes(t, m.name, resp)
		if !out.Shape.Equal(in.Shape) {
			t.Fatalf("%s: input %v gave %v", m.name, in.Shape, out.Shape)
		}
		switch m.name {
		case "half":
			x, y := fuzztensor.Values[tensor.Float16](t, in), fuzztensor.Values[tensor.Float16](t, out)
			for i := range x {
				if x[i].Float32() < 0 {
					t.Fatalf("half: element %d is %v, and the model did not fail", i, x[i].Float32())
				}
				if w := tensor.Float16FromFloat32(x[i].Float32() * 2); y[i] != w && !(w.Float32() != w.Float32() && y[i].Float32() != y[i].Float32()) {
					t.Fatalf("half element %d: %v gave %v, want %v", i, x[i].Float32(), y[i].Float32(), w.Float32())
				}
			}
		case "raises":
			x, y := fuzztensor.Values[float32](t, in), fuzztensor.Values[float32](t, out)
			for i := range x {
				if x[i] < 0 {
					t.Fatalf("raises: element %d is %v, and the model did not fail", i, x[i])
				}
				if w := x[i] * 2; y[i] != w && !(w != w && y[i] != y[i]) {
					t.Fatalf("raises element %d: %v gave %v", i, x[i], y[i])
				}
			}
		default:
			if !bytes.Equal(out.Data, in.Data) {
				t.Fatalf("%s: input %v bytes %x came back as %x", m.name, in.Shape, in.Data, out.Data)
			}
		}
	})
}

// floatsOrBytes returns resp's one output, OUT, checked valid.
func floatsOrBytes(t *testing.T, model string, resp *triton.InferResponse) tensor.Tensor {
	t.Helper()
	out, ok := resp.Output("OUT")
	if !ok || len(resp.Outputs) != 1 {
		t.Fatalf("%s: outputs %v", model, resp.Outputs)
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("%s: accepted input produced an invalid output: %v", model, err)
	}
	return out
}
