package triton

import (
	"context"
	"fmt"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// InferRequest is one inference request. The zero value of every optional
// field means "not given".
//
// Ownership: the input tensors (and their Data) are borrowed until Infer
// returns; the server never retains them and never writes to them.
type InferRequest struct {
	// Model is the model name. Required.
	Model string
	// Version is the model version; 0 lets the version policy choose (the
	// highest-numbered ready version).
	Version int64
	// ID is echoed in the response and in errors about the request.
	ID string
	// Inputs are the input tensors, each named as in the model configuration.
	// For a batching model (max_batch_size > 0) every input's first dimension
	// is the batch size, the same for all inputs.
	Inputs []tensor.Tensor
	// Outputs names the outputs to return; empty means all of them.
	Outputs []string
	// Parameters are request parameters passed to the backend. Values must
	// be bool, int64, uint64, float64 or string.
	Parameters map[string]any
	// Priority is the request's priority level for models whose dynamic
	// batcher has priority levels (1 is highest); 0 means the model's
	// default. A level the model does not have is InvalidArgument.
	Priority uint64
	// Timeout is the request's queue-policy timeout (Triton's "timeout"
	// request parameter): while it waits in a dynamic batcher's queue, the
	// request is rejected (or, under a DELAY policy, moved back) once it has
	// waited this long. It can only shorten the policy's non-zero default,
	// and only where the policy has allow_timeout_override; asking for one
	// elsewhere is InvalidArgument. 0 means the policy's default. Deadlines
	// come from ctx, not from this field.
	Timeout time.Duration
	// SequenceID is the correlation ID of a stateful model's sequence
	// (Triton's sequence_id; 0 means none), SequenceIDString the same as a
	// string (a non-empty one takes precedence). SequenceStart and
	// SequenceEnd flag the first and last request of the sequence. Models
	// without sequence batching ignore all four.
	SequenceID       uint64
	SequenceIDString string
	SequenceStart    bool
	SequenceEnd      bool
}

// InferResponse is the answer to an [InferRequest].
//
// Ownership: the output tensors belong to the caller. Their Data may be a
// view into a buffer the backend produced for a whole batch, so an output
// is not guaranteed to be the only reference to that memory; never write to
// one output expecting the others to stay unchanged.
type InferResponse struct {
	// Model and Version name the model version that ran the request.
	Model   string
	Version int64
	// ID is the request's ID.
	ID string
	// Outputs are the output tensors, in the order the backend produced them.
	Outputs []tensor.Tensor
}

// Output returns the output named name.
func (r *InferResponse) Output(name string) (tensor.Tensor, bool) {
	for i := range r.Outputs {
		if r.Outputs[i].Name == name {
			return r.Outputs[i], true
		}
	}
	return tensor.Tensor{}, false
}

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
	if req == nil {
		return nil, &Error{Code: InvalidArgument, Err: fmt.Errorf("nil request")}
	}
	v, err := s.acquire(req.Model, req.Version)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.RequestID = req.ID
		}
		return nil, err
	}
	defer v.gate.leave()
	return v.infer(ctx, req)
}

func (v *version) infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	t := timing{start: now()}
	batch, err := v.sig.checkInputs(req.Inputs)
	if err == nil {
		err = v.sig.checkOutputs(req.Outputs)
	}
	if err == nil {
		err = checkParameters(req.Parameters)
	}
	if err != nil {
		return nil, v.fail(&t, 0, v.errorf(req, InvalidArgument, err))
	}
	if err := ctx.Err(); err != nil {
		return nil, v.fail(&t, batch, v.errorf(req, classify(err, Cancelled), err))
	}
	if v.cache != nil {
		return v.inferCached(ctx, req, batch, &t)
	}
	return v.run(ctx, req, batch, &t)
}

// run schedules a validated request and waits for its answer.
func (v *version) run(ctx context.Context, req *InferRequest, batch int64, t *timing) (*InferResponse, error) {
	c := callPool.Get().(*call)
	r := &c.req
	r.ID, r.RequestedOutputs, r.Parameters, r.BatchSize = req.ID, req.Outputs, req.Parameters, batch
	r.Inputs = req.Inputs
	if v.sig.reshapes {
		r.Inputs = v.reshapeInputs(c, req.Inputs)
	}
	t.queued = t.start
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
		putCall(c)
		return nil, v.fail(t, batch, v.errorf(req, classify(err, Unavailable), err))
	}
	c.batch.Reset(v.sig.maxBatch > 0, c.reqs[:])
	t.computeStart = t.start
	if inst.waited {
		t.computeStart = now()
	}
	v.put(inst.slot, v.execute(ctx, inst.slot, &c.batch))
	t.computeEnd = now()
	in, inf := c.batch.Marks()
	t.inputsDone, t.inferDone = sinceEpoch(in), sinceEpoch(inf)
	t.executed = batch
	v.stats.execution(batch, t)
	resp, err := v.response(req, r)
	putCall(c)
	v.finish(t, batch, err, t.computeEnd)
	return resp, err
}

// fail records a request that failed before it could run and returns err.
func (v *version) fail(t *timing, rows int64, err error) error {
	v.finish(t, rows, err, 0)
	return err
}

// reshapeInputs gives the backend the config's reshape instead of dims.
func (v *version) reshapeInputs(c *call, inputs []tensor.Tensor) []tensor.Tensor {
	c.in = append(c.in[:0], inputs...)
	for i := range c.in {
		ts := v.sig.input(c.in[i].Name)
		if ts.reshape != nil {
			c.in[i].Shape = v.sig.reshape(c.in[i].Shape, ts.dims, ts.reshape)
		}
	}
	return c.in
}

// response checks what the backend produced and builds the response.
func (v *version) response(req *InferRequest, r *backend.Request) (*InferResponse, error) {
	if err := r.Err(); err != nil {
		code := CodeOf(err)
		if code == Unknown {
			code = Internal
		}
		return nil, v.errorf(req, code, err)
	}
	produced := r.Outputs()
	resp := &InferResponse{Model: v.name, Version: v.number, ID: req.ID, Outputs: make([]tensor.Tensor, 0, len(produced))}
	for _, t := range produced {
		if !r.Wants(t.Name) {
			continue
		}
		t, err := v.sig.checkOutput(t, r.BatchSize)
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
	return resp, nil
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
