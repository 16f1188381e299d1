// signature.go is a version's compiled input/output contract: the checks
// of requests and of what backends produce.

package triton

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// tensorSpec is the compiled form of a config input or output: what the
// request path checks, without touching protobuf types.
type tensorSpec struct {
	name     string
	dtype    tensor.DataType
	dims     tensor.Shape // without the batch dimension
	reshape  tensor.Shape // what the backend sees instead of dims; nil when none
	optional bool
	ragged   bool // allow_ragged_batch: requests of different shapes may share a batch
	shared   bool // one value for the whole batch: no batch dimension
}

// signature is the compiled input/output contract of a model version.
type signature struct {
	model    string
	maxBatch int64 // 0: the model does not batch
	inputs   []tensorSpec
	outputs  []tensorSpec
	required int  // inputs that are not optional
	reshapes bool // some input has a reshape
	// layouts are the tensors whose batch is not their first dimension
	// (config parameters "batch_axis:<name>" and "batch_shared:<name>");
	// nil when there are none.
	layouts map[string]backend.Layout
	// states are the implicit state outputs of a sequence model: the
	// backend produces them beside the config's outputs.
	states map[string]bool
}

func compileSignature(cfg *modelconfig.ModelConfig) signature {
	sig := signature{model: cfg.GetName(), maxBatch: int64(cfg.GetMaxBatchSize())}
	for _, in := range cfg.GetInput() {
		ts := tensorSpec{
			name:     in.GetName(),
			dtype:    tensor.DataType(in.GetDataType()),
			dims:     tensor.Shape(in.GetDims()),
			optional: in.GetOptional(),
			ragged:   in.GetAllowRaggedBatch(),
		}
		if r := in.GetReshape(); r != nil {
			// Non-nil even for `shape: [ ]` (a scalar), which parses as nil.
			ts.reshape = append(tensor.Shape{}, r.GetShape()...)
			sig.reshapes = true
		}
		if !ts.optional {
			sig.required++
		}
		sig.inputs = append(sig.inputs, ts)
	}
	for _, out := range cfg.GetOutput() {
		ts := tensorSpec{name: out.GetName(), dtype: tensor.DataType(out.GetDataType()), dims: tensor.Shape(out.GetDims())}
		if r := out.GetReshape(); r != nil {
			ts.reshape = append(tensor.Shape{}, r.GetShape()...)
		}
		sig.outputs = append(sig.outputs, ts)
	}
	for _, st := range cfg.GetSequenceBatching().GetState() {
		if sig.states == nil {
			sig.states = map[string]bool{}
		}
		sig.states[st.GetOutputName()] = true
	}
	return sig
}

// compileLayouts reads the layout parameters of a batching model
// (backend.BatchAxisParameter, backend.BatchSharedParameter). Only state
// tensors may move their batch axis, and only inputs may be shared.
func (sig *signature) compileLayouts(cfg *modelconfig.ModelConfig) error {
	set := func(name string, l backend.Layout) {
		if sig.layouts == nil {
			sig.layouts = map[string]backend.Layout{}
		}
		sig.layouts[name] = l
	}
	states := map[string]bool{}
	for _, st := range cfg.GetSequenceBatching().GetState() {
		states[st.GetInputName()], states[st.GetOutputName()] = true, true
		if sig.maxBatch == 0 {
			continue
		}
		axis, err := backend.StateBatchAxis(cfg, st)
		if err != nil {
			return err
		}
		if axis > 0 {
			set(st.GetInputName(), backend.Layout{Axis: axis})
			set(st.GetOutputName(), backend.Layout{Axis: axis})
		}
	}
	for key, p := range cfg.GetParameters() {
		switch {
		case strings.HasPrefix(key, backend.BatchAxisParameter):
			if name := strings.TrimPrefix(key, backend.BatchAxisParameter); !states[name] {
				return fmt.Errorf("parameter %q: '%s' is not a sequence_batching state tensor of model '%s' (only state tensors may carry the batch in another dimension)", key, name, sig.model)
			}
		case strings.HasPrefix(key, backend.BatchSharedParameter):
			name := strings.TrimPrefix(key, backend.BatchSharedParameter)
			ts := sig.input(name)
			if ts == nil {
				return fmt.Errorf("parameter %q: model '%s' has no input '%s'", key, sig.model, name)
			}
			shared, err := strconv.ParseBool(p.GetStringValue())
			if err != nil {
				return fmt.Errorf("parameter %q: want true or false, got %q", key, p.GetStringValue())
			}
			if shared {
				ts.shared = true
				set(name, backend.Layout{Shared: true})
			}
		default:
			continue
		}
		if sig.maxBatch == 0 {
			return fmt.Errorf("parameter %q: model '%s' does not batch (max_batch_size 0)", key, sig.model)
		}
	}
	return nil
}

func (sig *signature) input(name string) *tensorSpec {
	for i := range sig.inputs {
		if sig.inputs[i].name == name {
			return &sig.inputs[i]
		}
	}
	return nil
}

func (sig *signature) output(name string) *tensorSpec {
	for i := range sig.outputs {
		if sig.outputs[i].name == name {
			return &sig.outputs[i]
		}
	}
	return nil
}

// fullShape returns the shape clients see for spec: dims, with a -1 batch
// dimension in front when the model batches.
func (sig *signature) fullShape(ts *tensorSpec) tensor.Shape {
	if sig.maxBatch > 0 && !ts.shared {
		return append(tensor.Shape{-1}, ts.dims...)
	}
	return ts.dims
}

// checkInputs validates a request's inputs against the signature and
// returns the batch size. Messages follow Triton's wording.
func (sig *signature) checkInputs(inputs []tensor.Tensor) (int64, error) {
	var batch int64 = 1
	matched, batched := 0, 0
	for i := range inputs {
		in := &inputs[i]
		ts := sig.input(in.Name)
		if ts == nil {
			return 0, fmt.Errorf("unexpected inference input '%s' for model '%s'", in.Name, sig.model)
		}
		for j := range i {
			if inputs[j].Name == in.Name {
				return 0, fmt.Errorf("input '%s' was given twice in the request for model '%s'", in.Name, sig.model)
			}
		}
		if !ts.optional {
			matched++
		}
		if in.DataType != ts.dtype {
			return 0, fmt.Errorf("inference input '%s' data-type is '%s', but model '%s' expects '%s'", in.Name, in.DataType, sig.model, ts.dtype)
		}
		shape := in.Shape
		if sig.maxBatch > 0 && !ts.shared {
			if len(shape) != len(ts.dims)+1 || !shape[1:].Matches(ts.dims) {
				return 0, sig.shapeError(ts, shape)
			}
			b := shape[0]
			switch {
			case b < 1:
				return 0, fmt.Errorf("input '%s' has batch size %d for model '%s'; the batch size must be at least 1", in.Name, b, sig.model)
			case b > sig.maxBatch:
				return 0, fmt.Errorf("inference request batch-size must be <= %d for '%s'", sig.maxBatch, sig.model)
			case batched > 0 && b != batch:
				return 0, fmt.Errorf("input '%s' batch size does not match other inputs for '%s'", in.Name, sig.model)
			}
			batch = b
			batched++
		} else if !shape.Matches(ts.dims) {
			return 0, sig.shapeError(ts, shape)
		}
		if err := in.Validate(); err != nil {
			return 0, fmt.Errorf("input byte size mismatch or malformed data for input '%s' for model '%s': %w", in.Name, sig.model, err)
		}
	}
	if matched != sig.required {
		return 0, sig.missingInputs(inputs)
	}
	return batch, nil
}

func (sig *signature) shapeError(ts *tensorSpec, got tensor.Shape) error {
	msg := fmt.Sprintf("unexpected shape for input '%s' for model '%s'. Expected %s, got %s", ts.name, sig.model, sig.fullShape(ts), got)
	switch {
	case sig.maxBatch > 0 && len(got) == len(ts.dims):
		msg += ". The model batches (max_batch_size > 0), so every input needs the batch dimension in front of the config's dims"
	case sig.maxBatch > 0 && len(got) == len(ts.dims)+2:
		msg += ". The request seems to carry two batch dimensions; with max_batch_size > 0 the batch dimension is implicit and must not be written into the config's dims"
	}
	return errors.New(msg)
}

func (sig *signature) missingInputs(inputs []tensor.Tensor) error {
	var got, missing []string
	for i := range inputs {
		got = append(got, "'"+inputs[i].Name+"'")
	}
	for i := range sig.inputs {
		ts := &sig.inputs[i]
		if ts.optional {
			continue
		}
		found := false
		for j := range inputs {
			found = found || inputs[j].Name == ts.name
		}
		if !found {
			missing = append(missing, "'"+ts.name+"'")
		}
	}
	return fmt.Errorf("expected %d inputs but got %d inputs for model '%s'. Got input(s) [%s], but missing required input(s) [%s]. Please provide all required input(s).",
		sig.required, len(inputs), sig.model, strings.Join(got, ","), strings.Join(missing, ","))
}

// checkOutputs validates the names a request asks for.
func (sig *signature) checkOutputs(names []string) error {
	for _, n := range names {
		if sig.output(n) == nil {
			return fmt.Errorf("unexpected inference output '%s' for model '%s'", n, sig.model)
		}
	}
	return nil
}

// reshape returns shape with its dims (after the batch dimension, when the
// model batches) replaced by to, the -1 entries of to taken in order from
// the -1 entries of from. The element count is unchanged; the config
// validation made sure of that.
func (sig *signature) reshape(shape, from, to tensor.Shape, batched bool) tensor.Shape {
	out := make(tensor.Shape, 0, len(to)+1)
	rest := shape
	if sig.maxBatch > 0 && batched {
		out = append(out, shape[0])
		rest = shape[1:]
	}
	// Variable dims of to take the values of the variable dims of from, in order.
	var vars []int64
	for i, d := range from {
		if d == -1 && i < len(rest) {
			vars = append(vars, rest[i])
		}
	}
	for _, d := range to {
		if d == -1 && len(vars) > 0 {
			d, vars = vars[0], vars[1:]
		}
		out = append(out, d)
	}
	return out
}

// checkOutput validates one output a backend produced for a request of
// batch size batch, and returns it with the shape clients see.
func (sig *signature) checkOutput(t tensor.Tensor, batch int64) (tensor.Tensor, error) {
	ts := sig.output(t.Name)
	if ts == nil && sig.states[t.Name] {
		return t, nil // a state output, which the sequencer takes back
	}
	if ts == nil {
		return t, fmt.Errorf("backend produced output '%s', which model '%s' does not declare", t.Name, sig.model)
	}
	if t.DataType != ts.dtype {
		return t, fmt.Errorf("backend produced output '%s' with data-type '%s', but model '%s' declares '%s'", t.Name, t.DataType, sig.model, ts.dtype)
	}
	dims := ts.dims
	if ts.reshape != nil {
		dims = ts.reshape
	}
	ok := true
	if sig.maxBatch > 0 {
		ok = len(t.Shape) == len(dims)+1 && t.Shape[0] == batch && t.Shape[1:].Matches(dims)
	} else {
		ok = t.Shape.Matches(dims)
	}
	if !ok {
		want := dims
		if sig.maxBatch > 0 {
			want = append(tensor.Shape{batch}, dims...)
		}
		return t, fmt.Errorf("backend produced output '%s' with shape %s, but model '%s' expects %s", t.Name, t.Shape, sig.model, want)
	}
	if err := t.Validate(); err != nil {
		return t, fmt.Errorf("backend produced a malformed output '%s' for model '%s': %w", t.Name, sig.model, err)
	}
	if ts.reshape != nil {
		t.Shape = sig.reshape(t.Shape, ts.reshape, ts.dims, true)
	}
	return t, nil
}

// compatible reports whether two requests' inputs may share a batch: the
// same non-batch dimensions for every input that is not ragged.
func (sig *signature) compatible(a, b []tensor.Tensor) bool {
	if len(a) != len(b) {
		return false // optional inputs given to one and not the other
	}
	for i := range a {
		x := &a[i]
		y := &b[i]
		if y.Name != x.Name { // inputs in another order: find it by name
			y = nil
			for j := range b {
				if b[j].Name == x.Name {
					y = &b[j]
					break
				}
			}
			if y == nil {
				return false
			}
		}
		if len(x.Shape) != len(y.Shape) {
			return false
		}
		if ts := sig.input(x.Name); ts != nil && ts.shared {
			if !x.Shape.Equal(y.Shape) || !bytes.Equal(x.Data, y.Data) {
				return false // one value for the batch: only equal ones batch
			}
			continue
		}
		if len(x.Shape) == 0 {
			continue
		}
		if axis := sig.layouts[x.Name].Axis; axis > 0 && axis < len(x.Shape) {
			// A state batched along another dimension: the others must agree.
			if !x.Shape[:axis].Equal(y.Shape[:axis]) || !x.Shape[axis+1:].Equal(y.Shape[axis+1:]) {
				return false
			}
			continue
		}
		if !x.Shape[1:].Equal(y.Shape[1:]) {
			if ts := sig.input(x.Name); ts == nil || !ts.ragged {
				return false
			}
		}
	}
	return true
}
