package python_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// unansweredModel answers each request as its MODE says: 0 with a
// response; 1 with None and nothing kept (a forgotten response); 2 with
// None after taking its response sender, dropped unused; 3 with None,
// the request kept and never answered; 4: execute returns None for the
// whole batch (a forgotten return).
const unansweredModel = `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = []

    def execute(self, requests):
        out = []
        for r in requests:
            mode = int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0])
            if mode == 0:
                out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([1], np.float32))]))
            elif mode == 2:
                r.get_response_sender()
                out.append(None)
            elif mode == 3:
                self.kept.append(r)
                out.append(None)
            elif mode == 4:
                return None
            else:
                out.append(None)
        return out
`

// TestUnansweredRequests: a request that execute leaves unanswered
// (None in its list, or no list) fails with an error saying so as soon as
// nothing in the stub can answer it any more, and one the model keeps
// fails at its deadline; the instance serves the next request either way
// (before, each of them held the instance for ever).
func TestUnansweredRequests(t *testing.T) {
	srv := newRepo(t).model("unanswered", `backend: "python"
input [ { name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`, unansweredModel).Serve()
	run := func(ctx context.Context, mode int32) error {
		_, err := srv.Infer(ctx, &triton.InferRequest{Model: "unanswered", Inputs: []tensor.Tensor{must(tensor.From("MODE", tensor.Shape{1}, []int32{mode}))}})
		return err
	}
	for _, mode := range []int32{1, 2, 4} {
		err := run(context.Background(), mode)
		if err == nil || !strings.Contains(err.Error(), "model 'unanswered' returned from execute without a response for a request") ||
			!strings.Contains(err.Error(), "without sending the final response") {
			t.Errorf("MODE %d: error %v, want the dropped request's", mode, err)
		} else if code := triton.CodeOf(err); code != triton.Internal {
			t.Errorf("MODE %d: code %v, want Internal", mode, code)
		}
		if err := run(context.Background(), 0); err != nil {
			t.Fatalf("after MODE %d: %v", mode, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := run(ctx, 3)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "had not sent the response of a request") {
		t.Errorf("MODE 3: error %v, want the deadline's, naming the unsent response", err)
	}
	if err := run(context.Background(), 0); err != nil {
		t.Fatalf("after MODE 3: %v", err)
	}
}

// decoupledConfig is a decoupled Python model's, FP32 IN [1] → OUT [1].
const decoupledConfig = `backend: "python"
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`

// stream sends IN = x to a decoupled model and returns the OUT values of
// its responses and the error that ended the stream (nil: none).
func stream(t *testing.T, srv *triton.Server, model string, x float32) (got []float32, last error) {
	t.Helper()
	in := must(tensor.From("IN", tensor.Shape{1}, []float32{x}))
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}}) {
		if err != nil {
			last = err
			continue
		}
		if len(resp.Outputs) > 0 {
			got = append(got, floats(t, resp, "OUT")...)
		}
	}
	return got, last
}

// TestDecoupledDroppedSender: a decoupled model that sends one response
// and drops its sender without the final flag ends the stream with the
// dropped request's error after that response (before, the stream never
// ended).
func TestDecoupledDroppedSender(t *testing.T) {
	srv := newRepo(t).model("dropper", decoupledConfig, `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            r.get_response_sender().send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)]))
        return None
`).Serve()
	got, last := stream(t, srv, "dropper", 7)
	if len(got) != 1 || got[0] != 7 {
		t.Errorf("responses %v, want [7]", got)
	}
	if last == nil || !strings.Contains(last.Error(), "model 'dropper' returned from execute without a response for a request") {
		t.Errorf("stream ended with %v, want the dropped request's error", last)
	}
}

// TestDecoupledSendsThenRaises: the responses a decoupled model sent
// before its execute raised reach the client first, in order, then the
// error ends the stream (the sends are handled before the failed answer).
func TestDecoupledSendsThenRaises(t *testing.T) {
	srv := newRepo(t).model("sends_then_raises", decoupledConfig, `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            s = r.get_response_sender()
            for i in range(3):
                s.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i], np.float32))]))
        raise ValueError("after three")
`).Serve()
	for range 20 {
		got, last := stream(t, srv, "sends_then_raises", 0)
		if !slices.Equal(got, []float32{0, 1, 2}) || last == nil || !strings.Contains(last.Error(), "after three") {
			t.Fatalf("responses %v, then %v; want [0 1 2], then the error", got, last)
		}
	}
}

// TestLateResponsesGiveTheirMemoryBack: a response a model sends after its
// request has ended (here, past the client's deadline) is not delivered,
// and its block of the stub's shared memory goes back: 8 MiB late
// responses, 6 of them, through a stub whose region may grow to 20 MiB.
func TestLateResponsesGiveTheirMemoryBack(t *testing.T) {
	srv := newRepo(t).model("late", `backend: "python"
input [ { name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]`, `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = []

    def execute(self, requests):
        out = []
        for r in requests:
            if int(pb_utils.get_input_tensor_by_name(r, "MODE").as_numpy()[0]) == 0:
                self.kept.append(r)  # answered late, by the next request
                out.append(None)
                continue
            for k in self.kept:
                k.get_response_sender().send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.zeros(8 << 20, np.uint8))]),
                                             flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            self.kept = []
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.ones(1, np.uint8))]))
        return out
`).Serve(triton.WithBackend(python.Name, python.New(python.WithSharedMemory(1<<20, 1<<20, 20<<20))))
	run := func(ctx context.Context, mode int32) error {
		_, err := srv.Infer(ctx, &triton.InferRequest{Model: "late", Inputs: []tensor.Tensor{must(tensor.From("MODE", tensor.Shape{1}, []int32{mode}))}})
		return err
	}
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := run(ctx, 0)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: kept request: %v, want its deadline", i, err)
		}
		if err := run(context.Background(), 1); err != nil {
			t.Fatalf("round %d: the request that answers the late one: %v", i, err)
		}
	}
}

// TestKeptRequestOutlivesItsDeadline: a request the model keeps past its
// client's deadline (failed then by the server) still reads its own
// inputs, and sees itself cancelled, until the model lets it go: its
// shared memory is not handed to the next batch while the stub holds it
// (before, the next request's inputs were written over it).
func TestKeptRequestOutlivesItsDeadline(t *testing.T) {
	srv := newRepo(t).model("keeper", `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]`, `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.kept = None

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            if x[0] == 1:  # kept, answered later
                self.kept = r
                out.append(None)
                continue
            if self.kept is None:
                y = x
            else:  # the kept request's inputs as it reads them now, and whether it is cancelled
                k = pb_utils.get_input_tensor_by_name(self.kept, "IN").as_numpy().copy()
                k[0] = 1 if self.kept.is_cancelled() else 0
                y = k
                if x[0] == 3:  # let it go: its final response, which nobody takes any more
                    self.kept.get_response_sender().send(
                        pb_utils.InferenceResponse([pb_utils.Tensor("OUT", k)]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    self.kept = None
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", y)]))
        return out
`).Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := inferIn(ctx, t, srv, "keeper", 1, 11, 12, 13); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("kept request: %v, want its deadline's error", err)
	}
	for _, next := range [][]float32{{2, 21, 22, 23}, {3, 31, 32, 33}} {
		got, err := inferIn(context.Background(), t, srv, "keeper", next...)
		if err != nil {
			t.Fatal(err)
		}
		if want := []float32{1, 11, 12, 13}; !slices.Equal(got, want) {
			t.Errorf("request %v: the kept request read %v, want %v (cancelled, its own inputs)", next, got, want)
		}
	}
	got, err := inferIn(context.Background(), t, srv, "keeper", 4, 41, 42, 43)
	if err != nil || !slices.Equal(got, []float32{4, 41, 42, 43}) {
		t.Errorf("after the kept request was let go: %v, %v", got, err)
	}
}

// TestKeptRequestsFillTheRegion: requests a model keeps after their
// deadline keep their inputs' shared memory, so a model that never lets
// them go fills its region, and the request that no longer fits says why.
func TestKeptRequestsFillTheRegion(t *testing.T) {
	srv := newRepo(t).model("hoarder", `backend: "python"
input [ { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_UINT8 dims: [ -1 ] } ]`, `
class TritonPythonModel:
    def initialize(self, args):
        self.kept = []

    def execute(self, requests):
        self.kept.extend(requests)
        return [None] * len(requests)
`).Serve(triton.WithBackend(python.Name, python.New(python.WithSharedMemory(1<<20, 1<<20, 1<<20))))
	in := must(tensor.From("IN", tensor.Shape{300 << 10}, make([]uint8, 300<<10)))
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := srv.Infer(ctx, &triton.InferRequest{Model: "hoarder", Inputs: []tensor.Tensor{in}})
		cancel()
		if i < 3 {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("request %d: %v, want its deadline", i, err)
			}
			continue
		}
		if err == nil || triton.CodeOf(err) != triton.Unavailable ||
			!strings.Contains(err.Error(), "the model still holds inputs of 3 earlier batches (requests, tensors or arrays it kept)") {
			t.Errorf("request %d: %v (code %v), want Unavailable naming the 3 held batches", i, err, triton.CodeOf(err))
		}
	}
}

// TestKeptSenderSeesItsCancellation: a response sender kept without its
// request past the request's deadline reads it as cancelled, even after
// later batches ran (its batch's block, where is_cancelled reads, is not
// handed on while the sender lives).
func TestKeptSenderSeesItsCancellation(t *testing.T) {
	srv := newRepo(t).model("senderkeeper", `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`, `
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sender = None

    def execute(self, requests):
        out = []
        for r in requests:
            if pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0] == 1:
                self.sender = r.get_response_sender()  # the request itself is not kept
                out.append(None)
                continue
            cancelled = self.sender is not None and self.sender.is_cancelled()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([cancelled], np.float32))]))
        return out
`).Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := inferIn(ctx, t, srv, "senderkeeper", 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the request whose sender is kept: %v, want its deadline's error", err)
	}
	for i := range 3 {
		got, err := inferIn(context.Background(), t, srv, "senderkeeper", 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []float32{1}) {
			t.Errorf("request %d: the kept sender's is_cancelled() is %v, want true", i, got[0] == 1)
		}
	}
}
