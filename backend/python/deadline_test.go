package python_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// blsCaller calls "callee" (INPUT0 → OUTPUT0) with its IN from execute,
// passing the config parameter "timeout" (µs) as the BLS request's
// timeout, and answers its OUTPUT0 as OUT.
const blsCaller = `
import json
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.timeout = int(json.loads(args["model_config"])["parameters"]["timeout"]["string_value"])

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            resp = pb_utils.InferenceRequest(model_name="callee", requested_output_names=["OUTPUT0"],
                inputs=[pb_utils.Tensor("INPUT0", x)], timeout=self.timeout).exec()
            if resp.has_error():
                raise pb_utils.TritonModelException(resp.error().message())
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy())]))
        return out
`

// blsCallerConfig is the config of blsCaller with the BLS timeout µs.
func blsCallerConfig(µs string) string {
	return `backend: "python"
max_batch_size: 1
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "timeout" value { string_value: "` + µs + `" } }
`
}

// calleeConfig is a model of the Go gate backend whose queue policy lets a
// request shorten its timeout (an hour by default) and rejects it when that
// passes.
const calleeConfig = `backend: "gate"
max_batch_size: 1
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 3600000000 allow_timeout_override: true } }
`

// withCallee adds "callee" (calleeConfig) to r.
func withCallee(r *repo) *repo {
	r.write("callee/config.pbtxt", calleeConfig)
	r.write("callee/1/model", "")
	return r
}

// held waits for the gate's next batch.
func held(t *testing.T, g *testmodels.Gate) *testmodels.Held {
	t.Helper()
	select {
	case h := <-g.Held:
		return h
	case <-time.After(30 * time.Second):
		t.Fatal("the called model was never given the BLS request")
		return nil
	}
}

// callerRequest is a request for a blsCaller model.
func callerRequest(model string, x int32) *triton.InferRequest {
	return &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1, 1}, []int32{x}))}}
}

// TestBLSInheritsDeadline: a BLS request made in execute runs under the
// calling request's deadline, with or without a timeout argument (which is
// its queue-policy timeout, not its deadline), and ends when the calling
// request is cancelled; the calling request, whose model raises the BLS
// request's error then, fails as cancelled, not as failed by the backend.
func TestBLSInheritsDeadline(t *testing.T) {
	g := testmodels.NewGate()
	srv := withCallee(newRepo(t).model("caller", blsCallerConfig("0"), blsCaller).
		model("caller_timeout", blsCallerConfig("60000000"), blsCaller)).
		Serve(triton.WithBackend("gate", g.Backend()))

	for _, model := range []string{"caller", "caller_timeout"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		type answer struct {
			resp *triton.InferResponse
			err  error
		}
		res := make(chan answer, 1)
		go func() {
			resp, err := srv.Infer(ctx, callerRequest(model, 9))
			res <- answer{resp, err}
		}()
		h := held(t, g)
		want, _ := ctx.Deadline()
		if got, ok := h.Deadline(); !ok || !got.Equal(want) {
			t.Errorf("%s: the BLS request's ctx has deadline %v (%v), want the calling request's, %v", model, got, ok, want)
		}
		h.Release()
		a := <-res
		cancel()
		if a.err != nil {
			t.Fatalf("%s: %v", model, a.err)
		}
		if out := must(tensor.View[int32](must2(a.resp.Output("OUT")))); !slices.Equal(out, []int32{9}) {
			t.Errorf("%s: OUT = %v, want [9]", model, out)
		}
	}

	// Cancelled while the BLS request executes.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := srv.Infer(ctx, callerRequest("caller", 9))
		errc <- err
	}()
	h := held(t, g)
	cancel()
	if err := h.Result(); err != context.Canceled {
		t.Errorf("the BLS request's ctx ended with %v, want context.Canceled", err)
	}
	// The model raises the BLS request's error; the calling request had
	// been cancelled, and its failure says so.
	if err := <-errc; triton.CodeOf(err) != triton.Cancelled || !strings.Contains(err.Error(), "Model callee - Error when running inference: context canceled") {
		t.Errorf("the cancelled request: %v (%v), want Cancelled with the model's error", err, triton.CodeOf(err))
	}
}

// must2 is must for a (value, ok) pair.
func must2[T any](v T, ok bool) T {
	if !ok {
		panic("missing")
	}
	return v
}

// TestBLSTimeoutWhileBatchRuns: a BLS request's timeout argument is its
// queue-policy timeout: it is rejected when that passes while it waits
// behind a batch that still runs, though the calling request's deadline is
// an hour away.
func TestBLSTimeoutWhileBatchRuns(t *testing.T) {
	g := testmodels.NewGate()
	srv := withCallee(newRepo(t).model("caller_timeout", blsCallerConfig("50000"), blsCaller)).
		Serve(triton.WithBackend("gate", g.Backend()))
	direct := make(chan error, 1)
	go func() {
		_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "callee", Inputs: []tensor.Tensor{must(tensor.From("INPUT0", tensor.Shape{1, 1}, []int32{1}))}})
		direct <- err
	}()
	h := held(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := srv.Infer(ctx, callerRequest("caller_timeout", 9))
	if err == nil || !strings.Contains(err.Error(), "Request timeout expired") {
		t.Fatalf("error %v, want the BLS request's queue timeout", err)
	}
	select {
	case <-h.Returned():
		t.Fatal("the batch ahead ended")
	default:
	}
	h.Release()
	if err := <-direct; err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-g.Held:
		t.Errorf("the called model ran the timed-out BLS request (%q)", h.IDs)
	default:
	}
}

// deadlineWatcher runs until its request is cancelled (is_cancelled) when
// IN is 1, 10 s at most (less than the stub timeout, after which a stub
// still executing is killed), then answers OUT = [1 if it saw the
// cancellation else 0, pid]; otherwise at once with [0, pid].
const deadlineWatcher = `
import os, time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            saw = 0
            if pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0] == 1:
                end = time.monotonic() + 10
                while not r.is_cancelled() and time.monotonic() < end:
                    time.sleep(0.002)
                saw = 1 if r.is_cancelled() else 0
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([saw, os.getpid()], np.int64))]))
        return out
`

// TestDeadlinePassesWhileStubExecutes: a request whose deadline passes
// while the stub executes it is told so (is_cancelled turns true), and the
// stub, which then returns, is not killed as hung: it serves the next
// request. The model always answers once it has run, so an error means
// that the deadline passed before the stub started (a busy machine); the
// test then tries again with a longer one.
func TestDeadlinePassesWhileStubExecutes(t *testing.T) {
	srv := newRepo(t).model("watcher", `backend: "python"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT64 dims: [ 2 ] } ]
`, deadlineWatcher).Serve()
	run := func(ctx context.Context, x int32) ([]int64, error) {
		resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "watcher", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1}, []int32{x}))}})
		if err != nil {
			return nil, err
		}
		return slices.Clone(must(tensor.View[int64](must2(resp.Output("OUT"))))), nil
	}
	before, err := run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for d := 100 * time.Millisecond; ; d *= 2 {
		if d > 30*time.Second {
			t.Fatal("the stub never started a request before its deadline")
		}
		ctx, cancel := context.WithTimeout(context.Background(), d)
		got, err := run(ctx, 1)
		cancel()
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("deadline %v: %v, want the model's answer or the deadline's error", d, err)
			}
			t.Logf("deadline %v passed before the stub ran the request; trying a longer one", d)
			continue
		}
		if got[0] != 1 {
			t.Fatalf("the model never saw its request cancelled (is_cancelled) after the deadline %v", d)
		}
		break
	}
	after, err := run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if after[1] != before[1] {
		t.Errorf("the stub was replaced (pid %d, then %d); it had returned when told", before[1], after[1])
	}
}
