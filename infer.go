// infer.go is the request path: Infer, from validation to response.

package triton

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// InferRequest is one inference request; see [backend.InferRequest]. It is
// defined in package backend so that backends can call other models (see
// [backend.Caller]) without importing this package.
type InferRequest = backend.InferRequest

// InferResponse is the answer to an [InferRequest]; see
// [backend.InferResponse].
type InferResponse = backend.InferResponse

// Infer runs one inference request and waits for its answer. It is safe
// for concurrent use; concurrent requests to a model run on its instances in
// parallel.
//
// Deadlines and cancellation come from ctx: a request whose ctx ends while it
// waits for an instance leaves the queue and fails with Cancelled or
// DeadlineExceeded; once running, the backend sees ctx and Infer waits for
// it to return, so that the inputs are never used after Infer returns.
//
// Errors are [*Error] values: InvalidArgument for a bad request or an
// unknown model, NotFound for a version that is not loaded, Unavailable for
// a model that is not ready or a closing server, Internal for backend
// failures and panics.
func (s *Server) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	return s.infer(ctx, req, fromClient)
}

// origin is who sent a request: the application or an adapter
// (fromClient), or a model, an ensemble step or a BLS call (fromModel),
// which is traced only as a child of a traced request (Triton samples at
// the frontend) and never sampled itself.
type origin uint8

const (
	fromClient origin = iota
	fromModel
)

func (s *Server) infer(ctx context.Context, req *InferRequest, o origin) (*InferResponse, error) {
	if req == nil {
		return nil, &Error{Code: InvalidArgument, Err: fmt.Errorf("nil request")}
	}
	v, err := s.enter(ctx, req.Model, req.Version, nil)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.RequestID = req.ID
		}
		return nil, err
	}
	defer s.leave(v)
	return v.infer(ctx, req, o)
}

func (v *version) infer(ctx context.Context, req *InferRequest, o origin) (*InferResponse, error) {
	if v.decoupled {
		return v.inferOne(ctx, req, o)
	}
	t := timing{start: now()}
	if v.tracer != nil {
		var owned bool
		if ctx, t.tr, owned = v.startTrace(ctx, req, o); owned {
			defer t.tr.End()
		}
	}
	batch, err := v.admit(ctx, req, &t)
	if err != nil {
		return nil, err
	}
	return v.dispatch(ctx, req, batch, &t, nil)
}

// admit validates a request and returns its batch size; a refused request
// is counted as failed.
func (v *version) admit(ctx context.Context, req *InferRequest, t *timing) (int64, error) {
	batch, err := v.sig.CheckInputs(req.Inputs)
	if err == nil {
		err = v.sig.CheckOutputs(req.Outputs)
	}
	if err == nil {
		err = checkParameters(req.Parameters)
	}
	if err != nil {
		return 0, v.fail(t, 0, v.errorf(req, InvalidArgument, err))
	}
	if err := ctx.Err(); err != nil {
		return 0, v.fail(t, batch, v.errorf(req, classify(err, Cancelled), err))
	}
	return batch, nil
}

// dispatch hands a validated request to the version's scheduler. With a
// stream (decoupled models) it returns once Execute has returned, with no
// response: the responses go to the stream.
func (v *version) dispatch(ctx context.Context, req *InferRequest, batch int64, t *timing, st *backend.Stream) (*InferResponse, error) {
	if v.seq != nil {
		return v.inferSequence(ctx, req, batch, t, st)
	}
	if v.cache != nil && st == nil {
		return v.inferCached(ctx, req, batch, t)
	}
	return v.run(ctx, req, batch, t, st)
}

// run schedules a validated request and waits for its answer.
func (v *version) run(ctx context.Context, req *InferRequest, batch int64, t *timing, st *backend.Stream) (*InferResponse, error) {
	c := v.getCall()
	r := &c.req
	if st != nil {
		c.stream = st
		r.SetSender(st.Sender())
	}
	r.ID, r.RequestedOutputs, r.Parameters, r.BatchSize = req.ID, req.Outputs, req.Parameters, batch
	r.Priority, r.Timeout = req.Priority, req.Timeout
	r.SequenceID, r.SequenceIDString, r.SequenceStart, r.SequenceEnd = req.SequenceID, req.SequenceIDString, req.SequenceStart, req.SequenceEnd
	r.Inputs = req.Inputs
	if v.sig.Reshapes {
		c.in = v.sig.ReshapeInputs(c.in[:0], req.Inputs)
		r.Inputs = c.in
	}
	t.queued = t.start
	if t.tr != nil {
		traceTensors(t.tr, trace.TensorQueueInput, req.Inputs)
	}
	if v.dyn != nil {
		v.stats.pending.Add(1)
		return v.inferBatched(ctx, req, c, t)
	}

	// No batcher: the request runs alone, on its own goroutine, on the first
	// instance to come free. Clock reads cost 30-65 ns each here, so the
	// request's start stands for its compute start when an instance was
	// free at once, and its compute end for its end.
	inst, err := v.take(ctx, v.stats)
	if err != nil {
		v.putCall(c)
		return nil, v.fail(t, batch, v.errorf(req, classify(err, Unavailable), err))
	}
	c.batch.Reset(v.sig.MaxBatch > 0, c.reqs[:])
	c.batch.SetLayouts(v.sig.Layouts)
	t.computeStart = t.start
	if inst.waited {
		t.computeStart = now()
	}
	fault := v.execute(ctx, inst.slot, &c.batch)
	t.computeEnd = now() // before put, which may hand the instance to a waiting request
	v.put(inst.slot, fault)
	in, inf := c.batch.Marks()
	t.inputsDone, t.inferDone = sinceEpoch(in), sinceEpoch(inf)
	t.executed = batch
	v.stats.execution(batch, t)
	return v.answer(req, c, t, t.computeEnd)
}

// answer builds the response of a request whose Execute has returned, and
// recycles its call. end is when it finished (0: now). For a stream there
// is no response: a request that failed ends its stream with the error;
// otherwise its responses go on through the Sender.
func (v *version) answer(req *InferRequest, c *call, t *timing, end time.Duration) (*InferResponse, error) {
	if c.req.Rescheduled() && c.req.Err() == nil {
		rows := c.req.BatchSize
		if v.seq == nil || !v.seq.iterative {
			v.putCall(c)
			return nil, v.fail(t, rows, v.errorf(req, Internal, fmt.Errorf("model '%s' rescheduled a request, which needs sequence_batching { iterative_sequence: true } in its configuration", v.name)))
		}
		var state *InferResponse // the implicit state it produced is its next execution's
		if len(v.seq.states) > 0 && c.stream == nil {
			state = &InferResponse{Outputs: slices.Clone(c.req.Outputs())}
		}
		v.putCall(c)
		return state, errRescheduled // inferSequence runs it again
	}
	if st := c.stream; st != nil {
		if err := c.req.Err(); err != nil {
			st.End(v.backendError(req, err))
		} else if outs, params := c.req.Outputs(), c.req.ResponseParameters(); len(outs) > 0 || len(params) > 0 {
			// Outputs set in Execute are its final response, so that a
			// backend.Func serves a decoupled model too. Send waits for
			// room, or fails once the stream has ended.
			_ = st.Sender().Send(context.Background(), backend.Response{Outputs: outs, Final: true, Parameters: params})
		}
		v.putCall(c)
		return nil, nil
	}
	rows := c.req.BatchSize
	resp, err := v.response(req, &c.req)
	if t.tr != nil && err == nil {
		traceTensors(t.tr, trace.TensorBackendOutput, resp.Outputs)
	}
	v.putCall(c)
	v.finish(t, rows, err, end)
	return resp, err
}

// backendError is a backend's failure of req as the client sees it.
func (v *version) backendError(req *InferRequest, err error) error {
	code := CodeOf(err)
	if _, explicit := tritonCode(err); code == Unknown && !explicit {
		code = Internal // unclassified; a TritonError's UNKNOWN stays Unknown
	}
	return v.errorf(req, code, err)
}

// fail records a request that failed before it could run and returns err.
func (v *version) fail(t *timing, rows int64, err error) error {
	v.finish(t, rows, err, 0)
	return err
}

// response checks what the backend produced and builds the response.
func (v *version) response(req *InferRequest, r *backend.Request) (*InferResponse, error) {
	if err := r.Err(); err != nil {
		return nil, v.backendError(req, err)
	}
	produced := r.Outputs()
	resp := &InferResponse{Model: v.name, Version: v.number, ID: req.ID, Outputs: make([]tensor.Tensor, 0, len(produced))}
	for _, t := range produced {
		if !r.Wants(t.Name) {
			continue
		}
		t, err := v.sig.CheckOutput(t, r.BatchSize)
		if err != nil {
			return nil, v.errorf(req, Internal, err)
		}
		resp.Outputs = append(resp.Outputs, t)
	}
	for _, name := range req.Outputs {
		if _, ok := resp.Output(name); !ok {
			return nil, v.errorf(req, Internal, fmt.Errorf("backend did not produce the requested output '%s' of model '%s'", name, v.name))
		}
	}
	if err := v.responseParameters(req, resp, r.ResponseParameters()); err != nil {
		return nil, err
	}
	return resp, nil
}

// responseParameters checks the response parameters a backend set and
// gives them to resp.
func (v *version) responseParameters(req *InferRequest, resp *InferResponse, p map[string]any) error {
	if len(p) == 0 {
		return nil
	}
	err := checkParameters(p)
	for k, val := range p {
		if f, ok := val.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = fmt.Errorf("parameter '%s' is %v, not a finite number", k, f)
		}
	}
	if err != nil {
		return v.errorf(req, Internal, fmt.Errorf("response of model '%s': %w", v.name, err))
	}
	resp.Parameters = p
	return nil
}

func (v *version) errorf(req *InferRequest, code Code, err error) *Error {
	return &Error{Code: code, Model: v.name, Version: v.number, RequestID: req.ID, Err: err}
}

// checkParameters accepts the parameter types of the KServe protocol.
func checkParameters(p map[string]any) error {
	for k, val := range p {
		switch val.(type) {
		case bool, int64, uint64, float64, string:
		default:
			return fmt.Errorf("parameter '%s' has unsupported type %T (want bool, int64, uint64, float64 or string)", k, val)
		}
	}
	return nil
}
