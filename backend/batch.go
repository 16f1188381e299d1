package backend

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// Request is one inference request inside a [Batch].
//
// Ownership: Inputs and their Data are borrowed from the caller until Execute
// returns; a backend that keeps them longer must copy them. Outputs set with
// [Request.SetOutput] are handed to the caller as they are (no copy), so a
// backend must not reuse their memory after Execute returns.
type Request struct {
	// ID is the client's request id ("" when none was given).
	ID string
	// Inputs are the request's input tensors, validated against the model
	// configuration (datatype, shape, byte size) and reshaped as the config's
	// `reshape` asks.
	Inputs []tensor.Tensor
	// RequestedOutputs names the outputs the client asked for; empty means
	// every output of the model configuration.
	RequestedOutputs []string
	// Parameters are the request's parameters: values are bool, int64,
	// uint64, float64 or string.
	Parameters map[string]any
	// BatchSize is the number of rows this request contributes along the first
	// dimension when the model batches (max_batch_size > 0), otherwise 1.
	BatchSize int64
	// Priority, Timeout and the sequence fields are the caller's, as in
	// [InferRequest]; the server has already applied them to scheduling.
	// They are here for backends that pass them on to the models they call
	// (the ensemble scheduler does).
	Priority         uint64
	Timeout          time.Duration
	SequenceID       uint64
	SequenceIDString string
	SequenceStart    bool
	SequenceEnd      bool

	outputs     []tensor.Tensor
	params      map[string]any // response parameters
	err         error
	sender      *Sender
	rescheduled bool
}

// Sender returns the request's response sender when the model is decoupled
// (model_transaction_policy { decoupled: true }), and nil otherwise. A
// decoupled model answers through it; outputs set with [Request.SetOutput]
// or [Batch.SetOutput] during Execute are sent as the final response once
// Execute returns.
//
// The Sender, unlike the Request, may be kept after Execute returns: a
// backend that answers from its own goroutines takes the Sender (and
// copies of the inputs it still needs) before Execute returns, and must
// not touch the Request itself afterwards, which the server recycles.
func (r *Request) Sender() *Sender { return r.sender }

// SetSender gives the request its response sender (nil: the model is not
// decoupled). Schedulers and tests call it; backends receive it.
func (r *Request) SetSender(s *Sender) { r.sender = s }

// Input returns the input named name.
func (r *Request) Input(name string) (tensor.Tensor, bool) {
	for i := range r.Inputs {
		if r.Inputs[i].Name == name {
			return r.Inputs[i], true
		}
	}
	return tensor.Tensor{}, false
}

// Wants reports whether the client asked for the output named name.
func (r *Request) Wants(name string) bool {
	return len(r.RequestedOutputs) == 0 || slices.Contains(r.RequestedOutputs, name)
}

// SetOutput sets (or replaces) the output of the same name. Outputs the
// client did not ask for are dropped by the server.
func (r *Request) SetOutput(t tensor.Tensor) {
	for i := range r.outputs {
		if r.outputs[i].Name == t.Name {
			r.outputs[i] = t
			return
		}
	}
	r.outputs = append(r.outputs, t)
}

// Outputs returns the outputs set so far. The slice aliases the request's
// storage.
func (r *Request) Outputs() []tensor.Tensor { return r.outputs }

// SetParameter sets a parameter of the request's response (Triton's
// TRITONBACKEND_ResponseSet*Parameter): value is a bool, int64, uint64,
// float64 (finite) or string, else the request fails when it is
// answered. Setting a key again replaces its value.
func (r *Request) SetParameter(key string, value any) {
	if r.params == nil {
		r.params = make(map[string]any, 1)
	}
	r.params[key] = value
}

// ResponseParameters returns the response parameters set so far (nil when
// none). The map is the request's until it is answered.
func (r *Request) ResponseParameters() map[string]any { return r.params }

// Fail marks the request failed with err; the rest of the batch is
// unaffected. The first failure wins.
func (r *Request) Fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// Err returns the error the request failed with, or nil.
func (r *Request) Err() error { return r.err }

// Reschedule asks the server to run the request again in a later batch
// instead of answering it now (Triton's request release flag
// TRITONSERVER_REQUEST_RELEASE_RESCHEDULE): it becomes the next request
// of its own sequence, with the same inputs and SequenceStart and
// SequenceEnd false, and outputs set on it in this execution are
// dropped. This is for models with sequence_batching { iterative_sequence:
// true }, where one request drives a whole sequence (an LLM's token
// loop); on any other model the request fails. A decoupled model sends
// each iteration's responses through the Sender, which stays the same,
// and Final in the iteration that does not reschedule.
func (r *Request) Reschedule() { r.rescheduled = true }

// Rescheduled reports whether [Request.Reschedule] was called in this
// execution.
func (r *Request) Rescheduled() bool { return r.rescheduled }

// Reset clears the results of the request (outputs, error, sender and
// rescheduling) and keeps the capacity of its storage. Schedulers use it
// to recycle requests.
func (r *Request) Reset() {
	clear(r.outputs)
	r.outputs = r.outputs[:0]
	r.params = nil // the response took it
	r.err = nil
	r.sender = nil
	r.rescheduled = false
}

// Batch is the unit of work handed to [Instance.Execute]: one or more
// requests whose inputs share their non-batch shapes.
//
// A backend either works per request (Requests[i].Inputs, SetOutput, Fail) or
// on the whole batch ([Batch.Input], [Batch.SetOutput]); the two may be mixed.
// Batch.Input gathers a batched model's inputs into one contiguous tensor,
// the only copy on the request path, and none for a batch of one request;
// the memory it gathers into is reused by later batches, one more reason a
// backend must not keep inputs past Execute.
// Batch.SetOutput splits a batch output into per-request views without
// copying.
type Batch struct {
	// Requests are the requests of the batch, in the order they were
	// scheduled. Read-only for backends.
	Requests []*Request

	batched  bool
	size     int64
	layouts  map[string]Layout // tensors whose batch is not their first dimension
	gathered []tensor.Tensor
	parts    []tensor.Tensor // scratch for Input
	arena    []byte          // gathered inputs' data, reused by the next batch

	inputsDone, inferDone time.Time // optional marks, for statistics
	inferStart            time.Time // MarkInfer
	behind                bool      // SetBehind
}

// NewBatch returns a batch of reqs. batched tells whether the model batches
// along the first dimension (max_batch_size > 0); an unbatched batch holds
// exactly one request. Schedulers and tests build batches; backends receive
// them.
func NewBatch(batched bool, reqs ...*Request) *Batch {
	b := new(Batch)
	b.Reset(batched, reqs)
	return b
}

// Reset makes b a batch of reqs (reusing its storage), as [NewBatch] does.
func (b *Batch) Reset(batched bool, reqs []*Request) {
	b.Requests = reqs
	b.batched = batched
	b.layouts = nil
	b.size = 0
	for _, r := range reqs {
		b.size += r.BatchSize
	}
	clear(b.gathered)
	b.gathered = b.gathered[:0]
	b.arena = b.arena[:0]
	b.inputsDone, b.inferDone, b.inferStart, b.behind = time.Time{}, time.Time{}, time.Time{}, false
}

// MarkInputsDone records that the backend has prepared the batch's inputs
// and starts the model proper; MarkInferDone that the model has run and
// output processing starts. Both are optional: they split the execution
// into Triton's compute_input, compute_infer and compute_output statistics
// (without them the whole execution counts as compute_infer).
func (b *Batch) MarkInputsDone() { b.inputsDone = time.Now() }

// MarkInferDone: see [Batch.MarkInputsDone].
func (b *Batch) MarkInferDone() { b.inferDone = time.Now() }

// MarkInfer records that the model ran from start to end, for a backend
// that runs it on a thread of its own (see [Queuer]): in place of
// MarkInferDone's mark, end ends compute_infer, and the time from
// MarkInputsDone to start, which the batch spent waiting behind another on
// the instance, counts as the requests' queue time, not compute time.
func (b *Batch) MarkInfer(start, end time.Time) { b.inferStart, b.inferDone = start, end }

// Queued returns how long the batch waited behind another on the instance
// once its inputs were ready (MarkInfer's start after MarkInputsDone's
// mark; zero when not marked).
func (b *Batch) Queued() time.Duration {
	if b.inputsDone.IsZero() || !b.inferStart.After(b.inputsDone) {
		return 0
	}
	return b.inferStart.Sub(b.inputsDone)
}

// SetBehind records that the server queued the batch behind another that
// the instance runs (see [Queuer]); schedulers call it.
func (b *Batch) SetBehind(behind bool) { b.behind = behind }

// Behind reports whether the batch was queued behind another that the
// instance runs: a [Queuer] runs it after that one, on the thread that
// runs it, where a batch not behind may run on the calling goroutine's.
func (b *Batch) Behind() bool { return b.behind }

// Marks returns the times recorded by MarkInputsDone and MarkInferDone
// (zero when not marked). The server reads them.
func (b *Batch) Marks() (inputsDone, inferDone time.Time) { return b.inputsDone, b.inferDone }

// Size returns the number of rows of the batch: the sum of the requests'
// batch sizes.
func (b *Batch) Size() int64 { return b.size }

// Batched reports whether the model batches along the first dimension.
func (b *Batch) Batched() bool { return b.batched }

// SetLayouts gives the batch the layouts of the tensors, by name, whose
// batch is not their first dimension (nil: none). The server sets them
// from the model configuration after [Batch.Reset]; [Batch.Input] and
// [Batch.SetOutput] follow them.
func (b *Batch) SetLayouts(l map[string]Layout) { b.layouts = l }

// Layouts returns the layouts [Batch.SetLayouts] gave the batch (nil:
// none), for a backend that runs some of its requests again in batches of
// their own.
func (b *Batch) Layouts() map[string]Layout { return b.layouts }

// Layout returns the layout of the tensor named name.
func (b *Batch) Layout(name string) Layout { return b.layouts[name] }

// Input returns the whole-batch tensor of the input named name: the
// concatenation of every request's input along the first dimension. For a
// batch of one request it is that request's tensor itself. For a ragged
// input ([Layout] Ragged: allow_ragged_batch), it is the requests' elements
// concatenated into one rank-1 tensor, also for one request (its own data,
// reshaped), as Triton's backends take ragged inputs. For a batch input
// ([Layout] Made: config batch_input) it is the tensor Triton's backends
// make for the batch from the shapes of the requests' source input. The
// result is cached; the concatenation happens at most once per input.
func (b *Batch) Input(name string) (tensor.Tensor, error) {
	if made := b.layouts[name].Made; made != nil {
		return b.madeInput(name, made)
	}
	if len(b.Requests) == 1 {
		t, ok := b.Requests[0].Input(name)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("batch has no input %q: %w", name, ErrInvalidInput)
		}
		if b.layouts[name].Ragged && len(t.Shape) != 1 {
			n, err := t.Shape.NumElements()
			if err != nil {
				return tensor.Tensor{}, fmt.Errorf("input %q: %w", name, err)
			}
			t.Shape = tensor.Shape{n}
		}
		return t, nil
	}
	for i := range b.gathered {
		if b.gathered[i].Name == name {
			return b.gathered[i], nil
		}
	}
	if l := b.layouts[name]; l.Shared {
		return b.sharedInput(name)
	} else if l.Axis > 0 {
		return b.gatherAxis(name, l.Axis)
	}
	parts := b.parts[:0]
	defer func() {
		clear(parts)
		b.parts = parts[:0]
	}()
	var rows, elems int64
	size := 0
	ragged := b.layouts[name].Ragged
	for _, r := range b.Requests {
		t, ok := r.Input(name)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("request %q of the batch has no input %q: %w", r.ID, name, ErrInvalidInput)
		}
		if len(parts) > 0 {
			first := &parts[0]
			if t.DataType != first.DataType {
				return tensor.Tensor{}, fmt.Errorf("gathering input %q: request %q has data type %v, request %q has %v: %w",
					name, r.ID, t.DataType, b.Requests[0].ID, first.DataType, ErrInvalidInput)
			}
			// Only a ragged input (allow_ragged_batch) batches requests of
			// different shapes: its elements are concatenated flat, as Triton
			// hands ragged inputs to backends.
			ragged = ragged || len(t.Shape) != len(first.Shape) || !t.Shape[1:].Equal(first.Shape[1:])
		}
		if len(t.Shape) == 0 {
			return tensor.Tensor{}, fmt.Errorf("gathering input %q: request %q has a scalar; a batch needs a batch dimension: %w", name, r.ID, ErrInvalidInput)
		}
		n, err := t.Shape.NumElements()
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("gathering input %q: %w", name, err)
		}
		parts = append(parts, t)
		rows += t.Shape[0]
		elems += n
		size += len(t.Data)
	}
	// The one copy of the request path: into the batch's arena.
	data, off := b.alloc(size), 0
	for _, p := range parts {
		off += copy(data[off:], p.Data)
	}
	t := tensor.Tensor{Name: name, DataType: parts[0].DataType, Data: data}
	if ragged {
		t.Shape = tensor.Shape{elems}
	} else {
		t.Shape = append(tensor.Shape{rows}, parts[0].Shape[1:]...)
	}
	b.gathered = append(b.gathered, t)
	return t, nil
}

// SetOutput hands a whole-batch output to the requests that asked for it.
// For a batched model t's first dimension must equal [Batch.Size]; each
// request receives a view of its own rows (no copy). For a batch of one
// request t is given to it as it is. A batch output ([Layout] Scatter:
// config batch_output) is cut instead into consecutive parts, one per
// request, each in the shape of the request's source input.
func (b *Batch) SetOutput(t tensor.Tensor) error {
	if sc := b.layouts[t.Name].Scatter; sc != nil {
		return b.scatterShaped(t, sc)
	}
	if len(b.Requests) == 1 {
		b.Requests[0].SetOutput(t)
		return nil
	}
	if !b.batched {
		return fmt.Errorf("output %q: an unbatched batch holds one request, got %d", t.Name, len(b.Requests))
	}
	if axis := b.layouts[t.Name].Axis; axis > 0 {
		return b.scatterAxis(t, axis)
	}
	if len(t.Shape) == 0 || t.Shape[0] != b.size {
		return fmt.Errorf("output %q: shape %v does not start with the batch size %d", t.Name, t.Shape, b.size)
	}
	var row int64
	for _, r := range b.Requests {
		start := row
		row += r.BatchSize
		if !r.Wants(t.Name) {
			continue
		}
		part, err := t.SliceRows(start, row)
		if err != nil {
			return fmt.Errorf("output %q: %w", t.Name, err)
		}
		r.SetOutput(part)
	}
	return nil
}

// sharedInput returns an input without a batch dimension: the first
// request's, after checking that every request gives the same.
func (b *Batch) sharedInput(name string) (tensor.Tensor, error) {
	var first tensor.Tensor
	for i, r := range b.Requests {
		t, ok := r.Input(name)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("request %q of the batch has no input %q: %w", r.ID, name, ErrInvalidInput)
		}
		if i == 0 {
			first = t
			continue
		}
		if t.DataType != first.DataType || !t.Shape.Equal(first.Shape) || !bytes.Equal(t.Data, first.Data) {
			return tensor.Tensor{}, fmt.Errorf("input %q is one value for the whole batch, but request %q gives another than request %q: %w",
				name, r.ID, b.Requests[0].ID, ErrInvalidInput)
		}
	}
	return first, nil
}

// gatherAxis concatenates the requests' input along dimension axis into
// the batch's arena.
func (b *Batch) gatherAxis(name string, axis int) (tensor.Tensor, error) {
	parts := b.parts[:0]
	defer func() {
		clear(parts)
		b.parts = parts[:0]
	}()
	var rows int64
	size := 0
	for _, r := range b.Requests {
		t, ok := r.Input(name)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("request %q of the batch has no input %q: %w", r.ID, name, ErrInvalidInput)
		}
		if len(t.Shape) <= axis {
			return tensor.Tensor{}, fmt.Errorf("gathering input %q along dimension %d: request %q has shape %v: %w", name, axis, r.ID, t.Shape, ErrInvalidInput)
		}
		if len(parts) > 0 {
			first := &parts[0]
			if t.DataType != first.DataType || len(t.Shape) != len(first.Shape) ||
				!t.Shape[:axis].Equal(first.Shape[:axis]) || !t.Shape[axis+1:].Equal(first.Shape[axis+1:]) {
				return tensor.Tensor{}, fmt.Errorf("gathering input %q along dimension %d: request %q has %v %v, request %q has %v %v: %w",
					name, axis, r.ID, t.DataType, t.Shape, b.Requests[0].ID, first.DataType, first.Shape, ErrInvalidInput)
			}
		}
		parts = append(parts, t)
		rows += t.Shape[axis]
		size += len(t.Data)
	}
	first := parts[0]
	outer, inner := int64(1), int64(first.DataType.Size())
	for _, d := range first.Shape[:axis] {
		outer *= d
	}
	for _, d := range first.Shape[axis+1:] {
		inner *= d
	}
	data, off := b.alloc(size), 0
	for o := range outer {
		for _, p := range parts {
			n := p.Shape[axis] * inner
			off += copy(data[off:], p.Data[o*n:(o+1)*n])
		}
	}
	shape := slices.Clone(first.Shape)
	shape[axis] = rows
	t := tensor.Tensor{Name: name, DataType: first.DataType, Shape: shape, Data: data}
	b.gathered = append(b.gathered, t)
	return t, nil
}

// scatterAxis splits a batch output along dimension axis, copying each
// request's rows into a tensor of its own (they are not contiguous).
func (b *Batch) scatterAxis(t tensor.Tensor, axis int) error {
	if len(t.Shape) <= axis || t.Shape[axis] != b.size {
		return fmt.Errorf("output %q: shape %v does not have the batch size %d in dimension %d", t.Name, t.Shape, b.size, axis)
	}
	outer, inner := int64(1), int64(t.DataType.Size())
	for _, d := range t.Shape[:axis] {
		outer *= d
	}
	for _, d := range t.Shape[axis+1:] {
		inner *= d
	}
	if want := outer * b.size * inner; int64(len(t.Data)) != want {
		return fmt.Errorf("output %q: %d bytes for shape %v, want %d", t.Name, len(t.Data), t.Shape, want)
	}
	var row int64
	for _, r := range b.Requests {
		start := row
		row += r.BatchSize
		if !r.Wants(t.Name) {
			continue
		}
		shape := slices.Clone(t.Shape)
		shape[axis] = r.BatchSize
		data := make([]byte, 0, outer*r.BatchSize*inner)
		for o := range outer {
			base := (o*b.size + start) * inner
			data = append(data, t.Data[base:base+r.BatchSize*inner]...)
		}
		r.SetOutput(tensor.Tensor{Name: t.Name, DataType: t.DataType, Shape: shape, Data: data})
	}
	return nil
}

// alloc returns n bytes of the batch's arena, 8-byte aligned so typed views
// work. The arena is reused by later batches (inputs are borrowed only
// until Execute returns); when it grows, the tensors already in it keep
// the old array.
func (b *Batch) alloc(n int) []byte {
	start := (len(b.arena) + 7) &^ 7
	if need := start + n; need > cap(b.arena) {
		grown := make([]byte, len(b.arena), max(need, 2*cap(b.arena)))
		copy(grown, b.arena)
		b.arena = grown
	}
	b.arena = b.arena[:start+n]
	return b.arena[start : start+n : start+n]
}

// madeInput makes the batch input named name for the batch, as Triton's
// backends make it: per request, the element count of its source input
// (BATCH_ELEMENT_COUNT, shape [requests]), the running sum of the counts
// (BATCH_ACCUMULATED_ELEMENT_COUNT, [requests]; ..._WITH_ZERO, [requests +
// 1] starting with 0), a tensor of zeros whose shape is the largest count
// (BATCH_MAX_ELEMENT_COUNT_AS_SHAPE, [max]), or the shape of each item of
// the batch without its batch dimension (BATCH_ITEM_SHAPE, [items, rank];
// ..._FLATTEN, [items * rank]).
func (b *Batch) madeInput(name string, made *BatchInput) (tensor.Tensor, error) {
	for i := range b.gathered {
		if b.gathered[i].Name == name {
			return b.gathered[i], nil
		}
	}
	if made.DataType != tensor.Int32 && made.DataType != tensor.FP32 {
		return tensor.Tensor{}, fmt.Errorf("batch input %q: datatype %s, want TYPE_INT32 or TYPE_FP32", name, made.DataType.ConfigName())
	}
	kind := made.Kind
	var values []int64 // the tensor's values, in order
	var shape tensor.Shape
	var total, largest, items int64
	rank := -1
	for _, r := range b.Requests {
		src, ok := r.Input(made.Source)
		if !ok {
			return tensor.Tensor{}, fmt.Errorf("batch input %q: request %q has no input %q to take it from: %w", name, r.ID, made.Source, ErrInvalidInput)
		}
		n, err := src.Shape.NumElements()
		if err != nil {
			return tensor.Tensor{}, fmt.Errorf("batch input %q: input %q: %w", name, made.Source, err)
		}
		switch kind {
		case modelconfig.BatchInput_BATCH_ELEMENT_COUNT:
			values = append(values, n)
		case modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT, modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO:
			if len(values) == 0 && kind == modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO {
				values = append(values, 0)
			}
			total += n
			values = append(values, total)
		case modelconfig.BatchInput_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE:
			largest = max(largest, n)
		case modelconfig.BatchInput_BATCH_ITEM_SHAPE, modelconfig.BatchInput_BATCH_ITEM_SHAPE_FLATTEN:
			if !b.batched {
				// The first dimension is no batch, and nothing bounds it.
				return tensor.Tensor{}, fmt.Errorf("batch input %q: %s needs a model that batches", name, kind)
			}
			if len(src.Shape) == 0 {
				return tensor.Tensor{}, fmt.Errorf("batch input %q: request %q gives input %q as a scalar; %s needs its batch dimension: %w", name, r.ID, made.Source, kind, ErrInvalidInput)
			}
			if rank >= 0 && len(src.Shape)-1 != rank {
				return tensor.Tensor{}, fmt.Errorf("batch input %q: request %q gives input %q with rank %d, request %q with rank %d: %w",
					name, r.ID, made.Source, len(src.Shape), b.Requests[0].ID, rank+1, ErrInvalidInput)
			}
			rank = len(src.Shape) - 1
			for range src.Shape[0] {
				values = append(values, src.Shape[1:]...)
			}
			items += src.Shape[0]
		default:
			return tensor.Tensor{}, fmt.Errorf("batch input %q: unknown kind %s", name, kind)
		}
	}
	switch kind {
	case modelconfig.BatchInput_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE:
		shape = tensor.Shape{largest}
	case modelconfig.BatchInput_BATCH_ITEM_SHAPE:
		shape = tensor.Shape{items, int64(max(rank, 0))}
	default:
		shape = tensor.Shape{int64(len(values))}
	}
	n, err := shape.NumElements()
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("batch input %q: %w", name, err)
	}
	data := b.alloc(int(n) * 4)
	clear(data)
	for i, v := range values {
		bits := uint32(v)
		if made.DataType == tensor.FP32 {
			bits = math.Float32bits(float32(v))
		} else if v > math.MaxInt32 {
			return tensor.Tensor{}, fmt.Errorf("batch input %q: %s %d does not fit TYPE_INT32: %w", name, kind, v, ErrInvalidInput)
		}
		binary.LittleEndian.PutUint32(data[4*i:], bits)
	}
	t := tensor.Tensor{Name: name, DataType: made.DataType, Shape: shape, Data: data}
	b.gathered = append(b.gathered, t)
	return t, nil
}

// scatterShaped cuts a batch output into consecutive parts, one per
// request, each in the shape sc.Shape takes from the request's source
// input (every -1 replaced by the source's dimension of the same index);
// each part is a view of t.
func (b *Batch) scatterShaped(t tensor.Tensor, sc *BatchOutput) error {
	size := int64(t.DataType.Size())
	if size <= 0 {
		return fmt.Errorf("output %q: batch_output needs a fixed-size datatype, got %s", t.Name, t.DataType.ConfigName())
	}
	var off int64
	for _, r := range b.Requests {
		src, ok := r.Input(sc.Source)
		if !ok {
			return fmt.Errorf("output %q: request %q has no input %q to take its shape from: %w", t.Name, r.ID, sc.Source, ErrInvalidInput)
		}
		shape := slices.Clone(sc.Shape)
		for d := range shape {
			if shape[d] != -1 {
				continue
			}
			if d >= len(src.Shape) {
				return fmt.Errorf("output %q: its dimension %d takes input %q's, which has shape %v", t.Name, d, sc.Source, src.Shape)
			}
			shape[d] = src.Shape[d]
		}
		n, err := shape.NumElements()
		if err != nil {
			return fmt.Errorf("output %q: %w", t.Name, err)
		}
		if n > (int64(len(t.Data))-off)/size { // so that n*size cannot overflow
			return fmt.Errorf("output %q: %d bytes, but the batch's requests take more by the shapes of input %q (request %q: %v): %w", t.Name, len(t.Data), sc.Source, r.ID, shape, ErrInvalidInput)
		}
		end := off + n*size
		if r.Wants(t.Name) {
			r.SetOutput(tensor.Tensor{Name: t.Name, DataType: t.DataType, Shape: shape, Data: t.Data[off:end:end]})
		}
		off = end
	}
	return nil
}
