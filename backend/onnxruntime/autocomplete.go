package onnxruntime

import (
	"fmt"
	"slices"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// complete fills the parts of cfg that the model file answers, following
// Triton's ONNX Runtime auto-complete rules:
//
//   - inputs and outputs are filled from the model when the config lists
//     none (each list separately), with the model's datatypes and dims;
//     the tensors that sequence_batching declares (state inputs and
//     outputs, control inputs) are left out: the server adds them;
//   - a model is batchable when every input and output has a dynamic
//     batch dimension (the first; for a sequence_batching state, the one
//     its batch_axis parameter names, see backend.BatchAxisParameter); then, if
//     the config leaves max_batch_size at 0 and does not already write
//     some tensor with the model's full rank (which says "no batching"),
//     it becomes defaultBatch and, with no scheduler configured and a
//     max_batch_size above 1, dynamic batching is enabled;
//   - for a batching model the batch dimension is left out of dims;
//     rank-0 (scalar) tensors make a model unbatchable and are written as
//     dims [1], as Triton's ONNX Runtime backend writes them (Triton
//     refuses an empty reshape on a non-batching model); the backend feeds
//     and returns them as rank 0 inside (see scalarOK). A tensor that is
//     [batch] in a batching model is dims [1] with reshape { shape: [] }.
//
// What the config already states is kept; contradictions are found by
// checkConfig when the model loads.
func complete(cfg *modelconfig.ModelConfig, ins, outs []ort.InputOutputInfo, defaultBatch int) error {
	batchable := len(ins)+len(outs) > 0
	axes := map[string]int{}
	for _, io := range append(slices.Clone(ins), outs...) {
		if io.OrtValueType != ort.ONNXTypeTensor {
			return fmt.Errorf("model %s '%s' is a %v, not a tensor; the onnxruntime backend serves tensors only", ioKind(io, ins), io.Name, io.OrtValueType)
		}
		axis, err := tensorAxis(cfg, io.Name)
		if err != nil {
			return err
		}
		axes[io.Name] = axis
		if len(io.Dimensions) <= axis || io.Dimensions[axis] != -1 {
			batchable = false
		}
	}
	if cfg.GetMaxBatchSize() == 0 && batchable && defaultBatch > 0 && !scalarInConfig(cfg) && !fullShapesInConfig(cfg, ins, outs) {
		cfg.MaxBatchSize = int32(defaultBatch)
		if cfg.GetMaxBatchSize() > 1 && cfg.GetSchedulingChoice() == nil {
			cfg.SchedulingChoice = &modelconfig.ModelConfig_DynamicBatching{DynamicBatching: &modelconfig.ModelDynamicBatching{}}
		}
	}
	batching := cfg.GetMaxBatchSize() > 0
	made, seqOuts := sequenceNames(cfg) // inputs the server makes: sequence state and controls, batch inputs
	for _, bi := range cfg.GetBatchInput() {
		for _, name := range bi.GetTargetName() {
			made[name] = true
		}
	}
	if len(cfg.GetInput()) == 0 {
		for _, io := range ins {
			if made[io.Name] {
				continue
			}
			dt, dims, reshape, err := completeTensor(io, batching, axes[io.Name])
			if err != nil {
				return fmt.Errorf("model input '%s': %w", io.Name, err)
			}
			cfg.Input = append(cfg.Input, &modelconfig.ModelInput{Name: io.Name, DataType: dt, Dims: dims, Reshape: reshape})
		}
	}
	if len(cfg.GetOutput()) == 0 {
		for _, io := range outs {
			if seqOuts[io.Name] {
				continue
			}
			dt, dims, reshape, err := completeTensor(io, batching, axes[io.Name])
			if err != nil {
				return fmt.Errorf("model output '%s': %w", io.Name, err)
			}
			cfg.Output = append(cfg.Output, &modelconfig.ModelOutput{Name: io.Name, DataType: dt, Dims: dims, Reshape: reshape})
		}
	}
	return nil
}

func ioKind(io ort.InputOutputInfo, ins []ort.InputOutputInfo) string {
	for _, in := range ins {
		if in.Name == io.Name {
			return "input"
		}
	}
	return "output"
}

// fullShapesInConfig reports whether the config writes some tensor with as
// many dims as the model has: the config then describes the model without
// batching (the first dim is part of dims), so auto-complete must not add
// a batch dimension in front of it.
func fullShapesInConfig(cfg *modelconfig.ModelConfig, ins, outs []ort.InputOutputInfo) bool {
	rank := map[string]int{}
	for _, io := range append(slices.Clone(ins), outs...) {
		rank[io.Name] = len(io.Dimensions)
	}
	full := func(name string, dims []int64, reshape *modelconfig.ModelTensorReshape) bool {
		if reshape != nil {
			dims = reshape.GetShape()
		}
		r, ok := rank[name]
		return ok && len(dims) == r
	}
	for _, in := range cfg.GetInput() {
		if full(in.GetName(), in.GetDims(), in.GetReshape()) {
			return true
		}
	}
	for _, out := range cfg.GetOutput() {
		if full(out.GetName(), out.GetDims(), out.GetReshape()) {
			return true
		}
	}
	return false
}

// scalarInConfig reports whether the config already declares a scalar
// tensor (reshape to []), which a batching model cannot have.
func scalarInConfig(cfg *modelconfig.ModelConfig) bool {
	for _, in := range cfg.GetInput() {
		if in.GetReshape() != nil && len(in.GetReshape().GetShape()) == 0 {
			return true
		}
	}
	return false
}

// completeTensor returns the config entry of a model tensor; for a
// batching model the batch dimension (at axis) is left out of dims.
func completeTensor(io ort.InputOutputInfo, batching bool, axis int) (modelconfig.DataType, []int64, *modelconfig.ModelTensorReshape, error) {
	dt := tritonType(io.DataType)
	if dt == tensor.Invalid {
		return 0, nil, nil, fmt.Errorf("ONNX element type %v has no Triton datatype", io.DataType)
	}
	dims := normalizeDims(io.Dimensions)
	if batching && len(dims) > 0 {
		axis = min(axis, len(dims)-1)
		dims = append(dims[:axis:axis], dims[axis+1:]...)
	}
	switch {
	case len(dims) == 0 && batching: // [batch] in the model: a scalar per request
		return modelconfig.DataType(dt), []int64{1}, &modelconfig.ModelTensorReshape{Shape: []int64{}}, nil
	case len(dims) == 0: // rank 0 in a model that does not batch (see scalarOK)
		return modelconfig.DataType(dt), []int64{1}, nil, nil
	}
	return modelconfig.DataType(dt), dims, nil, nil
}

// normalizeDims turns the model's symbolic and unknown dimensions (reported
// as -1 or 0 and below) into -1.
func normalizeDims(d []int64) []int64 {
	out := make([]int64, len(d))
	for i, v := range d {
		if v <= 0 {
			v = -1
		}
		out[i] = v
	}
	return out
}

// checkConfig compares the (completed) configuration with the model file:
// every configured input and output must exist in the model with the same
// datatype and compatible dims, and so must the tensors sequence_batching
// adds (state inputs and outputs, control inputs; see sequenceTensors);
// every model input without a default must be one of these. Errors name
// the model file and the tensor.
func checkConfig(file string, cfg *modelconfig.ModelConfig, ins, outs []ort.InputOutputInfo) error {
	batching := cfg.GetMaxBatchSize() > 0
	batchLayouts := backend.BatchLayouts(cfg)
	find := func(list []ort.InputOutputInfo, name string) *ort.InputOutputInfo {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	names := func(list []ort.InputOutputInfo) []string {
		var names []string
		for _, l := range list {
			names = append(names, l.Name)
		}
		return names
	}
	check := func(kind, name string, dt modelconfig.DataType, dims []int64, reshape *modelconfig.ModelTensorReshape, list []ort.InputOutputInfo) error {
		io := find(list, name)
		if io == nil {
			return fmt.Errorf("%s: configuration %s '%s' is not one of the model's %ss %v", file, kind, name, kind, names(list))
		}
		if want := tritonType(io.DataType); tensor.DataType(dt) != want {
			return fmt.Errorf("%s: configuration %s '%s' has datatype %s, but the model's is %s", file, kind, name, tensor.DataType(dt).ConfigName(), want.ConfigName())
		}
		shape := dims
		if reshape != nil {
			shape = reshape.GetShape()
		}
		model := normalizeDims(io.Dimensions)
		switch {
		case kind == "output" && batchLayouts[name].Scatter != nil:
			return nil // its shape is each request's source input's, as Triton leaves it unchecked
		case kind == "input" && batching && slices.ContainsFunc(cfg.GetInput(), func(in *modelconfig.ModelInput) bool { return in.GetName() == name && in.GetAllowRaggedBatch() }):
			if len(model) != 1 || model[0] != -1 {
				return fmt.Errorf("%s: configuration input '%s' is ragged (allow_ragged_batch), which the model takes as the batch's elements in one tensor of shape [-1], but the model's is %v", file, name, model)
			}
			return nil
		}
		if batching && !(kind == "input" && backend.SharedInput(cfg, name)) {
			axis, err := tensorAxis(cfg, name)
			if err != nil {
				return fmt.Errorf("%s: configuration %s '%s': %w", file, kind, name, err)
			}
			shape = insertBatch(shape, min(axis, len(shape)))
		}
		if !dimsCompatible(shape, model) && !scalarOK(batching, shape, model) {
			hint := ""
			if batching && len(shape) == len(model)+1 {
				hint = "; with max_batch_size > 0 the batch dimension is implicit and must not be written into dims"
			} else if !batching && len(shape)+1 == len(model) {
				hint = "; the model has a batch dimension: set max_batch_size > 0 or add it to dims"
			}
			return fmt.Errorf("%s: configuration %s '%s' has shape %v (with the batch dimension as -1 when batching), but the model's is %v%s", file, kind, name, shape, model, hint)
		}
		return nil
	}
	for _, in := range cfg.GetInput() {
		if err := check("input", in.GetName(), in.GetDataType(), in.GetDims(), in.GetReshape(), ins); err != nil {
			return err
		}
	}
	// Batch inputs: rank 1 ([items, rank] for BATCH_ITEM_SHAPE), of the
	// batch_input's datatype.
	for _, bi := range cfg.GetBatchInput() {
		for _, name := range bi.GetTargetName() {
			io := find(ins, name)
			if io == nil {
				return fmt.Errorf("%s: batch_input target '%s' is not one of the model's inputs %v", file, name, names(ins))
			}
			if want := tritonType(io.DataType); tensor.DataType(bi.GetDataType()) != want {
				return fmt.Errorf("%s: batch_input target '%s' has datatype %s, but the model's is %s", file, name, tensor.DataType(bi.GetDataType()).ConfigName(), want.ConfigName())
			}
			shape := []int64{-1}
			if bi.GetKind() == modelconfig.BatchInput_BATCH_ITEM_SHAPE {
				shape = []int64{-1, -1}
			}
			if model := normalizeDims(io.Dimensions); len(model) != len(shape) {
				return fmt.Errorf("%s: batch_input target '%s' (%s) has shape %v, but the model's is %v", file, name, bi.GetKind(), shape, model)
			}
		}
	}
	for _, out := range cfg.GetOutput() {
		if err := check("output", out.GetName(), out.GetDataType(), out.GetDims(), out.GetReshape(), outs); err != nil {
			return err
		}
	}
	seqIns, seqOuts, err := sequenceTensors(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	of := ""
	if n := cfg.GetName(); n != "" {
		of = fmt.Sprintf(" of model '%s'", n)
	}
	checkSeq := func(t seqTensor, list []ort.InputOutputInfo, listKind string) error {
		io := find(list, t.name)
		if io == nil {
			return fmt.Errorf("%s: sequence_batching %s '%s'%s is not one of the model's %s %v", file, t.kind, t.name, of, listKind, names(list))
		}
		want := tritonType(io.DataType)
		if t.dt == tensor.Invalid {
			return fmt.Errorf("%s: sequence_batching %s '%s'%s has no valid datatype in the configuration; the model's is %s", file, t.kind, t.name, of, want.ConfigName())
		}
		if t.dt != want {
			return fmt.Errorf("%s: sequence_batching %s '%s'%s has datatype %s, but the model's is %s", file, t.kind, t.name, of, t.dt.ConfigName(), want.ConfigName())
		}
		model := normalizeDims(io.Dimensions)
		if !dimsCompatible(t.shape, model) {
			how, hint := "the state's dims", ""
			if t.kind == "control input" {
				how = "a control is [1] per request, [-1 1] for a batch"
			} else if batching {
				how += " with the batch dimension inserted as -1"
				if axis, ok := fittingAxis(t.shape, t.axis, model); ok {
					hint = fmt.Sprintf("; if the batch is the state's dimension %d, say so with parameters { key: \"%s%s\" value: { string_value: \"%d\" } }", axis, backend.BatchAxisParameter, t.name, axis)
				}
			}
			return fmt.Errorf("%s: sequence_batching %s '%s'%s has shape %v (%s), but the model's is %v%s", file, t.kind, t.name, of, t.shape, how, model, hint)
		}
		return nil
	}
	for _, t := range seqIns {
		if err := checkSeq(t, ins, "inputs"); err != nil {
			return err
		}
	}
	for _, t := range seqOuts {
		if err := checkSeq(t, outs, "outputs"); err != nil {
			return err
		}
	}
	seqNames, _ := sequenceNames(cfg)
	for _, io := range ins {
		found := seqNames[io.Name] || batchLayouts[io.Name].Made != nil ||
			slices.ContainsFunc(cfg.GetInput(), func(in *modelconfig.ModelInput) bool { return in.GetName() == io.Name })
		if !found {
			return fmt.Errorf("%s: model input '%s' is not in the configuration; every model input must be configured (in input, in batch_input, or as a sequence_batching state or control input)", file, io.Name)
		}
	}
	return nil
}

// fittingAxis finds, for a batched shape (the batch as -1 at index at)
// that does not fit the model's, another position of the batch dimension
// with which it would.
func fittingAxis(shape []int64, at int, model []int64) (int, bool) {
	if at < 0 || at >= len(shape) {
		return 0, false
	}
	dims := slices.Delete(slices.Clone(shape), at, at+1)
	for axis := range len(dims) + 1 {
		if axis != at && dimsCompatible(insertBatch(dims, axis), model) {
			return axis, true
		}
	}
	return 0, false
}

// dimsCompatible reports whether configured dims fit the model's: same rank,
// and each fixed model dimension equal to the configured one (a -1 in the
// model accepts anything; a -1 in the config needs a -1 in the model).
// scalarOK reports whether a configured shape of one element (dims [1],
// [1, 1], ...) stands for a model tensor of rank 0 in a model that does not
// batch: the form Triton's ONNX Runtime backend accepts for scalars.
func scalarOK(batching bool, cfg, model []int64) bool {
	return !batching && len(model) == 0 && len(cfg) > 0 && !slices.ContainsFunc(cfg, func(d int64) bool { return d != 1 })
}

func dimsCompatible(cfg, model []int64) bool {
	if len(cfg) != len(model) {
		return false
	}
	for i := range cfg {
		if model[i] != -1 && cfg[i] != model[i] {
			return false
		}
	}
	return true
}
