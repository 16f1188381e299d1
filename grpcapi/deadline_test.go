package grpcapi_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
)

// The tests of this file check that a client's gRPC deadline and
// cancellation reach the request: the queue it waits in and the ctx of the
// backend's Execute. Each runs in a synctest bubble (the in-memory
// connection blocks durably), so deadlines pass on the bubble's clock, and
// synctest.Wait says when the server has done all it can.
//
// When a deadline passes, the client gives up too: its call ends with
// DEADLINE_EXCEEDED and it resets the stream, which cancels the server's
// ctx. On the bubble's clock the server's deadline is the client's to the
// nanosecond, so the server's ctx ends either past its deadline or
// cancelled by that reset, whichever comes first; over a real network the
// reset usually wins, since the server's deadline starts when the request
// arrives. The tests accept both, and count them together.

// gateModels are the models of the gate tests, all served by one
// testmodels.Gate on one instance: "gated" without a batcher (a request
// waits for the instance), "gated_batched" with a dynamic batcher whose
// batches hold one request, "gated_batch4" one whose batches hold up to
// four, and "policy", batched as gated_batched, whose queue policy lets a
// request shorten its timeout (an hour by default) and rejects it when that
// passes.
var gateModels = map[string]string{
	"gated":         ``,
	"gated_batched": `max_batch_size: 1 dynamic_batching { }`,
	"gated_batch4":  `max_batch_size: 4 dynamic_batching { }`,
	"policy": `max_batch_size: 1 dynamic_batching { default_queue_policy {
  timeout_action: REJECT default_timeout_microseconds: 3600000000 allow_timeout_override: true } }`,
}

// gateFixture serves the standard repository and the gate models.
func gateFixture(t *testing.T) (*fixture, *testmodels.Gate) {
	t.Helper()
	g := testmodels.NewGate()
	files := repo()
	for name, extra := range gateModels {
		files[name+"/config.pbtxt"] = fmt.Sprintf(`name: %q backend: "gate" %s
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]`, name, extra)
		files[name+"/1/model"] = ""
	}
	return newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("gate", g.Backend())}}), g
}

// gateRequest is a request for a gate model, with id.
func gateRequest(model, id string) *inferencepb.ModelInferRequest {
	shape := []int64{1}
	if model != "gated" {
		shape = []int64{1, 1} // a batch of one
	}
	return &inferencepb.ModelInferRequest{
		ModelName: model, Id: id,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", shape...)},
		RawInputContents: [][]byte{raw[int32](1)},
	}
}

// goInfer calls ModelInfer on its own goroutine; the channel gets its
// error.
func (f *fixture) goInfer(ctx context.Context, req *inferencepb.ModelInferRequest) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := f.client.ModelInfer(ctx, req)
		errc <- err
	}()
	return errc
}

// modelStats returns the model's statistics once the bubble is idle.
func modelStats(t *testing.T, f *fixture, model string) triton.ModelStats {
	t.Helper()
	synctest.Wait()
	st, err := f.srv.Stats(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}

// TestDeadlineReachesExecute: the client's deadline is the deadline of the
// ctx the backend's Execute gets for a batch of one request, with or
// without a batcher.
func TestDeadlineReachesExecute(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := gateFixture(t)
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				errc := f.goInfer(ctx, gateRequest(model, "r"))
				h := <-g.Held
				h.WantIDs(t, "r")
				want, _ := ctx.Deadline()
				if got, ok := h.Deadline(); !ok || !got.Equal(want) {
					t.Errorf("Execute's ctx has deadline %v (%v), want the client's, %v", got, ok, want)
				}
				h.Release()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestDeadlineWhileQueued: a request whose deadline passes while it waits
// for the busy instance leaves the queue then, while the batch ahead still
// runs; the client gets DEADLINE_EXCEEDED and the backend never sees it.
func TestDeadlineWhileQueued(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := gateFixture(t)
				first := f.goInfer(t.Context(), gateRequest(model, "first"))
				h := <-g.Held
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				wantStatus(t, <-f.goInfer(ctx, gateRequest(model, "late")), codes.DeadlineExceeded)
				// The client's own deadline ends its call too: the server's
				// count says that the server dropped the request from its
				// queue, not after it ran.
				st := modelStats(t, f, model)
				if st.Shed[triton.ShedDeadlineQueued]+st.Shed[triton.ShedCancelledQueued] != 1 || st.Queued != 0 {
					t.Errorf("shed %v, %d queued; want one deadline_queued or cancelled_queued, none queued", st.Shed, st.Queued)
				}
				h.WantRunning(t)
				h.Release()
				if err := <-first; err != nil {
					t.Fatal(err)
				}
				g.WantNothingHeld(t)
			})
		})
	}
}

// TestCancelWhileQueued: a client that cancels its call while the request
// waits for the busy instance takes it out of the queue: the server counts
// it cancelled while queued and the backend never sees it.
func TestCancelWhileQueued(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := gateFixture(t)
				first := f.goInfer(t.Context(), gateRequest(model, "first"))
				h := <-g.Held
				ctx, cancel := context.WithCancel(t.Context())
				errc := f.goInfer(ctx, gateRequest(model, "gone"))
				synctest.Wait() // the request waits at the server
				if model == "gated_batched" {
					if st := modelStats(t, f, model); st.Queued != 1 {
						t.Fatalf("%d requests queued, want 1", st.Queued)
					}
				}
				cancel()
				wantStatus(t, <-errc, codes.Canceled)
				if st := modelStats(t, f, model); st.Shed[triton.ShedCancelledQueued] != 1 || st.Queued != 0 {
					t.Errorf("shed %v, %d queued; want one cancelled_queued, none queued", st.Shed, st.Queued)
				}
				h.WantRunning(t)
				h.Release()
				if err := <-first; err != nil {
					t.Fatal(err)
				}
				g.WantNothingHeld(t)
			})
		})
	}
}

// TestEndWhileExecuting: a client that cancels its call, or whose deadline
// passes, while its request (a batch of one) executes ends the ctx of the
// backend's Execute, with context.Canceled or DeadlineExceeded.
func TestEndWhileExecuting(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := gateFixture(t)

				ctx, cancel := context.WithCancel(t.Context())
				errc := f.goInfer(ctx, gateRequest(model, "cancelled"))
				h := <-g.Held
				cancel()
				wantStatus(t, <-errc, codes.Canceled)
				if err := h.Result(); err != context.Canceled {
					t.Errorf("Execute's ctx ended with %v, want context.Canceled", err)
				}

				ctx, cancel = context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				errc = f.goInfer(ctx, gateRequest(model, "late"))
				h = <-g.Held
				if err := h.Result(); err != context.DeadlineExceeded && err != context.Canceled {
					t.Errorf("Execute's ctx ended with %v, want its deadline's end", err)
				}
				wantStatus(t, <-errc, codes.DeadlineExceeded)

				st := modelStats(t, f, model)
				if st.Shed[triton.ShedCancelledExecuting]+st.Shed[triton.ShedDeadlineExecuting] != 2 {
					t.Errorf("shed %v, want two cancelled_executing or deadline_executing", st.Shed)
				}
			})
		})
	}
}

// TestBatchEndsWithAllItsRequests: the ctx of a batch of several requests
// has the latest of their deadlines, stays alive while one of them still
// waits for its answer, and ends once every request's call has ended
// (cancelled here, so that the error is known).
func TestBatchEndsWithAllItsRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const model = "gated_batch4"
		f, g := gateFixture(t)
		first := f.goInfer(t.Context(), gateRequest(model, "first"))
		h := <-g.Held

		// a and b queue behind first, and batch together once it ends.
		ctxA, cancelA := context.WithTimeout(t.Context(), time.Hour)
		defer cancelA()
		a := f.goInfer(ctxA, gateRequest(model, "a"))
		synctest.Wait()
		ctxB, cancelB := context.WithTimeout(t.Context(), 2*time.Hour)
		defer cancelB()
		b := f.goInfer(ctxB, gateRequest(model, "b"))
		if st := modelStats(t, f, model); st.Queued != 2 {
			t.Fatalf("%d requests queued, want 2", st.Queued)
		}
		h.Release()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		h = <-g.Held
		h.WantIDs(t, "a", "b")
		want, _ := ctxB.Deadline()
		if got, ok := h.Deadline(); !ok || !got.Equal(want) {
			t.Errorf("the batch's ctx has deadline %v (%v), want b's, the latest, %v", got, ok, want)
		}

		cancelA()
		wantStatus(t, <-a, codes.Canceled)
		synctest.Wait()
		if err := h.Err(); err != nil {
			t.Fatalf("the batch's ctx ended (%v) while b still waits for its answer", err)
		}
		cancelB() // nobody waits any more
		wantStatus(t, <-b, codes.Canceled)
		if err := h.Result(); err != context.Canceled {
			t.Errorf("the batch's ctx ended with %v, want context.Canceled", err)
		}
	})
}

// TestTimeoutWhileBatchRuns: a request whose "timeout" parameter (its
// queue-policy timeout, in µs) passes while it waits behind a long batch
// is rejected at that moment, while that batch still runs (Triton rejects
// it only once the batch ends, server#7512), with UNAVAILABLE and Triton's
// text; the backend never sees it.
func TestTimeoutWhileBatchRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, g := gateFixture(t)
		first := f.goInfer(t.Context(), gateRequest("policy", "first"))
		h := <-g.Held

		start := time.Now()
		req := gateRequest("policy", "late")
		req.Parameters = params("timeout", int64(50000))
		late := f.goInfer(t.Context(), req)
		if st := modelStats(t, f, "policy"); st.Queued != 1 {
			t.Fatalf("%d requests queued, want 1", st.Queued)
		}
		wantStatus(t, <-late, codes.Unavailable, "Request timeout expired")
		if waited := time.Since(start); waited < 50*time.Millisecond || waited >= time.Hour {
			t.Errorf("rejected after %v (the bubble's clock): want its own timeout, 50ms, not the policy's", waited)
		}
		h.WantRunning(t)
		if st := modelStats(t, f, "policy"); st.Queued != 0 || st.Failures.Rejected != 1 {
			t.Errorf("%d queued, failures %+v; want none queued, one rejected", st.Queued, st.Failures)
		}

		h.Release()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		g.WantNothingHeld(t)
	})
}
