package backend

import (
	"context"

	"github.com/triton-go/triton/tensor"
)

// ConfigCompleter is implemented by a [Backend] that can fill in a model
// configuration from the model file (Triton's auto-complete): inputs,
// outputs, datatypes, dims and max_batch_size. The server calls it before
// validating the configuration, unless strict configuration is on.
type ConfigCompleter interface {
	// CompleteConfig fills the missing parts of spec.Config in place. It
	// must not change what the configuration already states; where the file
	// contradicts the configuration it returns an error naming both.
	CompleteConfig(ctx context.Context, spec *ModelSpec) error
}

// Warmer is implemented by an [Instance] that prepares itself before it takes
// traffic (allocating arenas, compiling kernels). The server calls Warmup
// once, after NewInstance and before the model becomes ready; a failure fails
// the load.
type Warmer interface {
	Warmup(ctx context.Context) error
}

// Readier is implemented by an [Instance] that can report its health (a
// device that fell off the bus, a remote runtime that went away). The server
// consults it when asked whether the model is ready. Unlike Execute, Ready
// may be called from any goroutine, concurrently with Execute.
type Readier interface {
	Ready(ctx context.Context) error
}

// DataTypeKeeper is implemented by a [Model] whose outputs reach clients
// with the datatype the model produced, even where its configuration
// declares another: Triton's Python backend passes its models' tensors on
// that way (Triton's core does not compare an output's datatype with the
// configuration; its ONNX Runtime and PyTorch backends do). Without it, an
// output of another datatype than the configuration's fails its request
// with an internal error naming both.
type DataTypeKeeper interface {
	// KeepDataType reports whether the output named output, produced with
	// datatype produced where the configuration declares declared, goes to
	// the client as it is (true) or fails its request (false). It is
	// called for every such output, from any goroutine and concurrently,
	// so it must be quick; it is where a backend logs the mismatch.
	KeepDataType(output string, produced, declared tensor.DataType) bool
}

// KeepDataType asks the [DataTypeKeeper] of m whether an output produced
// with another datatype than declared goes to the client as produced; a
// model without one keeps no such output (false).
func KeepDataType(m Model, output string, produced, declared tensor.DataType) bool {
	k, ok := m.(DataTypeKeeper)
	return ok && k.KeepDataType(output, produced, declared)
}

// Wrapper is implemented by instances that decorate another instance
// (metrics, tracing, fault injection). The capability helpers of this
// package look through wrappers, so decorating never hides a capability.
type Wrapper interface {
	Unwrap() Instance
}

// find returns the first instance in the Unwrap chain of inst that
// implements T.
func find[T any](inst Instance) (T, bool) {
	for inst != nil {
		if c, ok := inst.(T); ok {
			return c, true
		}
		w, ok := inst.(Wrapper)
		if !ok {
			break
		}
		inst = w.Unwrap()
	}
	var zero T
	return zero, false
}

// CompleteConfig calls b's [ConfigCompleter] if it has one and reports
// whether it did.
func CompleteConfig(ctx context.Context, b Backend, spec *ModelSpec) (bool, error) {
	c, ok := b.(ConfigCompleter)
	if !ok {
		return false, nil
	}
	return true, c.CompleteConfig(ctx, spec)
}

// Warmup calls the [Warmer] of inst (looking through wrappers); it does
// nothing when there is none.
func Warmup(ctx context.Context, inst Instance) error {
	if w, ok := find[Warmer](inst); ok {
		return w.Warmup(ctx)
	}
	return nil
}

// Ready calls the [Readier] of inst (looking through wrappers); an instance
// without one is ready.
func Ready(ctx context.Context, inst Instance) error {
	if r, ok := find[Readier](inst); ok {
		return r.Ready(ctx)
	}
	return nil
}

// SequenceObserver is implemented by a [Model] of a sequence-batching
// (stateful) model that keeps something of its own per sequence: the
// server tells it when a sequence is over, so that it can free that. Triton
// never tells backends; a sequence ends with its END request, when it has
// been idle for max_sequence_idle_microseconds, or when the model version
// closes. SequenceEnded is called once per sequence, from any goroutine,
// never concurrently with itself, and must not block. For an END request
// it runs before that request's Infer returns, and always before the next
// request of the same correlation ID (a new sequence) reaches the model.
//
// The requests of a sequence may run on any instance of the model, so
// what a backend keeps per sequence belongs to the Model, keyed by the
// correlation ID (the CORRID control), not to an Instance.
//
// # Experimental
//
// This interface may change or go away in a later release: Triton has
// no equivalent, and the sequence batcher may come to pin sequences to
// instances (then per-instance state would be possible).
type SequenceObserver interface {
	SequenceEnded(s SequenceEnd)
}

// SequenceEnd describes a sequence that is over.
type SequenceEnd struct {
	// ID and IDString are the sequence's correlation ID (one of them is
	// set, as in [InferRequest]).
	ID       uint64
	IDString string
	// Reason tells why it ended.
	Reason SequenceEndReason
}

// SequenceEndReason is why a sequence ended.
type SequenceEndReason uint8

const (
	// SequenceEndFlag: a request of the sequence carried the END flag.
	SequenceEndFlag SequenceEndReason = iota
	// SequenceIdle: no request came for max_sequence_idle_microseconds.
	SequenceIdle
	// SequenceClosed: the model version closed with the sequence live.
	SequenceClosed
)

// String names the reason.
func (r SequenceEndReason) String() string {
	switch r {
	case SequenceEndFlag:
		return "end"
	case SequenceIdle:
		return "idle"
	case SequenceClosed:
		return "closed"
	}
	return "unknown"
}

// Queuer is implemented by an [Instance] that can take more Executes while
// one is in progress and then run the next batch the moment the running
// one ends, on a thread already running (libtorch's forwards on a worker
// thread of the instance's own). Under dynamic batching the server queues
// a full batch behind the running one (it could not have grown while
// waiting), as Triton's dynamic batcher forms batches ahead of its
// instances, so that no goroutine has to be woken between two executions.
// Unlike the other capabilities it is not looked for through a [Wrapper]:
// a wrapper's own Execute must allow the second call.
type Queuer interface {
	// Queue switches the instance to taking more Executes while one is
	// in progress, and reports whether it did. The server calls it once,
	// before any Execute it may queue; from then on up to three calls are
	// in progress (the running batch and two queued behind it: Triton's
	// payload queue holds two batches per instance), and they may reach
	// Execute in any order. A batch that waited behind another says when it
	// ran with [Batch.MarkInfer].
	Queue() bool
}

// Queue calls the [Queuer] of inst, if it is one, and reports whether inst
// now takes Executes queued behind the one in progress.
func Queue(inst Instance) bool {
	q, ok := inst.(Queuer)
	return ok && q.Queue()
}
