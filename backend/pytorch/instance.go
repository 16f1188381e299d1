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
// shared one. The server calls Execute from one goroutine at a time, so the
// scratch slices are reused without locks; torchrun's Forward is safe for
// concurrent use, so instances sharing a module need none either.
type instance struct {
	m      *model
	mod    *torchrun.Module
	shared bool // mod belongs to the model (ENABLE_WEIGHT_SHARING)

	args  []torchrun.Value // scratch: forward's arguments
	names []string         // scratch: the keys of a Dict input
}

func newInstance(m *model, mod *torchrun.Module, shared bool) *instance {
	return &instance{m: m, mod: mod, shared: shared}
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
	if p.dict {
		i.args, i.names = i.args[:0], i.names[:0]
	} else {
		i.args = append(i.args[:0], make([]torchrun.Value, p.args)...)
	}
	defer func() { clear(i.args) }() // do not keep the requests' memory alive
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
			i.names = append(i.names, f.name)
			i.args = append(i.args, v)
		} else {
			i.args[f.arg] = v
		}
	}
	b.MarkInputsDone()
	var outs []torchrun.Value
	var err error
	if p.dict {
		outs, err = i.mod.ForwardDict(ctx, i.names, i.args)
	} else {
		outs, err = i.mod.Forward(ctx, i.args)
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
	if i.shared {
		return nil
	}
	return i.mod.Close()
}
