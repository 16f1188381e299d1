package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/triton-go/triton/tensor"
)

// Response is one response of a decoupled model to a request, sent with
// [Sender.Send].
//
// Ownership: Outputs (and their Data) are handed over as they are, without
// a copy; the backend must not write to them after Send returns.
type Response struct {
	// Outputs are the response's output tensors; only those the client
	// asked for reach it ([Request.Wants]). A final response may have none.
	Outputs []tensor.Tensor
	// Err, when not nil, makes this an error response: the client sees the
	// error in place of outputs. A non-final error response does not end
	// the stream.
	Err error
	// Final marks the last response of the request. After it, Send fails.
	Final bool
	// Parameters are the response's parameters, as
	// [Request.SetParameter] sets them for a default model's response.
	Parameters map[string]any

	sent time.Time // when Send took it
}

// SentAt returns when [Sender.Send] took the response (the zero time for
// one the server made itself, such as a cancellation's): the end of the
// model's work on it, where Triton's response statistics start counting
// compute_output.
func (r Response) SentAt() time.Time { return r.sent }

// ErrAfterFinal is what [Sender.Send] returns once the final response of
// the request has been sent.
var ErrAfterFinal = errors.New("response sent after the final response")

// Sender sends the responses of one request of a decoupled model (Triton's
// response sender): 0..N responses, the last one flagged Final. The server
// gives one to every request of a model whose config has
// model_transaction_policy { decoupled: true } ([Request.Sender]).
//
// A Sender may be used from Execute and from goroutines the backend starts
// and that outlive Execute; its methods are safe for concurrent use, and
// concurrent Sends are delivered one at a time (in no promised order
// between goroutines).
//
// Responses go through a bounded buffer: Send blocks while the consumer has
// not taken the earlier ones, so a slow consumer slows the producer
// instead of growing memory. Once the request is cancelled (the client's
// context ended, it stopped reading, or the model version is being
// unloaded) [Sender.Done] is closed and Send fails with an error wrapping
// context.Canceled (or the unload's cause): the backend should stop work
// for the request.
type Sender struct {
	id     string
	ch     chan Response
	ended  chan struct{} // closed once the stream has ended, for any reason
	sendMu sync.Mutex    // serialises Send, so that Final is truly last

	mu sync.Mutex
	// mu protects the following.
	final bool  // the backend sent its final response
	cause error // why the stream ended otherwise (cancelled, failed)
}

// Send sends resp to the client. It blocks while the stream's buffer is
// full, until the consumer takes a response, ctx ends (ctx.Err()
// returned), or the request is cancelled (an error wrapping the
// cancellation's cause, context.Canceled for a client that went away). It
// returns [ErrAfterFinal] after the final response was sent, and the
// stream's error once the server has ended it (Execute failed).
func (s *Sender) Send(ctx context.Context, resp Response) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.state(); err != nil {
		return err
	}
	resp.sent = time.Now()
	select {
	case s.ch <- resp: // room in the buffer: the common case
	default:
		select {
		case s.ch <- resp:
		case <-s.ended:
			return s.state()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if resp.Final {
		s.end(nil)
	}
	return nil
}

// TrySend is [Sender.Send] without the wait: when the stream's buffer is
// full it returns false and a nil error, and resp is not sent (a backend
// that keeps its own queue sends it later). Its errors are Send's.
func (s *Sender) TrySend(resp Response) (sent bool, err error) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.state(); err != nil {
		return false, err
	}
	resp.sent = time.Now()
	select {
	case s.ch <- resp:
	default:
		return false, nil
	}
	if resp.Final {
		s.end(nil)
	}
	return true, nil
}

// Done returns a channel closed once the stream has ended: the final
// response was sent, or the request was cancelled or failed. A backend
// goroutine selects on it to stop early.
func (s *Sender) Done() <-chan struct{} { return s.ended }

// Err returns why the stream ended other than by a final response (nil
// while it runs, and after a final response).
func (s *Sender) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// state returns the error Send reports in the stream's present state.
func (s *Sender) state() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.final:
		return fmt.Errorf("request %q: %w", s.id, ErrAfterFinal)
	case s.cause != nil:
		return s.cause
	}
	return nil
}

// end ends the stream, with cause nil for a final response; it reports
// false if the stream had ended already.
func (s *Sender) end(cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final || s.cause != nil {
		return false
	}
	if cause == nil {
		s.final = true
	} else {
		s.cause = cause
	}
	close(s.ended)
	return true
}

// Stream is the receiving end of a [Sender]: what the server (or a test
// driving a backend by hand) reads one request's responses from. Recv is
// for one goroutine at a time; End may be called from any.
type Stream struct {
	s *Sender
}

// NewStream returns a stream whose Sender buffers up to buffer responses
// (at least 1) for request id. Schedulers and tests make streams;
// backends receive the Sender through [Request.Sender].
func NewStream(id string, buffer int) *Stream {
	return &Stream{s: &Sender{id: id, ch: make(chan Response, max(buffer, 1)), ended: make(chan struct{})}}
}

// Sender returns the stream's sending end.
func (st *Stream) Sender() *Sender { return st.s }

// End ends the stream with err unless it has ended already (a final
// response was sent): later Sends fail with err, [Sender.Done] is closed,
// and Recv returns err as the final response once the responses buffered
// before it are read. The server ends a stream this way when the request
// is cancelled (err wrapping context.Canceled), when Execute failed, and
// when the model is unloaded. It reports whether it ended the stream.
func (st *Stream) End(err error) bool {
	if err == nil {
		err = errors.New("stream ended")
	}
	return st.s.end(err)
}

// Recv returns the next response. After the stream ended without a final
// response from the backend (End), it returns the responses still
// buffered, then one final response carrying End's error. When ctx ends
// first, it ends the stream with ctx.Err() and returns that as the final
// response. Recv must not be called again after a final response.
func (st *Stream) Recv(ctx context.Context) Response {
	r, _ := st.RecvUntil(ctx, nil)
	return r
}

// RecvUntil is [Stream.Recv] that also gives up when wait is closed first:
// it then returns ok false, and the stream goes on as it was. A nil wait
// never closes.
func (st *Stream) RecvUntil(ctx context.Context, wait <-chan struct{}) (r Response, ok bool) {
	s := st.s
	select {
	case r := <-s.ch:
		return r, true
	default:
	}
	select {
	case r := <-s.ch:
		return r, true
	case <-s.ended:
		select {
		case r := <-s.ch:
			return r, true
		default:
		}
		return Response{Err: s.Err(), Final: true}, true
	case <-ctx.Done():
		st.End(ctx.Err())
		return Response{Err: s.Err(), Final: true}, true
	case <-wait:
		return Response{}, false
	}
}
