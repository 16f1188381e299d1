package grpcapi

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/trace"
)

// maxStreamInFlight bounds the requests of one ModelStreamInfer stream
// that are running or waiting for their sequence's turn; once it is
// reached the stream stops reading requests until one is answered, so
// that gRPC's flow control pushes back on the client.
const maxStreamInFlight = 1024

// ModelStreamInfer serves a bidirectional stream of inference requests
// (protocol spec §2.4). Requests run concurrently as they arrive, except
// that the requests of one sequence (the same model and sequence_id) run
// one after the other, in the order they came, so that their responses
// also keep that order. A model that is not decoupled answers each request
// once, with the parameter triton_final_response = true; a decoupled
// model's responses go out as it sends them, triton_final_response false
// but on the last (see handle for the empty final response).
//
// A failed request is answered in band, with error_message and an
// infer_response holding only the request's id, model_name and
// model_version, and the stream goes on — unless the client sent the
// metadata "triton_grpc_error: true": then the first failure ends the
// stream with its status and cancels the requests still running.
//
// When the client closes its side, the stream ends once every request has
// been answered. When the client cancels, in-flight requests are cancelled
// and the stream ends after they have returned.
func (s *Service) ModelStreamInfer(stream grpc.BidiStreamingServer[inferencepb.ModelInferRequest, inferencepb.ModelStreamInferResponse]) error {
	return s.streamInfer(stream)
}

// streamInfer serves ModelStreamInfer on stream, receiving its requests
// into [received] values and sending large responses as [outgoing] ones,
// for the codec of [ServerCodec] (see [Service.Register]).
func (s *Service) streamInfer(stream grpc.ServerStream) error {
	parent := stream.Context()
	if err := s.allowed(parent, wire.Inference); err != nil {
		return err
	}
	s.compressResponses(parent)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	st := &inferStream{
		s:          s,
		stream:     stream,
		ctx:        ctx,
		cancel:     cancel,
		grpcErrors: wantsGRPCErrors(parent),
		slots:      make(chan struct{}, maxStreamInFlight),
		fatal:      make(chan struct{}),
	}

	// Recv blocks until the client sends or the stream ends, so it runs on
	// a goroutine of its own while this one dispatches requests and can
	// stop at once when a request fails the stream. A request is handed
	// over before the next Recv, and recvDone closes after the last
	// hand-over.
	reqs := make(chan *received)
	recvDone := make(chan struct{})
	var recvErr error
	go func() {
		defer close(recvDone)
		tracing := s.srv.Tracer() != nil
		for {
			r := new(received)
			if tracing {
				r.readStart = time.Now() // GRPC_WAITREAD_START: the read is posted
			}
			if err := stream.RecvMsg(r); err != nil {
				recvErr = err
				return
			}
			if tracing {
				r.readEnd = time.Now()
			}
			select {
			case reqs <- r:
			case <-ctx.Done():
				r.release()
				return
			}
		}
	}()

	received := false // recvDone closed
loop:
	for {
		select {
		case r := <-reqs:
			select {
			case st.slots <- struct{}{}:
				st.dispatch(r)
			case <-ctx.Done():
				r.release()
				break loop
			}
		case <-recvDone:
			received = true
			break loop
		case <-ctx.Done():
			break loop
		}
	}

	if received && recvErr == io.EOF {
		// The client is done sending: answer what is in flight.
		st.wg.Wait()
	} else {
		cancel()
		st.wg.Wait()
	}
	select {
	case <-st.fatal:
		// The receiver may still be in Recv, which only returns once this
		// handler has returned and gRPC has closed the stream; it then
		// ends at once.
		return st.fatalErr
	default:
	}
	if err := parent.Err(); err != nil {
		<-recvDone // Recv returns once the stream's context has ended
		return status.FromContextError(err).Err()
	}
	if received && recvErr != io.EOF {
		return recvErr
	}
	if st.sendErr != nil {
		return st.sendErr
	}
	return nil
}

// wantsGRPCErrors reports whether the client asked for errors as the
// stream's status (metadata triton_grpc_error: true).
func wantsGRPCErrors(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("triton_grpc_error") {
		if v == "true" {
			return true
		}
	}
	return false
}

// inferStream is one ModelStreamInfer call.
type inferStream struct {
	s          *Service
	stream     grpc.ServerStream
	ctx        context.Context // the requests' context: ends with the stream or its first fatal error
	cancel     context.CancelFunc
	grpcErrors bool
	slots      chan struct{} // one per request dispatched and not yet answered
	wg         sync.WaitGroup

	mu   sync.Mutex
	seqs map[seqKey]*seqQueue // sequences with a request running

	sendMu  sync.Mutex
	sendErr error // the first failed Send

	fatalOnce sync.Once
	fatal     chan struct{} // closed on the first error when grpcErrors
	fatalErr  error
}

// seqKey identifies a sequence: its model and correlation ID.
type seqKey struct {
	model string
	id    uint64
	str   string
}

// seqQueue holds the requests of a sequence that wait for the one running.
type seqQueue struct {
	pending []*received
}

// sequenceKey returns the sequence a request belongs to; ok is false for a
// request outside any sequence (no sequence_id, 0 or ""). A sequence_id of
// a wrong type is left to fail when the request runs.
func sequenceKey(r *inferencepb.ModelInferRequest) (k seqKey, ok bool) {
	switch v := r.GetParameters()["sequence_id"].GetParameterChoice().(type) {
	case *inferencepb.InferParameter_Int64Param:
		if v.Int64Param != 0 {
			return seqKey{model: r.GetModelName(), id: uint64(v.Int64Param)}, true
		}
	case *inferencepb.InferParameter_StringParam:
		if v.StringParam != "" {
			return seqKey{model: r.GetModelName(), str: v.StringParam}, true
		}
	}
	return seqKey{}, false
}

// dispatch starts r, or queues it behind the running request of its
// sequence. The caller holds a slot for r.
func (st *inferStream) dispatch(r *received) {
	key, ok := sequenceKey(&r.ModelInferRequest)
	if !ok {
		st.wg.Add(1)
		go func() {
			defer st.wg.Done()
			st.handle(r)
		}()
		return
	}
	st.mu.Lock()
	if q, running := st.seqs[key]; running {
		q.pending = append(q.pending, r)
		st.mu.Unlock()
		return
	}
	if st.seqs == nil {
		st.seqs = make(map[seqKey]*seqQueue)
	}
	q := &seqQueue{}
	st.seqs[key] = q
	st.mu.Unlock()
	st.wg.Add(1)
	go st.runSequence(key, q, r)
}

// runSequence handles r and then the requests queued behind it, in order,
// until the sequence has none waiting.
func (st *inferStream) runSequence(key seqKey, q *seqQueue, r *received) {
	defer st.wg.Done()
	for {
		st.handle(r)
		st.mu.Lock()
		if len(q.pending) == 0 {
			delete(st.seqs, key)
			st.mu.Unlock()
			return
		}
		r = q.pending[0]
		q.pending[0] = nil
		q.pending = q.pending[1:]
		st.mu.Unlock()
	}
}

// handle runs one request, answers it and frees its slot. The only
// response of a request goes out with the request's buffer (or the buffer
// goes back to the pool when it failed); a decoupled model's responses go
// out as they come, each with triton_final_response, and the buffer goes
// back after the last. A decoupled model's final flag without outputs is
// sent as an empty response only when the request's parameter
// triton_enable_empty_final_response is true, as in Triton.
func (st *inferStream) handle(r *received) {
	defer func() { <-st.slots }()
	req := &r.ModelInferRequest
	if r.malformed != nil {
		// A request that does not decode fails alone, as any other bad
		// request of the stream.
		st.fail(req, malformed(r.malformed), true)
		return
	}
	emptyFinal := req.GetParameters()["triton_enable_empty_final_response"].GetBoolParam()
	n, answered := 0, false
	ctx := st.ctx
	ts := st.s.startTrace(st.ctx, st.s.srv.Tracer(), req.GetModelName(), r.readStart, r.readEnd)
	if ts != nil {
		ctx = trace.NewContext(ctx, ts.tr)
		defer ts.done(false)
	}
	st.s.inferEach(ctx, req, func(resp *inferencepb.ModelInferResponse, final bool, err error) bool {
		n++
		if ts != nil {
			if final {
				ts.tr.Stamp(trace.InferResponseComplete, time.Now())
			}
			ts.add(trace.GRPCSendStart)
			defer ts.add(trace.GRPCSendEnd)
		}
		switch {
		case err != nil:
			st.fail(req, err, final)
		case final && len(resp.GetOutputs()) == 0 && !emptyFinal:
			// A decoupled model's final flag alone (every other response has
			// outputs): not sent.
		case final && n == 1:
			setFinal(resp, true)
			st.send(r.answer(&inferencepb.ModelStreamInferResponse{InferResponse: resp}, resp.RawOutputContents))
			answered = true
		default:
			setFinal(resp, final)
			st.send(&inferencepb.ModelStreamInferResponse{InferResponse: resp})
		}
		return !st.broken()
	})
	if !answered {
		r.release()
	}
}

// fail answers a failed request in band, with triton_final_response as
// final says, or ends the stream with its status when the client asked
// for that.
func (st *inferStream) fail(r *inferencepb.ModelInferRequest, err error, final bool) {
	err = st.s.toStatus(err)
	if st.grpcErrors {
		st.fatalOnce.Do(func() {
			st.fatalErr = err
			close(st.fatal)
			st.cancel()
		})
		return
	}
	resp := &inferencepb.ModelInferResponse{ModelName: r.GetModelName(), ModelVersion: r.GetModelVersion(), Id: r.GetId()}
	setFinal(resp, final)
	st.send(&inferencepb.ModelStreamInferResponse{ErrorMessage: status.Convert(err).Message(), InferResponse: resp})
}

// send writes m, a *ModelStreamInferResponse or an [outgoing] one, on the
// stream, one message at a time. Nothing is sent once the stream has
// failed.
func (st *inferStream) send(m any) {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	if st.failed() {
		if o, ok := m.(*outgoing); ok {
			o.release()
		}
		return
	}
	if err := st.stream.SendMsg(m); err != nil {
		// The stream is broken (the client went away): stop the rest.
		if _, ok := status.FromError(err); !ok || errors.Is(err, io.EOF) {
			err = status.Error(codes.Unavailable, err.Error())
		}
		st.sendErr = err
		st.cancel()
	}
}

// broken reports whether the stream has failed (see failed).
func (st *inferStream) broken() bool {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	return st.failed()
}

// failed reports whether the stream has failed: a fatal error, or a failed
// send. The caller holds sendMu.
func (st *inferStream) failed() bool {
	select {
	case <-st.fatal:
		return true
	default:
	}
	return st.sendErr != nil
}

// setFinal gives a stream response its parameters: whether it is its
// request's last (triton_final_response). They go in already encoded, as
// the message's unknown fields, which protobuf writes out as they are and
// a client reads as the parameters map: a response spares the map's three
// allocations and their reflective encoding.
func setFinal(resp *inferencepb.ModelInferResponse, final bool) {
	i := 0
	if final {
		i = 1
	}
	resp.ProtoReflect().SetUnknown(finalParameters[i])
}

// finalParameters are the encoded parameters field of a stream response,
// {"triton_final_response": false} and {…: true}, capped so that nothing
// appends to the shared arrays.
var finalParameters = func() (enc [2]protoreflect.RawFields) {
	for i, final := range []bool{false, true} {
		b, err := proto.Marshal(&inferencepb.ModelInferResponse{Parameters: map[string]*inferencepb.InferParameter{
			"triton_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: final}},
		}})
		if err != nil {
			panic(err)
		}
		enc[i] = b[:len(b):len(b)]
	}
	return enc
}()
