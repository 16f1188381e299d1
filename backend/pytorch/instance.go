package pytorch

import (
	"context"
	"errors"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/tensor"
)

// instance is one execution context: a module of its own, or the model's
// shared one. torchrun's Forward is safe for concurrent use, so instances
// sharing a module need no lock.
//
// Once the server asks for a queue ([backend.Queuer]), forwards go through
// a torchrun.Worker of the instance's own, so that a batch queued behind
// the running one starts the moment that one ends, on a thread already
// running; a batch not queued behind another still runs on the caller's
// thread when nothing runs.
type instance struct {
	m      *model
	mod    *torchrun.Module
	shared bool // mod belongs to the model (ENABLE_WEIGHT_SHARING)

	worker  *torchrun.Worker // nil: forwards run on the caller's thread
	scratch chan *scratch    // free scratch, for the Executes in progress
}

// scratch is one Execute's reused memory.
type scratch struct {
	args  []torchrun.Value // forward's arguments
	names []string         // the keys of a Dict input
}

func newInstance(m *model, mod *torchrun.Module, shared bool) *instance {
	return &instance{m: m, mod: mod, shared: shared, scratch: make(chan *scratch, 4)}
}

// Queue starts the instance's worker thread (see instance); false if it
// cannot be started, and forwards stay on the callers' threads.
func (i *instance) Queue() bool {
	if i.worker != nil {
		return true
	}
	w, err := torchrun.NewWorker()
	if err != nil {
		i.m.log.Warn(fmt.Sprintf("instance of model '%s' runs without a worker thread: %v", i.m.spec.Name, err))
		return false
	}
	i.worker = w
	return true
}

// Execute runs the whole batch in one forward call: each input is the
// requests' inputs concatenated along the batch dimension (no copy for a
// batch of one; a TYPE_STRING input is one List[str] of every request's
// elements), wrapped by libtorch without a copy, and each output is split
// back into per-request views. When forward fails for a batch of several
// requests, each request is run again alone, so that a request that makes
// the model raise fails on its own and the others of its batch are served
// (Triton fails the whole batch).
func (i *instance) Execute(ctx context.Context, b *backend.Batch) error {
	outs, err := i.forward(ctx, b)
	if err != nil {
		var te *torchrun.Error
		if len(b.Requests) < 2 || !errors.As(err, &te) || ctx.Err() != nil {
			return err
		}
		for _, r := range b.Requests {
			alone := backend.NewBatch(b.Batched(), r)
			alone.SetLayouts(b.Layouts()) // ragged and batch inputs, batch outputs
			outs, err := i.forward(ctx, alone)
			if err == nil {
				err = i.setOutputs(alone, outs)
			}
			r.Fail(err)
		}
		return nil
	}
	return i.setOutputs(b, outs)
}

// forward gathers the batch's inputs and runs the module.
func (i *instance) forward(ctx context.Context, b *backend.Batch) ([]torchrun.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := i.m.plan
	var sc *scratch
	select {
	case sc = <-i.scratch:
	default:
		sc = new(scratch)
	}
	args, names := sc.args[:0], sc.names[:0]
	if !p.dict {
		args = append(args, make([]torchrun.Value, p.args)...)
	}
	defer func() {
		clear(args) // do not keep the requests' memory alive
		sc.args, sc.names = args[:0], names[:0]
		select {
		case i.scratch <- sc:
		default:
		}
	}()
	for _, f := range p.feeds {
		t, err := b.Input(f.name)
		if err != nil {
			return nil, fmt.Errorf("input '%s' of model '%s': %w", f.name, i.m.spec.Name, err)
		}
		v := torchrun.Value{DataType: t.DataType, Shape: t.Shape, Data: t.Data}
		if f.strings {
			strs, err := tensor.ByteSlices(t)
			if err != nil {
				return nil, fmt.Errorf("input '%s' of model '%s': %w: %w", f.name, i.m.spec.Name, err, backend.ErrInvalidInput)
			}
			v = torchrun.Value{DataType: tensor.Bytes, Shape: []int64{int64(len(strs))}, Strings: strs}
		}
		if p.dict {
			names = append(names, f.name)
			args = append(args, v)
		} else {
			args[f.arg] = v
		}
	}
	b.MarkInputsDone()
	if i.worker != nil {
		submitted, _ := b.Marks()
		var (
			outs []torchrun.Value
			run  torchrun.Run
			err  error
		)
		if p.dict {
			outs, run, err = i.worker.ForwardDict(ctx, i.mod, placement(b), names, args)
		} else {
			outs, run, err = i.worker.Forward(ctx, i.mod, placement(b), args)
		}
		// The forward's own span, without the wait behind other batches
		// (queue time) and the wake-up of this goroutine after it (output).
		start := submitted.Add(run.Waited)
		b.MarkInfer(start, start.Add(run.Ran))
		return outs, err
	}
	var outs []torchrun.Value
	var err error
	if p.dict {
		outs, err = i.mod.ForwardDict(ctx, names, args)
	} else {
		outs, err = i.mod.Forward(ctx, args)
	}
	b.MarkInferDone()
	return outs, err
}

// setOutputs checks forward's outputs against the configuration (Triton's
// errors: an index beyond them, a datatype the config does not expect, a
// scalar) and hands them to the requests that asked for them.
func (i *instance) setOutputs(b *backend.Batch, outs []torchrun.Value) error {
	p := i.m.plan
	for _, f := range p.fetches {
		if f.index < 0 || f.index >= len(outs) {
			return invalidf("The output %s in the model configuration refers to an output index which doesn't exist. This model has %d outputs", f.name, len(outs))
		}
	}
	for _, f := range p.fetches {
		o := outs[f.index] // checked whether asked for or not, as Triton checks every output
		switch {
		case f.dt == tensor.Bytes && o.DataType != tensor.Bytes:
			return invalidf("configuration expects datatype TYPE_STRING for output '%s', model provides %s", f.name, o.DataType.ConfigName())
		case f.dt != tensor.Bytes && o.DataType == tensor.Bytes:
			return invalidf("configuration expects datatype %s for output '%s', model provides List[str]", f.dt.ConfigName(), f.name)
		case o.DataType != f.dt:
			return invalidf("configuration expects datatype %s for output '%s', model provides %s", f.dt.ConfigName(), f.name, o.DataType.ConfigName())
		case o.DataType != tensor.Bytes && len(o.Shape) == 0:
			return invalidf("output '%s' is a scalar which is not supported.", f.name)
		}
		if !wanted(b, f.name) {
			continue
		}
		if o.DataType == tensor.Bytes {
			if err := setStrings(b, f.name, o.Strings, i.m.spec.Config.GetMaxBatchSize() > 0); err != nil {
				return fmt.Errorf("model '%s': %w", i.m.spec.Name, err)
			}
			continue
		}
		t := tensor.Tensor{Name: f.name, DataType: o.DataType, Shape: o.Shape, Data: o.Data}
		if err := b.SetOutput(t); err != nil {
			return fmt.Errorf("model '%s': %w: %w", i.m.spec.Name, err, backend.ErrInvalidInput)
		}
	}
	return nil
}

// setStrings hands a List[str] output to the requests: a model without
// batching gets the list as it is ([len]); with batching, each request
// gets its rows ([rows], a lone request too, as Triton shapes it), and the
// list must have one string per row of the batch.
func setStrings(b *backend.Batch, name string, strs [][]byte, batching bool) error {
	if !batching && len(b.Requests) == 1 {
		t, err := tensor.FromByteSlices(name, tensor.Shape{int64(len(strs))}, strs)
		if err != nil {
			return err
		}
		b.Requests[0].SetOutput(t)
		return nil
	}
	if int64(len(strs)) != b.Size() {
		return invalidf("output '%s' is a List[str] of %d strings for a batch of %d", name, len(strs), b.Size())
	}
	var row int64
	for _, r := range b.Requests {
		start := row
		row += r.BatchSize
		if !r.Wants(name) {
			continue
		}
		t, err := tensor.FromByteSlices(name, tensor.Shape{r.BatchSize}, strs[start:row])
		if err != nil {
			return err
		}
		r.SetOutput(t)
	}
	return nil
}

// placement is where the worker runs b's forward: behind the running
// batch on the worker's thread, or, for a batch the server did not queue
// behind another (a lone one, the first of a burst), on the caller's
// thread when nothing runs, which saves waking the worker's thread.
func placement(b *backend.Batch) torchrun.Placement {
	if b.Behind() {
		return torchrun.Queued
	}
	return torchrun.Inline
}

// wanted reports whether a request of b asked for the output name.
func wanted(b *backend.Batch, name string) bool {
	for _, r := range b.Requests {
		if r.Wants(name) {
			return true
		}
	}
	return false
}

func (i *instance) Close() error {
	if i.worker != nil {
		_ = i.worker.Close() // waits for the forwards in progress; never fails
	}
	if i.shared {
		return nil
	}
	return i.mod.Close()
}
