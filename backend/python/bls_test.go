package python_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/internal/testmodels"
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
	srv := r.Serve(triton.WithBackend("double", testmodels.Double))
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

const slowReaderConfig = `backend: "python"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "IDX" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "BUFFERED" data_type: TYPE_INT32 dims: [ 1 ] } ]
`

// slowReaderModel streams N responses of countdown through
// exec(decoupled=True) and takes the first; before it reads on it calls
// gate, which answers once the server waits for it to read, and counts
// the responses that reached its stub meanwhile (BUFFERED: its iterator's
// queue); then it reads to the end.
const slowReaderModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

def value(response, name):
    if response.has_error():
        raise pb_utils.TritonModelException(response.error().message())
    t = pb_utils.get_output_tensor_by_name(response, name)
    return None if t is None else int(t.as_numpy()[0])

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.InferenceRequest(model_name="countdown", requested_output_names=["IDX", "OTHERS"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "N")]).exec(decoupled=True)
            idx = [value(next(a), "IDX")]
            gate = pb_utils.InferenceRequest(model_name="gate", requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", np.array([1], dtype=np.int32))]).exec()
            if gate.has_error():
                raise pb_utils.TritonModelException(gate.error().message())
            buffered = len(a._call.items)  # the stub's queue of the stream's replies
            idx += [i for i in (value(r, "IDX") for r in a) if i is not None]
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("IDX", np.array(idx, dtype=np.int32)),
                pb_utils.Tensor("BUFFERED", np.array([buffered], dtype=np.int32))]))
        return responses
`

// TestBLSDecoupledSlowReader: a model that iterates a decoupled BLS
// stream slowly holds the called model back instead of having the server
// pile the stream's responses up in its stub: once the model has taken one
// of 200, the server waits for it (gate answers then) with at most a
// window of responses sent to the stub; the model still gets all 200, in
// order.
func TestBLSDecoupledSlowReader(t *testing.T) {
	waiting := make(chan struct{})
	var once sync.Once
	python.SetBLSWaitHook(func() { once.Do(func() { close(waiting) }) })
	t.Cleanup(func() { python.SetBLSWaitHook(nil) }) // after the server's Close, registered later
	gate := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		select {
		case <-waiting:
		case <-ctx.Done():
			return fmt.Errorf("the server never waited for the reader: %w", ctx.Err())
		}
		in, err := b.Input("IN")
		if err != nil {
			return err
		}
		return b.SetOutput(tensor.Tensor{Name: "OUT", DataType: in.DataType, Shape: in.Shape, Data: in.Data}) // the input itself
	})
	r := newRepo(t).model("countdown", countdownConfig, countdownModel).model("reader", slowReaderConfig, slowReaderModel)
	r.write("gate/config.pbtxt", `backend: "gate"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`)
	r.write("gate/1/.keep", "")
	srv := r.Serve(triton.WithBackend("gate", gate))
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "reader", Inputs: []tensor.Tensor{must(tensor.From("N", tensor.Shape{1}, []int32{n}))}})
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := resp.Output("IDX")
	got := must(tensor.View[int32](idx))
	if len(got) != n {
		t.Fatalf("the reader got %d of the stream's responses, want %d", len(got), n)
	}
	for i, v := range got {
		if v != int32(i) {
			t.Fatalf("response %d has IDX %d", i, v)
		}
	}
	buffered, _ := resp.Output("BUFFERED")
	if b := must(tensor.View[int32](buffered))[0]; b > 16 {
		t.Errorf("%d responses reached the reader's stub while it had taken one; want at most the window, 16", b)
	}
}

// TestBLSDecoupledAbandoned: a model that breaks out of a decoupled BLS
// stream after one response, without cancelling it, has the request
// cancelled once its iterator is dropped, so that the called model is not
// left waiting for room to send the rest.
func TestBLSDecoupledAbandoned(t *testing.T) {
	cancelled := make(chan struct{})
	endless := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		for i := int32(0); ; i++ {
			if err := send(backend.Response{Outputs: []tensor.Tensor{must(tensor.From("IDX", tensor.Shape{1}, []int32{i}))}}); err != nil {
				close(cancelled)
				return err
			}
		}
	})
	r := newRepo(t).model("quitter", `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "FIRST" data_type: TYPE_INT32 dims: [ 1 ] } ]
`, `
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            stream = pb_utils.InferenceRequest(model_name="endless", requested_output_names=["IDX"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "IN")]).exec(decoupled=True)
            for response in stream:
                first = pb_utils.get_output_tensor_by_name(response, "IDX").as_numpy()
                break
            del stream
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("FIRST", first)]))
        return responses
`)
	r.write("endless/config.pbtxt", `backend: "endless"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "IDX" data_type: TYPE_INT32 dims: [ 1 ] } ]
`)
	r.write("endless/1/.keep", "")
	srv := r.Serve(triton.WithBackend("endless", endless))
	resp, err := infer(t, srv, "quitter", must(tensor.From("IN", tensor.Shape{1}, []int32{0})))
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := resp.Output("FIRST"); must(tensor.View[int32](first))[0] != 0 {
		t.Errorf("FIRST %v, want 0", must(tensor.View[int32](first)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the called model still sends: the abandoned BLS request was not cancelled")
	}
}

// streamReaderModel reads every response of a countdown stream through
// exec(decoupled=True) and returns their IDX in the order it got them.
const streamReaderModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            stream = pb_utils.InferenceRequest(model_name="countdown", requested_output_names=["IDX", "OTHERS"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "N")]).exec(decoupled=True)
            idx = []
            for r in stream:
                if r.has_error():
                    raise pb_utils.TritonModelException(r.error().message())
                t = pb_utils.get_output_tensor_by_name(r, "IDX")
                if t is not None:
                    idx.append(int(t.as_numpy()[0]))
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("IDX", np.array(idx, dtype=np.int32)),
                pb_utils.Tensor("BUFFERED", np.array([0], dtype=np.int32))]))
        return responses
`

// TestBLSDecoupledStreamIntact: 10 streams of 200 BLS responses each,
// read as fast as they come, arrive whole and in order. The server reuses
// a response's shared-memory block as soon as the stub has released it;
// the stub once released a block with two writes (zeros, then the value
// zero), and a block the server had reused in between was taken for free
// again and overwritten: one stream in a hundred or so had a response
// with the next one's data.
func TestBLSDecoupledStreamIntact(t *testing.T) {
	srv := newRepo(t).model("countdown", countdownConfig, countdownModel).model("reader", slowReaderConfig, streamReaderModel).Serve()
	const n = 200
	for run := range 10 {
		resp, err := infer(t, srv, "reader", must(tensor.From("N", tensor.Shape{1}, []int32{n})))
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := resp.Output("IDX")
		got := must(tensor.View[int32](idx))
		if len(got) != n {
			t.Fatalf("stream %d: %d responses, want %d", run, len(got), n)
		}
		for i, v := range got {
			if v != int32(i) {
				t.Fatalf("stream %d: response %d has IDX %d: %v", run, i, v, got)
			}
		}
	}
}
