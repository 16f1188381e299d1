package python_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

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

const countdownConfig = `backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "IDX" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "OTHERS" data_type: TYPE_INT32 dims: [ 1 ] } ]
`

// countdownModel sends N responses per request from a thread of its own:
// IDX counts them, OTHERS is how many sends of the other requests had
// returned when this one was sent.
const countdownModel = `
import threading
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.sent, self.threads = {}, []

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            t = threading.Thread(target=self.respond, args=(request.request_id(), request.get_response_sender(), n))
            t.start()
            self.threads.append(t)
        return None

    def respond(self, rid, sender, n):
        for i in range(n):
            others = sum(v for k, v in self.sent.items() if k != rid)
            sender.send(pb_utils.InferenceResponse([
                pb_utils.Tensor("IDX", np.array([i], dtype=np.int32)),
                pb_utils.Tensor("OTHERS", np.array([others], dtype=np.int32))]))
            self.sent[rid] = i + 1
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for t in self.threads:
            t.join()
`

// TestDecoupledSlowConsumer: the consumer of request A takes one of its 100
// responses and stops reading; request B, to the same stub, still streams
// all its responses, and A's sends were held back in A's own sender (the
// server keeps a bounded number of A's responses, StreamBuffer in the
// stream and the credit window in its outbox); once A's consumer reads on,
// it gets all 100, in order.
func TestDecoupledSlowConsumer(t *testing.T) {
	srv := newRepo(t).model("countdown", countdownConfig, countdownModel).Serve()
	request := func(id string, n int32) *triton.InferRequest {
		return &triton.InferRequest{Model: "countdown", ID: id, Inputs: []tensor.Tensor{must(tensor.From("N", tensor.Shape{1}, []int32{n}))}}
	}
	index := func(resp *triton.InferResponse, name string) int32 {
		t.Helper()
		out, ok := resp.Output(name)
		if !ok {
			t.Fatalf("no %s in a response", name)
		}
		return must(tensor.View[int32](out))[0]
	}
	const aCount, bCount = 100, 40
	nextA, stopA := iter.Pull2(srv.InferStream(context.Background(), request("A", aCount)))
	defer stopA()
	if resp, err, ok := nextA(); !ok || err != nil || index(resp, "IDX") != 0 {
		t.Fatalf("A's first response: %v %v", err, ok)
	}

	// A's consumer now waits; B must not wait behind it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got, others int32
	for resp, err := range srv.InferStream(ctx, request("B", bCount)) {
		if err != nil {
			t.Fatalf("B after %d responses, while A's consumer waits: %v", got, err)
		}
		if i := index(resp, "IDX"); i != got {
			t.Fatalf("B's response %d has IDX %d", got, i)
		}
		others = index(resp, "OTHERS")
		got++
	}
	if got != bCount {
		t.Fatalf("B got %d responses, want %d", got, bCount)
	}
	// When B's last response was sent, A's sender had been let send what
	// the stream buffers, what the outbox holds and the response A's
	// consumer took, not all 100.
	if limit := int32(triton.StreamBuffer + 2*16 + 1); others > limit {
		t.Errorf("A's sends returned while its consumer waited: %d, want at most %d", others, limit)
	}

	for want := int32(1); ; want++ {
		resp, err, ok := nextA()
		if !ok {
			if want != aCount {
				t.Fatalf("A ended after %d responses, want %d", want, aCount)
			}
			break
		}
		if err != nil {
			t.Fatalf("A's response %d: %v", want, err)
		}
		if i := index(resp, "IDX"); i != want {
			t.Fatalf("A's response %d has IDX %d", want, i)
		}
	}
}
