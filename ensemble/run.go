package ensemble

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Backend is the ensemble scheduler as a [backend.Backend]: the server
// loads every model whose platform is "ensemble" with it. Its model runs
// each request's steps as ordinary requests to the composing models
// through the [backend.Caller] the server hands it, so every composing
// model keeps its own scheduler, batcher and instances.
//
// # Execution
//
// A step starts as soon as every ensemble tensor it reads exists. The
// goroutine that runs the ensemble request coordinates: when one step is
// ready and nothing else runs (a chain), it runs the step itself; when
// several are ready (branches), each runs on its own goroutine and the
// coordinator starts the steps they unblock as they finish. Tensors pass
// between steps without copies: an ensemble tensor is the producing step's
// output, renamed.
//
// Only the steps that lead to the requested outputs run, and each is asked
// only for the outputs something downstream reads.
//
// The first step to fail cancels the others; the request fails with its
// error, which names the ensemble, the step and the composing model and
// keeps the composing model's error code. The request's ctx (deadline,
// cancellation) reaches every step. The request ID, parameters, sequence
// fields, priority and timeout are passed to every step; a priority level
// a composing model does not have, or a timeout its queue policy does not
// take, is dropped for that step rather than failing it.
//
// As in Triton, a step's response parameters sequence_id, sequence_start
// and sequence_end become the sequence fields of the steps that read its
// outputs (a step that sets none passes its own on), and the ensemble's
// response carries its outputs' as those three parameters.
//
// # Batch dimension
//
// An ensemble tensor's first dimension reaches a batching composing model
// (max_batch_size > 0) as its batch dimension, whatever the ensemble's own
// max_batch_size. So a non-batching ensemble can carry a variable count
// (the lines an OCR detector finds) through batching steps, as long as it
// stays within each step's max_batch_size; a count that can exceed it is
// the job of a Go model that calls the step in chunks (BLS).
//
// # Decoupled steps
//
// A step may use a decoupled model when the ensemble is decoupled too
// (model_transaction_policy { decoupled: true }): each response of that
// step flows on through the steps after it, on a copy of the request's
// tensors, and every time those finish the ensemble answers once with its
// outputs; the final flag follows the last. Every other step must come
// before the decoupled step or after it (a tokenizer, a streaming model, a
// detokenizer): a step beside it would run either once for all of its
// responses or once for each, so such an ensemble fails to load. A
// response's steps finish before the next response is taken, so the
// ensemble's responses keep the decoupled step's order.
//
// # Backpressure
//
// ensemble_scheduling.max_inflight_requests (when non-zero) limits how
// many requests each step has in flight at once, over all requests of the
// ensemble; a step waits for a slot (or for its ctx to end) before it
// calls its model, in the order the requests asked.
//
// The model parameter max_inflight_ensemble_requests (ours; Triton has no
// such field and ignores the parameter), a positive integer, limits how
// many requests of the ensemble run at once, over all its steps; the
// others wait in the order they came (or until their ctx ends) before
// their first step. It is what the instance count of a Go model that calls
// the same steps (BLS) does: that model holds at most as many requests as
// it has instances, so each step's batcher sees at most that many at once,
// and at most that many steps run at a time. An unlimited ensemble lets
// every caller into every step's queue, and on a CPU the batches that
// grow there cost more per request than a batch of one (cache misses), as
// does running more steps at once than there are cores. examples/ocr's
// PP-OCR ensemble, with max_inflight_ensemble_requests 2 (its BLS form has
// two instances), reads pages from 16 callers as fast as the BLS form;
// max_inflight_requests 2 instead leaves up to two requests in each of its
// seven steps (about 0.96 of BLS), and no limit lets batches of every
// caller form (about 0.83; BenchmarkThroughput and BenchmarkBatchCost in
// examples/ocr/ppocr).
type Backend struct{}

var _ backend.Backend = Backend{}

// Load compiles the ensemble against its composing models, which the
// server must have loaded first.
func (Backend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	if spec.Caller == nil {
		return nil, fmt.Errorf("ensemble '%s': the server gave no Caller to run the steps with", spec.Name)
	}
	p, err := Compile(spec.Config, spec.Caller.ModelConfig)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", backend.ErrInvalidInput, err)
	}
	if spec.Config.GetResponseCache().GetEnable() {
		for _, st := range p.steps {
			if st.stateful {
				return nil, fmt.Errorf("%w: ensemble '%s' has a response cache, but its step %d model '%s' is stateful (sequence batching) and cannot be cached",
					backend.ErrInvalidInput, p.name, st.index, st.model)
			}
		}
	}
	m := &model{plan: p, caller: spec.Caller, log: spec.Logger}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	if n := spec.Config.GetEnsembleScheduling().GetMaxInflightRequests(); n > 0 {
		m.inflight = make([]*semaphore.Weighted, len(p.steps))
		for i := range m.inflight {
			m.inflight[i] = semaphore.NewWeighted(int64(n))
		}
	}
	if v, ok := spec.Parameter(MaxInflightEnsembleRequests); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%w: ensemble '%s': parameter %s is %q; want a positive integer, the requests of the ensemble that run at once",
				backend.ErrInvalidInput, p.name, MaxInflightEnsembleRequests, v)
		}
		m.running = semaphore.NewWeighted(n)
	}
	return m, nil
}

// MaxInflightEnsembleRequests is the model parameter that limits how many
// requests of an ensemble run at once (see [Backend]).
const MaxInflightEnsembleRequests = "max_inflight_ensemble_requests"

// model is a loaded ensemble. It is its own instance: Execute keeps no
// state between calls and is safe for concurrent use, so the server
// shares one instance between all requests.
type model struct {
	plan     *Plan
	caller   backend.Caller
	inflight []*semaphore.Weighted // per step; nil: no limit
	running  *semaphore.Weighted   // requests of the ensemble; nil: no limit
	log      *zap.Logger
}

var (
	_ backend.Model    = (*model)(nil)
	_ backend.Instance = (*model)(nil)
	_ backend.Readier  = (*model)(nil)
)

func (m *model) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return m, nil
}

func (m *model) Close() error { return nil }

// Execute runs every request of the batch through the steps. A decoupled
// ensemble sends each answer as it is complete and then the final flag.
func (m *model) Execute(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		err := m.run(ctx, r)
		if s := r.Sender(); s != nil && err == nil {
			err = s.Send(ctx, backend.Response{Final: true})
		}
		if err != nil {
			r.Fail(err)
		}
	}
	return nil
}

// Ready reports whether every composing model is ready: an ensemble is
// ready only when all of them are.
func (m *model) Ready(ctx context.Context) error {
	for _, ref := range m.plan.Models() {
		if !m.caller.ModelReady(ctx, ref.Name, ref.Version) {
			return fmt.Errorf("ensemble '%s': composing model '%s' is not ready", m.plan.name, ref.Name)
		}
	}
	return nil
}

// outcome is a finished step.
type outcome struct {
	step int
	seq  sequence // its request's sequence fields
	resp *backend.InferResponse
	err  error
}

// sequence is the correlation ID and start and end flags an ensemble
// tensor carries, as Triton's ensemble scheduler keeps them: a step's
// outputs carry its request's, or those its response's parameters
// sequence_id, sequence_start and sequence_end set; a step's request takes
// those of the tensors it reads (the ensemble request's for its inputs).
type sequence struct {
	set        bool // a step produced the tensor (an ensemble input carries none)
	id         uint64
	idStr      string
	start, end bool
}

// requestSequence is req's sequence fields.
func requestSequence(req *backend.InferRequest) sequence {
	return sequence{set: true, id: req.SequenceID, idStr: req.SequenceIDString, start: req.SequenceStart, end: req.SequenceEnd}
}

// responseSequence is what the outputs of a step whose request had seq
// carry: seq, or, when the response sets any of sequence_id,
// sequence_start and sequence_end, seq's ID with those (the flags it does
// not set are false), as Triton's. A value of another type is Triton's
// INVALID_ARG error.
func responseSequence(seq sequence, p map[string]any) (sequence, error) {
	id, hasID := p["sequence_id"]
	start, hasStart := p["sequence_start"]
	end, hasEnd := p["sequence_end"]
	if !hasID && !hasStart && !hasEnd {
		return seq, nil
	}
	out := sequence{set: true, id: seq.id, idStr: seq.idStr}
	if hasID {
		switch v := id.(type) {
		case int64:
			out.id, out.idStr = uint64(v), ""
		case uint64:
			out.id, out.idStr = v, ""
		case string:
			out.id, out.idStr = 0, v
		default:
			return sequence{}, fmt.Errorf("expected parameter 'sequence_id' to be TRITONSERVER_PARAMETER_INT or TRITONSERVER_PARAMETER_STRING: %w", backend.ErrInvalidInput)
		}
	}
	for _, f := range []struct {
		name string
		v    any
		has  bool
		to   *bool
	}{{"sequence_start", start, hasStart, &out.start}, {"sequence_end", end, hasEnd, &out.end}} {
		if !f.has {
			continue
		}
		b, ok := f.v.(bool)
		if !ok {
			return sequence{}, fmt.Errorf("expect parameter '%s' to be TRITONSERVER_PARAMETER_BOOL: %w", f.name, backend.ErrInvalidInput)
		}
		*f.to = b
	}
	return out, nil
}

// run executes one request: the coordinator loop described on [Backend].
func (m *model) run(ctx context.Context, r *backend.Request) error {
	p := m.plan
	if m.running != nil {
		if err := m.running.Acquire(ctx, 1); err != nil {
			return fmt.Errorf("in ensemble '%s': waiting to run (parameter %s): %w", p.name, MaxInflightEnsembleRequests, err)
		}
		defer m.running.Release(1)
	}
	n := p.all
	if len(r.RequestedOutputs) > 0 {
		want := make([]int, 0, len(r.RequestedOutputs))
		for _, name := range r.RequestedOutputs {
			if id, ok := p.ids[name]; ok {
				want = append(want, id)
			}
		}
		n = p.needed(want)
	}
	e := &execution{m: m, r: r, n: n,
		vals:    make([]tensor.Tensor, len(p.tensors)),
		have:    make([]bool, len(p.tensors)),
		seqs:    make([]sequence, len(p.tensors)),
		waiting: make([]int, len(p.steps)),
	}
	for _, id := range p.inputs {
		if t, ok := r.Input(p.tensors[id]); ok {
			e.vals[id], e.have[id] = t, true
		}
	}
	for i, st := range p.steps {
		if !n.steps[i] {
			continue
		}
		e.waiting[i] = len(st.deps)
		if e.waiting[i] == 0 {
			e.ready = append(e.ready, i)
		}
	}
	return e.drive(ctx)
}

// execution is the state of one request's run, owned by its coordinator.
type execution struct {
	m       *model
	r       *backend.Request
	n       need
	vals    []tensor.Tensor // ensemble tensors by id
	have    []bool
	seqs    []sequence // the sequence fields each tensor carries
	waiting []int      // unfinished producers per step
	ready   []int
	failed  error
}

// fork copies the state, for the steps after a decoupled step to run once
// per response of it.
func (e *execution) fork() *execution {
	f := *e
	f.vals, f.have, f.seqs = slices.Clone(e.vals), slices.Clone(e.have), slices.Clone(e.seqs)
	f.waiting, f.ready = slices.Clone(e.waiting), slices.Clone(e.ready)
	return &f
}

// finish records a finished step and makes ready the steps it unblocks;
// the first failure is kept and cancels the others (cancel).
func (e *execution) finish(o outcome, cancel context.CancelFunc) {
	if e.failed != nil {
		return
	}
	p := e.m.plan
	if o.err == nil {
		o.err = e.m.keep(o, e.n, e.vals, e.have, e.seqs)
	}
	if o.err != nil {
		st := &p.steps[o.step]
		e.failed = fmt.Errorf("in ensemble '%s', step %d (model '%s'): %w", p.name, o.step, st.model, o.err)
		cancel()
		return
	}
	for _, j := range p.steps[o.step].next {
		if e.n.steps[j] {
			if e.waiting[j]--; e.waiting[j] == 0 {
				e.ready = append(e.ready, j)
			}
		}
	}
}

// drive runs the ready steps and those they unblock until none is left,
// then answers with the outputs. A decoupled step is run by stream.
func (e *execution) drive(ctx context.Context) error {
	p := e.m.plan
	var (
		// Made when a step first runs on its own goroutine: a chain runs
		// on this goroutine and needs neither.
		results chan outcome
		cancel  context.CancelFunc = func() {}
		running int
	)
	for {
		if e.failed == nil && len(e.ready) > 0 {
			if len(e.ready) == 1 && running == 0 {
				i := e.ready[0]
				e.ready = e.ready[:0]
				if p.steps[i].decoupled {
					// Alone by the plan's rule (checkDecoupled): every
					// other step has run or comes after it.
					return e.stream(ctx, i)
				}
				e.finish(e.m.call(ctx, i, e.m.request(e.r, i, e.n, e.vals, e.have, e.seqs)), cancel)
				continue
			}
			if results == nil {
				results = make(chan outcome, len(p.steps))
				var stop context.CancelFunc
				ctx, stop = context.WithCancel(ctx)
				defer stop() // once: results is made once
				cancel = stop
			}
			for _, i := range e.ready {
				req := e.m.request(e.r, i, e.n, e.vals, e.have, e.seqs)
				running++
				go func() { results <- e.m.call(ctx, i, req) }()
			}
			e.ready = e.ready[:0]
		}
		if running == 0 {
			break
		}
		o := <-results
		running--
		e.finish(o, cancel)
	}
	if e.failed != nil {
		return e.failed
	}
	return e.answer(ctx)
}

// stream runs decoupled step i and, for each of its responses, the steps
// after it on a fork of the state, each fork answering on its own. The
// step's inflight slot is held for the whole stream.
func (e *execution) stream(ctx context.Context, i int) error {
	p := e.m.plan
	if e.m.inflight != nil {
		if err := e.m.inflight[i].Acquire(ctx, 1); err != nil {
			return fmt.Errorf("in ensemble '%s', step %d (model '%s'): waiting for an inflight slot (max_inflight_requests): %w", p.name, i, p.steps[i].model, err)
		}
		defer e.m.inflight[i].Release(1)
	}
	req := e.m.request(e.r, i, e.n, e.vals, e.have, e.seqs)
	for resp, err := range e.m.caller.InferStream(ctx, req) {
		f := e.fork()
		f.finish(outcome{step: i, seq: requestSequence(req), resp: resp, err: err}, func() {})
		if f.failed != nil {
			return f.failed
		}
		if err := f.drive(ctx); err != nil {
			return err
		}
	}
	return nil
}

// answer hands the request its outputs: as a response of its own for a
// decoupled ensemble, as the request's outputs otherwise.
//
// As Triton's, the answer carries the sequence fields of its outputs (of
// the first that a step produced) as the response parameters sequence_id
// (a string when the request's correlation ID is one), sequence_start and
// sequence_end.
func (e *execution) answer(ctx context.Context) error {
	p := e.m.plan
	var outs []tensor.Tensor
	var seq sequence
	for _, id := range p.outputs {
		if name := p.tensors[id]; e.r.Wants(name) && e.have[id] {
			if !seq.set {
				seq = e.seqs[id]
			}
			if e.r.Sender() == nil {
				e.r.SetOutput(e.vals[id])
			} else {
				outs = append(outs, e.vals[id])
			}
		}
	}
	var params map[string]any
	if seq.set {
		var id any = int64(seq.id)
		if e.r.SequenceIDString != "" {
			id = seq.idStr
		}
		params = map[string]any{"sequence_id": id, "sequence_start": seq.start, "sequence_end": seq.end}
	}
	if s := e.r.Sender(); s != nil {
		return s.Send(ctx, backend.Response{Outputs: outs, Parameters: params})
	}
	for k, v := range params {
		e.r.SetParameter(k, v)
	}
	return nil
}

// request builds the composing request of step i. It runs on the
// coordinator, which owns vals. Its sequence fields are those of the
// tensors it reads (the first, when they differ: logged, as Triton does),
// else the ensemble request's.
func (m *model) request(r *backend.Request, i int, n need, vals []tensor.Tensor, have []bool, seqs []sequence) *backend.InferRequest {
	st := &m.plan.steps[i]
	req := &backend.InferRequest{
		Model:            st.model,
		Version:          st.version,
		ID:               r.ID,
		Inputs:           make([]tensor.Tensor, 0, len(st.reads)),
		Parameters:       r.Parameters,
		SequenceID:       r.SequenceID,
		SequenceIDString: r.SequenceIDString,
		SequenceStart:    r.SequenceStart,
		SequenceEnd:      r.SequenceEnd,
	}
	req.Priority, req.Timeout = st.scheduling(r.Priority, r.Timeout)
	var seq sequence
	for _, b := range st.reads {
		if have[b.tensor] { // an absent optional ensemble input stays absent
			t := vals[b.tensor]
			t.Name = b.name
			req.Inputs = append(req.Inputs, t)
		}
		switch s := seqs[b.tensor]; {
		case !s.set:
		case !seq.set:
			seq = s
		case s != seq:
			m.log.Error(fmt.Sprintf("in ensemble '%s', the tensors step %d (model '%s') reads carry different sequence fields; those of the first are used",
				m.plan.name, i, st.model), zap.String("request", r.ID))
		}
	}
	if seq.set {
		req.SequenceID, req.SequenceIDString, req.SequenceStart, req.SequenceEnd = seq.id, seq.idStr, seq.start, seq.end
	}
	req.Outputs = st.outputs
	if !all(n.tensors, st.writes) {
		req.Outputs = nil
		for _, w := range st.writes {
			if n.tensors[w.tensor] {
				req.Outputs = append(req.Outputs, w.name)
			}
		}
	}
	return req
}

// all reports whether every tensor written is needed.
func all(needed []bool, writes []binding) bool {
	return !slices.ContainsFunc(writes, func(w binding) bool { return !needed[w.tensor] })
}

// call runs step i's request on its model, within the step's inflight
// limit.
func (m *model) call(ctx context.Context, i int, req *backend.InferRequest) outcome {
	if m.inflight != nil {
		if err := m.inflight[i].Acquire(ctx, 1); err != nil {
			return outcome{step: i, seq: requestSequence(req), err: fmt.Errorf("waiting for an inflight slot (max_inflight_requests): %w", err)}
		}
		defer m.inflight[i].Release(1)
	}
	resp, err := m.caller.Infer(ctx, req)
	return outcome{step: i, seq: requestSequence(req), resp: resp, err: err}
}

// keep stores the outputs of a finished step as ensemble tensors, with the
// sequence fields they carry.
func (m *model) keep(o outcome, n need, vals []tensor.Tensor, have []bool, seqs []sequence) error {
	seq, err := responseSequence(o.seq, o.resp.Parameters)
	if err != nil {
		return err
	}
	for _, w := range m.plan.steps[o.step].writes {
		if !n.tensors[w.tensor] {
			continue
		}
		t, ok := o.resp.Output(w.name)
		if !ok {
			return fmt.Errorf("the response has no output '%s'", w.name)
		}
		t.Name = m.plan.tensors[w.tensor]
		vals[w.tensor], have[w.tensor], seqs[w.tensor] = t, true, seq
	}
	return nil
}
