package python_test

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// squareModel is decoupled: for IN = [n] it sends n responses, each
// OUT = [n] as int32, then the final flag.
const squareModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            sender = r.get_response_sender()
            for _ in range(n):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([n], dtype=np.int32))]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
`

const squareConfig = `backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`

// summingModel sums the responses of a decoupled BLS request into
// np.array([0]), an int64 array, for an output the config declares
// TYPE_INT32, as python_backend's examples/bls_decoupled models do.
const summingModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            req = pb_utils.InferenceRequest(model_name="square", requested_output_names=["OUT"],
                inputs=[pb_utils.get_input_tensor_by_name(r, "IN")])
            total = np.array([0])
            for resp in req.exec(decoupled=True):
                if resp.has_error():
                    raise pb_utils.TritonModelException(resp.error().message())
                if len(resp.output_tensors()) > 0:
                    total += pb_utils.get_output_tensor_by_name(resp, "OUT").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", total)]))
        return out
`

const summingConfig = `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } ]
`

// TestOutputDataTypeAsProduced: an output a Python model produces with
// another datatype than its config's reaches the client as produced, as
// Triton's Python backend passes it on, and the mismatch is logged once
// per output at warning level.
func TestOutputDataTypeAsProduced(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	srv := newRepo(t).model("square", squareConfig, squareModel).model("summing", summingConfig, summingModel).
		Serve(triton.WithLogger(zap.New(core)))
	for _, n := range []int32{4, 2, 0, 1} {
		resp, err := infer(t, srv, "summing", must(tensor.From("IN", tensor.Shape{1}, []int32{n})))
		if err != nil {
			t.Fatalf("IN %d: %v", n, err)
		}
		sum, ok := resp.Output("SUM")
		if !ok || sum.DataType != tensor.Int64 {
			t.Fatalf("IN %d: SUM %v, want an INT64 output", n, sum)
		}
		got, err := tensor.View[int64](sum)
		if err != nil || len(got) != 1 || got[0] != int64(n)*int64(n) {
			t.Errorf("IN %d: SUM %v (%v), want [%d]", n, got, err, n*n)
		}
	}
	mismatches := logs.FilterFieldKey("produced").All()
	if len(mismatches) != 1 {
		t.Fatalf("logged %d datatype mismatches, want 1: %v", len(mismatches), logs.All())
	}
	e := mismatches[0]
	fields := e.ContextMap()
	if e.Level != zapcore.WarnLevel || fields["output"] != "SUM" || fields["produced"] != "INT64" || fields["declared"] != "INT32" {
		t.Errorf("logged %v %q %v, want a warning about SUM, INT64 for INT32", e.Level, e.Message, fields)
	}

	// The streaming path lets it through too.
	var streamed int
	for r, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "summing", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1}, []int32{3}))}}) {
		if err != nil {
			t.Fatal(err)
		}
		if r == nil {
			continue
		}
		if sum, ok := r.Output("SUM"); !ok || sum.DataType != tensor.Int64 {
			t.Errorf("streamed SUM %v, want INT64", sum)
		}
		streamed++
	}
	if streamed != 1 {
		t.Errorf("%d streamed responses, want 1", streamed)
	}
	if n := len(logs.FilterFieldKey("produced").All()); n != 1 {
		t.Errorf("%d datatype mismatches logged in all, want 1", n)
	}
}
