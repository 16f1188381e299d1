package triton_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// scaleConfig is a batching model that multiplies X by a factor.
const scaleConfig = `
backend: "scale"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching { }
`

// pipeConfig is an ensemble with a chain and two parallel branches:
// add_sub(A, B) → SUM, DIFF; scale(SUM) → SUM2; scale(DIFF) → DIFF2.
const pipeConfig = `
platform: "ensemble"
max_batch_size: 8
input [
  { name: "A" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "B" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "SUM2" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "DIFF2" data_type: TYPE_INT32 dims: [ 16 ] }
]
ensemble_scheduling { step [
  { model_name: "simple" model_version: -1
    input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
    output_map { key: "OUTPUT0" value: "SUM" } output_map { key: "OUTPUT1" value: "DIFF" } },
  { model_name: "%s" model_version: 1
    input_map { key: "X" value: "SUM" } output_map { key: "Y" value: "SUM2" } },
  { model_name: "%s" model_version: -1
    input_map { key: "X" value: "DIFF" } output_map { key: "Y" value: "DIFF2" } }
] }
`

// scaler is a "scale" backend multiplying by 10 that records what its
// requests carried.
type scaler struct {
	calls atomic.Int64
	mu    sync.Mutex
	seen  []backend.Request // copies of the scheduling fields
}

func (s *scaler) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		s.calls.Add(int64(len(b.Requests)))
		s.mu.Lock()
		for _, r := range b.Requests {
			s.seen = append(s.seen, backend.Request{ID: r.ID, Parameters: r.Parameters, Priority: r.Priority, SequenceID: r.SequenceID})
		}
		s.mu.Unlock()
		x, err := b.Input("X")
		if err != nil {
			return err
		}
		v, err := tensor.View[int32](x)
		if err != nil {
			return err
		}
		out := make([]int32, len(v))
		for i := range v {
			out[i] = 10 * v[i]
		}
		y, err := tensor.From("Y", x.Shape, out)
		if err != nil {
			return err
		}
		return b.SetOutput(y)
	}
}

func pipeRepo(extra ...string) map[string]string {
	return simpleRepo(append([]string{
		"scale/config.pbtxt", scaleConfig, "scale/1/m", "",
		"pipe/config.pbtxt", fmt.Sprintf(pipeConfig, "scale", "scale"), "pipe/1/.keep", "",
	}, extra...)...)
}

func pipeRequest(t testing.TB, batch int, outputs ...string) *triton.InferRequest {
	req := simpleRequest(t, batch)
	req.Model, req.Outputs = "pipe", outputs
	req.Inputs[0].Name, req.Inputs[1].Name = "A", "B"
	return req
}

func TestEnsemble(t *testing.T) {
	sc := &scaler{}
	srv := newServer(t, pipeRepo(), triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", sc.backend()))
	ctx := context.Background()
	if !srv.ModelReady(ctx, "pipe", 0) {
		t.Fatal("ensemble not ready")
	}
	req := pipeRequest(t, 2)
	req.ID, req.Parameters, req.Priority = "r1", map[string]any{"k": "v"}, 3
	resp, err := srv.Infer(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "pipe" || resp.ID != "r1" || !slices.Equal(outputNames(resp), []string{"SUM2", "DIFF2"}) {
		t.Fatalf("response %s %q with outputs %v", resp.Model, resp.ID, outputNames(resp))
	}
	sum, diff := outputInt32(t, resp, "SUM2"), outputInt32(t, resp, "DIFF2")
	for i := range 32 {
		if sum[i] != int32(10*(i+1)) || diff[i] != int32(10*(i-1)) {
			t.Fatalf("row %d: SUM2 %d DIFF2 %d, want %d and %d", i, sum[i], diff[i], 10*(i+1), 10*(i-1))
		}
	}
	if n := sc.calls.Load(); n != 2 {
		t.Fatalf("scale ran %d requests, want 2 (one per branch)", n)
	}
	for _, r := range sc.seen {
		if r.ID != "r1" || r.Parameters["k"] != "v" || r.Priority != 0 {
			t.Errorf("step request carried ID %q parameters %v priority %d; want the ensemble's ID and parameters, and priority 0 (scale has no priority levels)",
				r.ID, r.Parameters, r.Priority)
		}
	}

	// A requested-output subset runs only the steps that lead to it.
	resp, err = srv.Infer(ctx, pipeRequest(t, 1, "DIFF2"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(outputNames(resp), []string{"DIFF2"}) || sc.calls.Load() != 3 {
		t.Fatalf("outputs %v after %d scale calls; want only DIFF2, one more call", outputNames(resp), sc.calls.Load())
	}
	if got := outputInt32(t, resp, "DIFF2")[3]; got != 20 {
		t.Fatalf("DIFF2[3] = %d, want 20", got)
	}

	// The ensemble checks its own inputs as any model does.
	bad := pipeRequest(t, 1)
	bad.Inputs = bad.Inputs[:1]
	_, err = srv.Infer(ctx, bad)
	wantError(t, err, triton.InvalidArgument, "pipe", "B")
}

// TestEnsembleConcurrentCallers drives the ensemble from many goroutines:
// its steps' requests batch together in scale's dynamic batcher.
func TestEnsembleConcurrentCallers(t *testing.T) {
	sc := &scaler{}
	srv := newServer(t, pipeRepo(), triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", sc.backend()))
	var g errgroup.Group
	for range 32 {
		g.Go(func() error {
			for range 20 {
				resp, err := srv.Infer(context.Background(), pipeRequest(t, 1))
				if err != nil {
					return err
				}
				if s, _ := resp.Output("SUM2"); s.Shape[0] != 1 {
					return fmt.Errorf("SUM2 shape %v", s.Shape)
				}
				if v := outputInt32(t, resp, "SUM2")[5]; v != 60 {
					return fmt.Errorf("SUM2[5] = %d, want 60", v)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	st, err := srv.Stats("pipe", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].InferenceCount != 640 {
		t.Fatalf("ensemble inference count %d, want 640", st[0].InferenceCount)
	}
}

// TestEnsembleParallelBranches: the two branches must be inside their
// model at the same time, or neither finishes before the deadline.
func TestEnsembleParallelBranches(t *testing.T) {
	var arrived atomic.Int32
	both := make(chan struct{})
	rendezvous := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-ctx.Done():
			return ctx.Err()
		}
		return (&scaler{}).backend()(ctx, b)
	})
	srv := newServer(t, simpleRepo(
		"meet/config.pbtxt", strings.Replace(strings.Replace(scaleConfig, "scale", "meet", 1), "dynamic_batching { }", "", 1), "meet/1/m", "",
		"pipe/config.pbtxt", fmt.Sprintf(strings.Replace(pipeConfig, "model_version: 1", "model_version: -1", 1), "meet", "meet"), "pipe/1/.keep", "",
	), triton.WithBackend("gofunc", addSub), triton.WithBackend("meet", rendezvous))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.Infer(ctx, pipeRequest(t, 1)); err != nil {
		t.Fatalf("branches did not run in parallel: %v", err)
	}
}

// TestEnsembleStepErrors runs in a synctest bubble: the request's deadline
// passes on the bubble's clock, while the step waits for it.
func TestEnsembleStepErrors(t *testing.T) { synctest.Test(t, testEnsembleStepErrors) }

func testEnsembleStepErrors(t *testing.T) {
	var sawDeadline atomic.Bool
	failing := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		x, _ := b.Input("X")
		v, _ := tensor.View[int32](x)
		switch v[0] {
		case 1:
			return fmt.Errorf("%w: X[0] must not be 1", backend.ErrInvalidInput)
		case 2:
			<-ctx.Done()
			sawDeadline.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
			return ctx.Err()
		}
		return (&scaler{}).backend()(ctx, b)
	})
	srv := newServer(t, simpleRepo(
		"scale/config.pbtxt", scaleConfig, "scale/1/m", "",
		"fail/config.pbtxt", strings.Replace(strings.Replace(scaleConfig, "scale", "fail", 1), "dynamic_batching { }", "", 1), "fail/1/m", "",
		"pipe/config.pbtxt", fmt.Sprintf(pipeConfig, "scale", "fail"), "pipe/1/.keep", "",
	), triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", (&scaler{}).backend()), triton.WithBackend("fail", failing))

	// DIFF = A - B: A[0] = 0, B[0] = 1 → -1 passes; choose B to steer.
	req := func(b0 int32) *triton.InferRequest {
		r := pipeRequest(t, 1)
		r.Inputs[1] = int32s(t, "B", tensor.Shape{1, 16}, seq(16, func(i int) int32 { return -b0 })...)
		return r
	}
	_, err := srv.Infer(context.Background(), req(1))
	wantError(t, err, triton.InvalidArgument, "in ensemble 'pipe', step 2 (model 'fail')", "X[0] must not be 1")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = srv.Infer(ctx, req(2))
	wantError(t, err, triton.DeadlineExceeded, "step 2 (model 'fail')")
	if !sawDeadline.Load() {
		t.Fatal("the step did not see the request's deadline")
	}
	if _, err := srv.Infer(context.Background(), req(5)); err != nil {
		t.Fatalf("after failures: %v", err)
	}
}

// TestEnsembleVariableCount: a non-batching ensemble carries a variable
// count as the batch dimension of a batching step, up to that step's
// max_batch_size.
func TestEnsembleVariableCount(t *testing.T) {
	srv := newServer(t, map[string]string{
		"scale/config.pbtxt": strings.Replace(scaleConfig, "dims: [ 16 ]", "dims: [ 1 ]", 2), "scale/1/m": "",
		"count/config.pbtxt": `platform: "ensemble"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1, 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1, 1 ] } ]
ensemble_scheduling { step [ { model_name: "scale" model_version: -1
  input_map { key: "X" value: "IN" } output_map { key: "Y" value: "OUT" } } ] }`, "count/1/.keep": "",
	}, triton.WithBackend("scale", (&scaler{}).backend()))
	for _, n := range []int{1, 5, 8} {
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "count",
			Inputs: []tensor.Tensor{int32s(t, "IN", tensor.Shape{int64(n), 1}, seq(n, func(i int) int32 { return int32(i) })...)}})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if got := outputInt32(t, resp, "OUT"); len(got) != n || got[n-1] != int32(10*(n-1)) {
			t.Fatalf("n=%d: OUT %v", n, got)
		}
	}
	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "count",
		Inputs: []tensor.Tensor{int32s(t, "IN", tensor.Shape{9, 1}, seq(9, func(i int) int32 { return 1 })...)}})
	wantError(t, err, triton.InvalidArgument, "step 0 (model 'scale')", "scale")
}

// TestEnsembleMaxInflight runs in a synctest bubble: a step's 1ms sleep
// lasts until every other goroutine waits, so a second request let into
// the step meanwhile would be caught there.
func TestEnsembleMaxInflight(t *testing.T) { synctest.Test(t, testEnsembleMaxInflight) }

func testEnsembleMaxInflight(t *testing.T) {
	var now, peak atomic.Int32
	slow := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		now.Add(-1)
		return mirror(ctx, b)
	})
	ens := `platform: "ensemble"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { max_inflight_requests: 1 step [ { model_name: "slow" model_version: -1
  input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }`
	srv := newServer(t, map[string]string{
		"slow/config.pbtxt": oneInput("slow", 4, ""), "slow/1/m": "",
		"ens/config.pbtxt": ens, "ens/1/.keep": "",
	}, triton.WithBackend("slow", slow))
	var g errgroup.Group
	for i := range 8 {
		g.Go(func() error {
			req := oneInputRequest(t, "ens", "", int32(i))
			req.Inputs[0].Name = "IN"
			_, err := srv.Infer(context.Background(), req)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 1 {
		t.Fatalf("step ran %d requests at once, want 1 (max_inflight_requests)", p)
	}
}

// chainRepo is a repository of two one-input models, first and second,
// served by the backends of the same names with 4 instances each, and of
// ensembles chaining them (IN → first → MID → second → OUT): "open",
// without a limit, and "held", with the model parameter
// max_inflight_ensemble_requests set to held.
func chainRepo(held string) map[string]string {
	ens := func(name, extra string) string {
		return fmt.Sprintf(`name: "%s" platform: "ensemble"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
%s
ensemble_scheduling { step [
  { model_name: "first" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "MID" } },
  { model_name: "second" model_version: -1 input_map { key: "INPUT0" value: "MID" } output_map { key: "OUTPUT0" value: "OUT" } } ] }`, name, extra)
	}
	return map[string]string{
		"first/config.pbtxt": oneInput("first", 4, ""), "first/1/m": "",
		"second/config.pbtxt": oneInput("second", 4, ""), "second/1/m": "",
		"open/config.pbtxt": ens("open", ""), "open/1/.keep": "",
		"held/config.pbtxt": ens("held", fmt.Sprintf(`parameters { key: "max_inflight_ensemble_requests" value { string_value: "%s" } }`, held)),
		"held/1/.keep":      "",
	}
}

// TestEnsembleMaxInflightEnsembleRequests runs in a synctest bubble: each
// step sleeps 1ms, which lasts until every other goroutine waits, so a
// request let into the ensemble meanwhile is counted. A request is inside
// from the start of its first step to the end of its second.
func TestEnsembleMaxInflightEnsembleRequests(t *testing.T) {
	synctest.Test(t, testEnsembleMaxInflightEnsembleRequests)
}

func testEnsembleMaxInflightEnsembleRequests(t *testing.T) {
	var inside, peak atomic.Int32
	first := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		n := inside.Add(int32(len(b.Requests)))
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		return mirror(ctx, b)
	})
	second := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		time.Sleep(time.Millisecond)
		inside.Add(-int32(len(b.Requests)))
		return mirror(ctx, b)
	})
	srv := newServer(t, chainRepo("2"), triton.WithBackend("first", first), triton.WithBackend("second", second))
	run := func(model string) int32 {
		peak.Store(0)
		var g errgroup.Group
		for i := range 8 {
			g.Go(func() error {
				req := oneInputRequest(t, model, "", int32(i))
				req.Inputs[0].Name = "IN"
				resp, err := srv.Infer(context.Background(), req)
				if err != nil {
					return err
				}
				out, _ := resp.Output("OUT")
				if got, err := tensor.View[int32](out); err != nil || len(got) != 1 || got[0] != int32(i) {
					return fmt.Errorf("request %d: OUT %v (%v)", i, got, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		return peak.Load()
	}
	if p := run("open"); p <= 2 {
		t.Fatalf("without the parameter, %d requests were inside at most; the test needs more to tell", p)
	}
	if p := run("held"); p != 2 {
		t.Fatalf("with max_inflight_ensemble_requests 2, %d requests were inside at most, want 2", p)
	}

	// A request whose deadline passes while it waits fails with it.
	held := make(chan error, 1)
	go func() {
		req := oneInputRequest(t, "held", "", 1)
		req.Inputs[0].Name = "IN"
		_, err := srv.Infer(context.Background(), req)
		held <- err
	}()
	go func() {
		req := oneInputRequest(t, "held", "", 2)
		req.Inputs[0].Name = "IN"
		_, err := srv.Infer(context.Background(), req)
		held <- err
	}()
	synctest.Wait() // both inside, in their first step
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Microsecond)
	defer cancel()
	req := oneInputRequest(t, "held", "", 3)
	req.Inputs[0].Name = "IN"
	_, err := srv.Infer(ctx, req)
	wantError(t, err, triton.DeadlineExceeded, "in ensemble 'held': waiting to run (parameter max_inflight_ensemble_requests)")
	for range 2 {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnsembleMaxInflightEnsembleRequestsInvalid: a value that is not a
// positive integer fails the load, naming the ensemble and the parameter.
func TestEnsembleMaxInflightEnsembleRequestsInvalid(t *testing.T) {
	for _, v := range []string{"0", "-1", "two", ""} {
		t.Run(v, func(t *testing.T) {
			srv := newServer(t, chainRepo(v), triton.WithBackend("first", mirror), triton.WithBackend("second", mirror),
				triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
			err := srv.Load(context.Background(), "held", nil)
			wantError(t, err, triton.InvalidArgument, "failed to load 'held'", "ensemble 'held': parameter max_inflight_ensemble_requests is \""+v+"\"", "positive integer")
		})
	}
}

// TestEnsembleLoadErrors: what only the composing models can tell fails
// the load with Triton's messages.
func TestEnsembleLoadErrors(t *testing.T) {
	ens := func(inputs, outputs, steps string) string {
		return fmt.Sprintf(`platform: "ensemble"
max_batch_size: 8
input [ %s ]
output [ %s ]
ensemble_scheduling { step [ %s ] }`, inputs, outputs, steps)
	}
	in16 := `{ name: "IN" data_type: TYPE_INT32 dims: [ 16 ] }`
	out16 := `{ name: "OUT" data_type: TYPE_INT32 dims: [ 16 ] }`
	step := func(model, inKey, in, outKey, out string) string {
		return fmt.Sprintf(`{ model_name: "%s" model_version: -1 input_map { key: "%s" value: "%s" } output_map { key: "%s" value: "%s" } }`, model, inKey, in, outKey, out)
	}
	cases := []struct {
		name, config string
		extra        []string
		want         []string
	}{
		{"unknown input", ens(in16, out16, step("scale", "Z", "IN", "Y", "OUT")), nil,
			[]string{"ensemble tensor IN is mapping to non-existing input Z in model scale"}},
		{"unknown output", ens(in16, out16, step("scale", "X", "IN", "Q", "OUT")), nil,
			[]string{"ensemble tensor OUT is mapped from non-existing output Q in model scale"}},
		{"unmapped input", ens(in16, out16, step("simple", "INPUT0", "IN", "OUTPUT0", "OUT")), nil,
			[]string{"input INPUT1 in model simple is not mapped to any ensemble tensors"}},
		{"datatype", ens(`{ name: "IN" data_type: TYPE_FP32 dims: [ 16 ] }`, out16, step("scale", "X", "IN", "Y", "OUT")), nil,
			[]string{"inconsistent data type: TYPE_FP32 is inferred from model bad while TYPE_INT32 is inferred from model scale"}},
		{"shape", ens(`{ name: "IN" data_type: TYPE_INT32 dims: [ 4 ] }`, out16, step("scale", "X", "IN", "Y", "OUT")), nil,
			[]string{"inconsistent shape: [ -1 4 ] is inferred from model bad while [ -1 16 ] is inferred from model scale"}},
		{"batch size", strings.Replace(ens(in16, out16, step("scale", "X", "IN", "Y", "OUT")), "max_batch_size: 8", "max_batch_size: 16", 1), nil,
			[]string{"ensemble bad allows maximum batch size 16, but it contains model scale which only allows maximum batch size to be 8"}},
		{"missing model", ens(in16, out16, step("ghost", "X", "IN", "Y", "OUT")), nil,
			[]string{"ghost", "not in the model repository"}},
		{"cached stateful", strings.Replace(ens(in16, out16, step("seq", "X", "IN", "Y", "OUT")), "max_batch_size: 8", "max_batch_size: 8\nresponse_cache { enable: true }", 1),
			[]string{"seq/config.pbtxt", strings.Replace(scaleConfig, "dynamic_batching { }", "sequence_batching { }", 1), "seq/1/m", ""},
			[]string{"ensemble 'bad' has a response cache, but its step 0 model 'seq' is stateful"}},
		{"cycle", ens(in16, out16, step("other", "IN", "IN", "OUT", "OUT")),
			[]string{"other/config.pbtxt", ens(`{ name: "IN" data_type: TYPE_INT32 dims: [ 16 ] }`, out16, step("bad", "IN", "IN", "OUT", "OUT")), "other/1/.keep", ""},
			[]string{"circular dependency between ensembles: bad → other → bad"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := simpleRepo(append([]string{"scale/config.pbtxt", scaleConfig, "scale/1/m", "", "bad/config.pbtxt", tc.config, "bad/1/.keep", ""}, tc.extra...)...)
			srv := newServer(t, files, triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", (&scaler{}).backend()),
				triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
			err := srv.Load(context.Background(), "bad", nil)
			wantError(t, err, triton.InvalidArgument, append([]string{"failed to load 'bad'"}, tc.want...)...)
			if srv.ModelReady(context.Background(), "bad", 0) {
				t.Fatal("a failed ensemble is ready")
			}
		})
	}
}

// TestEnsembleLifecycle: loading an ensemble loads its composing models;
// it is ready only while they are; unload_dependents unloads them.
func TestEnsembleLifecycle(t *testing.T) {
	sc := &scaler{}
	srv := newServer(t, pipeRepo(), triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", sc.backend()),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
	ctx := context.Background()
	if err := srv.Load(ctx, "pipe", nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"pipe", "simple", "scale"} {
		if !srv.ModelReady(ctx, m, 0) {
			t.Fatalf("%s not ready after loading the ensemble", m)
		}
	}
	if err := srv.Unload(ctx, "scale", nil); err != nil {
		t.Fatal(err)
	}
	if srv.ModelReady(ctx, "pipe", 0) {
		t.Fatal("ensemble ready while a composing model is unloaded")
	}
	_, err := srv.Infer(ctx, pipeRequest(t, 1))
	wantError(t, err, triton.NotFound, "in ensemble 'pipe', step", "(model 'scale')", "Request for unknown model: 'scale'")
	if err := srv.Load(ctx, "scale", nil); err != nil {
		t.Fatal(err)
	}
	if !srv.ModelReady(ctx, "pipe", 0) {
		t.Fatal("ensemble not ready again after its composing model came back")
	}
	if _, err := srv.Infer(ctx, pipeRequest(t, 1)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Unload(ctx, "pipe", &triton.UnloadOptions{Dependents: true}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"pipe", "simple", "scale"} {
		if srv.ModelReady(ctx, m, 0) {
			t.Fatalf("%s still ready after unloading the ensemble with its dependents", m)
		}
	}
}

// TestEnsembleResponseCache: an ensemble cached at the top answers a
// repeated request without running any step.
func TestEnsembleResponseCache(t *testing.T) {
	sc := &scaler{}
	cached := strings.Replace(fmt.Sprintf(pipeConfig, "scale", "scale"), `platform: "ensemble"`, "platform: \"ensemble\"\nresponse_cache { enable: true }", 1)
	srv := newServer(t, simpleRepo("scale/config.pbtxt", scaleConfig, "scale/1/m", "", "pipe/config.pbtxt", cached, "pipe/1/.keep", ""),
		triton.WithBackend("gofunc", addSub), triton.WithBackend("scale", sc.backend()), triton.WithResponseCache(1<<20))
	for range 3 {
		resp, err := srv.Infer(context.Background(), pipeRequest(t, 1))
		if err != nil {
			t.Fatal(err)
		}
		if v := outputInt32(t, resp, "DIFF2")[3]; v != 20 {
			t.Fatalf("DIFF2[3] = %d, want 20", v)
		}
	}
	if n := sc.calls.Load(); n != 2 {
		t.Fatalf("scale ran %d times for 3 identical requests, want 2 (the first request's branches)", n)
	}
	st, err := srv.Stats("pipe", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].CacheHit.Count != 2 || st[0].CacheMiss.Count != 1 {
		t.Fatalf("cache hits %d misses %d, want 2 and 1", st[0].CacheHit.Count, st[0].CacheMiss.Count)
	}
}

// blsBackend is a Go backend that calls other models through the Caller
// it is given at load: "simple" twice concurrently, or, with the config
// parameter "call", the model it names.
type blsBackend struct{}

func (blsBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	target, _ := spec.Parameter("call")
	return backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			in, _ := r.Input("INPUT0")
			if target != "" {
				resp, err := spec.Caller.Infer(ctx, &backend.InferRequest{Model: target, Inputs: []tensor.Tensor{in}})
				if err != nil {
					return err
				}
				r.SetOutput(resp.Outputs[0])
				continue
			}
			// Two concurrent calls to simple: (x + x) and (x - x), summed.
			x, _ := tensor.View[int32](in)
			row := tensor.Shape{1, 16}
			var resps [2]*backend.InferResponse
			var g errgroup.Group
			for i := range 2 {
				g.Go(func() error {
					a, err := tensor.From("INPUT0", row, slices.Repeat(x, 16))
					if err != nil {
						return err
					}
					b, _ := tensor.From("INPUT1", row, slices.Repeat(x, 16))
					resps[i], err = spec.Caller.Infer(ctx, &backend.InferRequest{Model: "simple", Inputs: []tensor.Tensor{a, b}, Outputs: []string{[]string{"OUTPUT0", "OUTPUT1"}[i]}})
					return err
				})
			}
			if err := g.Wait(); err != nil {
				return err
			}
			s, _ := tensor.View[int32](resps[0].Outputs[0])
			d, _ := tensor.View[int32](resps[1].Outputs[0])
			out, _ := tensor.From("OUTPUT0", tensor.Shape{1}, []int32{s[0] + d[0]})
			r.SetOutput(out)
		}
		return nil
	}), nil
}

// TestBLS runs in a synctest bubble: the request's deadline passes on the
// bubble's clock, while the called model waits for it.
func TestBLS(t *testing.T) { synctest.Test(t, testBLS) }

func testBLS(t *testing.T) {
	param := func(model string) string {
		return fmt.Sprintf(`parameters { key: "call" value: { string_value: "%s" } }`, model)
	}
	var released atomic.Bool
	slowCfg := oneInput("slow", 1, "")
	srv := newServer(t, simpleRepo(
		"bls/config.pbtxt", oneInput("bls", 1, ""), "bls/1/m", "",
		"a/config.pbtxt", oneInput("bls", 1, param("b")), "a/1/m", "",
		"b/config.pbtxt", oneInput("bls", 1, param("a")), "b/1/m", "",
		"self/config.pbtxt", oneInput("bls", 1, param("self")), "self/1/m", "",
		"waits/config.pbtxt", oneInput("bls", 1, param("slow")), "waits/1/m", "",
		"slow/config.pbtxt", slowCfg, "slow/1/m", "",
	), triton.WithBackend("gofunc", addSub), triton.WithBackend("bls", blsBackend{}),
		triton.WithBackend("slow", backend.Func(func(ctx context.Context, b *backend.Batch) error {
			<-ctx.Done()
			released.Store(true)
			return ctx.Err()
		})))
	ctx := context.Background()

	resp, err := srv.Infer(ctx, oneInputRequest(t, "bls", "", 21))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputInt32(t, resp, "OUTPUT0"); got[0] != 42 {
		t.Fatalf("bls answered %d, want 42", got[0])
	}

	// Cycles fail at once instead of deadlocking (each model has one
	// instance, busy waiting for the call).
	_, err = srv.Infer(ctx, oneInputRequest(t, "a", "", 1))
	wantError(t, err, triton.Internal, "call cycle: a → b → a")
	_, err = srv.Infer(ctx, oneInputRequest(t, "self", "", 1))
	wantError(t, err, triton.Internal, "call cycle: self → self")

	// The request's deadline reaches the called model.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = srv.Infer(dctx, oneInputRequest(t, "waits", "", 1))
	wantError(t, err, triton.DeadlineExceeded, "slow")
	if !released.Load() {
		t.Fatal("the called model did not see the deadline")
	}
}

// seqStepsRepo is an ensemble of two steps: "marker" (IN → T) and
// "seqecho" (T → OUT, its request's sequence ID, start and end flags).
func seqStepsRepo() map[string]string {
	return map[string]string{
		"marker/config.pbtxt": oneInput("marker", 1, ""), "marker/1/model.txt": "",
		"seqecho/config.pbtxt": `backend: "seqecho"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 3 ] } ]`, "seqecho/1/model.txt": "",
		"seq/config.pbtxt": `platform: "ensemble"
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 3 ] } ]
ensemble_scheduling { step [
  { model_name: "marker" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "T" } },
  { model_name: "seqecho" model_version: -1 input_map { key: "INPUT0" value: "T" } output_map { key: "OUTPUT0" value: "OUT" } }
] }`, "seq/1/.keep": "",
	}
}

// TestEnsembleSequenceParameters: as in Triton's ensemble scheduler, a
// step's response parameters sequence_id, sequence_start and sequence_end
// set the sequence fields of the steps that read its outputs, and the
// ensemble's response carries its outputs' as parameters; a value of
// another type fails the request with Triton's text.
func TestEnsembleSequenceParameters(t *testing.T) {
	var marks map[string]any
	marker := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			for k, v := range marks {
				r.SetParameter(k, v)
			}
		}
		return mirror(ctx, b)
	})
	seqecho := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			t, err := tensor.From("OUTPUT0", tensor.Shape{3}, []int32{int32(r.SequenceID), int32(btoi(r.SequenceStart)), int32(btoi(r.SequenceEnd))})
			if err != nil {
				return err
			}
			r.SetOutput(t)
		}
		return nil
	})
	srv := newServer(t, seqStepsRepo(), triton.WithBackend("marker", marker), triton.WithBackend("seqecho", seqecho))
	for _, c := range []struct {
		name   string
		marks  map[string]any
		seen   []int32
		params map[string]any
	}{
		{"none", nil, []int32{0, 0, 0}, map[string]any{"sequence_id": int64(0), "sequence_start": false, "sequence_end": false}},
		{"set", map[string]any{"sequence_id": int64(42), "sequence_start": true}, []int32{42, 1, 0},
			map[string]any{"sequence_id": int64(42), "sequence_start": true, "sequence_end": false}},
		{"end only", map[string]any{"sequence_end": true}, []int32{0, 0, 1}, map[string]any{"sequence_id": int64(0), "sequence_start": false, "sequence_end": true}},
	} {
		marks = c.marks
		resp, err := srv.Infer(context.Background(), seqEnsembleRequest(t))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := outputInt32(t, resp, "OUT"); !slices.Equal(got, c.seen) {
			t.Errorf("%s: seqecho saw %v, want %v", c.name, got, c.seen)
		}
		if !maps.Equal(resp.Parameters, c.params) {
			t.Errorf("%s: ensemble response parameters %v, want %v", c.name, resp.Parameters, c.params)
		}
	}
	marks = map[string]any{"sequence_start": "yes"}
	_, err := srv.Infer(context.Background(), seqEnsembleRequest(t))
	wantError(t, err, triton.InvalidArgument, "in ensemble 'seq', step 0 (model 'marker')", "expect parameter 'sequence_start' to be TRITONSERVER_PARAMETER_BOOL")
}

// seqEnsembleRequest is a request of the seq ensemble.
func seqEnsembleRequest(t *testing.T) *triton.InferRequest {
	return &triton.InferRequest{Model: "seq", ID: "r", Inputs: []tensor.Tensor{int32s(t, "IN", tensor.Shape{1}, 5)}}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
