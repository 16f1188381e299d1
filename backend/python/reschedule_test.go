package python_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
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
