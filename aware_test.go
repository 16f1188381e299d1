package triton_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
)

// ctxBackend hands each execution's ctx to the test, then waits for the
// test's release or for ctx to end (and fails with its error).
type ctxBackend struct {
	ctxs    chan context.Context
	release chan struct{}
}

func (c *ctxBackend) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		c.ctxs <- ctx
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.release:
		}
		for _, r := range b.Requests {
			out := r.Inputs[0]
			out.Name = "OUTPUT0"
			r.SetOutput(out)
		}
		return nil
	}
}

// TestBatchContext runs in a synctest bubble: a batch of two requests runs
// under a context whose deadline is the later of theirs, which one
// cancellation does not end and the second does; both requests then fail
// as cancelled while executing, and the statistics count them so.
func TestBatchContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cb := &ctxBackend{ctxs: make(chan context.Context, 4), release: make(chan struct{}, 4)}
		srv := newServer(t, batchingModel(1, `dynamic_batching { }`), triton.WithBackend("gated", cb.backend()))
		first := goInfer(srv, context.Background(), rowsRequest(t, "first", 1, 2, 0))
		<-cb.ctxs
		ctxA, cancelA := context.WithTimeout(context.Background(), time.Second)
		defer cancelA()
		ctxB0, cancelB0 := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancelB0()
		ctxB, cancelCause := context.WithCancelCause(ctxB0)
		cancelB := func() { cancelCause(errors.New("client gone")) } // a cause of its own: Err is still Canceled
		a := goInfer(srv, ctxA, rowsRequest(t, "a", 1, 2, 0))
		waitQueued(t, srv, "m", 1)
		b := goInfer(srv, ctxB, rowsRequest(t, "b", 1, 2, 0))
		waitQueued(t, srv, "m", 2)
		cb.release <- struct{}{}
		if r := <-first; r.err != nil {
			t.Fatal(r.err)
		}
		ctx := <-cb.ctxs // the batch [a b]
		if d, ok := ctx.Deadline(); !ok || !d.Equal(time.Now().Add(2*time.Second)) {
			t.Errorf("batch deadline %v, %v; want b's, 2s from now", d, ok)
		}
		cancelA()
		synctest.Wait()
		if err := ctx.Err(); err != nil {
			t.Fatalf("the batch's context ended when one of its two requests was cancelled: %v", err)
		}
		cancelB()
		synctest.Wait()
		if err := ctx.Err(); err != context.Canceled {
			t.Fatalf("the batch's context after both requests were cancelled: %v, want context.Canceled", err)
		}
		for _, ch := range []chan result{a, b} {
			if r := <-ch; triton.CodeOf(r.err) != triton.Cancelled {
				t.Errorf("request of a cancelled batch: %v, want Cancelled", r.err)
			}
		}
		st, err := srv.Stats("m", 1)
		if err != nil {
			t.Fatal(err)
		}
		if n := st[0].Shed[triton.ShedCancelledExecuting]; n != 2 {
			t.Errorf("shed while executing: %d, want 2 (all: %v)", n, st[0].Shed)
		}
	})
}

// TestDeadlineAwareOption: the schedule is on by default for every model,
// a model's parameter turns it off, and a bad value fails the load with a
// message naming the model and the parameter.
func TestDeadlineAwareOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sleepy := backend.Func(func(ctx context.Context, b *backend.Batch) error {
			time.Sleep(3 * time.Millisecond)
			for _, r := range b.Requests {
				out := r.Inputs[0]
				out.Name = "OUTPUT0"
				r.SetOutput(out)
			}
			return nil
		})
		repo := batchingModel(1, `dynamic_batching { }`)
		for name, extra := range map[string]string{
			"off": `dynamic_batching { } parameters { key: "deadline_aware_batching" value: { string_value: "false" } }`,
			"bad": `dynamic_batching { } parameters { key: "deadline_aware_batching" value: { string_value: "yes" } }`,
		} {
			for k, v := range batchingModel(1, extra) {
				repo[name+k[1:]] = v
			}
		}
		srv, err := triton.New(triton.WithRepository(mapFS(repo)), triton.WithBackend("gated", sleepy),
			triton.WithExitOnError(false))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if srv.ModelReady(context.Background(), "bad", 0) {
			t.Error(`a model with deadline_aware_batching "yes" loaded`)
		}
		found := false
		for _, st := range srv.Index(context.Background()) {
			if st.Name == "bad" && strings.Contains(st.Reason, `parameter deadline_aware_batching of model 'bad' must be "true" or "false", not "yes"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("the index does not give bad's load error: %+v", srv.Index(context.Background()))
		}
		for _, m := range []string{"m", "off"} {
			for range 10 {
				req := rowsRequest(t, "warm", 1, 2, 0)
				req.Model = m
				if _, err := srv.Infer(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		req := rowsRequest(t, "late", 1, 2, 0)
		_, err = srv.Infer(ctx, req)
		wantError(t, err, triton.Unavailable, `model "m"`, `request "late"`, "cannot finish before its deadline")
		req.Model = "off" // FIFO: it runs, and answers late (the backend ignores ctx)
		if _, err = srv.Infer(ctx, req); err != nil {
			t.Errorf("model off refused a request: %v", err)
		}
	})
}
