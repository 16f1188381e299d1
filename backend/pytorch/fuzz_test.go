package pytorch_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/fuzztensor"
	"github.com/triton-go/triton/tensor"
)

// fuzzModels are the models FuzzInfer sends arbitrary tensors to: two
// tensors added and subtracted (so shapes that do not broadcast make
// libtorch raise), a list of strings, and a model that raises on a
// negative element. Every dimension is variable, so that libtorch sees the
// shapes the fuzzer makes.
var fuzzModels = []struct{ name, file, config string }{
	{"addsub", "addsub_args.pt", `backend: "pytorch"
max_batch_size: 4
input [ { name: "a" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "b" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "SUM__0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "DIFF__1" data_type: TYPE_FP32 dims: [ -1 ] } ]`},
	{"strings", "strings.pt", `backend: "pytorch"
input [ { name: "TEXT__0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "LEN__0" data_type: TYPE_INT64 dims: [ -1 ] }, { name: "UPPER__1" data_type: TYPE_STRING dims: [ -1 ] } ]`},
	{"raises", "raises.pt", `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]`},
}

// FuzzInfer sends arbitrary tensors (datatype, shape, bytes) to TorchScript
// models through srv.Infer. The process must never crash; an error must be
// InvalidArgument (a bad request) or Internal naming a failure inside the
// model ("PyTorch execute failure"); a success must hold what the model
// computes. With fit set, the data is cut or repeated to the size the
// shape needs ([fuzztensor.Make]), so that most inputs reach libtorch
// rather than the server's checks.
func FuzzInfer(f *testing.F) {
	r := newRepo(f)
	for _, m := range fuzzModels {
		r.model(m.name, m.file, m.config)
	}
	srv := r.Serve()
	f1 := func(xs ...float32) []byte { return must(tensor.From("", tensor.Shape{int64(len(xs))}, xs)).Data }
	f.Add(uint8(0), uint8(tensor.FP32), true, []byte{1, 3}, f1(1, 2, 3), []byte{1, 3}, f1(4, 5, 6))
	f.Add(uint8(0), uint8(tensor.FP32), true, []byte{2, 3}, f1(1), []byte{2, 1}, f1(2))        // broadcasts
	f.Add(uint8(0), uint8(tensor.FP32), true, []byte{1, 3}, f1(1), []byte{1, 4}, f1(2))        // does not
	f.Add(uint8(0), uint8(tensor.FP32), false, []byte{1, 0}, []byte{}, []byte{1, 0}, []byte{}) // empty
	f.Add(uint8(0), uint8(tensor.Int32), true, []byte{1, 2}, f1(1, 2), []byte{1, 2}, f1(1))    // wrong datatype
	f.Add(uint8(1), uint8(tensor.Bytes), true, []byte{3}, []byte("héllo\x00x"), []byte{}, []byte{})
	f.Add(uint8(1), uint8(tensor.Bytes), false, []byte{1}, []byte{255, 255, 255, 255}, []byte{}, []byte{})
	f.Add(uint8(1), uint8(tensor.Bytes), true, []byte{0}, []byte{}, []byte{}, []byte{})
	f.Add(uint8(2), uint8(tensor.FP32), true, []byte{2, 2}, f1(1, -1, float32(math.NaN()), 3), []byte{}, []byte{})
	f.Add(uint8(2), uint8(tensor.FP32), true, []byte{1, 2, 3}, f1(1), []byte{}, []byte{}) // a rank the config does not have
	f.Fuzz(func(t *testing.T, model, dt uint8, fit bool, shapeA, dataA, shapeB, dataB []byte) {
		m := fuzzModels[int(model)%len(fuzzModels)]
		in := func(name string, shape, data []byte) tensor.Tensor {
			return fuzztensor.Make(name, tensor.DataType(dt), shape, data, fit)
		}
		req := &triton.InferRequest{Model: m.name}
		switch m.name {
		case "addsub":
			req.Inputs = []tensor.Tensor{in("a", shapeA, dataA), in("b", shapeB, dataB)}
		case "strings":
			req.Inputs = []tensor.Tensor{in("TEXT__0", shapeA, dataA)}
		default:
			req.Inputs = []tensor.Tensor{in("x", shapeA, dataA)}
		}
		resp, err := srv.Infer(context.Background(), req)
		if err != nil {
			switch c := triton.CodeOf(err); {
			case c == triton.InvalidArgument:
			case c == triton.Internal && strings.Contains(err.Error(), "PyTorch execute failure: "):
			default:
				t.Fatalf("%s: code %v: %v", m.name, c, err)
			}
			return
		}
		for _, out := range resp.Outputs {
			if err := out.Validate(); err != nil {
				t.Fatalf("%s: accepted input produced an invalid output: %v", m.name, err)
			}
		}
		switch m.name {
		case "addsub":
			checkAddSub(t, req.Inputs[0], req.Inputs[1], resp)
		case "strings":
			checkStrings(t, req.Inputs[0], resp)
		default:
			checkRaises(t, req.Inputs[0], resp)
		}
	})
}

// broadcast returns the shape of a + b under libtorch's broadcasting.
func broadcast(a, b tensor.Shape) tensor.Shape {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := slices.Clone(a)
	for i := range b {
		j := len(a) - len(b) + i
		if a[j] == 1 {
			out[j] = b[i]
		}
	}
	return out
}

// sameFloat reports whether two float32 results agree (any two NaNs do).
func sameFloat(x, y float32) bool {
	return x == y || x != x && y != y
}

func checkAddSub(t *testing.T, a, b tensor.Tensor, resp *triton.InferResponse) {
	t.Helper()
	want := broadcast(a.Shape, b.Shape)
	sum, diff := output(t, resp, "SUM__0"), output(t, resp, "DIFF__1")
	if !sum.Shape.Equal(want) || !diff.Shape.Equal(want) {
		t.Fatalf("addsub %v and %v: outputs %v and %v, want %v", a.Shape, b.Shape, sum.Shape, diff.Shape, want)
	}
	if !a.Shape.Equal(b.Shape) {
		return // broadcast: the shape is what is checked
	}
	x, y, s, d := fuzztensor.Values[float32](t, a), fuzztensor.Values[float32](t, b), fuzztensor.Values[float32](t, sum), fuzztensor.Values[float32](t, diff)
	for i := range x {
		if !sameFloat(s[i], x[i]+y[i]) || !sameFloat(d[i], x[i]-y[i]) {
			t.Fatalf("addsub element %d: %v and %v gave %v and %v", i, x[i], y[i], s[i], d[i])
		}
	}
}

func checkStrings(t *testing.T, in tensor.Tensor, resp *triton.InferResponse) {
	t.Helper()
	strs, err := tensor.ByteSlices(in)
	if err != nil {
		t.Fatalf("strings: the server accepted a tensor that does not decode: %v", err)
	}
	lengths := fuzztensor.Values[int64](t, output(t, resp, "LEN__0"))
	upper, err := tensor.ByteSlices(output(t, resp, "UPPER__1"))
	if err != nil || len(lengths) != len(strs) || len(upper) != len(strs) {
		t.Fatalf("strings: %d strings gave %d lengths and %d upper-cased (%v)", len(strs), len(lengths), len(upper), err)
	}
	for i, s := range strs {
		if lengths[i] != int64(len(s)) || len(upper[i]) != len(s) {
			t.Fatalf("strings element %d %q: length %d, upper-cased %q", i, s, lengths[i], upper[i])
		}
	}
}

func checkRaises(t *testing.T, in tensor.Tensor, resp *triton.InferResponse) {
	t.Helper()
	out := output(t, resp, "OUT__0")
	if !out.Shape.Equal(in.Shape) {
		t.Fatalf("raises: input %v gave %v", in.Shape, out.Shape)
	}
	x, y := fuzztensor.Values[float32](t, in), fuzztensor.Values[float32](t, out)
	for i := range x {
		if x[i] < 0 {
			t.Fatalf("raises: element %d is %v, and forward did not raise", i, x[i])
		}
		if !sameFloat(y[i], x[i]*2) {
			t.Fatalf("raises element %d: %v gave %v", i, x[i], y[i])
		}
	}
}
