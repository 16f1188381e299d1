package triton

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// A model with sequence_batching is stateful: every request names a
// sequence (a correlation ID), and the requests of one sequence run one
// after the other, in the order they arrived, while requests of different
// sequences share batches. The sequencer of the version does the
// bookkeeping around the ordinary request path (run, and the dynamic
// batcher when the model batches):
//
//   - admission: the ID must be given and of the kind the CORRID control
//     takes; a sequence starts with a request flagged START, within the
//     model's capacity (instances × max_batch_size live sequences for the
//     direct strategy, max_candidate_sequences per instance for oldest),
//     waiting for room or refused as configured;
//   - order: each request waits for the previous request of its sequence
//     to finish (a chain of channels, one per request); a request
//     cancelled while waiting or running cancels the requests of its
//     sequence admitted before that and not yet run, as Triton does;
//   - inputs: the control tensors (START, END, READY, CORRID) with the
//     configured datatypes and values, and the implicit state, are added
//     to the request's inputs, each with a batch dimension of 1 (at the
//     state's batch axis, "batch_axis:<name>", for states laid out as
//     [layers, batch, hidden]);
//   - state: the state outputs the backend produces are kept for the
//     sequence's next request and taken out of the response, unless the
//     config lists them as outputs too;
//   - end: a request flagged END ends its sequence; a sequence without
//     requests for max_sequence_idle_microseconds is freed by the
//     sequencer's one goroutine, which the version owns and stops on
//     close. A Model that implements backend.SequenceObserver is told
//     either way (Triton never tells backends).
//
// Batches hold ready requests only: the direct strategy's fixed slot
// positions, with READY=false padding rows, are not reproduced; backends
// that keep state per sequence key it on CORRID instead of on the row.
type sequencer struct {
	v         *version
	controls  []control
	states    []stateSpec
	idle      time.Duration
	stringIDs bool // the CORRID control is TYPE_STRING
	uintIDs   bool // the CORRID control is numeric
	reject    bool // a START beyond capacity fails instead of waiting
	room      *semaphore.Weighted
	capacity  int64
	observer  backend.SequenceObserver
	notifyMu  sync.Mutex // SequenceEnded is never called concurrently with itself

	mu   sync.Mutex
	live map[seqKey]*sequence

	stop chan struct{} // closed by close: the idle sweeper returns
	done chan struct{} // closed when the sweeper has returned
}

// seqKey is a correlation ID: a number or a string.
type seqKey struct {
	n uint64
	s string
}

func (k seqKey) String() string {
	if k.s != "" {
		return k.s
	}
	return strconv.FormatUint(k.n, 10)
}

// sequence is one live sequence.
type sequence struct {
	key   seqKey
	tail  chan struct{}   // closed when the last admitted request has finished
	state []tensor.Tensor // by state index; nil: start from the initial state
	last  time.Time       // when a request last finished
	queue int             // requests admitted and not finished
	ended bool            // its END request ran; only a START may follow
	// epoch counts the sequence's cancelled requests: a cancellation
	// cancels the requests admitted before it that have not run yet, as in
	// Triton (their inputs assumed the cancelled one would run).
	epoch uint64
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

// newSequencer compiles a version's sequence_batching. fsys is the model
// folder (initial_state data files live under <model>/initial_state/).
func newSequencer(v *version, fsys fs.FS, instances int) (*sequencer, error) {
	sb := v.cfg.GetSequenceBatching()
	s := &sequencer{
		v:    v,
		idle: time.Duration(min(sb.GetMaxSequenceIdleMicroseconds(), math.MaxInt64/uint64(time.Microsecond))) * time.Microsecond,
		live: map[seqKey]*sequence{},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
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
	perInstance := int64(max(v.cfg.GetMaxBatchSize(), 1))
	if o := sb.GetOldest(); o != nil {
		perInstance = int64(max(o.GetMaxCandidateSequences(), 1))
	}
	s.capacity = perInstance * int64(max(instances, 1))
	if p, ok := v.cfg.GetParameters()["sequence_backlog"]; ok {
		switch p.GetStringValue() {
		case "wait":
		case "reject":
			s.reject = true
		default:
			return nil, fmt.Errorf("parameter \"sequence_backlog\": want wait or reject, got %q", p.GetStringValue())
		}
	}
	s.room = semaphore.NewWeighted(s.capacity)
	s.observer, _ = v.model.(backend.SequenceObserver)
	go s.sweep()
	return s, nil
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
	if v.sig.maxBatch > 0 {
		axis := v.sig.layouts[spec.input].Axis
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

// key checks a request's correlation ID.
func (s *sequencer) key(req *InferRequest) (seqKey, error) {
	k := seqKey{n: req.SequenceID, s: req.SequenceIDString}
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

// turn is an admitted request's place in its sequence.
type turn struct {
	seq   *sequence
	prev  chan struct{} // closed when the previous request has finished
	done  chan struct{} // closed by finish
	epoch uint64        // the sequence's epoch at admission
}

// admit places the request in its sequence: a START opens the sequence
// (waiting for room, or refused), any other request needs it open.
func (s *sequencer) admit(ctx context.Context, k seqKey, req *InferRequest) (turn, error) {
	s.mu.Lock()
	sq := s.live[k]
	if sq == nil {
		s.mu.Unlock()
		if !req.SequenceStart {
			return turn{}, &Error{Code: InvalidArgument, Model: s.v.name, Version: s.v.number, RequestID: req.ID,
				Err: fmt.Errorf("inference request for sequence %s to model '%s' must specify the START flag on the first request of the sequence", k, s.v.name)}
		}
		if s.reject {
			if !s.room.TryAcquire(1) {
				return turn{}, &Error{Code: Unavailable, Model: s.v.name, Version: s.v.number, RequestID: req.ID,
					Err: fmt.Errorf("model '%s' has %d live sequences, its capacity; sequence %s cannot start now", s.v.name, s.capacity, k)}
			}
		} else if err := s.acquire(ctx); err != nil {
			return turn{}, &Error{Code: classify(err, Cancelled), Model: s.v.name, Version: s.v.number, RequestID: req.ID,
				Err: fmt.Errorf("waiting for room for sequence %s (model '%s' has %d live sequences, its capacity): %w", k, s.v.name, s.capacity, err)}
		}
		s.mu.Lock()
		if sq = s.live[k]; sq == nil {
			tail := make(chan struct{})
			close(tail)
			sq = &sequence{key: k, tail: tail}
			s.live[k] = sq
		} else {
			s.room.Release(1) // another START of the same ID opened it meanwhile
		}
	}
	t := turn{seq: sq, prev: sq.tail, done: make(chan struct{}), epoch: sq.epoch}
	sq.tail = t.done
	sq.queue++
	s.mu.Unlock()
	return t, nil
}

// acquire waits for room for a new sequence, until ctx ends or the version
// stops (a close does not wait for live sequences to end).
func (s *sequencer) acquire(ctx context.Context) error {
	if s.room.TryAcquire(1) {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-s.v.stop:
			cancel(*s.v.aborted.Load())
		case <-ctx.Done():
		}
	}()
	if err := s.room.Acquire(ctx, 1); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// wait waits for the request's turn. A request that gives up still holds
// its place until its predecessor is done, so the order of the rest holds.
func (s *sequencer) wait(ctx context.Context, t turn) error {
	select {
	case <-t.prev:
		return nil
	default:
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		s.cancelPending(t.seq)
		go func() {
			<-t.prev
			s.finish(t, false, nil)
		}()
		return ctx.Err()
	}
}

// cancelPending cancels the requests of sq admitted so far that have not
// run yet, after one of its requests was cancelled.
func (s *sequencer) cancelPending(sq *sequence) {
	s.mu.Lock()
	sq.epoch++
	s.mu.Unlock()
}

// finish ends a request's turn; end tells the sequence is over (its END
// request ran), state is its new state (nil: unchanged). The backend is told
// of the end before the turn closes: a new sequence of the same ID runs
// after that.
func (s *sequencer) finish(t turn, end bool, state []tensor.Tensor) {
	if end {
		s.notify(t.seq.key, backend.SequenceEndFlag)
	}
	s.mu.Lock()
	sq := t.seq
	sq.queue--
	sq.last = time.Now()
	if state != nil {
		sq.state = state
	}
	if end {
		sq.ended, sq.state = true, nil
	}
	if sq.ended && sq.queue == 0 && s.live[sq.key] == sq {
		delete(s.live, sq.key)
		s.room.Release(1)
	}
	close(t.done)
	s.mu.Unlock()
}

func (s *sequencer) notify(k seqKey, reason backend.SequenceEndReason) {
	if s.observer == nil {
		return
	}
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			s.v.log.Error("backend panic in SequenceEnded", zap.Any("panic", r))
		}
	}()
	s.observer.SequenceEnded(backend.SequenceEnd{ID: k.n, IDString: k.s, Reason: reason})
}

// sweep frees idle sequences until close.
func (s *sequencer) sweep() {
	defer close(s.done)
	t := time.NewTicker(max(s.idle/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			// The sweeper ends an idle sequence as an END request would,
			// taking its next turn: a request of the same ID admitted
			// meanwhile runs after the backend has been told.
			var idle []turn
			s.mu.Lock()
			for _, sq := range s.live {
				if sq.queue == 0 && now.Sub(sq.last) >= s.idle {
					tn := turn{seq: sq, prev: sq.tail, done: make(chan struct{})}
					sq.tail, sq.ended, sq.state = tn.done, true, nil
					sq.queue++
					idle = append(idle, tn)
				}
			}
			s.mu.Unlock()
			for _, tn := range idle {
				s.v.log.Debug("sequence freed for idleness", zap.Stringer("sequence", tn.seq.key))
				s.notify(tn.seq.key, backend.SequenceIdle)
				s.finish(tn, false, nil)
			}
		}
	}
}

// close stops the sweeper and tells the backend about the sequences still
// live. The version's gate has drained: no request is running.
func (s *sequencer) close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	keys := make([]seqKey, 0, len(s.live))
	for k, sq := range s.live {
		if !sq.ended { // an ended one was told already
			keys = append(keys, k)
		}
	}
	clear(s.live)
	s.mu.Unlock()
	for _, k := range keys {
		s.notify(k, backend.SequenceClosed)
	}
}

// inputs returns the request's inputs with the control and state tensors
// added.
func (s *sequencer) inputs(req *InferRequest, k seqKey, state []tensor.Tensor) []tensor.Tensor {
	in := make([]tensor.Tensor, 0, len(req.Inputs)+len(s.controls)+len(s.states))
	in = append(in, req.Inputs...)
	shape := tensor.Shape{1}
	if s.v.sig.maxBatch > 0 {
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
func (v *version) inferSequence(ctx context.Context, req *InferRequest, batch int64, t *timing) (*InferResponse, error) {
	s := v.seq
	k, err := s.key(req)
	if err == nil && batch != 1 {
		err = fmt.Errorf("inference request to model '%s' must specify batch-size 1 due to requirements of sequence batcher", v.name)
	}
	if err != nil {
		return nil, v.fail(t, batch, v.errorf(req, InvalidArgument, err))
	}
	tn, err := s.admit(ctx, k, req)
	if err != nil {
		return nil, v.fail(t, batch, err)
	}
	if err := s.wait(ctx, tn); err != nil {
		return nil, v.fail(t, batch, v.errorf(req, classify(err, Cancelled), err))
	}
	var state []tensor.Tensor
	s.mu.Lock()
	cancelled := tn.seq.epoch != tn.epoch
	ended := tn.seq.ended
	if !req.SequenceStart {
		state = tn.seq.state
	} else {
		tn.seq.ended = false
	}
	s.mu.Unlock()
	if cancelled {
		s.finish(tn, false, nil)
		return nil, v.fail(t, batch, v.errorf(req, Cancelled,
			fmt.Errorf("a request of sequence %s to model '%s' admitted before this one was cancelled, so this one is cancelled too", k, v.name)))
	}
	if ended && !req.SequenceStart {
		s.finish(tn, false, nil)
		return nil, v.fail(t, batch, v.errorf(req, InvalidArgument,
			fmt.Errorf("inference request for sequence %s to model '%s' must specify the START flag on the first request of the sequence", k, v.name)))
	}

	run := *req
	run.Inputs = s.inputs(req, k, state)
	if len(req.Outputs) > 0 && len(s.states) > 0 {
		run.Outputs = slices.Clip(req.Outputs)
		for _, st := range s.states {
			if !slices.Contains(run.Outputs, st.output) {
				run.Outputs = append(run.Outputs, st.output)
			}
		}
	}
	resp, err := v.run(ctx, &run, batch, t)
	if err != nil {
		if ctx.Err() != nil {
			s.cancelPending(tn.seq)
		}
		s.finish(tn, req.SequenceEnd, nil)
		return nil, err
	}
	next, err := s.takeState(req, resp)
	if err != nil {
		s.finish(tn, req.SequenceEnd, nil)
		return nil, v.errorf(req, Internal, err)
	}
	s.finish(tn, req.SequenceEnd, next)
	return resp, nil
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
		if !s.v.sig.states[o.Name] {
			return false
		}
		wanted := s.v.sig.output(o.Name) != nil && (len(req.Outputs) == 0 || slices.Contains(req.Outputs, o.Name))
		return !wanted
	})
	return next, nil
}
