package python_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// iterativeConfig is a Python model of an iterative sequence: each
// request, without a correlation ID, drives a sequence of its own.
const iterativeConfig = `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching { iterative_sequence: true }
%s`

// stepsModel reschedules each request until it has run IN times, keeping
// its count by correlation ID, and answers how many executions it took.
const stepsModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.steps = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            cid = request.correlation_id()
            n = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.steps[cid] = 0
            self.steps[cid] = self.steps.get(cid, 0) + 1
            if self.steps[cid] < n:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
            else:
                responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([self.steps.pop(cid)], np.int32))]))
        return responses
`

// rescheduleCountdown is the decoupled model of Triton's documentation on
// request rescheduling: IN responses, counting down to 0, one an execution.
const rescheduleCountdown = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.reset_flag = True
        self.remaining_response = 0

    def execute(self, requests):
        for request in requests:
            in_input = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            if self.reset_flag:
                self.remaining_response = in_input[0]
                self.reset_flag = False
            response_sender = request.get_response_sender()
            self.remaining_response -= 1
            out_output = pb_utils.Tensor("OUT", np.array([self.remaining_response], np.int32))
            response = pb_utils.InferenceResponse(output_tensors=[out_output])
            if self.remaining_response <= 0:
                response_sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                self.reset_flag = True
            else:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                response_sender.send(response)
        return None
`

func inInput(n int32) []tensor.Tensor {
	return []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1}, []int32{n}))}
}

func TestReschedule(t *testing.T) {
	r := newRepo(t).model("steps", fmt.Sprintf(iterativeConfig, ""), stepsModel).
		model("countdown", fmt.Sprintf(iterativeConfig, "model_transaction_policy { decoupled: true }"), rescheduleCountdown)
	srv := r.Serve()
	var g errgroup.Group
	for i := range 8 {
		n := int32(1 + i%4)
		g.Go(func() error {
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "steps", Inputs: inInput(n)})
			if err != nil {
				return err
			}
			if out, _ := resp.Output("OUT"); must(tensor.View[int32](out))[0] != n {
				return fmt.Errorf("IN %d: OUT %v, want %d executions", n, must(tensor.View[int32](out)), n)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	for range 2 { // the model's state resets between requests
		var got []int32
		for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "countdown", Inputs: inInput(4)}) {
			if err != nil {
				t.Fatal(err)
			}
			out, _ := resp.Output("OUT")
			got = append(got, must(tensor.View[int32](out))...)
		}
		if fmt.Sprint(got) != "[3 2 1 0]" {
			t.Errorf("countdown stream %v, want [3 2 1 0]", got)
		}
	}
}

func TestRescheduleRefused(t *testing.T) {
	answers := strings.Replace(stepsModel, "responses.append(None)", "responses.append(pb_utils.InferenceResponse([]))", 1)
	r := newRepo(t).model("answers", fmt.Sprintf(iterativeConfig, ""), answers).
		model("plain", `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`, stepsModel)
	srv := r.Serve()
	for model, want := range map[string]string{
		"answers": "Expected a None object in the execute function return list for reschduled request, found type",
		"plain":   "needs sequence_batching { iterative_sequence: true }",
	} {
		_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: inInput(3)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error with %q", model, err, want)
		}
	}
}

// burstModel sends 40 responses an execution, numbered on across its
// executions, and reschedules its request 3 times.
const burstModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.sent = {}

    def execute(self, requests):
        for request in requests:
            cid = request.correlation_id()
            if request.flags() & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.sent[cid] = 0
            sender = request.get_response_sender()
            for _ in range(40):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([self.sent[cid]], np.int32))]))
                self.sent[cid] += 1
            if self.sent[cid] < 160:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
            else:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`

// TestRescheduleSlowConsumer: a decoupled request's responses keep their
// order across its executions while its consumer reads slowly (some wait
// in the server when the next execution starts sending).
func TestRescheduleSlowConsumer(t *testing.T) {
	waited := make(chan struct{})
	var once sync.Once
	python.SetOutboxWaitHook(func() { once.Do(func() { close(waited) }) })
	t.Cleanup(func() { python.SetOutboxWaitHook(nil) }) // after the server closes: cleanups run last first
	srv := newRepo(t).model("burst", fmt.Sprintf(iterativeConfig, "model_transaction_policy { decoupled: true }"), burstModel).Serve()
	var got []int32
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "burst", Inputs: inInput(0)}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			<-waited // read on only once responses wait in the server
		}
		for range 300 {
			runtime.Gosched() // a slow consumer: the model sends faster than it reads
		}
		if out, ok := resp.Output("OUT"); ok {
			got = append(got, must(tensor.View[int32](out))...)
		}
	}
	for i, v := range got {
		if v != int32(i) {
			t.Fatalf("response %d is %d (%v...): out of order", i, v, got[max(0, i-3):min(len(got), i+3)])
		}
	}
	if len(got) != 160 {
		t.Errorf("%d responses, want 160", len(got))
	}
}
