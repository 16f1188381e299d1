package client

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Timing is the client's own share of one inference call: the time it
// spent sending the request and receiving the response, as opposed to
// waiting for the server. perf_analyzer reports these as Client Send and
// Client Recv; the rest of the call is its "response wait". Attach one to
// a context with [WithTiming]; the HTTP and gRPC clients fill it in.
//
// What each transport counts:
//
//   - HTTP: Send runs from the start of [HTTP.Infer] (encoding the JSON
//     header, compressing the body when asked, building the request,
//     taking a pooled connection or dialling one) until net/http reports
//     the whole request written (httptrace's WroteRequest: the headers and
//     body handed to the connection's write buffer; the buffer's last
//     flush, one write(2) of at most 64 KiB, is not in it). Recv runs from
//     the moment the response's headers are in (http.Client.Do returns)
//     until the body has been read and decoded into a
//     [triton.InferResponse], decompression included. A request the server
//     answered before net/http reported it written (an early error for a
//     large body) has Send up to the answer's headers.
//   - gRPC: Send is the marshalling of the request: building the
//     ModelInferRequest from the [triton.InferRequest] plus protobuf's
//     encoding of it (the client's codec); Recv is the unmarshalling of the
//     response: protobuf's decoding plus its conversion to a
//     [triton.InferResponse]. gRPC's stream set-up, compression, framing
//     and writes are not in either, nor is the wait. For InferStream, Send
//     is the one request's and Recv the sum over the responses received
//     so far.
//
// [Local] and the server itself ([triton.Server.Infer]) do not measure:
// they leave a Timing as it was (zero if it was), as there is no wire.
type Timing struct {
	Send time.Duration
	Recv time.Duration
}

// timingKey is the context key of the *timer of WithTiming.
type timingKey struct{}

// timer is what WithTiming attaches: the caller's Timing and the state a
// call measures with. It is built once per WithTiming, not per call, so
// that a context reused call after call measures without allocating.
type timer struct {
	t *Timing
	// wrote is when net/http reported the request written (on the
	// package's clock; 0: not yet). The httptrace hook sets it on
	// net/http's writing goroutine, hence the atomic.
	wrote atomic.Int64
	// req and resp wrap a gRPC call's messages, so that the client's
	// codec knows to time them; they are reused call after call.
	req, resp timedMessage
	// send and recv accumulate a gRPC call's codec time, ns.
	send, recv int64
}

// WithTiming returns a context that asks the HTTP and gRPC clients to
// report, in *t, the client-side time of each Infer and InferStream call
// made with it (see [Timing] for what is counted). Every call resets *t
// when it starts and sets it before it returns, on errors too (with what
// it measured); InferStream updates Recv before yielding each response.
//
// Build the context once and reuse it: the calls then measure with a few
// clock reads and allocate nothing more than without it. A Timing (and so
// the context) serves one call at a time: concurrent calls with the same
// one race on it; give each goroutine its own. Without WithTiming the
// clients measure nothing, at the cost of one context lookup. A nil t
// returns ctx unchanged.
//
// The context also carries an [httptrace.ClientTrace] (composed with any
// trace ctx already had) whose WroteRequest hook the HTTP client reads.
func WithTiming(ctx context.Context, t *Timing) context.Context {
	if t == nil {
		return ctx
	}
	tm := &timer{t: t}
	tm.req.tm, tm.resp.tm = tm, tm
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { tm.wrote.Store(now()) },
	})
	return context.WithValue(ctx, timingKey{}, tm)
}

// ContextTiming returns the Timing that [WithTiming] attached to ctx, or
// nil: for [Conn] implementations outside this package (wrappers, fakes in
// tests) that report timings of their own.
func ContextTiming(ctx context.Context) *Timing {
	if tm := timerOf(ctx); tm != nil {
		return tm.t
	}
	return nil
}

// timerOf returns the timer of ctx, or nil.
func timerOf(ctx context.Context) *timer {
	tm, _ := ctx.Value(timingKey{}).(*timer)
	return tm
}

// epoch is the origin of now.
var epoch = time.Now()

// now reads the monotonic clock: ns since epoch, never 0.
func now() int64 { return max(int64(time.Since(epoch)), 1) }

// timedMessage is a gRPC message whose encoding or decoding the client's
// codec times into tm.
type timedMessage struct {
	msg any
	tm  *timer
}

// timingCodec is the gRPC client's codec: grpc-go's protobuf codec, which
// it times for the messages wrapped in a *timedMessage. Every call of the
// client goes through it (a codec is chosen per connection); without a
// Timing the only cost is a type assertion per message.
type timingCodec struct {
	proto encoding.CodecV2
}

var _ encoding.CodecV2 = timingCodec{}

func newTimingCodec() timingCodec { return timingCodec{proto: encoding.GetCodecV2(grpcproto.Name)} }

// Name is empty, so that grpc-go names no content-subtype: requests go as
// application/grpc, as with grpc-go's own codec (a name would make it
// build "application/grpc+proto" for every call, an allocation, and the
// server parse it back).
func (timingCodec) Name() string { return "" }

func (c timingCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*timedMessage)
	if !ok {
		return c.proto.Marshal(v)
	}
	t := now()
	out, err := c.proto.Marshal(m.msg)
	m.tm.send += now() - t
	return out, err
}

func (c timingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*timedMessage)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	t := now()
	err := c.proto.Unmarshal(data, m.msg)
	m.tm.recv += now() - t
	return err
}

// sent ends an HTTP call's Send, which began at start: at net/http's
// report that the request was written, or now if it has not reported it
// (the server answered first). It returns now, where Recv begins.
func (tm *timer) sent(start int64) int64 {
	t := now()
	w := tm.wrote.Load()
	if w < start || w > t {
		w = t
	}
	tm.t.Send = time.Duration(w - start)
	return t
}

// received ends an HTTP call's Recv, which began at from.
func (tm *timer) received(from int64) { tm.t.Recv = time.Duration(now() - from) }

// begin starts a gRPC call's measurement; it returns the start of Send.
func (tm *timer) begin() int64 {
	*tm.t = Timing{}
	tm.send, tm.recv = 0, 0
	return now()
}
