package onnxruntime

import (
	"context"
	"errors"
	"fmt"
	"slices"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/cgo/ortrun"
	"github.com/triton-go/triton/tensor"
)

// bindRunner binds the run shim to the library the environment was just
// created from.
func bindRunner(lib string) error { return ortrun.Bind(lib) }

// instance is one ONNX Runtime session. The server calls Execute from one
// goroutine at a time, so the scratch slices are reused without locks.
type instance struct {
	m       *model
	session *ort.DynamicAdvancedSession
	run     *ortrun.Session
	in      []ortrun.Tensor // scratch: inputs in m.inputs order
	want    []ortrun.Output // scratch: the outputs to compute
	shapes  [][]int64       // scratch: per output, its known shape (m.outShapes) with the batch size filled in
}

func newInstance(m *model, s *ort.DynamicAdvancedSession) (*instance, error) {
	r, err := ortrun.NewSession(s, m.inputs, m.outputs)
	if err != nil {
		return nil, err
	}
	i := &instance{m: m, session: s, run: r, in: make([]ortrun.Tensor, len(m.inputs)), shapes: make([][]int64, len(m.outputs))}
	for k, o := range m.outShapes {
		i.shapes[k] = slices.Clone(o.dims)
	}
	return i, nil
}

// output returns output k for ortrun, with its shape when the model file
// fixes it: ONNX Runtime then writes it into Go memory in place.
func (i *instance) output(k int, rows int64) ortrun.Output {
	o := i.m.outShapes[k]
	if o.dims == nil {
		return ortrun.Output{Index: k}
	}
	shape := i.shapes[k]
	if o.batch >= 0 {
		shape[o.batch] = rows
	}
	return ortrun.Output{Index: k, Known: true, Shape: shape}
}

// Execute feeds the whole batch to the session at once: each input is the
// requests' inputs concatenated along the batch dimension (no copy for a
// batch of one), and each output is split back into per-request views. Only
// the outputs some request asked for are computed, and the state outputs of
// sequence_batching, which the server takes from every request.
func (i *instance) Execute(ctx context.Context, b *backend.Batch) error {
	for k, name := range i.m.inputs {
		t, err := b.Input(name)
		if err != nil {
			return fmt.Errorf("input '%s' of model '%s': %w", name, i.m.spec.Name, err)
		}
		shape := t.Shape
		if i.m.scalarIn[k] {
			shape = nil // one element (the server checked it against the config's dims)
		}
		i.in[k] = ortrun.Tensor{Type: int32(ortTypes[t.DataType]), Shape: shape, Data: t.Data}
	}
	i.want = i.want[:0]
	for k, name := range i.m.outputs {
		if slices.Contains(i.m.always, k) {
			// A state output: the server takes it from every request.
			i.want = append(i.want, i.output(k, b.Size()))
			continue
		}
		for _, r := range b.Requests {
			if r.Wants(name) {
				i.want = append(i.want, i.output(k, b.Size()))
				break
			}
		}
	}
	b.MarkInputsDone()
	outs, err := i.run.RunOutputs(ctx, i.in, i.want)
	b.MarkInferDone()
	clear(i.in) // do not keep the requests' memory alive
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ortrun.ErrTerminated) {
			return ctxErr
		}
		return fmt.Errorf("ONNX Runtime failed to run model '%s' (%s): %w", i.m.spec.Name, i.m.src.file, classify(err))
	}
	for k, o := range outs {
		name := i.m.outputs[i.want[k].Index]
		dt := tritonType(ort.TensorElementDataType(o.Type))
		if dt == tensor.Invalid {
			return fmt.Errorf("model '%s' output '%s' has an ONNX element type with no Triton datatype (%d)", i.m.spec.Name, name, o.Type)
		}
		shape := o.Shape
		if i.m.scalarOut[i.want[k].Index] && len(shape) == 0 {
			shape = []int64{1}
		}
		if err := b.SetOutput(tensor.Tensor{Name: name, DataType: dt, Shape: shape, Data: o.Data}); err != nil {
			return fmt.Errorf("model '%s': %w", i.m.spec.Name, err)
		}
	}
	return nil
}

// classify marks ONNX Runtime's invalid-argument failures (an input the
// model rejects) and malformed BYTES as the client's; everything else stays
// internal.
func classify(err error) error {
	var e *ortrun.Error
	if (errors.As(err, &e) && e.InvalidArgument()) || errors.Is(err, ortrun.ErrFraming) {
		return fmt.Errorf("%w: %w", err, backend.ErrInvalidInput)
	}
	return err
}

func (i *instance) Close() error {
	return errors.Join(i.run.Close(), i.session.Destroy())
}
