// stream.go is the streaming request path: InferStream, and Infer on a
// decoupled model.

package triton

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// StreamBuffer is how many responses of one request a decoupled model can
// send ahead of the consumer of [Server.InferStream]: once that many wait,
// the backend's [backend.Sender.Send] blocks until the consumer takes one,
// so a slow consumer slows the producer instead of growing memory.
const StreamBuffer = 16

// A request to a decoupled model runs as two goroutines: the consumer's,
// which iterates, and one the stream starts to schedule the request and
// run Execute (on it, or on the goroutine of the batch leader). Execute
// cannot run on the consumer's goroutine: a backend that sends more than
// StreamBuffer responses before it returns would wait for a consumer that
// is waiting for it. The scheduling goroutine ends when Execute returns
// (the instance is then free, whatever the backend's own goroutines still
// send); the stream ends when the backend sends its final response, when
// the request fails, when the consumer's ctx ends or it stops iterating,
// or when the version stops. The iterator returns only after the
// scheduling goroutine has ended, and the request holds its version (its
// gate) until then, so an unload waits for open streams and Close ends
// them with Unavailable.

// InferStream runs one inference request and yields its responses: every
// response of a decoupled model (model_transaction_policy { decoupled:
// true }) as the model sends it, and the one response of any other model,
// so that callers can use one code path. Each yielded response has only the
// outputs the request asked for, checked against the model configuration;
// the last one has Final set. An error response (a bad request, the
// model's error, a cancellation) is yielded as (nil, err); one that is not
// final does not end the stream. A decoupled model's final flag without
// outputs ends the iteration without a response of its own.
//
// Deadlines and cancellation come from ctx: when it ends, or the consumer
// stops iterating (break), the request is cancelled, which the backend
// sees through its Sender, and the iteration ends (with a Cancelled or
// DeadlineExceeded error when ctx ended). The iterator returns only once
// the request's Execute has returned: it leaves no goroutine behind, and
// the inputs are borrowed until then. Up to [StreamBuffer] responses are
// buffered ahead of the consumer.
//
// The iterator runs the request once per range loop over it.
func (s *Server) InferStream(ctx context.Context, req *InferRequest) iter.Seq2[*InferResponse, error] {
	return s.inferStream(ctx, req, fromClient)
}

func (s *Server) inferStream(ctx context.Context, req *InferRequest, o origin) iter.Seq2[*InferResponse, error] {
	return func(yield func(*InferResponse, error) bool) {
		if req == nil {
			yield(nil, &Error{Code: InvalidArgument, Err: fmt.Errorf("nil request")})
			return
		}
		v, err := s.enter(ctx, req.Model, req.Version, nil)
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.RequestID = req.ID
			}
			yield(nil, err)
			return
		}
		defer s.leave(v)
		v.stream(ctx, req, o, yield)
	}
}

// InferStream runs a request on the model, as [Server.InferStream] does,
// with the handle's rules for req.Model and req.Version ([Model.Infer]).
func (m *Model) InferStream(ctx context.Context, req *InferRequest) iter.Seq2[*InferResponse, error] {
	return func(yield func(*InferResponse, error) bool) {
		if err := m.check(req); err != nil {
			yield(nil, err)
			return
		}
		v, err := m.s.enter(ctx, m.name, req.Version, m)
		if err != nil {
			if e, ok := err.(*Error); ok {
				e.RequestID = req.ID
			}
			yield(nil, err)
			return
		}
		defer m.s.leave(v)
		v.stream(ctx, req, fromClient, yield)
	}
}

// stream runs req on v, yielding its responses.
func (v *version) stream(ctx context.Context, req *InferRequest, o origin, yield func(*InferResponse, error) bool) {
	if !v.decoupled {
		resp, err := v.infer(ctx, req, o)
		if resp != nil {
			resp.Final = true
		}
		yield(resp, err)
		return
	}
	v.streamDecoupled(ctx, req, o, yield)
}

// inferOne is Infer on a decoupled model: the request's one response, or
// an error when the model sent none or several (Infer cannot return them).
func (v *version) inferOne(ctx context.Context, req *InferRequest, o origin) (*InferResponse, error) {
	var (
		one    *InferResponse
		n      int
		result error
	)
	v.streamDecoupled(ctx, req, o, func(resp *InferResponse, err error) bool {
		if err != nil {
			result = err
			return false
		}
		n++
		if n > 1 {
			result = v.errorf(req, Unsupported, fmt.Errorf(
				"model '%s' is decoupled and sent more than one response to the request; Infer returns exactly one: use InferStream (or gRPC ModelStreamInfer) for its responses", v.name))
			return false
		}
		one = resp
		return true
	})
	if result != nil {
		return nil, result
	}
	if n == 1 {
		one.Final = false // Infer's answer; see InferResponse.Final
	}
	if n == 0 {
		return nil, v.errorf(req, Unsupported, fmt.Errorf(
			"model '%s' is decoupled and sent no response to the request; Infer returns exactly one: use InferStream (or gRPC ModelStreamInfer) for its responses", v.name))
	}
	return one, nil
}

// streamDecoupled runs a request of a decoupled model; see the comment
// above InferStream.
func (v *version) streamDecoupled(ctx context.Context, req *InferRequest, o origin, yield func(*InferResponse, error) bool) {
	t := timing{start: now()}
	if v.tracer != nil {
		var owned bool
		if ctx, t.tr, owned = v.startTrace(ctx, req, o); owned {
			defer t.tr.End()
		}
	}
	batch, err := v.admit(ctx, req, &t)
	if err != nil {
		yield(nil, err)
		return
	}
	st := backend.NewStream(req.ID, StreamBuffer)
	// The request's own ctx ends when the consumer's does or when it stops
	// iterating; either way the backend learns it through the Sender at
	// once, not only when the consumer next waits.
	rctx, cancel := context.WithCancel(ctx)
	stopCancel := context.AfterFunc(rctx, func() { st.End(v.cancelled(req, ctx)) })
	stopVersion := context.AfterFunc(v.ctx, func() { st.End(v.errorf(req, Unavailable, v.stopped())) })

	done := make(chan struct{})
	var scheduleErr error // the request failed before Execute; already counted
	go func() {
		defer close(done)
		if _, err := v.dispatch(rctx, req, batch, &t, st); err != nil {
			scheduleErr = err
			st.End(err)
		}
	}()

	var (
		final error // how the stream ended: nil after a final response
		rs    responseCounter
		held  []backend.Response // taken while waiting for the turn (preserve_ordering)
	)
	order := v.turns.take()
	c := v.stats
	defer func() {
		v.turns.end(order) // the next stream's turn, once the earlier ones have ended
		st.End(final)      // no-op once ended; otherwise the consumer stopped reading
		stopCancel()
		if final != nil {
			// Cancelled, failed or stopped: Execute, if it still runs, need
			// not go on. After a final response it runs to its end: the
			// request was not cancelled (a sequence would be, with it).
			cancel()
		}
		<-done
		cancel()
		stopVersion()
		if scheduleErr == nil {
			if rs.cancelled {
				c.response(&rs, responseCancel, &t, 0)
			}
			v.finish(&t, batch, final, 0)
		}
	}()
	if order != nil {
		var turn bool
		if held, turn = awaitTurn(ctx, st, order.now); !turn {
			final = v.cancelled(req, ctx)
			rs.cancelled = true
			yield(nil, final)
			return
		}
	}
	for {
		var r backend.Response
		if len(held) > 0 {
			r, held = held[0], held[1:]
		} else {
			r = st.Recv(context.Background()) // ctx reaches it through End (AfterFunc above)
		}
		if ctx.Err() != nil {
			// Buffered responses are not what a consumer that gave up wants.
			final = v.cancelled(req, ctx)
			rs.cancelled = true
			yield(nil, final)
			return
		}
		resp, err := v.streamResponse(req, batch, r)
		if t.tr != nil && err == nil {
			traceTensors(t.tr, trace.TensorBackendOutput, resp.Outputs)
		}
		if r.Final && err == nil && len(resp.Outputs) == 0 && len(resp.Parameters) == 0 {
			c.response(&rs, responseEmpty, &t, 0)
			return
		}
		kind := responseSuccess
		if err != nil {
			kind = responseFail
		}
		c.response(&rs, kind, &t, sinceEpoch(r.SentAt()))
		if r.Final {
			final = err
		}
		if !yield(resp, err) {
			if !r.Final {
				final = v.errorf(req, Cancelled, fmt.Errorf("the consumer stopped reading the responses: %w", context.Canceled))
				rs.cancelled = true
			}
			return
		}
		if r.Final {
			return
		}
	}
}

// turns put the streams of a decoupled model with preserve_ordering in
// their requests' arrival order, as Triton does: a stream's responses wait
// until every stream before it has ended. A nil *turns orders nothing.
type turns struct {
	mu sync.Mutex
	// mu protects the following: the streams that have not ended, and
	// those that have behind one that has not, oldest first.
	head, tail *turn
}

// A turn is one stream's place in the order.
type turn struct {
	now   chan struct{} // closed when every stream before it has ended
	ended bool
	next  *turn
}

// take returns the caller's turn, which it must end when its stream does
// (nil when t orders nothing).
func (t *turns) take() *turn {
	if t == nil {
		return nil
	}
	n := &turn{now: make(chan struct{})}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.head == nil {
		t.head, t.tail = n, n
		close(n.now)
	} else {
		t.tail.next, t.tail = n, n
	}
	return n
}

// end ends n's stream, giving the turn to the oldest stream still open
// after it.
func (t *turns) end(n *turn) {
	if n == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n.ended = true
	if n != t.head {
		return // an earlier stream is open; it hands the turn on
	}
	for t.head != nil && t.head.ended {
		t.head = t.head.next
	}
	if t.head == nil {
		t.tail = nil
		return
	}
	close(t.head.now)
}

// awaitTurn waits until prev is closed, taking the stream's responses
// meanwhile so that its producer is never held up by a consumer waiting
// for its turn (the model may be sending this request's responses before
// an earlier one's, from the same Execute: with a bounded buffer it would
// wait forever). They are returned in order, to be yielded first; while
// the turn is awaited they are bounded only by what the model sends, as in
// Triton. ok is false when ctx ended first.
func awaitTurn(ctx context.Context, st *backend.Stream, prev <-chan struct{}) (held []backend.Response, ok bool) {
	for {
		select {
		case <-prev:
			return held, true // the common case at once: no stream before it is open
		default:
		}
		r, got := st.RecvUntil(context.Background(), prev)
		if ctx.Err() != nil {
			return held, false
		}
		if !got {
			return held, true
		}
		held = append(held, r)
		if r.Final {
			select {
			case <-prev:
				return held, true
			case <-ctx.Done():
				return held, false
			}
		}
	}
}

// cancelled is the error of a request whose consumer's ctx ended.
func (v *version) cancelled(req *InferRequest, ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		err = fmt.Errorf("the consumer stopped reading the responses: %w", context.Canceled)
	}
	return v.errorf(req, classify(err, Cancelled), err)
}

// streamResponse checks one response of a decoupled model and builds what
// the consumer gets.
func (v *version) streamResponse(req *InferRequest, batch int64, r backend.Response) (*InferResponse, error) {
	if r.Err != nil {
		var e *Error
		if errors.As(r.Err, &e) && e.Model == v.name {
			return nil, r.Err // already the server's (a cancellation, the version stopping)
		}
		return nil, v.backendError(req, r.Err)
	}
	// One allocation per response for up to two outputs (a token and its
	// index, say): the response and its outputs' storage together.
	box := &responseBox{InferResponse: InferResponse{Model: v.name, Version: v.number, ID: req.ID, Final: r.Final}}
	resp := &box.InferResponse
	if len(r.Outputs) <= len(box.outs) {
		resp.Outputs = box.outs[:0:len(r.Outputs)]
	} else {
		resp.Outputs = make([]tensor.Tensor, 0, len(r.Outputs))
	}
	for _, t := range r.Outputs {
		if len(req.Outputs) > 0 && !contains(req.Outputs, t.Name) {
			continue
		}
		t, err := v.sig.CheckOutput(t, batch)
		if err != nil {
			return nil, v.errorf(req, Internal, err)
		}
		resp.Outputs = append(resp.Outputs, t)
	}
	if err := v.responseParameters(req, resp, r.Parameters); err != nil {
		return nil, err
	}
	return resp, nil
}

// responseBox is a response with room for its outputs.
type responseBox struct {
	InferResponse
	outs [2]tensor.Tensor
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
