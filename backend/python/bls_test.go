package python_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// callerModel calls the model named by the config parameter "target" with
// A as INPUT0 and INPUT1, as the parameter "mode" says.
const callerModel = `
import json, time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"])["parameters"]
        self.target = params["target"]["string_value"]
        self.mode = params["mode"]["string_value"]

    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "A").as_numpy()
            req = pb_utils.InferenceRequest(model_name=self.target, requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", a.astype(np.int32))], timeout=int(r.timeout()))
            if self.mode == "stream":
                got = []
                for resp in req.exec(decoupled=True):
                    if resp.has_error():
                        raise pb_utils.TritonModelException(resp.error().message())
                    t = pb_utils.get_output_tensor_by_name(resp, "OUT")
                    if t is not None:
                        got.extend(t.as_numpy().tolist())
                result = np.array(got, dtype=np.float32)
            else:
                if self.mode == "late":
                    time.sleep(0.3)  # past the caller's deadline
                resp = req.exec()
                if resp.has_error():
                    out.append(pb_utils.InferenceResponse(error=resp.error()))
                    continue
                result = pb_utils.get_output_tensor_by_name(resp, "OUT").as_numpy().astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", result)]))
        return out
`

func callerConfig(target, mode string) string {
	return `backend: "python"
max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ -1 ] } ]
parameters { key: "target" value { string_value: "` + target + `" } }
parameters { key: "mode" value { string_value: "` + mode + `" } }
`
}

const repeatIOConfig = `backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
`

// TestBLSDecoupled: exec(decoupled=True) streams a decoupled model's
// responses; exec() without it is refused with Triton's text.
func TestBLSDecoupled(t *testing.T) {
	srv := newRepo(t).model("repeat", repeatIOConfig, repeatModel).
		model("stream", callerConfig("repeat", "stream"), callerModel).
		model("once", callerConfig("repeat", "once"), callerModel).Serve()
	a := must(tensor.From("A", tensor.Shape{3}, []float32{7, 8, 9}))
	resp, err := infer(t, srv, "stream", a)
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "SUM"); !equal(got, []float32{7, 8, 9}) {
		t.Fatalf("streamed %v", got)
	}
	_, err = infer(t, srv, "once", a)
	want := "Model repeat - Error when running inference: Model repeat is using the decoupled. The current BLS request call doesn't support models using the decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled models.'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v", err)
	}
}

// TestBLSCycle: a model that calls itself fails at once instead of
// waiting for itself.
func TestBLSCycle(t *testing.T) {
	config := strings.ReplaceAll(callerConfig("self", "once"), `"A"`, `"IN"`)
	config = strings.Replace(config, `name: "IN" data_type: TYPE_FP32`, `name: "IN" data_type: TYPE_INT32`, 1)
	src := strings.ReplaceAll(callerModel, `"A"`, `"IN"`)
	srv := newRepo(t).model("self", strings.Replace(config, `"SUM"`, `"OUT"`, 1), strings.ReplaceAll(src, `"SUM"`, `"OUT"`)).Serve()
	_, err := infer(t, srv, "self", must(tensor.From("IN", tensor.Shape{1}, []int32{1})))
	if err == nil || !strings.Contains(err.Error(), "call cycle: self → self") {
		t.Fatalf("error %v", err)
	}
}

// TestBLSDeadline: the calling request's deadline reaches the BLS request.
func TestBLSDeadline(t *testing.T) {
	slow := `
import time
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.5)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
`
	slowConfig := `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
`
	srv := newRepo(t).model("slow", slowConfig, slow).model("caller", callerConfig("slow", "late"), callerModel).Serve()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := srv.Infer(ctx, &triton.InferRequest{Model: "caller", Inputs: []tensor.Tensor{must(tensor.From("A", tensor.Shape{1}, []float32{1}))}})
	if err == nil || !strings.Contains(err.Error(), "Model slow - Error when running inference") || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("error %v, want the BLS request's deadline", err)
	}
	if n, _ := inferences(t, srv, "slow"); n != 0 {
		t.Errorf("slow ran %d requests past the deadline", n)
	}
}

// TestCancelled: a decoupled model sees its request cancelled
// (is_cancelled) once the client goes away, and ends the stream.
func TestCancelled(t *testing.T) {
	started, seen := make(chan struct{}), make(chan struct{})
	hook := zap.Hooks(func(e zapcore.Entry) error {
		switch e.Message {
		case "waiting":
			close(started)
		case "saw the cancellation":
			close(seen)
		}
		return nil
	})
	core, _ := observer.New(zapcore.InfoLevel)
	srv := newRepo(t).model("waiter", repeatIOConfig, `
import threading, time
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            threading.Thread(target=self.wait, args=(r.get_response_sender(),)).start()
    def wait(self, sender):
        pb_utils.Logger.log_info("waiting")
        while not sender.is_cancelled():
            time.sleep(0.005)
        pb_utils.Logger.log_info("saw the cancellation")
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`).Serve(triton.WithLogger(zap.New(core).WithOptions(hook)))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	in := must(tensor.From("IN", tensor.Shape{1}, []int32{1}))
	for _, err := range srv.InferStream(ctx, &triton.InferRequest{Model: "waiter", Inputs: []tensor.Tensor{in}}) {
		if err == nil {
			t.Fatal("a response before the cancellation")
		}
		break
	}
	<-seen
}

// TestBLSGoAndEnsemble: a Python model calls a Go backend's model and an
// ensemble (of that Go model and a Python one) through exec().
func TestBLSGoAndEnsemble(t *testing.T) {
	double := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		in, err := b.Input("IN")
		if err != nil {
			return err
		}
		v, err := tensor.View[int32](in)
		if err != nil {
			return err
		}
		out := make([]int32, len(v))
		for i, x := range v {
			out[i] = 2 * x
		}
		return b.SetOutput(must(tensor.From("OUT", in.Shape, out)))
	})
	goConfig := `backend: "double"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
`
	plusOne := `
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() + 1)]) for r in requests]
`
	ensembleConfig := `platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
ensemble_scheduling { step [
  { model_name: "double" model_version: -1 input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "D" } },
  { model_name: "plus_one" model_version: -1 input_map { key: "IN" value: "D" } output_map { key: "OUT" value: "OUT" } }
] }
`
	r := newRepo(t).model("plus_one", strings.ReplaceAll(goConfig, `backend: "double"`, `backend: "python"`), plusOne).
		model("to_go", callerConfig("double", "once"), callerModel).model("to_ensemble", callerConfig("chain", "once"), callerModel)
	r.write("double/config.pbtxt", goConfig)
	r.write("double/1/.keep", "")
	r.write("chain/config.pbtxt", ensembleConfig)
	r.write("chain/1/.keep", "")
	srv := r.Serve(triton.WithBackend("double", double))
	a := must(tensor.From("A", tensor.Shape{3}, []float32{1, 2, 3}))
	for model, want := range map[string][]float32{"to_go": {2, 4, 6}, "to_ensemble": {3, 5, 7}} {
		resp, err := infer(t, srv, model, a)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if got := floats(t, resp, "SUM"); !equal(got, want) {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}
