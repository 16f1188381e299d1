package testmodels

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton/backend"
)

// Gate is a backend that holds every batch it is given until the test
// lets it go: Execute sends a [Held] for the batch on Held, then waits for
// Held.Release (and answers as [Mirror] does) or for its ctx to end (and
// fails with the ctx's error). It is how a test occupies an instance, sees
// which requests reached the backend, and inspects the ctx Execute got.
type Gate struct {
	Held chan *Held
}

// NewGate returns a Gate whose Held channel has room for 16 batches.
func NewGate() *Gate { return &Gate{Held: make(chan *Held, 16)} }

// Held is one batch inside a [Gate]'s Execute.
type Held struct {
	// IDs are the batch's request IDs, in batch order.
	IDs []string
	// ctx is Execute's: the test reads its deadline and watches it end.
	ctx      context.Context
	release  chan struct{}
	returned chan struct{}
	err      error // Execute's result, set before returned closes
}

// Deadline is the deadline of Execute's ctx (ok false when it has none).
func (h *Held) Deadline() (time.Time, bool) { return h.ctx.Deadline() }

// Done is closed when Execute's ctx ends.
func (h *Held) Done() <-chan struct{} { return h.ctx.Done() }

// Err is the error of Execute's ctx: nil while it has not ended.
func (h *Held) Err() error { return h.ctx.Err() }

// Release lets the batch go: Execute answers every request as Mirror does,
// unless its ctx ended first.
func (h *Held) Release() { close(h.release) }

// Returned is closed when Execute has returned.
func (h *Held) Returned() <-chan struct{} { return h.returned }

// Result waits for Execute to return and gives its error: nil when the
// batch was released, the ctx's error when the ctx ended first.
func (h *Held) Result() error {
	<-h.returned
	return h.err
}

// Backend returns the gate as a backend.
func (g *Gate) Backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		h := &Held{ctx: ctx, release: make(chan struct{}), returned: make(chan struct{})}
		for _, r := range b.Requests {
			h.IDs = append(h.IDs, r.ID)
		}
		defer close(h.returned)
		g.Held <- h
		select {
		case <-h.release:
			h.err = Mirror(ctx, b)
		case <-ctx.Done():
			h.err = ctx.Err()
		}
		return h.err
	}
}

// WantIDs fails tb unless the held batch is made of the requests ids, in
// that order.
func (h *Held) WantIDs(tb testing.TB, ids ...string) {
	tb.Helper()
	if !slices.Equal(h.IDs, ids) {
		tb.Fatalf("the backend holds a batch of %q, want %q", h.IDs, ids)
	}
}

// WantRunning fails tb if the held batch has returned from Execute.
func (h *Held) WantRunning(tb testing.TB) {
	tb.Helper()
	select {
	case <-h.returned:
		tb.Fatalf("the batch of %q has ended, want it still executing", h.IDs)
	default:
	}
}

// WantNothingHeld fails tb if a batch reached the gate since the last one
// taken, once the synctest bubble is idle (it must be called inside one).
func (g *Gate) WantNothingHeld(tb testing.TB) {
	tb.Helper()
	synctest.Wait()
	select {
	case h := <-g.Held:
		tb.Errorf("the backend was given %q, whose request had ended", h.IDs)
	default:
	}
}
