package signature

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

// Tensor is the compiled form of a config input or output: what the
// request path checks, without touching protobuf types. Dims and Reshape
// are the config's (-1 for a variable dimension).
type Tensor struct {
	Name     string
	DataType tensor.DataType
	Dims     tensor.Shape // without the batch dimension
	Reshape  tensor.Shape // what the backend sees instead of dims; nil when none
	Optional bool
	Ragged   bool // allow_ragged_batch: requests of different shapes may share a batch
	Shared   bool // one value for the whole batch: no batch dimension
}

// Signature is the compiled input/output contract of a model version.
type Signature struct {
	Model    string
	MaxBatch int64 // 0: the model does not batch
	Inputs   []Tensor
	Outputs  []Tensor
	Required int  // inputs that are not optional
	Reshapes bool // some input has a reshape
	// Layouts are the tensors whose batch is not their first dimension
	// (config parameters "batch_axis:<name>" and "batch_shared:<name>"),
	// the ragged inputs of a batching model (allow_ragged_batch), and the
	// targets of batch_input and batch_output; nil when there are none.
	Layouts map[string]backend.Layout
	// States are the implicit state outputs of a sequence model: the
	// backend produces them beside the config's outputs.
	States map[string]bool
	// KeepDataType, when set, decides about an output produced with
	// another datatype than declared: true lets it through with the
	// datatype produced (backend.DataTypeKeeper); when nil, or false,
	// CheckOutput fails it.
	KeepDataType func(output string, produced, declared tensor.DataType) bool
}

// Compile compiles a normalized, validated configuration. It fails on
// layout parameters ("batch_axis:<name>", "batch_shared:<name>") the model
// cannot honour.
func Compile(cfg *modelconfig.ModelConfig) (*Signature, error) {
	sig := &Signature{Model: cfg.GetName(), MaxBatch: int64(cfg.GetMaxBatchSize())}
	for _, in := range cfg.GetInput() {
		ts := Tensor{
			Name:     in.GetName(),
			DataType: tensor.DataType(in.GetDataType()),
			Dims:     tensor.Shape(in.GetDims()),
			Optional: in.GetOptional(),
			Ragged:   in.GetAllowRaggedBatch(),
		}
		if r := in.GetReshape(); r != nil {
			// Non-nil even for `shape: [ ]` (a scalar), which parses as nil.
			ts.Reshape = append(tensor.Shape{}, r.GetShape()...)
			sig.Reshapes = true
		}
		if !ts.Optional {
			sig.Required++
		}
		sig.Inputs = append(sig.Inputs, ts)
	}
	for _, out := range cfg.GetOutput() {
		ts := Tensor{Name: out.GetName(), DataType: tensor.DataType(out.GetDataType()), Dims: tensor.Shape(out.GetDims())}
		if r := out.GetReshape(); r != nil {
			ts.Reshape = append(tensor.Shape{}, r.GetShape()...)
		}
		sig.Outputs = append(sig.Outputs, ts)
	}
	for _, st := range cfg.GetSequenceBatching().GetState() {
		if sig.States == nil {
			sig.States = map[string]bool{}
		}
		sig.States[st.GetOutputName()] = true
	}
	if err := sig.compileLayouts(cfg); err != nil {
		return nil, err
	}
	return sig, nil
}

// compileLayouts reads the layout parameters of a batching model
// (backend.BatchAxisParameter, backend.BatchSharedParameter). Only state
// tensors may move their batch axis, and only inputs may be shared.
func (sig *Signature) compileLayouts(cfg *modelconfig.ModelConfig) error {
	set := func(name string, l backend.Layout) {
		if sig.Layouts == nil {
			sig.Layouts = map[string]backend.Layout{}
		}
		sig.Layouts[name] = l
	}
	for name, l := range backend.BatchLayouts(cfg) {
		set(name, l)
	}
	if sig.MaxBatch > 0 {
		for _, in := range sig.Inputs {
			if in.Ragged {
				set(in.Name, backend.Layout{Ragged: true})
			}
		}
	}
	states := map[string]bool{}
	for _, st := range cfg.GetSequenceBatching().GetState() {
		states[st.GetInputName()], states[st.GetOutputName()] = true, true
		if sig.MaxBatch == 0 {
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
				return fmt.Errorf("parameter %q: '%s' is not a sequence_batching state tensor of model '%s' (only state tensors may carry the batch in another dimension)", key, name, sig.Model)
			}
		case strings.HasPrefix(key, backend.BatchSharedParameter):
			name := strings.TrimPrefix(key, backend.BatchSharedParameter)
			ts := sig.Input(name)
			if ts == nil {
				return fmt.Errorf("parameter %q: model '%s' has no input '%s'", key, sig.Model, name)
			}
			shared, err := strconv.ParseBool(p.GetStringValue())
			if err != nil {
				return fmt.Errorf("parameter %q: want true or false, got %q", key, p.GetStringValue())
			}
			if shared {
				ts.Shared = true
				set(name, backend.Layout{Shared: true})
			}
		default:
			continue
		}
		if sig.MaxBatch == 0 {
			return fmt.Errorf("parameter %q: model '%s' does not batch (max_batch_size 0)", key, sig.Model)
		}
	}
	return nil
}

// Input returns the config input named name, or nil.
func (sig *Signature) Input(name string) *Tensor {
	for i := range sig.Inputs {
		if sig.Inputs[i].Name == name {
			return &sig.Inputs[i]
		}
	}
	return nil
}

// Output returns the config output named name, or nil.
func (sig *Signature) Output(name string) *Tensor {
	for i := range sig.Outputs {
		if sig.Outputs[i].Name == name {
			return &sig.Outputs[i]
		}
	}
	return nil
}

// FullShape returns the shape clients see for spec: dims, with a -1 batch
// dimension in front when the model batches.
func (sig *Signature) FullShape(ts *Tensor) tensor.Shape {
	if sig.MaxBatch > 0 && !ts.Shared {
		return append(tensor.Shape{-1}, ts.Dims...)
	}
	return ts.Dims
}

// CheckInputs validates a request's inputs against the Signature and
// returns the batch size. Messages follow Triton's wording.
func (sig *Signature) CheckInputs(inputs []tensor.Tensor) (int64, error) {
	var batch int64 = 1
	matched, batched := 0, 0
	for i := range inputs {
		in := &inputs[i]
		ts := sig.Input(in.Name)
		if ts == nil {
			return 0, fmt.Errorf("unexpected inference input '%s' for model '%s'", in.Name, sig.Model)
		}
		for j := range i {
			if inputs[j].Name == in.Name {
				return 0, fmt.Errorf("input '%s' was given twice in the request for model '%s'", in.Name, sig.Model)
			}
		}
		if !ts.Optional {
			matched++
		}
		if in.DataType != ts.DataType {
			return 0, fmt.Errorf("inference input '%s' data-type is '%s', but model '%s' expects '%s'", in.Name, in.DataType, sig.Model, ts.DataType)
		}
		shape := in.Shape
		if sig.MaxBatch > 0 && !ts.Shared {
			if len(shape) != len(ts.Dims)+1 || !shape[1:].Matches(ts.Dims) {
				return 0, sig.shapeError(ts, shape)
			}
			b := shape[0]
			switch {
			case b < 1:
				return 0, fmt.Errorf("input '%s' has batch size %d for model '%s'; the batch size must be at least 1", in.Name, b, sig.Model)
			case b > sig.MaxBatch:
				return 0, fmt.Errorf("inference request batch-size must be <= %d for '%s'", sig.MaxBatch, sig.Model)
			case batched > 0 && b != batch:
				return 0, fmt.Errorf("input '%s' batch size does not match other inputs for '%s'", in.Name, sig.Model)
			}
			batch = b
			batched++
		} else if !shape.Matches(ts.Dims) {
			return 0, sig.shapeError(ts, shape)
		}
		if err := in.Validate(); err != nil {
			return 0, fmt.Errorf("input byte size mismatch or malformed data for input '%s' for model '%s': %w", in.Name, sig.Model, err)
		}
	}
	if matched != sig.Required {
		return 0, sig.missingInputs(inputs)
	}
	return batch, nil
}

func (sig *Signature) shapeError(ts *Tensor, got tensor.Shape) error {
	msg := fmt.Sprintf("unexpected shape for input '%s' for model '%s'. Expected %s, got %s", ts.Name, sig.Model, sig.FullShape(ts), got)
	switch {
	case sig.MaxBatch > 0 && len(got) == len(ts.Dims):
		msg += ". The model batches (max_batch_size > 0), so every input needs the batch dimension in front of the config's dims"
	case sig.MaxBatch > 0 && len(got) == len(ts.Dims)+2:
		msg += ". The request seems to carry two batch dimensions; with max_batch_size > 0 the batch dimension is implicit and must not be written into the config's dims"
	}
	return errors.New(msg)
}

func (sig *Signature) missingInputs(inputs []tensor.Tensor) error {
	var got, missing []string
	for i := range inputs {
		got = append(got, "'"+inputs[i].Name+"'")
	}
	for i := range sig.Inputs {
		ts := &sig.Inputs[i]
		if ts.Optional {
			continue
		}
		found := false
		for j := range inputs {
			found = found || inputs[j].Name == ts.Name
		}
		if !found {
			missing = append(missing, "'"+ts.Name+"'")
		}
	}
	return fmt.Errorf("expected %d inputs but got %d inputs for model '%s'. Got input(s) [%s], but missing required input(s) [%s]. Please provide all required input(s).",
		sig.Required, len(inputs), sig.Model, strings.Join(got, ","), strings.Join(missing, ","))
}

// CheckOutputs validates the names a request asks for.
func (sig *Signature) CheckOutputs(names []string) error {
	for _, n := range names {
		if sig.Output(n) == nil {
			return fmt.Errorf("unexpected inference output '%s' for model '%s'", n, sig.Model)
		}
	}
	return nil
}

// Reshape returns shape with its dims (after the batch dimension, when the
// model batches) replaced by to, the -1 entries of to taken in order from
// the -1 entries of from. The element count is unchanged; the config
// validation made sure of that.
func (sig *Signature) Reshape(shape, from, to tensor.Shape, batched bool) tensor.Shape {
	out := make(tensor.Shape, 0, len(to)+1)
	rest := shape
	if sig.MaxBatch > 0 && batched {
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

// ReshapeInputs appends inputs to dst with the shapes the backend sees:
// the config's reshape instead of its dims, for the inputs that have one
// (inputs the config does not list, the control and state tensors of a
// sequence model, pass unchanged). dst may be inputs[:0].
func (sig *Signature) ReshapeInputs(dst, inputs []tensor.Tensor) []tensor.Tensor {
	for _, in := range inputs {
		if ts := sig.Input(in.Name); ts != nil && ts.Reshape != nil {
			in.Shape = sig.Reshape(in.Shape, ts.Dims, ts.Reshape, !ts.Shared)
		}
		dst = append(dst, in)
	}
	return dst
}

// CheckOutput validates one output a backend produced for a request of
// batch size batch, and returns it with the shape clients see.
func (sig *Signature) CheckOutput(t tensor.Tensor, batch int64) (tensor.Tensor, error) {
	ts := sig.Output(t.Name)
	if ts == nil && sig.States[t.Name] {
		return t, nil // a state output, which the sequencer takes back
	}
	if ts == nil {
		return t, fmt.Errorf("backend produced output '%s', which model '%s' does not declare", t.Name, sig.Model)
	}
	if t.DataType != ts.DataType && (sig.KeepDataType == nil || !sig.KeepDataType(t.Name, t.DataType, ts.DataType)) {
		return t, fmt.Errorf("backend produced output '%s' with data-type '%s', but model '%s' declares '%s'", t.Name, t.DataType, sig.Model, ts.DataType)
	}
	dims := ts.Dims
	if ts.Reshape != nil {
		dims = ts.Reshape
	}
	ok := t.Shape.Matches(dims)
	if sig.MaxBatch > 0 {
		ok = len(t.Shape) == len(dims)+1 && t.Shape[0] == batch && t.Shape[1:].Matches(dims)
	}
	if !ok {
		want := sig.batchShape(batch, dims)
		hint := ""
		switch {
		case sig.MaxBatch > 0 && len(t.Shape) == len(want) && len(t.Shape) > 0 && t.Shape[0] != batch:
			hint = fmt.Sprintf(" (its first dimension must be the request's batch size, %d)", batch)
		case ts.Reshape != nil && t.Shape.Matches(sig.batchShape(batch, ts.Dims)):
			hint = fmt.Sprintf(" (the config's reshape %s, not its dims %s)", ts.Reshape, ts.Dims)
		}
		return t, fmt.Errorf("backend produced output '%s' with shape %s, but model '%s' expects %s%s", t.Name, t.Shape, sig.Model, want, hint)
	}
	if err := t.Validate(); err != nil {
		return t, fmt.Errorf("backend produced a malformed output '%s' for model '%s': %w", t.Name, sig.Model, err)
	}
	if ts.Reshape != nil {
		t.Shape = sig.Reshape(t.Shape, ts.Reshape, ts.Dims, true)
	}
	return t, nil
}

// batchShape returns dims with the batch dimension batch in front when
// the model batches.
func (sig *Signature) batchShape(batch int64, dims tensor.Shape) tensor.Shape {
	if sig.MaxBatch == 0 {
		return dims
	}
	return append(tensor.Shape{batch}, dims...)
}

// Compatible reports whether two requests' inputs may share a batch: the
// same non-batch dimensions for every input that is not ragged.
func (sig *Signature) Compatible(a, b []tensor.Tensor) bool {
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
		if ts := sig.Input(x.Name); ts != nil && ts.Shared {
			if !x.Shape.Equal(y.Shape) || !bytes.Equal(x.Data, y.Data) {
				return false // one value for the batch: only equal ones batch
			}
			continue
		}
		if len(x.Shape) == 0 {
			continue
		}
		if axis := sig.Layouts[x.Name].Axis; axis > 0 && axis < len(x.Shape) {
			// A state batched along another dimension: the others must agree.
			if !x.Shape[:axis].Equal(y.Shape[:axis]) || !x.Shape[axis+1:].Equal(y.Shape[axis+1:]) {
				return false
			}
			continue
		}
		if !x.Shape[1:].Equal(y.Shape[1:]) {
			if ts := sig.Input(x.Name); ts == nil || !ts.Ragged {
				return false
			}
		}
	}
	return true
}
