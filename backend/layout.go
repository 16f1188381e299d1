package backend

import (
	"fmt"
	"strconv"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// Layout is how a tensor of a batching model carries the batch. The zero
// value is the usual layout, the batch being the first dimension.
type Layout struct {
	// Axis is the dimension that holds the batch, for tensors laid out as
	// [layers, batch, hidden] (recurrent state) rather than [batch, ...].
	Axis int
	// Shared marks an input that has no batch dimension: one value for the
	// whole batch (a sample rate), which every request of the batch gives
	// alike.
	Shared bool
	// Ragged marks an input with allow_ragged_batch: the batch's tensor is
	// every request's elements in one rank-1 tensor, whatever their shapes
	// and however many requests, as Triton's backends take ragged inputs.
	Ragged bool
	// Made is set for a batch input (config batch_input): an input no
	// request carries, which [Batch.Input] makes for the whole batch from
	// the shapes of another input, as Triton's backends make them for
	// ragged batching.
	Made *BatchInput
	// Scatter is set for a batch output (config batch_output
	// BATCH_SCATTER_WITH_INPUT_SHAPE): [Batch.SetOutput] gives each request
	// its part of the output in the shape of one of its inputs.
	Scatter *BatchOutput
}

// BatchInput is a compiled batch_input entry for one of its targets.
type BatchInput struct {
	// Kind says what the tensor holds (modelconfig's BatchInput_Kind:
	// element counts, accumulated counts, item shapes, ...).
	Kind modelconfig.BatchInput_Kind
	// Source is the input whose shapes it describes.
	Source string
	// DataType is the tensor's datatype: tensor.Int32 or tensor.FP32.
	DataType tensor.DataType
}

// BatchOutput is a compiled batch_output entry for one of its targets.
type BatchOutput struct {
	// Source is the input whose shape each request's part takes.
	Source string
	// Shape is the config output's shape, -1 first for the batch when the
	// model batches: each -1 takes the source input's dimension of the
	// same index.
	Shape tensor.Shape
}

// BatchLayouts returns the layouts of the config's batch_input targets
// (Made) and batch_output targets (Scatter), by name; nil when it has
// none. The configuration is a validated one.
func BatchLayouts(cfg *modelconfig.ModelConfig) map[string]Layout {
	var l map[string]Layout
	set := func(name string, x Layout) {
		if l == nil {
			l = map[string]Layout{}
		}
		l[name] = x
	}
	for _, bi := range cfg.GetBatchInput() {
		if len(bi.GetSourceInput()) != 1 {
			continue
		}
		made := &BatchInput{Kind: bi.GetKind(), Source: bi.GetSourceInput()[0], DataType: tensor.DataType(bi.GetDataType())}
		for _, name := range bi.GetTargetName() {
			set(name, Layout{Made: made})
		}
	}
	for _, bo := range cfg.GetBatchOutput() {
		if len(bo.GetSourceInput()) != 1 {
			continue
		}
		for _, name := range bo.GetTargetName() {
			for _, out := range cfg.GetOutput() {
				if out.GetName() != name {
					continue
				}
				dims := out.GetDims()
				if r := out.GetReshape(); r != nil {
					dims = r.GetShape()
				}
				var shape tensor.Shape
				if cfg.GetMaxBatchSize() > 0 {
					shape = append(shape, -1)
				}
				set(name, Layout{Scatter: &BatchOutput{Source: bo.GetSourceInput()[0], Shape: append(shape, dims...)}})
			}
		}
	}
	return l
}

// Model configuration parameters that give tensors of a batching model
// another [Layout]; the server and the backends read them alike.
const (
	// BatchAxisParameter prefixes the parameter that says which dimension
	// of a sequence_batching state holds the batch when it is not the
	// first: `parameters { key: "batch_axis:STATE_IN" value: {
	// string_value: "1" } }` for a state laid out [layers, batch, hidden].
	// The value counts the batch dimension among the state's dims, from 0
	// (the default) to len(dims). It may be given under the state's
	// input_name or its output_name: the two share the layout.
	BatchAxisParameter = "batch_axis:"
	// BatchSharedParameter prefixes the parameter that marks an input
	// without a batch dimension, one value for the whole batch
	// (`parameters { key: "batch_shared:sr" value: { string_value: "true" } }`).
	BatchSharedParameter = "batch_shared:"
)

// axisParameter returns the batch axis the config gives the tensor named
// name (BatchAxisParameter) and whether it gives one. rank is the number
// of the tensor's dimensions without the batch dimension; the axis must
// lie in [0, rank].
func axisParameter(cfg *modelconfig.ModelConfig, name string, rank int) (axis int, set bool, err error) {
	key := BatchAxisParameter + name
	p, ok := cfg.GetParameters()[key]
	if !ok {
		return 0, false, nil
	}
	v := p.GetStringValue()
	axis, err = strconv.Atoi(v)
	if err != nil || axis < 0 || axis > rank {
		return 0, false, fmt.Errorf("parameter %q: the batch axis must be an integer from 0 to %d (a dimension of the tensor, the batch dimension counted), got %q", key, rank, v)
	}
	return axis, true, nil
}

// StateBatchAxis returns the batch axis of a sequence_batching state of a
// batching model: the [BatchAxisParameter] given under its input_name or
// its output_name (which must agree when both are given), 0 by default.
func StateBatchAxis(cfg *modelconfig.ModelConfig, st *modelconfig.ModelSequenceBatching_State) (int, error) {
	rank := len(st.GetDims())
	in, inSet, err := axisParameter(cfg, st.GetInputName(), rank)
	if err != nil {
		return 0, fmt.Errorf("sequence_batching state '%s': %w", st.GetInputName(), err)
	}
	out, outSet, err := axisParameter(cfg, st.GetOutputName(), rank)
	if err != nil {
		return 0, fmt.Errorf("sequence_batching state '%s': %w", st.GetInputName(), err)
	}
	if inSet && outSet && in != out {
		return 0, fmt.Errorf("sequence_batching state '%s': parameters %s%s (%d) and %s%s (%d) give different batch axes; a state's input and output share their layout",
			st.GetInputName(), BatchAxisParameter, st.GetInputName(), in, BatchAxisParameter, st.GetOutputName(), out)
	}
	if outSet {
		return out, nil
	}
	return in, nil
}

// SharedInput reports whether the config marks the input named name as one
// value for the whole batch ([BatchSharedParameter] set to true): it has no
// batch dimension even in a batching model.
func SharedInput(cfg *modelconfig.ModelConfig, name string) bool {
	p, ok := cfg.GetParameters()[BatchSharedParameter+name]
	if !ok {
		return false
	}
	shared, err := strconv.ParseBool(p.GetStringValue())
	return err == nil && shared
}
