// sequence.go is sequence batching: correlation IDs, control and state
// tensors, around the scheduling of batcher.Sequence.

package triton

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// A model with sequence_batching is stateful: every request names a
// sequence (a correlation ID), and the requests of one sequence run one
// after the other, in the order they arrived, while requests of different
// sequences share batches. The scheduling — admission within the model's
// capacity of live sequences, per-sequence order, cancellation, the idle
// sweep, the strategies' batching — is batcher.Sequence's; the sequencer
// of a version adds what needs tensors and the model configuration:
//
//   - the correlation ID must be given and of the kind the CORRID control
//     takes (a number, or TYPE_STRING);
//   - the control tensors (START, END, READY, CORRID) with the configured
//     datatypes and values, and the implicit state, are added to the
//     request's inputs, each with a batch dimension of 1 (at the state's
//     batch axis, "batch_axis:<name>", for states laid out as
//     [layers, batch, hidden]);
//   - the state outputs the backend produces are kept as the sequence's
//     state for its next request and taken out of the response, unless
//     the config lists them as outputs too;
//   - a Model that implements backend.SequenceObserver is told when a
//     sequence ends (Triton never tells backends).
//
// Ready requests then take the ordinary path (run), batching in the
// version's dynamic batcher configured by the strategy
// (batcher.SequenceConfig.Batching). Batches hold ready requests only: the
// direct strategy's fixed slot positions, with READY=false padding rows,
// are not reproduced; backends that keep state per sequence key it on
// CORRID instead of on the row.
type sequencer struct {
	v         *version
	sched     *batcher.Sequence[seqKey, []tensor.Tensor]
	cfg       batcher.SequenceConfig
	controls  []control
	states    []stateSpec
	stringIDs bool // the CORRID control is TYPE_STRING
	uintIDs   bool // the CORRID control is numeric
	observer  backend.SequenceObserver
	iterative bool          // iterative_sequence: a request without a correlation ID is a sequence of its own
	generated atomic.Uint64 // the last correlation ID given to such a request
}

// seqKey is a correlation ID: a number or a string, or one the server
// gave a request of an iterative sequence (gen), apart from the clients'.
type seqKey struct {
	n   uint64
	s   string
	gen bool
}

// errRescheduled is what run returns for a request the backend
// rescheduled (backend.Request.Reschedule): it runs again.
var errRescheduled = errors.New("rescheduled")

func (k seqKey) String() string {
	if k.s != "" {
		return k.s
	}
	return strconv.FormatUint(k.n, 10)
}

// control is one control tensor to add to every request.
type control struct {
	name        string
	kind        modelconfig.ModelSequenceBatching_Control_Kind
	dtype       tensor.DataType
	false, true []byte // the element values of the flag (START, END, READY)
}

// stateSpec is one implicit state.
type stateSpec struct {
	input, output string
	dtype         tensor.DataType
	shape         tensor.Shape // per request: dims with a batch of 1 at axis (batching models)
	initial       []byte
}

// newSequencer compiles a version's sequence_batching and starts its
// scheduler. fsys is the model folder (initial_state data files live
// under <model>/initial_state/).
func newSequencer(v *version, fsys fs.FS, instances int) (*sequencer, error) {
	sb := v.cfg.GetSequenceBatching()
	s := &sequencer{v: v, cfg: sequenceConfig(v.cfg, instances), iterative: sb.GetIterativeSequence()}
	for _, ci := range sb.GetControlInput() {
		for _, c := range ci.GetControl() {
			ctl, err := compileControl(ci.GetName(), c)
			if err != nil {
				return nil, err
			}
			if c.GetKind() == modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID {
				s.stringIDs, s.uintIDs = ctl.dtype == tensor.Bytes, ctl.dtype != tensor.Bytes
			}
			s.controls = append(s.controls, ctl)
		}
	}
	for _, st := range sb.GetState() {
		spec, err := compileState(v, fsys, st)
		if err != nil {
			return nil, err
		}
		s.states = append(s.states, spec)
	}
	if p, ok := v.cfg.GetParameters()["sequence_backlog"]; ok {
		switch p.GetStringValue() {
		case "wait":
		case "reject":
			s.cfg.Reject = true
		default:
			return nil, fmt.Errorf("parameter \"sequence_backlog\": want wait or reject, got %q", p.GetStringValue())
		}
	}
	s.observer, _ = v.model.(backend.SequenceObserver)
	sched, err := batcher.NewSequence[seqKey, []tensor.Tensor](s.cfg, batcher.SequenceEnv[seqKey]{Ended: s.ended})
	if err != nil {
		return nil, fmt.Errorf("sequence_batching: %w", err)
	}
	s.sched = sched
	return s, nil
}

// maxStateBytes bounds one implicit state of one sequence: every live
// sequence holds its own, allocated when the model loads (the initial
// state) and as sequences start.
const maxStateBytes = 1 << 30

// sequenceConfig translates sequence_batching into the scheduler's terms.
func sequenceConfig(cfg *modelconfig.ModelConfig, instances int) batcher.SequenceConfig {
	sb := cfg.GetSequenceBatching()
	sc := batcher.SequenceConfig{
		MaxBatchSize:  int64(cfg.GetMaxBatchSize()),
		Instances:     instances,
		MaxIdle:       micros(sb.GetMaxSequenceIdleMicroseconds()),
		MaxQueueDelay: micros(sb.GetDirect().GetMaxQueueDelayMicroseconds()),
	}
	if o := sb.GetOldest(); o != nil {
		sc.Oldest = true
		sc.MaxCandidateSequences = int64(o.GetMaxCandidateSequences())
		sc.MaxQueueDelay = micros(o.GetMaxQueueDelayMicroseconds())
		for _, p := range o.GetPreferredBatchSize() {
			sc.PreferredSizes = append(sc.PreferredSizes, int64(p))
		}
	}
	return sc
}

func compileControl(name string, c *modelconfig.ModelSequenceBatching_Control) (control, error) {
	ctl := control{name: name, kind: c.GetKind()}
	if c.GetKind() == modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID {
		ctl.dtype = tensor.DataType(c.GetDataType())
		switch ctl.dtype {
		case tensor.Uint64, tensor.Int64, tensor.Uint32, tensor.Int32, tensor.Bytes:
			return ctl, nil
		}
		return ctl, fmt.Errorf("sequence_batching control '%s': CONTROL_SEQUENCE_CORRID data_type %s is not TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING", name, c.GetDataType())
	}
	pair := func(dt tensor.DataType, f, t []byte) (control, error) {
		ctl.dtype, ctl.false, ctl.true = dt, f, t
		return ctl, nil
	}
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	switch {
	case len(c.GetInt32FalseTrue()) == 2:
		v := c.GetInt32FalseTrue()
		return pair(tensor.Int32, le32(uint32(v[0])), le32(uint32(v[1])))
	case len(c.GetFp32FalseTrue()) == 2:
		v := c.GetFp32FalseTrue()
		return pair(tensor.FP32, le32(math.Float32bits(v[0])), le32(math.Float32bits(v[1])))
	case len(c.GetBoolFalseTrue()) == 2:
		b := func(x bool) []byte {
			if x {
				return []byte{1}
			}
			return []byte{0}
		}
		v := c.GetBoolFalseTrue()
		return pair(tensor.Bool, b(v[0]), b(v[1]))
	}
	return ctl, fmt.Errorf("sequence_batching control '%s' of kind %s needs int32_false_true, fp32_false_true or bool_false_true with two values", name, c.GetKind())
}

func compileState(v *version, fsys fs.FS, st *modelconfig.ModelSequenceBatching_State) (stateSpec, error) {
	spec := stateSpec{input: st.GetInputName(), output: st.GetOutputName(), dtype: tensor.DataType(st.GetDataType())}
	dims := tensor.Shape(slices.Clone(st.GetDims()))
	for _, is := range st.GetInitialState() {
		// The initial state gives the shape a sequence starts with.
		if len(is.GetDims()) == 0 {
			continue
		}
		if d := tensor.Shape(is.GetDims()); !d.Matches(dims) {
			return spec, fmt.Errorf("sequence_batching state '%s': initial_state dims %v do not match the state's dims %v", spec.input, d, dims)
		}
		dims = slices.Clone(is.GetDims())
	}
	for i, d := range dims {
		if d < 0 {
			dims[i] = 1 // Triton: variable dimensions of a state start as 1
		}
	}
	if v.sig.MaxBatch > 0 {
		axis := v.sig.Layouts[spec.input].Axis
		dims = slices.Insert(dims, axis, 1)
	}
	spec.shape = dims
	n, err := dims.NumElements()
	if err != nil {
		return spec, fmt.Errorf("sequence_batching state '%s': %w", spec.input, err)
	}
	if spec.dtype == tensor.Bytes || spec.dtype.Size() == 0 {
		return spec, fmt.Errorf("sequence_batching state '%s': data_type %s is not supported for implicit state", spec.input, st.GetDataType())
	}
	if n > maxStateBytes/int64(spec.dtype.Size()) {
		return spec, fmt.Errorf("sequence_batching state '%s': dims %v of %s are above the limit of %d bytes per sequence", spec.input, dims, st.GetDataType(), maxStateBytes)
	}
	size := n * int64(spec.dtype.Size())
	spec.initial = make([]byte, size)
	for _, is := range st.GetInitialState() {
		if f := is.GetDataFile(); f != "" {
			data, err := fs.ReadFile(fsys, path.Join("initial_state", f))
			if err != nil {
				return spec, fmt.Errorf("sequence_batching state '%s': initial_state data_file: %w", spec.input, err)
			}
			if int64(len(data)) != size {
				return spec, fmt.Errorf("sequence_batching state '%s': initial_state data_file %s has %d bytes, want %d", spec.input, f, len(data), size)
			}
			copy(spec.initial, data) // aligned for the element type, which data need not be
		}
	}
	return spec, nil
}

// key checks a request's correlation ID. A request without one to an
// iterative sequence model gets one of its own, and starts its sequence
// (as Triton's).
func (s *sequencer) key(req *InferRequest) (seqKey, error) {
	k := seqKey{n: req.SequenceID, s: req.SequenceIDString}
	if s.iterative && k.s == "" && k.n == 0 {
		k.n, k.gen = s.generated.Add(1), true
		if s.stringIDs {
			k.s = strconv.FormatUint(k.n, 10)
		}
		return k, nil
	}
	switch {
	case k.s == "" && k.n == 0:
		return k, fmt.Errorf("inference request to model '%s' must specify a non-zero or non-empty correlation ID", s.v.name)
	case k.s != "" && s.uintIDs:
		return k, fmt.Errorf("inference request to model '%s' has a string correlation ID, but the model's CORRID control takes a number", s.v.name)
	case k.s == "" && s.stringIDs:
		return k, fmt.Errorf("inference request to model '%s' has a numeric correlation ID, but the model's CORRID control is TYPE_STRING", s.v.name)
	}
	if k.s != "" {
		k.n = 0
	}
	return k, nil
}

// endReasons maps the scheduler's reasons to the backend's.
var endReasons = [...]backend.SequenceEndReason{
	batcher.EndFlag: backend.SequenceEndFlag, batcher.EndIdle: backend.SequenceIdle, batcher.EndClosed: backend.SequenceClosed,
}

// ended tells the backend that a sequence is over (the scheduler calls it
// one at a time).
func (s *sequencer) ended(k seqKey, reason batcher.EndReason) {
	if reason == batcher.EndIdle {
		s.v.log.Debug("sequence freed for idleness", zap.Stringer("sequence", k))
	}
	if s.observer == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.v.log.Error("backend panic in SequenceEnded", zap.Any("panic", r))
		}
	}()
	s.observer.SequenceEnded(backend.SequenceEnd{ID: k.n, IDString: k.s, Reason: endReasons[reason]})
}

// inputs returns the request's inputs with the control and state tensors
// added.
func (s *sequencer) inputs(req *InferRequest, k seqKey, state []tensor.Tensor) []tensor.Tensor {
	in := make([]tensor.Tensor, 0, len(req.Inputs)+len(s.controls)+len(s.states))
	in = append(in, req.Inputs...)
	shape := tensor.Shape{1}
	if s.v.sig.MaxBatch > 0 {
		shape = tensor.Shape{1, 1}
	}
	for _, c := range s.controls {
		t := tensor.Tensor{Name: c.name, DataType: c.dtype, Shape: shape}
		flag := func(on bool) []byte {
			if on {
				return c.true
			}
			return c.false
		}
		switch c.kind {
		case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_START:
			t.Data = flag(req.SequenceStart)
		case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_END:
			t.Data = flag(req.SequenceEnd)
		case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_READY:
			t.Data = c.true // every row of a batch here is a ready request
		case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID:
			t.Data = corrid(c.dtype, k)
		}
		in = append(in, t)
	}
	for i, st := range s.states {
		t := tensor.Tensor{Name: st.input, DataType: st.dtype, Shape: st.shape, Data: st.initial}
		if state != nil {
			t.Shape, t.Data = state[i].Shape, state[i].Data
		}
		in = append(in, t)
	}
	return in
}

// corrid encodes a correlation ID in the CORRID control's datatype (32-bit
// types keep the low 32 bits, as in Triton).
func corrid(dt tensor.DataType, k seqKey) []byte {
	switch dt {
	case tensor.Bytes:
		return tensor.AppendElement(nil, []byte(k.s))
	case tensor.Uint32, tensor.Int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(k.n))
	}
	return binary.LittleEndian.AppendUint64(nil, k.n)
}

// inferSequence runs a request of a sequence model: admission, its turn,
// the control and state inputs, then the ordinary path.
func (v *version) inferSequence(ctx context.Context, req *InferRequest, batch int64, t *timing, st *backend.Stream) (*InferResponse, error) {
	s := v.seq
	k, err := s.key(req)
	if err == nil && batch != 1 {
		err = fmt.Errorf("inference request to model '%s' must specify batch-size 1 due to requirements of sequence batcher", v.name)
	}
	if err != nil {
		return nil, v.fail(t, batch, v.errorf(req, InvalidArgument, err))
	}
	run := *req
	if k.gen {
		run.SequenceID, run.SequenceIDString, run.SequenceStart = k.n, k.s, true
	}
	for {
		resp, err := s.step(ctx, req, &run, k, batch, t, st)
		if err != errRescheduled {
			return resp, err
		}
		// The backend rescheduled the request: it is the sequence's next one.
		run.SequenceStart, run.SequenceEnd = false, false
	}
}

// step runs one request of sequence k (run: req with the sequence's
// fields for this execution).
func (s *sequencer) step(ctx context.Context, req, run *InferRequest, k seqKey, batch int64, t *timing, st *backend.Stream) (*InferResponse, error) {
	v := s.v
	tn, err := s.sched.Admit(ctx, k, run.SequenceStart)
	if err != nil {
		return nil, v.fail(t, batch, s.admitError(req, k, err))
	}
	state, err := tn.Wait(ctx, run.SequenceStart)
	if err != nil {
		return nil, v.fail(t, batch, s.waitError(req, k, err))
	}
	run.Inputs = s.inputs(run, k, state)
	if len(req.Outputs) > 0 && len(s.states) > 0 {
		run.Outputs = slices.Clip(req.Outputs)
		for _, st := range s.states {
			if !slices.Contains(run.Outputs, st.output) {
				run.Outputs = append(run.Outputs, st.output)
			}
		}
	}
	resp, err := v.run(ctx, run, batch, t, st)
	run.Inputs = req.Inputs
	if err == errRescheduled {
		if resp != nil {
			next, serr := s.takeState(req, resp)
			if serr != nil {
				tn.Done(req.SequenceEnd || k.gen)
				return nil, v.fail(t, batch, v.errorf(req, Internal, serr))
			}
			tn.SetState(next)
		}
		tn.Done(false)
		return nil, err
	}
	if err == nil && st == nil {
		var next []tensor.Tensor
		if next, err = s.takeState(req, resp); err != nil {
			err = v.errorf(req, Internal, err)
		} else if next != nil {
			tn.SetState(next)
		}
	} else if ctx.Err() != nil {
		tn.Cancel() // as in Triton, the requests queued behind it are cancelled too
	}
	tn.Done(req.SequenceEnd || k.gen) // a sequence of the server's ends with its request
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// admitError words the scheduler's refusal to admit a request of
// sequence k as Triton does.
func (s *sequencer) admitError(req *InferRequest, k seqKey, err error) error {
	v := s.v
	switch {
	case errors.Is(err, batcher.ErrNotStarted):
		return s.notStarted(req, k)
	case errors.Is(err, batcher.ErrNoRoom):
		return v.errorf(req, Unavailable, fmt.Errorf("model '%s' has %d live sequences, its capacity; sequence %s cannot start now", v.name, s.sched.Capacity(), k))
	case errors.Is(err, batcher.ErrClosed):
		if cause := v.stopped(); cause != nil {
			err = cause
		}
	}
	// A START that waited for room until its ctx ended or the version
	// stopped.
	return v.errorf(req, classify(err, Unavailable),
		fmt.Errorf("waiting for room for sequence %s (model '%s' has %d live sequences, its capacity): %w", k, v.name, s.sched.Capacity(), err))
}

// waitError words the failure of a request of sequence k waiting for its
// turn.
func (s *sequencer) waitError(req *InferRequest, k seqKey, err error) error {
	switch {
	case errors.Is(err, batcher.ErrNotStarted):
		return s.notStarted(req, k)
	case errors.Is(err, batcher.ErrSequenceCancelled):
		return s.v.errorf(req, Cancelled, fmt.Errorf("a request of sequence %s to model '%s' admitted before this one was cancelled, so this one is cancelled too", k, s.v.name))
	}
	return s.v.errorf(req, classify(err, Cancelled), err)
}

func (s *sequencer) notStarted(req *InferRequest, k seqKey) error {
	return s.v.errorf(req, InvalidArgument, fmt.Errorf("inference request for sequence %s to model '%s' must specify the START flag on the first request of the sequence", k, s.v.name))
}

// takeState takes the state outputs out of a response (keeping those the
// config lists as outputs and the client did not leave out) and returns
// them as the sequence's next state.
func (s *sequencer) takeState(req *InferRequest, resp *InferResponse) ([]tensor.Tensor, error) {
	if len(s.states) == 0 {
		return nil, nil
	}
	next := make([]tensor.Tensor, len(s.states))
	for i, st := range s.states {
		out, ok := resp.Output(st.output)
		if !ok {
			return nil, fmt.Errorf("model '%s' did not produce its state output '%s'", s.v.name, st.output)
		}
		if out.DataType != st.dtype || len(out.Shape) != len(st.shape) {
			return nil, fmt.Errorf("model '%s' produced state output '%s' as %s %v; the state is %s of rank %d",
				s.v.name, st.output, out.DataType, out.Shape, st.dtype, len(st.shape))
		}
		out.Name = st.input
		next[i] = out
	}
	resp.Outputs = slices.DeleteFunc(resp.Outputs, func(o tensor.Tensor) bool {
		if !s.v.sig.States[o.Name] {
			return false
		}
		wanted := s.v.sig.Output(o.Name) != nil && (len(req.Outputs) == 0 || slices.Contains(req.Outputs, o.Name))
		return !wanted
	})
	return next, nil
}
