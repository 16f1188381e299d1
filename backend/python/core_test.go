package python_test

import (
	"context"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

const repeatConfig = `backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
`

// repeatModel sends one response per element of IN from a thread that
// outlives execute, then the final flag alone.
const repeatModel = `
import threading
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()
            sender = request.get_response_sender()
            t = threading.Thread(target=self.respond, args=(sender, values))
            t.start()
            self.threads.append(t)
        return None

    def respond(self, sender, values):
        for i, v in enumerate(values):
            sender.send(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", np.array([v], dtype=np.int32)),
                pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for t in self.threads:
            t.join()
`

// TestDecoupledRepeat streams one response per element from a thread.
func TestDecoupledRepeat(t *testing.T) {
	srv := newRepo(t).model("repeat", repeatConfig, repeatModel).Serve()
	in := must(tensor.From("IN", tensor.Shape{5}, []int32{4, 8, 15, 16, 23}))
	var got []int32
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "repeat", Inputs: []tensor.Tensor{in}}) {
		if err != nil {
			t.Fatal(err)
		}
		if out, ok := resp.Output("OUT"); ok {
			v, _ := tensor.View[int32](out)
			got = append(got, v...)
		}
	}
	if want := []int32{4, 8, 15, 16, 23}; !equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

const blsConfig = `backend: "python"
max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] } ]
`

// blsModel calls add_sub with A twice, through exec and async_exec.
const blsModel = `
import asyncio
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy().reshape(1, 4)
            req = pb_utils.InferenceRequest(model_name="add_sub", requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", a), pb_utils.Tensor("INPUT1", a)])
            r1 = req.exec()
            if r1.has_error():
                raise pb_utils.TritonModelException(r1.error().message())
            r2 = await req.async_exec()
            s = pb_utils.get_output_tensor_by_name(r1, "OUTPUT0").as_numpy() + pb_utils.get_output_tensor_by_name(r2, "OUTPUT0").as_numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", s.reshape(4))]))
        return responses
`

// TestBLS calls a Python model from a Python model, sync and async.
func TestBLS(t *testing.T) {
	srv := newRepo(t).copy("add_sub").model("bls", blsConfig, blsModel).Serve()
	resp, err := infer(t, srv, "bls", must(tensor.From("A", tensor.Shape{4}, []float32{1, 2, 3, 4})))
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "SUM"); !equal(got, []float32{4, 8, 12, 16}) {
		t.Fatalf("SUM %v", got)
	}
}

// TestExecuteRaises fails the batch with the exception text; the model
// stays loaded.
func TestExecuteRaises(t *testing.T) {
	srv := newRepo(t).model("bad", blsConfig, `
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        raise ValueError("no good")
`).Serve()
	_, err := infer(t, srv, "bad", must(tensor.From("A", tensor.Shape{4}, []float32{1, 2, 3, 4})))
	if err == nil || !strings.Contains(err.Error(), "Failed to process the request(s) for model 'bad_0', message: ValueError: no good") {
		t.Fatalf("error %v", err)
	}
	if !srv.ModelReady(context.Background(), "bad", 0) {
		t.Fatal("model not ready after a failed execute")
	}
}
