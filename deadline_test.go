package triton_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// The tests of this file check that a request's deadline and cancellation
// reach the requests made on its behalf: an ensemble's steps and a Go
// backend's calls to other models (BLS). Each runs in a synctest bubble,
// with testmodels.Gate models that hold their batches until the test lets
// them go and show the ctx their Execute got.

// gateConfig is a model of the gate backend named backendName, one INT32
// [1] input INPUT0 and output OUTPUT0, on one instance, plus extra.
func gateConfig(backendName, extra string) string {
	return fmt.Sprintf(`backend: %q
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
%s`, backendName, extra)
}

// forkConfig is an ensemble of a chain and two parallel branches:
// first(IN) → MID; left(MID) → L and right(MID) → R. first batches
// dynamically; left and right have no batcher.
const forkConfig = `platform: "ensemble"
max_batch_size: 1
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "L" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "R" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "first" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "MID" } },
  { model_name: "left" model_version: -1 input_map { key: "INPUT0" value: "MID" } output_map { key: "OUTPUT0" value: "L" } },
  { model_name: "right" model_version: -1 input_map { key: "INPUT0" value: "MID" } output_map { key: "OUTPUT0" value: "R" } }
] }`

// forkServer serves the fork ensemble: first on the gate chain, left and
// right on the gate branches.
func forkServer(t *testing.T) (srv *triton.Server, chain, branches *testmodels.Gate) {
	chain, branches = testmodels.NewGate(), testmodels.NewGate()
	srv = newServer(t, map[string]string{
		"first/config.pbtxt": gateConfig("chain", "max_batch_size: 1 dynamic_batching { }"), "first/1/m": "",
		"left/config.pbtxt": gateConfig("branches", "max_batch_size: 1"), "left/1/m": "",
		"right/config.pbtxt": gateConfig("branches", "max_batch_size: 1"), "right/1/m": "",
		"fork/config.pbtxt": forkConfig, "fork/1/.keep": "",
	}, triton.WithBackend("chain", chain.Backend()), triton.WithBackend("branches", branches.Backend()))
	return srv, chain, branches
}

// answer is what an Infer call came back with.
type answer struct {
	resp *triton.InferResponse
	err  error
}

// goCall runs Infer on its own goroutine.
func goCall(ctx context.Context, srv *triton.Server, req *triton.InferRequest) <-chan answer {
	c := make(chan answer, 1)
	go func() {
		resp, err := srv.Infer(ctx, req)
		c <- answer{resp, err}
	}()
	return c
}

// forkRequest is a request for the fork ensemble (IN [1, 1]).
func forkRequest(t *testing.T, id string) *triton.InferRequest {
	return &triton.InferRequest{Model: "fork", ID: id, Inputs: []tensor.Tensor{int32s(t, "IN", tensor.Shape{1, 1}, 7)}}
}

// wantHeldWith checks that a held batch is the request id alone, and that
// its Execute's ctx has ctx's deadline.
func wantHeldWith(t *testing.T, h *testmodels.Held, id string, ctx context.Context) {
	t.Helper()
	if !slices.Equal(h.IDs, []string{id}) {
		t.Fatalf("the backend holds a batch of %q, want [%q]", h.IDs, id)
	}
	want, _ := ctx.Deadline()
	if got, ok := h.Deadline(); !ok || !got.Equal(want) {
		t.Errorf("Execute's ctx has deadline %v (%v), want the calling request's, %v", got, ok, want)
	}
}

// versionStats returns a model's statistics once the bubble is idle.
func versionStats(t *testing.T, srv *triton.Server, model string) triton.ModelStats {
	t.Helper()
	synctest.Wait()
	st, err := srv.Stats(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}

// TestEnsembleStepsCarryDeadline: every step of an ensemble, in a chain or
// on parallel branches, with or without a batcher, runs under the
// ensemble request's deadline.
func TestEnsembleStepsCarryDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, chain, branches := forkServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		res := goCall(ctx, srv, forkRequest(t, "e"))
		h := <-chain.Held
		wantHeldWith(t, h, "e", ctx)
		h.Release()
		for range 2 {
			h := <-branches.Held
			wantHeldWith(t, h, "e", ctx)
			h.Release()
		}
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := outputInt32(t, r.resp, "R"); got[0] != 7 {
			t.Errorf("R = %v, want [7]", got)
		}
	})
}

// TestEnsembleStepsCancelled: cancelling an ensemble request ends the ctx
// of its step executing, in the chain or on both parallel branches.
func TestEnsembleStepsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, chain, branches := forkServer(t)

		ctx, cancel := context.WithCancel(context.Background())
		res := goCall(ctx, srv, forkRequest(t, "chain"))
		h := <-chain.Held
		cancel()
		wantError(t, (<-res).err, triton.Cancelled)
		if err := h.Result(); err != context.Canceled {
			t.Errorf("the chain step's ctx ended with %v, want context.Canceled", err)
		}

		ctx, cancel = context.WithCancel(context.Background())
		res = goCall(ctx, srv, forkRequest(t, "branches"))
		(<-chain.Held).Release()
		l, r := <-branches.Held, <-branches.Held
		cancel()
		wantError(t, (<-res).err, triton.Cancelled)
		for _, h := range []*testmodels.Held{l, r} {
			if err := h.Result(); err != context.Canceled {
				t.Errorf("a branch step's ctx ended with %v, want context.Canceled", err)
			}
		}
	})
}

// TestEnsembleStepLeavesQueue: an ensemble request cancelled, or past its
// deadline, while its step waits in the composing model's queue takes the
// step out of that queue at once: the composing model counts it and never
// executes it.
func TestEnsembleStepLeavesQueue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   triton.Code
		reason triton.ShedReason
	}{
		{"cancelled", triton.Cancelled, triton.ShedCancelledQueued},
		{"deadline", triton.DeadlineExceeded, triton.ShedDeadlineQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, chain, _ := forkServer(t)
				direct := goCall(context.Background(), srv, &triton.InferRequest{Model: "first", ID: "direct",
					Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1, 1}, 1)}})
				h := <-chain.Held

				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				res := goCall(ctx, srv, forkRequest(t, "e"))
				if st := versionStats(t, srv, "first"); st.Queued != 1 {
					t.Fatalf("first: %d queued, want the step", st.Queued)
				}
				if tc.code == triton.Cancelled {
					cancel()
				} // else the hour passes on the bubble's clock
				wantError(t, (<-res).err, tc.code)
				if st := versionStats(t, srv, "first"); st.Queued != 0 || st.Shed[tc.reason] != 1 {
					t.Errorf("first: %d queued, shed %v; want none queued, one %v", st.Queued, st.Shed, tc.reason)
				}
				select {
				case <-h.Returned():
					t.Fatal("the batch ahead ended")
				default:
				}
				h.Release()
				if r := <-direct; r.err != nil {
					t.Fatal(r.err)
				}
				chain.WantNothingHeld(t)
			})
		})
	}
}

// blsServer serves "caller", a Go backend (blsBackend) that calls
// "callee", a gate model without a batcher, through its backend.Caller.
func blsServer(t *testing.T) (*triton.Server, *testmodels.Gate) {
	g := testmodels.NewGate()
	srv := newServer(t, map[string]string{
		"caller/config.pbtxt": oneInput("bls", 1, `parameters { key: "call" value: { string_value: "callee" } }`), "caller/1/m": "",
		"callee/config.pbtxt": gateConfig("gate", ""), "callee/1/m": "",
	}, triton.WithBackend("bls", blsBackend{}), triton.WithBackend("gate", g.Backend()))
	return srv, g
}

// TestBLSCarriesDeadline: a Go backend's call to another model, made with
// its Execute's ctx, runs under the calling request's deadline, and ends
// when that request is cancelled: while it executes, or while it waits
// for the called model's instance (it never runs then).
func TestBLSCarriesDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, g := blsServer(t)

		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		res := goCall(ctx, srv, oneInputRequest(t, "caller", "c", 5))
		h := <-g.Held
		if _, ok := h.Deadline(); !ok {
			t.Fatal("the called model's ctx has no deadline")
		}
		want, _ := ctx.Deadline()
		if got, _ := h.Deadline(); !got.Equal(want) {
			t.Errorf("the called model's ctx has deadline %v, want the caller's, %v", got, want)
		}
		h.Release()
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := outputInt32(t, r.resp, "OUTPUT0"); got[0] != 5 {
			t.Errorf("OUTPUT0 = %v, want [5]", got)
		}

		// Cancelled while the call executes.
		ctx, cancel = context.WithCancel(context.Background())
		res = goCall(ctx, srv, oneInputRequest(t, "caller", "c", 5))
		h = <-g.Held
		cancel()
		wantError(t, (<-res).err, triton.Cancelled)
		if err := h.Result(); err != context.Canceled {
			t.Errorf("the called model's ctx ended with %v, want context.Canceled", err)
		}

		// Cancelled while the call waits for callee's busy instance.
		direct := goCall(context.Background(), srv, oneInputRequest(t, "callee", "direct", 1))
		h = <-g.Held
		ctx, cancel = context.WithCancel(context.Background())
		res = goCall(ctx, srv, oneInputRequest(t, "caller", "c", 5))
		synctest.Wait() // the call waits for the instance
		cancel()
		wantError(t, (<-res).err, triton.Cancelled)
		if st := versionStats(t, srv, "callee"); st.Shed[triton.ShedCancelledQueued] != 1 {
			t.Errorf("callee: shed %v, want one cancelled_queued", st.Shed)
		}
		h.Release()
		if r := <-direct; r.err != nil {
			t.Fatal(r.err)
		}
		g.WantNothingHeld(t)
	})
}
