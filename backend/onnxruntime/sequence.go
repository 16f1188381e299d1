package onnxruntime

import (
	"math"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// seqTensor is a tensor the sequence batcher adds to the model's inputs or
// takes from its outputs: a state input or output, or a control input.
// None of them is listed in the configuration's input and output.
type seqTensor struct {
	kind  string // "state input", "state output", "control input"
	name  string
	dt    tensor.DataType // Invalid when the configuration gives none
	shape []int64         // as the model sees it: the batch dimension as -1 at axis when batching
	axis  int             // the batch dimension's index in shape; -1 when not batching
}

// sequenceTensors returns the tensors of cfg's sequence_batching: the
// inputs (the states' input_names, then the control inputs) and outputs
// (the states' output_names) that the server adds to every request and
// takes back from it, shaped as the model sees them.
func sequenceTensors(cfg *modelconfig.ModelConfig) (ins, outs []seqTensor, err error) {
	sb := cfg.GetSequenceBatching()
	batching := cfg.GetMaxBatchSize() > 0
	for _, st := range sb.GetState() {
		shape, axis := append([]int64(nil), st.GetDims()...), -1
		if batching {
			var err error
			if axis, err = backend.StateBatchAxis(cfg, st); err != nil {
				return nil, nil, err
			}
			shape = insertBatch(shape, axis)
		}
		dt := configType(st.GetDataType())
		ins = append(ins, seqTensor{kind: "state input", name: st.GetInputName(), dt: dt, shape: shape, axis: axis})
		outs = append(outs, seqTensor{kind: "state output", name: st.GetOutputName(), dt: dt, shape: shape, axis: axis})
	}
	for _, ci := range sb.GetControlInput() {
		shape, axis := []int64{1}, -1
		if batching {
			shape, axis = []int64{-1, 1}, 0
		}
		ins = append(ins, seqTensor{kind: "control input", name: ci.GetName(), dt: controlType(ci), shape: shape, axis: axis})
	}
	return ins, outs, nil
}

// sequenceNames returns the names of the state and control inputs and of
// the state outputs of cfg.
func sequenceNames(cfg *modelconfig.ModelConfig) (ins, outs map[string]bool) {
	ins, outs = map[string]bool{}, map[string]bool{}
	sb := cfg.GetSequenceBatching()
	for _, st := range sb.GetState() {
		ins[st.GetInputName()] = true
		outs[st.GetOutputName()] = true
	}
	for _, ci := range sb.GetControlInput() {
		ins[ci.GetName()] = true
	}
	return ins, outs
}

// controlType returns the tensor type of a control input (Invalid when
// it has no control or its controls disagree).
func controlType(ci *modelconfig.ModelSequenceBatching_ControlInput) tensor.DataType {
	return configType(modelconfig.ControlDataType(ci))
}

// configType converts a config data type (same numbering as
// tensor.DataType), giving Invalid for values outside the enum.
func configType(d modelconfig.DataType) tensor.DataType {
	if d < 0 || d > math.MaxUint8 || !tensor.DataType(d).Valid() {
		return tensor.Invalid
	}
	return tensor.DataType(d)
}

// tensorAxis returns the batch axis of the model tensor named name: its
// state's (see stateAxis) for a sequence_batching state tensor, 0 for any
// other tensor.
func tensorAxis(cfg *modelconfig.ModelConfig, name string) (int, error) {
	for _, st := range cfg.GetSequenceBatching().GetState() {
		if st.GetInputName() == name || st.GetOutputName() == name {
			return backend.StateBatchAxis(cfg, st)
		}
	}
	return 0, nil
}

// insertBatch returns dims with a -1 (the batch) inserted at axis.
func insertBatch(dims []int64, axis int) []int64 {
	out := make([]int64, 0, len(dims)+1)
	out = append(out, dims[:axis]...)
	out = append(out, -1)
	return append(out, dims[axis:]...)
}
