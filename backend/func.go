package backend

import (
	"context"
	"errors"
	"fmt"
)

// Func adapts an ordinary function into a [Backend], its [Model] and its
// [Instance], as http.HandlerFunc does for handlers: every model loaded
// through it runs f. The function is called for one batch at a time per
// instance, as Execute is.
type Func func(ctx context.Context, b *Batch) error

var (
	_ Backend  = Func(nil)
	_ Model    = Func(nil)
	_ Instance = Func(nil)
)

// Load returns f itself as the model.
func (f Func) Load(context.Context, *ModelSpec) (Model, error) { return f, nil }

// NewInstance returns f itself as the instance.
func (f Func) NewInstance(context.Context, InstanceSpec) (Instance, error) { return f, nil }

// Execute calls f.
func (f Func) Execute(ctx context.Context, b *Batch) error { return f(ctx, b) }

// Close does nothing.
func (f Func) Close() error { return nil }

// StreamFunc adapts a function that answers one request with any number of
// responses into a [Backend], its [Model] and its [Instance]: the
// streaming form of [Func], for decoupled models (Triton's response
// sender). Execute calls f once per request of the batch, in order, with
// send bound to the request's [Sender] and ctx.
//
// When f returns, the request's stream ends: with f's error, or, when f
// sent no final response itself, with a final response without outputs.
// So f just sends its responses and returns; a send that fails (the
// client went away) is f's cue to return that error.
//
// On a model that is not decoupled, send collects the one response the
// request may have: its outputs become the request's outputs, its error
// the request's failure; a second response with outputs is an error.
// Work that must go on after Execute returns needs an Instance of its own
// that keeps the [Sender].
type StreamFunc func(ctx context.Context, r *Request, send func(Response) error) error

var (
	_ Backend  = StreamFunc(nil)
	_ Model    = StreamFunc(nil)
	_ Instance = StreamFunc(nil)
)

// Load returns f itself as the model.
func (f StreamFunc) Load(context.Context, *ModelSpec) (Model, error) { return f, nil }

// NewInstance returns f itself as the instance.
func (f StreamFunc) NewInstance(context.Context, InstanceSpec) (Instance, error) { return f, nil }

// Execute calls f for each request of the batch.
func (f StreamFunc) Execute(ctx context.Context, b *Batch) error {
	for _, r := range b.Requests {
		if err := f.run(ctx, r); err != nil {
			r.Fail(err)
		}
	}
	return nil
}

func (f StreamFunc) run(ctx context.Context, r *Request) error {
	s := r.Sender()
	if s == nil {
		answered := false
		return f(ctx, r, func(resp Response) error {
			if resp.Err != nil {
				r.Fail(resp.Err)
				return nil
			}
			if len(resp.Outputs) == 0 {
				return nil
			}
			if answered {
				return fmt.Errorf("request %q: a model that is not decoupled sends one response, got a second", r.ID)
			}
			answered = true
			for _, t := range resp.Outputs {
				r.SetOutput(t)
			}
			return nil
		})
	}
	if err := f(ctx, r, func(resp Response) error { return s.Send(ctx, resp) }); err != nil {
		return err
	}
	if err := s.Send(ctx, Response{Final: true}); err != nil && !errors.Is(err, ErrAfterFinal) {
		return err
	}
	return nil
}

// Close does nothing.
func (f StreamFunc) Close() error { return nil }
