package python_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
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

// TestDecoupledDroppedSender: a decoupled model that sends one response
// and drops its sender without the final flag ends the stream with the
// dropped request's error after that response (before, the stream never
// ended).
func TestDecoupledDroppedSender(t *testing.T) {
	srv := newRepo(t).model("dropper", `backend: "python"
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`, `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            r.get_response_sender().send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)]))
        return None
`).Serve()
	in := must(tensor.From("IN", tensor.Shape{1}, []float32{7}))
	var got []float32
	var last error
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "dropper", Inputs: []tensor.Tensor{in}}) {
		if err != nil {
			last = err
			continue
		}
		if len(resp.Outputs) > 0 {
			got = append(got, floats(t, resp, "OUT")...)
		}
	}
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
	srv := newRepo(t).model("sends_then_raises", `backend: "python"
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`, `
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
		in := must(tensor.From("IN", tensor.Shape{1}, []float32{0}))
		var got []float32
		var last error
		for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "sends_then_raises", Inputs: []tensor.Tensor{in}}) {
			if err != nil {
				last = err
				continue
			}
			got = append(got, floats(t, resp, "OUT")...)
		}
		if !slices.Equal(got, []float32{0, 1, 2}) || last == nil || !strings.Contains(last.Error(), "after three") {
			t.Fatalf("responses %v, then %v; want [0 1 2], then the error", got, last)
		}
	}
}
