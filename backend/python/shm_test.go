package python_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

const identityConfig = `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]
`

const identityModel = `
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
`

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}

// TestLargeTensors: tensors far larger than the initial shared memory go
// through (the regions grow), again and again (they are reused).
func TestLargeTensors(t *testing.T) {
	srv := newRepo(t).model("id", identityConfig, identityModel).Serve()
	for _, n := range []int{0, 1, 100, 16 << 20, 3 << 20, 16 << 20} {
		data := pattern(n)
		resp, err := infer(t, srv, "id", must(tensor.New("IN", tensor.Uint8, tensor.Shape{int64(n)}, data)))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		out, _ := resp.Output("OUT")
		if !bytes.Equal(out.Data, data) {
			t.Fatalf("%d bytes: output differs", n)
		}
	}
}

// TestSharedMemoryLimit: a tensor over the limit fails its request with an
// error that says so; the stub serves the next.
func TestSharedMemoryLimit(t *testing.T) {
	srv := newRepo(t).model("id", identityConfig, identityModel).
		Serve(triton.WithBackend(python.Name, python.New(python.WithSharedMemory(1<<20, 1<<20, 4<<20))))
	_, err := infer(t, srv, "id", must(tensor.New("IN", tensor.Uint8, tensor.Shape{8 << 20}, pattern(8<<20))))
	if err == nil || !strings.Contains(err.Error(), "do not fit in the shared memory of the stub (limit 4194304 bytes") || triton.CodeOf(err) != triton.Unavailable {
		t.Fatalf("error %v (%v)", err, triton.CodeOf(err))
	}
	// 3 MiB in fits; 3 MiB out must fit the other region.
	data := pattern(3 << 20)
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "id", Inputs: []tensor.Tensor{must(tensor.New("IN", tensor.Uint8, tensor.Shape{3 << 20}, data))}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := resp.Output("OUT"); !bytes.Equal(out.Data, data) {
		t.Fatal("output differs")
	}
}

// TestOutputsThatAreInputs: an output that is the input, or a slice of it,
// is read by the server from the input's own shared memory, not copied
// into the stub's region first (which stays at its initial 1 MiB).
func TestOutputsThatAreInputs(t *testing.T) {
	r := newRepo(t).model("pass", `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [
  { name: "OUT" data_type: TYPE_UINT8 dims: [ -1 ] },
  { name: "HALF" data_type: TYPE_UINT8 dims: [ -1 ] },
  { name: "UP" data_type: TYPE_INT64 dims: [ 1 ] }
]
`, `
import os
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", x),
                pb_utils.Tensor("HALF", x[x.shape[0] // 2:]),
                pb_utils.Tensor("UP", np.array([os.fstat(6).st_size], np.int64))]))  # fd 6: the stub's region
        return out
`)
	srv := r.Serve()
	in := make([]byte, 4<<20)
	for i := range in {
		in[i] = byte(i * 7 / 3)
	}
	var up int64
	for range 2 { // the second request sees the region as the first left it
		resp, err := infer(t, srv, "pass", must(tensor.From("IN", tensor.Shape{int64(len(in))}, in)))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := resp.Output("OUT")
		half, _ := resp.Output("HALF")
		if !bytes.Equal(out.Data, in) || !bytes.Equal(half.Data, in[len(in)/2:]) {
			t.Fatal("OUT or HALF differ from the input")
		}
		u, _ := resp.Output("UP")
		up = must(tensor.View[int64](u))[0]
	}
	if up > 1<<20 {
		t.Errorf("the stub's region grew to %d bytes for 6 MiB of outputs that are views of the input", up)
	}
}

// TestBLSInputsThatAreInputs: a BLS call made from execute with the
// request's input (the tensor itself, or a slice of its array) passes it
// by reference too: the called model gets the right data, and the stub's
// region stays at its initial 1 MiB.
func TestBLSInputsThatAreInputs(t *testing.T) {
	echo := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			in, _ := r.Input("IN")
			r.SetOutput(tensor.Tensor{Name: "Y", DataType: in.DataType, Shape: in.Shape, Data: slices.Clone(in.Data)})
		}
		return nil
	})
	r := newRepo(t).model("front", `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [
  { name: "SAME" data_type: TYPE_BOOL dims: [ 2 ] },
  { name: "UP" data_type: TYPE_INT64 dims: [ 1 ] }
]
`, `
import os
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "IN")
            x = t.as_numpy()
            same = []
            for arg, want in ((t, x), (pb_utils.Tensor("IN", x[len(x) // 2:]), x[len(x) // 2:])):
                resp = pb_utils.InferenceRequest(model_name="echo", requested_output_names=["Y"], inputs=[arg]).exec()
                if resp.has_error():
                    raise pb_utils.TritonModelException(resp.error().message())
                same.append(np.array_equal(pb_utils.get_output_tensor_by_name(resp, "Y").as_numpy(), want))
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SAME", np.array(same, bool)),
                pb_utils.Tensor("UP", np.array([os.fstat(6).st_size], np.int64))]))  # fd 6: the stub's region
        return out
`)
	r.write("echo/config.pbtxt", `backend: "echo"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_UINT8 dims: [ -1 ] } ]
`)
	r.write("echo/1/.keep", "")
	srv := r.Serve(triton.WithBackend("echo", echo))
	in := make([]byte, 4<<20)
	for i := range in {
		in[i] = byte(i * 5 / 3)
	}
	resp, err := infer(t, srv, "front", must(tensor.From("IN", tensor.Shape{int64(len(in))}, in)))
	if err != nil {
		t.Fatal(err)
	}
	same, _ := resp.Output("SAME")
	if v := must(tensor.View[bool](same)); !v[0] || !v[1] {
		t.Errorf("the called model's outputs match its inputs: %v, want both", v)
	}
	u, _ := resp.Output("UP")
	if up := must(tensor.View[int64](u))[0]; up > 1<<20 {
		t.Errorf("the stub's region grew to %d bytes for 6 MiB of BLS inputs that are views of the input", up)
	}
}

// keeperModel keeps, from each request, what its KEEP parameter names
// ("array", "slice", "tensor", "request", "nothing"), and answers with
// what it kept from the request before, as it reads it now (zeros the
// first time; FP32 IN [4] → OUT [4]).
const keeperModel = `
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = None

    def execute(self, requests):
        out = []
        for r in requests:
            prev, what = self.kept, json.loads(r.parameters())["KEEP"]
            t = pb_utils.get_input_tensor_by_name(r, "IN")
            x = t.as_numpy()
            self.kept = {"array": x, "slice": x[1:], "tensor": t, "request": r, "nothing": x.copy()}[what]
            if prev is None:
                y = np.zeros(4, np.float32)
            elif isinstance(prev, pb_utils.Tensor):
                y = prev.as_numpy()
            elif isinstance(prev, pb_utils.InferenceRequest):
                y = pb_utils.get_input_tensor_by_name(prev, "IN").as_numpy()
            else:
                y = np.concatenate([np.zeros(4 - prev.size, np.float32), prev])
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array(y, np.float32))]))
        return out
`

// TestKeptInputs: inputs a model keeps from one request to the next (the
// array, a slice of it, the tensor, the request) still hold their own
// data when the next request comes (before, its inputs were written over
// them: the kept array read the new request's values), and their shared
// memory comes back once the model lets them go: a model keeping its last
// 300 KiB input, and answering with it (an output read in place, in the
// answer that frees it), runs on through a 1 MiB region.
func TestKeptInputs(t *testing.T) {
	srv := newRepo(t).model("keeper", `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]`, keeperModel).
		model("big", identityConfig, `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.last = None

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            prev, self.last = self.last, x
            # the kept array itself: an output that is a view of an earlier
            # request's input, read where it lies, in the answer that frees it
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x if prev is None else prev)]))
        return out
`).Serve(triton.WithBackend(python.Name, python.New(python.WithSharedMemory(1<<20, 1<<20, 1<<20))))
	ctx := context.Background()
	for _, keep := range []string{"array", "slice", "tensor", "request", "nothing"} {
		want := []float32{0, 0, 0, 0}
		for i := range 4 {
			x := []float32{float32(10 * i), float32(10*i + 1), float32(10*i + 2), float32(10*i + 3)}
			req := &triton.InferRequest{Model: "keeper", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{4}, x))},
				Parameters: map[string]any{"KEEP": keep}}
			resp, err := srv.Infer(ctx, req)
			if err != nil {
				t.Fatalf("KEEP %s, request %d: %v", keep, i, err)
			}
			if got := floats(t, resp, "OUT"); !slices.Equal(got, want) {
				t.Errorf("KEEP %s, request %d: the kept input reads %v, want %v", keep, i, got, want)
			}
			want = slices.Clone(x)
			if keep == "slice" {
				want[0] = 0
			}
		}
		// the last request's kept input goes when the next KEEP replaces it
		if _, err := srv.Infer(ctx, &triton.InferRequest{Model: "keeper", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{4}, []float32{0, 0, 0, 0}))},
			Parameters: map[string]any{"KEEP": "nothing"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		data := pattern(300 << 10)
		data[0] = byte(i)
		resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "big", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{300 << 10}, data))}})
		if err != nil {
			t.Fatalf("big, request %d: %v", i, err)
		}
		out, _ := resp.Output("OUT")
		if want := max(i-1, 0); len(out.Data) != len(data) || out.Data[0] != byte(want) || !bytes.Equal(out.Data[1:], data[1:]) {
			t.Errorf("big, request %d: the kept input (%d bytes) starts %v, want %d then %v", i, len(out.Data), out.Data[:min(8, len(out.Data))], want, data[1:8])
		}
	}
}
