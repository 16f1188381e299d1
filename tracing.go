// tracing.go connects the request path to package trace: which trace a
// request has, and its stages as stamps.

package triton

import (
	"context"
	"time"

	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// startTrace returns the ctx to run req with and its trace: the one an
// adapter started (bound here to the request), a child of the trace of the
// request that makes this one (an ensemble step, a BLS call: ctx carries
// a bound trace), or, for a request from the application, one the tracer
// samples. A call from a request that is not traced is not sampled, as in
// Triton. owned: the caller ends the trace when the request is done (the
// adapter ends its own).
//
// The common case costs two atomic loads and the sampler's countdown: ctx
// is searched for a trace only when one can be there (a call from a
// model, or some trace is open).
func (v *version) startTrace(ctx context.Context, req *InferRequest, o origin) (_ context.Context, tr *trace.Trace, owned bool) {
	if !v.tracer.Active() {
		return ctx, nil, false // no setting traces (an adapter, or a parent, has started nothing either)
	}
	if o == fromModel || v.tracer.Open() {
		tr = trace.FromContext(ctx)
	}
	switch {
	case tr == nil:
		if o == fromModel {
			return ctx, nil, false
		}
		tr = v.tracer.Start(ctx, v.name, nil)
		owned = true
	case tr.Bound():
		tr = tr.Child()
		owned = true
	}
	if tr == nil {
		return ctx, nil, false
	}
	if owned {
		ctx = trace.NewContext(ctx, tr)
	}
	tr.Bind(v.name, v.number, req.ID)
	return ctx, tr, owned
}

// traceStages stamps the stages a finished request reached, from the
// times the request path measured: REQUEST_START, QUEUE_START, the four
// COMPUTE_* (a backend that marks no input or output stage has them at
// its compute start and end), and REQUEST_END, now.
func traceStages(t *timing) {
	tr := t.tr
	tr.Stamp(trace.RequestStart, stampTime(t.start))
	if t.queued != 0 {
		tr.Stamp(trace.QueueStart, stampTime(t.queued))
	}
	if t.computeStart != 0 {
		in, out := t.inputsDone, t.inferDone
		if in == 0 {
			in = t.computeStart
		}
		if out == 0 {
			out = t.computeEnd
		}
		tr.Stamp(trace.ComputeStart, stampTime(t.computeStart))
		tr.Stamp(trace.ComputeInputEnd, stampTime(in))
		tr.Stamp(trace.ComputeOutputStart, stampTime(out))
		tr.Stamp(trace.ComputeEnd, stampTime(t.computeEnd))
	}
	tr.Stamp(trace.RequestEnd, stampTime(now()))
}

// stampTime converts the request path's clock to a time with its
// monotonic reading.
func stampTime(d time.Duration) time.Time { return epoch.Add(d) }

// traceTensors records tensors at level TENSORS.
func traceTensors(tr *trace.Trace, a trace.TensorActivity, ts []tensor.Tensor) {
	if tr.Level()&settings.TraceTensors == 0 {
		return
	}
	for _, x := range ts {
		tr.Tensor(a, x)
	}
}

// Tracer returns the tracer of [WithTracer], nil without one: the adapters
// start with it the traces of the requests they receive.
func (s *Server) Tracer() *trace.Tracer { return s.opts.tracer }
