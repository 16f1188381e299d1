package repository_test

import (
	"strings"
	"testing"

	"github.com/triton-go/triton/repository"
)

// base is a valid batching model; most cases append to it.
const base = `name: "m" backend: "onnxruntime" max_batch_size: 8
input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 4 ] }
`

// ensembleBase is a valid two-step ensemble over models "pre" and "net".
const ensembleHead = `name: "e" platform: "ensemble" max_batch_size: 0
input { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] }
output { name: "OUT" data_type: TYPE_FP32 dims: [ 10 ] }
`

const ensembleSteps = `ensemble_scheduling {
  step { model_name: "pre" input_map { key: "raw" value: "IN" } output_map { key: "img" value: "mid" } }
  step { model_name: "net" input_map { key: "x" value: "mid" } output_map { key: "y" value: "OUT" } }
}`

// want is one expected problem: an error with this Field whose message
// contains substr.
type want struct {
	field, substr string
}

func known(names ...string) func(string) bool {
	return func(n string) bool {
		for _, m := range names {
			if m == n {
				return true
			}
		}
		return false
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  string
		opts repository.ValidateOptions
		want []want // empty: the config must be valid
	}{
		// Name, platform, backend.
		{name: "valid base", cfg: base, opts: repository.ValidateOptions{ModelName: "m"}},
		{name: "name missing", cfg: `backend: "b"`, want: []want{{"name", "model configuration must specify 'name'"}}},
		{name: "name differs from folder", cfg: base, opts: repository.ValidateOptions{ModelName: "other"},
			want: []want{{"name", "model name 'm' in config does not match folder 'other'"}}},
		{name: "no platform or backend", cfg: `name: "m"`, want: []want{{"platform", "must specify 'platform' or 'backend' for 'm'"}}},
		{name: "unknown platform lists known ones", cfg: `name: "m" platform: "caffe2_netdef"`,
			want: []want{{"platform", "unknown platform 'caffe2_netdef' for 'm'; known platforms: ensemble, libtorch, onnxruntime_onnx, pytorch_libtorch, tensorflow_graphdef, tensorflow_savedmodel, tensorrt_plan, torch_aoti"}}},
		{name: "platform and backend mismatch", cfg: `name: "m" platform: "onnxruntime_onnx" backend: "tensorrt"`,
			want: []want{{"backend", "unexpected 'platform' and 'backend' pair, got:onnxruntime_onnx, tensorrt"}}},
		{name: "platform with its backend", cfg: `name: "m" platform: "pytorch_libtorch" backend: "pytorch"`},
		{name: "any backend name", cfg: `name: "m" backend: "my_go_backend"`},
		{name: "negative max_batch_size", cfg: `name: "m" backend: "b" max_batch_size: -1`,
			want: []want{{"max_batch_size", "'max_batch_size' must be non-negative value for m"}}},

		// Inputs and outputs.
		{name: "dims missing", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 }`,
			want: []want{{"input[0].dims", "model input 'x' must specify 'dims'"}}},
		{name: "dims zero", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 3, 0 ] }`,
			want: []want{{"input[0].dims", "dimension must be integer >= 1, or -1 to indicate a variable-size dimension"}}},
		{name: "dims below -1", cfg: `name: "m" backend: "b" output { name: "y" data_type: TYPE_FP32 dims: [ -2 ] }`,
			want: []want{{"output[0].dims", "model output 'y': dimension must be integer >= 1, or -1"}}},
		{name: "variable dims", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ -1, -1, 3 ] }`},
		{name: "input name missing", cfg: `name: "m" backend: "b" input { data_type: TYPE_FP32 dims: [ 1 ] }`,
			want: []want{{"input[0].name", "model input must specify 'name'"}}},
		{name: "duplicate input", cfg: base + `input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }`,
			want: []want{{"input[1].name", "model input 'x' is declared more than once"}}},
		{name: "duplicate output", cfg: base + `output { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }`,
			want: []want{{"output[1].name", "model output 'y' is declared more than once"}}},
		{name: "same name for an input and an output", cfg: base + `output { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }`},
		{name: "data type missing", cfg: `name: "m" backend: "b" input { name: "x" dims: [ 1 ] }`,
			want: []want{{"input[0].data_type", "model input 'x' must specify 'data_type'"}}},
		{name: "data type unknown number", cfg: `name: "m" backend: "b" output { name: "y" data_type: 99 dims: [ 1 ] }`,
			want: []want{{"output[0].data_type", "unknown data_type 99"}}},

		// Reshape.
		{name: "reshape same count", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 2 ] } }`},
		{name: "reshape different count", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 2, 3 ] } }`,
			want: []want{{"input[0].reshape", "model input 'x' has different size for dims and reshape"}}},
		{name: "reshape runs around -1 match", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] reshape { shape: [ 8, -1, 1, 6 ] } }`},
		{name: "reshape runs around -1 differ", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 2, -1, 6 ] reshape { shape: [ 4, -1, 3 ] } }`,
			want: []want{{"input[0].reshape", "different size for dims and reshape"}}},
		{name: "reshape -1 count differs", cfg: `name: "m" backend: "b" output { name: "y" data_type: TYPE_FP32 dims: [ -1, 4 ] reshape { shape: [ 4 ] } }`,
			want: []want{{"output[0].reshape", "model output 'y' has different size for dims and reshape"}}},
		{name: "reshape bad dim", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 0, 4 ] } }`,
			want: []want{{"input[0].reshape.shape", "dimension must be integer >= 1"}}},
		{name: "state on a decoupled model", cfg: `name: "m" backend: "b" max_batch_size: 1 model_transaction_policy { decoupled: true } sequence_batching { state { input_name: "I" output_name: "O" data_type: TYPE_FP32 dims: [ 1 ] } }`,
			want: []want{{"sequence_batching.state", "implicit state is not supported for model m with 'decoupled' transaction policy on this server"}}},
		{name: "empty reshape with batching", cfg: `name: "m" backend: "b" max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } }`},
		{name: "dynamic batching without batching", cfg: `name: "m" backend: "b" dynamic_batching {}`,
			want: []want{{"dynamic_batching", "dynamic batching needs max_batch_size > 0"}}},
		{name: "empty reshape without batching", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 2 ] reshape { shape: [ ] } }`,
			want: []want{{"input[0].reshape", "model input 'x' cannot have empty reshape for non-batching model as scalar tensors are not supported for m"}}},
		{name: "scalar reshape without batching", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } }`,
			want: []want{{"input[0].reshape", "model input 'x' cannot have empty reshape for non-batching model as scalar tensors are not supported for m"}}},
		{name: "scalar output reshape without batching", cfg: `name: "m" backend: "b" output { name: "y" data_type: TYPE_FP32 dims: [ 1 ] reshape { shape: [ ] } }`,
			want: []want{{"output[0].reshape", "model output 'y' cannot have empty reshape for non-batching model as scalar tensors are not supported for m"}}},
		{name: "empty reshape of several elements", cfg: `name: "m" backend: "b" max_batch_size: 4 input { name: "x" data_type: TYPE_FP32 dims: [ 2 ] reshape { shape: [ ] } }`,
			want: []want{{"input[0].reshape", "different size for dims and reshape"}}},

		// Image formats.
		{name: "NCHW with 3 dims", cfg: `name: "m" backend: "b" max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] }`},
		{name: "NCHW with batch dim written", cfg: `name: "m" backend: "b" max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 8, 3, 224, 224 ] }`,
			want: []want{{"input[0].format", "needs exactly 3 dims (the non-batch dimensions), got 4"}, {"input[0].format", "the batch dimension is implicit and must not be written into dims"}}},
		{name: "NHWC with 2 dims", cfg: `name: "m" backend: "b" input { name: "x" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 224, 224 ] }`,
			want: []want{{"input[0].format", "format FORMAT_NHWC, which needs exactly 3 dims"}}},

		// Dynamic batching.
		{name: "preferred size zero", cfg: base + `dynamic_batching { preferred_batch_size: [ 0, 4 ] }`,
			want: []want{{"dynamic_batching.preferred_batch_size", "dynamic batching preferred size must be positive for m"}}},
		{name: "preferred size over max", cfg: base + `dynamic_batching { preferred_batch_size: [ 4, 16 ] }`,
			want: []want{{"dynamic_batching.preferred_batch_size", "dynamic batching preferred size must be <= max batch size for m"}}},
		{name: "default priority level zero", cfg: base + `dynamic_batching { priority_levels: 3 }`,
			want: []want{{"dynamic_batching.default_priority_level", "default priority level must be in range [1, 3] for m"}}},
		{name: "default priority level too high", cfg: base + `dynamic_batching { priority_levels: 3 default_priority_level: 4 }`,
			want: []want{{"dynamic_batching.default_priority_level", "default priority level must be in range [1, 3] for m"}}},
		{name: "priority levels above the bound", cfg: base + `dynamic_batching { priority_levels: 18446744073709551615 default_priority_level: 1 }`,
			want: []want{{"dynamic_batching.priority_levels", "priority_levels 18446744073709551615 of m is above the limit of 10000"}}},
		{name: "priorities valid", cfg: base + `dynamic_batching { priority_levels: 3 default_priority_level: 3 priority_queue_policy { key: 2 value { max_queue_size: 4 } } }`},
		{name: "queue policy key out of range", cfg: base + `dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value { } } priority_queue_policy { key: 0 value { } } }`,
			want: []want{{"dynamic_batching.priority_queue_policy[3]", "priority queue policy must have priority level in range [1, 2] for m"}, {"dynamic_batching.priority_queue_policy[0]", "in range [1, 2]"}}},
		{name: "queue policy without levels", cfg: base + `dynamic_batching { priority_queue_policy { key: 1 value { } } }`,
			want: []want{{"dynamic_batching.priority_queue_policy[1]", "in range [1, 0]"}}},
		{name: "preserve ordering with priorities", cfg: base + `dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }`,
			want: []want{{"dynamic_batching.priority_levels", "Only one priority level is allowed when 'preserve_ordering' is true for m"}}},
		{name: "preserve ordering with DELAY", cfg: base + `dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY } }`,
			want: []want{{"dynamic_batching.default_queue_policy.timeout_action", "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for m"}}},
		{name: "preserve ordering with DELAY per level", cfg: base + `dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1 priority_queue_policy { key: 1 value { timeout_action: DELAY } } }`,
			want: []want{{"dynamic_batching.priority_queue_policy[1].timeout_action", "can not have DELAY"}}},
		{name: "DELAY without preserve ordering", cfg: base + `dynamic_batching { default_queue_policy { timeout_action: DELAY } }`},

		// Sequence batching.
		{name: "all control kinds", cfg: base + `sequence_batching { control_input [
			{ name: "S" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } },
			{ name: "R" control { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } },
			{ name: "E" control { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } },
			{ name: "C" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } } ] }`},
		{name: "START with two lists", cfg: base + `sequence_batching { control_input { name: "S" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ] } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0]", "must specify exactly one of 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START"}}},
		{name: "END without list", cfg: base + `sequence_batching { control_input { name: "E" control { kind: CONTROL_SEQUENCE_END } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0]", "for CONTROL_SEQUENCE_END"}}},
		{name: "READY list of three", cfg: base + `sequence_batching { control_input { name: "R" control { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1, 2 ] } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0].int32_false_true", "must have exactly 2 entries"}}},
		{name: "CORRID with list", cfg: base + `sequence_batching { control_input { name: "C" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 int32_false_true: [ 0, 1 ] } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0]", "must not specify 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID"}}},
		{name: "CORRID float", cfg: base + `sequence_batching { control_input { name: "C" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0].data_type", "must be TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING"}}},
		{name: "CORRID without type", cfg: base + `sequence_batching { control_input { name: "C" control { kind: CONTROL_SEQUENCE_CORRID } } }`,
			want: []want{{"sequence_batching.control_input[0].control[0].data_type", "got TYPE_INVALID"}}},
		{name: "kind twice", cfg: base + `sequence_batching { control_input [
			{ name: "S1" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } },
			{ name: "S2" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } } ] }`,
			want: []want{{"sequence_batching.control_input[1].control[0].kind", "sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m"}}},
		{name: "tensor with two kinds", cfg: base + `sequence_batching { control_input { name: "T" control [
			{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] },
			{ kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] } }`,
			want: []want{{"sequence_batching.control_input[0].control", "must carry exactly one control for m, got 2"}}},
		{name: "tensor listed twice", cfg: base + `sequence_batching { control_input [
			{ name: "T" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } },
			{ name: "T" control { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } } ] }`,
			want: []want{{"sequence_batching.control_input[1].name", "control tensor 'T' is listed more than once"}}},
		{name: "slot utilization above 1", cfg: base + `sequence_batching { direct { minimum_slot_utilization: 1.5 } }`,
			want: []want{{"sequence_batching.direct.minimum_slot_utilization", "sequence batching minimum slot utilization must be in range (0.0, 1.0] for m"}}},
		{name: "slot utilization negative", cfg: base + `sequence_batching { direct { minimum_slot_utilization: -0.25 } }`,
			want: []want{{"sequence_batching.direct.minimum_slot_utilization", "must be in range (0.0, 1.0]"}}},
		{name: "slot utilization one", cfg: base + `sequence_batching { direct { minimum_slot_utilization: 1 } }`},
		{name: "oldest preferred over max", cfg: base + `sequence_batching { oldest { preferred_batch_size: [ 9 ] } }`,
			want: []want{{"sequence_batching.oldest.preferred_batch_size", "sequence batching preferred size must be <= max batch size for m"}}},
		{name: "state valid", cfg: base + `sequence_batching { state { input_name: "si" output_name: "so" data_type: TYPE_FP32 dims: [ -1 ]
			initial_state { name: "z" data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } } }`},
		{name: "two initial states", cfg: base + `sequence_batching { state { input_name: "si" output_name: "so" data_type: TYPE_FP32 dims: [ 1 ]
			initial_state { name: "a" data_type: TYPE_FP32 dims: [ 1 ] zero_data: true }
			initial_state { name: "b" data_type: TYPE_FP32 dims: [ 1 ] data_file: "b.bin" } } }`,
			want: []want{{"sequence_batching.state[0].initial_state", "may have at most one initial_state for m, got 2"}}},
		{name: "initial state with -1", cfg: base + `sequence_batching { state { input_name: "si" output_name: "so" data_type: TYPE_FP32 dims: [ -1 ]
			initial_state { name: "a" data_type: TYPE_FP32 dims: [ -1 ] zero_data: true } } }`,
			want: []want{{"sequence_batching.state[0].initial_state[0].dims", "cannot have variable-size (-1) dimensions"}}},
		{name: "initial state without data or name", cfg: base + `sequence_batching { state { input_name: "si" output_name: "so" data_type: TYPE_FP32 dims: [ 2 ]
			initial_state { data_type: TYPE_FP32 dims: [ 2 ] } } }`,
			want: []want{{"sequence_batching.state[0].initial_state[0]", "must specify 'zero_data' or 'data_file'"}, {"sequence_batching.state[0].initial_state[0].name", "must specify 'name'"}}},
		{name: "state incomplete", cfg: base + `sequence_batching { state { output_name: "so" dims: [ 0 ] use_growable_memory: true } }`,
			want: []want{{"sequence_batching.state[0].input_name", "must specify 'input_name'"}, {"sequence_batching.state[0].data_type", "must specify 'data_type'"},
				{"sequence_batching.state[0].dims", "dimension must be integer >= 1"}, {"sequence_batching.state[0].use_growable_memory", "requires 'use_same_buffer_for_input_output'"}}},

		// Instance groups.
		{name: "CPU group with GPUs", cfg: base + `instance_group { name: "g" kind: KIND_CPU gpus: [ 0 ] }`,
			want: []want{{"instance_group[0].gpus", "instance group g of model m has kind KIND_CPU but specifies one or more GPUs"}}},
		{name: "MODEL group with GPUs", cfg: base + `instance_group { name: "g" kind: KIND_MODEL gpus: [ 0 ] }`,
			want: []want{{"instance_group[0].gpus", "has kind KIND_MODEL but specifies one or more GPUs"}}},
		{name: "AUTO on a machine without the listed GPU", cfg: base + `instance_group { name: "g" kind: KIND_AUTO gpus: [ 3 ] }`,
			want: []want{{"instance_group[0].gpus", "instance group g of model m has kind KIND_CPU but specifies one or more GPUs"}}},
		{name: "negative count", cfg: base + `instance_group { name: "g" count: -2 }`,
			want: []want{{"instance_group[0].count", "instance group g of model m must specify a non-negative count, got -2"}}},
		{name: "instance count at the bound", cfg: base + `instance_group [ { name: "g" count: 1000 }, { name: "h" count: 24 } ]`},
		{name: "instance count above the bound", cfg: base + `instance_group { name: "g" count: 100000000 }`,
			want: []want{{"instance_group[0].count", "instance group g of model m: 100000000 instances in all is above the limit of 1024 instances per model"}}},
		{name: "instance counts above the bound together", cfg: base + `instance_group [ { name: "g" count: 1000 }, { name: "h" count: 25 }, { name: "i" count: 2147483647 } ]`,
			want: []want{{"instance_group[1].count", "instance group h of model m: 1025 instances in all is above the limit of 1024"}}},
		{name: "GPU instances count per GPU", cfg: base + `instance_group { name: "g" kind: KIND_GPU count: 600 gpus: [ 0, 1 ] }`,
			want: []want{{"instance_group[0].count", "1200 instances in all is above the limit of 1024"}}},
		{name: "negative GPU id", cfg: base + `instance_group { name: "g" kind: KIND_GPU gpus: [ -1 ] }`,
			want: []want{{"instance_group[0].gpus", "invalid GPU id -1"}}},
		{name: "rate limiter resource without name", cfg: base + `instance_group { name: "g" rate_limiter { resources { count: 1 } } }`,
			want: []want{{"instance_group[0].rate_limiter.resources[0].name", "rate limiter resource without 'name'"}}},

		// Ensembles.
		{name: "valid ensemble", cfg: ensembleHead + ensembleSteps, opts: repository.ValidateOptions{ModelName: "e", KnownModel: known("pre", "net")}},
		{name: "ensemble without known-model check", cfg: ensembleHead + ensembleSteps},
		{name: "ensemble step on unknown model", cfg: ensembleHead + ensembleSteps, opts: repository.ValidateOptions{KnownModel: known("pre")},
			want: []want{{"ensemble_scheduling.step[1].model_name", "step 1 of ensemble 'e' uses model 'net', which is not in the model repository"}}},
		{name: "ensemble with backend", cfg: ensembleHead + `backend: "python"` + ensembleSteps,
			want: []want{{"backend", "Ensemble model 'e' must have platform type 'ensemble' and empty backend type"}}},
		{name: "ensemble scheduling on another platform", cfg: `name: "e" backend: "onnxruntime" input { name: "IN" data_type: TYPE_UINT8 dims: [ -1 ] } output { name: "OUT" data_type: TYPE_FP32 dims: [ 10 ] }` + ensembleSteps,
			want: []want{{"platform", "Ensemble model 'e' must have platform type 'ensemble' and empty backend type"}}},
		{name: "ensemble platform without scheduling", cfg: `name: "e" platform: "ensemble"`,
			want: []want{{"ensemble_scheduling", "ensemble scheduling must be set for ensemble 'e' whose platform is ensemble"}}},
		{name: "ensemble with instance group, warmup and optimization", cfg: ensembleHead + ensembleSteps +
			`instance_group { count: 1 } model_warmup { name: "w" batch_size: 1 } optimization { graph { level: 1 } }`,
			want: []want{{"instance_group", "instance group should not be specified for ensemble 'e'"},
				{"model_warmup", "model_warmup can not be specified for ensemble 'e'"},
				{"optimization", "optimization should not be specified for ensemble 'e'"}}},
		{name: "ensemble without steps", cfg: ensembleHead + `ensemble_scheduling { }`,
			want: []want{{"ensemble_scheduling.step", "must specify one or more 'step's for ensemble 'e'"}}},
		{name: "ensemble step without model and maps", cfg: ensembleHead + `ensemble_scheduling {
			step { input_map { key: "raw" value: "IN" } output_map { key: "y" value: "OUT" } }
			step { model_name: "net" } }`,
			want: []want{{"ensemble_scheduling.step[0].model_name", "must specify 'model_name' in step 0 of ensemble 'e'"},
				{"ensemble_scheduling.step[1].input_map", "must specify 'input_map' in step 1 of ensemble 'e'"},
				{"ensemble_scheduling.step[1].output_map", "must specify 'output_map' in step 1 of ensemble 'e'"}}},
		{name: "ensemble input map names a missing tensor", cfg: ensembleHead + `ensemble_scheduling {
			step { model_name: "net" input_map { key: "x" value: "IN" } input_map { key: "z" value: "nowhere" } output_map { key: "y" value: "OUT" } } }`,
			want: []want{{`ensemble_scheduling.step[0].input_map["z"]`, "reads tensor 'nowhere', which is neither an ensemble input nor an output of any step"}}},
		{name: "ensemble output not produced", cfg: ensembleHead + `output { name: "OUT2" data_type: TYPE_FP32 dims: [ 1 ] }` + ensembleSteps,
			want: []want{{"output[1].name", "ensemble output 'OUT2' of 'e' is not produced by any step"}}},
		{name: "ensemble tensor produced twice", cfg: ensembleHead + `ensemble_scheduling {
			step { model_name: "a" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } }
			step { model_name: "b" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } } }`,
			want: []want{{`ensemble_scheduling.step[1].output_map["y"]`, "ensemble tensor 'OUT' is produced more than once in ensemble 'e' (steps 0 and 1)"}}},
		{name: "ensemble step writes an ensemble input", cfg: ensembleHead + `ensemble_scheduling {
			step { model_name: "a" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } output_map { key: "z" value: "IN" } } }`,
			want: []want{{`ensemble_scheduling.step[0].output_map["z"]`, "ensemble tensor 'IN' is an input of ensemble 'e' and cannot be produced"}}},
		{name: "ensemble unused input and tensor", cfg: ensembleHead + `input { name: "EXTRA" data_type: TYPE_FP32 dims: [ 1 ] } ensemble_scheduling {
			step { model_name: "a" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } output_map { key: "z" value: "spare" } } }`,
			want: []want{{"input[1].name", "ensemble input 'EXTRA' of 'e' is not used by any step"},
				{"ensemble_scheduling.step[0].output_map", "ensemble tensor 'spare' is unused in ensemble 'e'"}}},
		{name: "ensemble cycle", cfg: ensembleHead + `ensemble_scheduling {
			step { model_name: "a" input_map { key: "x" value: "IN" } input_map { key: "fb" value: "t2" } output_map { key: "y" value: "t1" } }
			step { model_name: "b" input_map { key: "x" value: "t1" } output_map { key: "y" value: "t2" } output_map { key: "o" value: "OUT" } } }`,
			want: []want{{"ensemble_scheduling.step", "ensemble 'e' has a cycle: steps [0 1]"}}},
		{name: "ensemble step uses itself", cfg: ensembleHead + `ensemble_scheduling {
			step { model_name: "e" input_map { key: "x" value: "IN" } output_map { key: "y" value: "OUT" } } }`,
			want: []want{{"ensemble_scheduling.step[0].model_name", "uses the ensemble itself"}}},

		// Response cache.
		{name: "cache with dynamic batching", cfg: base + `dynamic_batching { } response_cache { enable: true }`},
		{name: "cache with sequence batching", cfg: base + `sequence_batching { } response_cache { enable: true }`,
			want: []want{{"response_cache.enable", "Response Cache does not currently support model m with sequence batching scheduler. Please disable the response cache."}}},
		{name: "cache with decoupled", cfg: base + `model_transaction_policy { decoupled: true } response_cache { enable: true }`,
			want: []want{{"response_cache.enable", "Response Cache does not currently support model m with 'decoupled' transaction policy. Please disable the response cache."}}},
		{name: "cache disabled with decoupled", cfg: base + `model_transaction_policy { decoupled: true } response_cache { enable: false }`},

		// Warm-up.
		{name: "warmup valid", cfg: base + `model_warmup { name: "w" batch_size: 8 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] random_data: true } } }`},
		{name: "warmup batch size zero", cfg: base + `model_warmup { name: "w" }`,
			want: []want{{"model_warmup[0].batch_size", "model warmup 'w' must specify 'batch_size' >= 1 for m"}}},
		{name: "warmup batch over max", cfg: base + `model_warmup { name: "w" batch_size: 9 }`,
			want: []want{{"model_warmup[0].batch_size", "'batch_size' must be <= max batch size for m, got 9"}}},
		{name: "warmup batch without batching", cfg: `name: "m" backend: "b" model_warmup { name: "w" batch_size: 2 }`,
			want: []want{{"model_warmup[0].batch_size", "must have 'batch_size' 1 because m does not support batching"}}},
		{name: "warmup input without data", cfg: base + `model_warmup { batch_size: 1 inputs { key: "x" value { dims: [ -1 ] } } }`,
			want: []want{{"model_warmup[0].name", "model warmup setting must specify 'name'"},
				{`model_warmup[0].inputs["x"]`, "must specify 'zero_data', 'random_data' or 'input_data_file'"},
				{`model_warmup[0].inputs["x"].data_type`, "must specify 'data_type'"},
				{`model_warmup[0].inputs["x"].dims`, "warm-up data has a fixed shape"}}},

		// Batch inputs and outputs.
		{name: "batch input valid", cfg: base + `batch_input { kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT32 source_input: "x" }`},
		{name: "batch input two sources", cfg: base + `batch_input { kind: BATCH_ITEM_SHAPE target_name: "N" data_type: TYPE_INT32 source_input: [ "x", "x" ] }`,
			want: []want{{"batch_input[0].source_input", "batch input kind 'BATCH_ITEM_SHAPE' expects 1 source input, got 2"}}},
		{name: "batch input unknown source and bad type", cfg: base + `batch_input { kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT64 source_input: "q" }`,
			want: []want{{"batch_input[0].source_input", "source input 'q' is not a model input"},
				{"batch_input[0].data_type", "data type must be TYPE_INT32 or TYPE_FP32"}}},
		{name: "batch input item shape without batching", cfg: `name: "m" backend: "b" input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, -1 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ] batch_input { kind: BATCH_ITEM_SHAPE_FLATTEN target_name: "N" data_type: TYPE_INT32 source_input: "x" }`,
			want: []want{{"batch_input[0].kind", "batch input kind 'BATCH_ITEM_SHAPE_FLATTEN' describes the items of a batch, but m does not batch"}}},
		{name: "batch input targets taken", cfg: base + `batch_input { kind: BATCH_ELEMENT_COUNT target_name: [ "x", "N" ] data_type: TYPE_INT32 source_input: "x" } batch_input { kind: BATCH_ITEM_SHAPE target_name: "N" data_type: TYPE_INT32 source_input: "x" }`,
			want: []want{{"batch_input[0].target_name", "batch input target 'x' is also a model input of m"},
				{"batch_input[1].target_name", "batch input target 'N' is named more than once"}}},
		{name: "batch input targets the sequence batcher's", cfg: base + `sequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
state [ { input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_FP32 dims: [ 1 ] } ] }
batch_input { kind: BATCH_ELEMENT_COUNT target_name: [ "START", "S_IN" ] data_type: TYPE_INT32 source_input: "x" }`,
			want: []want{{"batch_input[0].target_name", "batch input target 'START' is also a sequence batching control input of m"},
				{"batch_input[0].target_name", "batch input target 'S_IN' is also a sequence batching state input of m"}}},
		{name: "batch input without target", cfg: base + `batch_input { data_type: TYPE_FP32 source_input: "x" }`,
			want: []want{{"batch_input[0].target_name", "must specify 'target_name'"}}},
		{name: "batch output valid", cfg: base + `batch_output { target_name: "y" source_input: "x" }`},
		{name: "batch output bad targets and sources", cfg: base + `batch_output { target_name: [ "y", "nope" ] } batch_output { target_name: "y" source_input: "x" }`,
			want: []want{{"batch_output[0].source_input", "batch output kind 'BATCH_SCATTER_WITH_INPUT_SHAPE' expects 1 source input, got 0"},
				{"batch_output[0].target_name", "batch output target 'nope' is not a model output"},
				{"batch_output[1].target_name", "batch output target 'y' is named more than once"}}},

		// Metrics.
		{name: "metrics valid", cfg: base + `model_metrics { metric_control { metric_identifier { family: "f" } histogram_options { buckets: [ -1, 0, 2.5 ] } } }`},
		{name: "metrics incomplete", cfg: base + `model_metrics { metric_control { } metric_control { metric_identifier { family: "f" } histogram_options { buckets: [ 2, 1 ] } } }`,
			want: []want{{"model_metrics.metric_control[0].metric_identifier.family", "must specify 'metric_identifier'"},
				{"model_metrics.metric_control[0].histogram_options", "must specify 'histogram_options'"},
				{"model_metrics.metric_control[1].histogram_options.buckets", "must be in ascending order"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, tt.cfg)
			repository.Normalize(cfg, repository.NormalizeOptions{})
			errs := configErrors(t, repository.Validate("repo/m/config.pbtxt", cfg, tt.opts))
			if len(tt.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("want no errors, got:%s", joinMessages(errs))
				}
				return
			}
			for _, e := range errs {
				if e.Path != "repo/m/config.pbtxt" || e.Field == "" || e.Err == nil {
					t.Errorf("incomplete error %#v", e)
				}
			}
			for _, w := range tt.want {
				found := false
				for _, e := range errs {
					if e.Field == w.field && strings.Contains(e.Err.Error(), w.substr) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no error on %s containing %q; got:%s", w.field, w.substr, joinMessages(errs))
				}
			}
			if len(errs) > len(tt.want) {
				t.Errorf("%d errors, want %d:%s", len(errs), len(tt.want), joinMessages(errs))
			}
		})
	}
	t.Run("nil config", func(t *testing.T) {
		if err := repository.Validate("p", nil, repository.ValidateOptions{}); err == nil {
			t.Error("Validate(nil) = nil, want an error")
		}
	})
	t.Run("message format", func(t *testing.T) {
		cfg := mustParse(t, `name: "m" backend: "b" max_batch_size: -3`)
		err := repository.Validate("repo/m/config.pbtxt", cfg, repository.ValidateOptions{})
		want := "repo/m/config.pbtxt: max_batch_size: 'max_batch_size' must be non-negative value for m"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
}
