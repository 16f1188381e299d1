package modelconfig_test

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/triton-go/triton/internal/protoschema"
	"github.com/triton-go/triton/modelconfig"
)

// Short names for the table below.
const (
	opt = protoreflect.Optional // proto3 singular field (implicit presence)
	rep = protoreflect.Repeated

	boolK = protoreflect.BoolKind
	i32   = protoreflect.Int32Kind
	i64   = protoreflect.Int64Kind
	u32   = protoreflect.Uint32Kind
	u64   = protoreflect.Uint64Kind
	f32   = protoreflect.FloatKind
	f64   = protoreflect.DoubleKind
	str   = protoreflect.StringKind
	enum  = protoreflect.EnumKind
	msg   = protoreflect.MessageKind
)

// fieldFact is one field of Triton's model_config.proto as listed in
// triton-protocol.md section 4. Message and type names are relative to the
// proto package "inference". For enum and message fields typ is the full
// name of the type; for map fields it is "map<K,V>" (and kind/card are those
// of the synthetic map entry: message, repeated).
type fieldFact struct {
	Msg   string
	Field string
	Num   protoreflect.FieldNumber
	Card  protoreflect.Cardinality
	Kind  protoreflect.Kind
	Type  string
	Oneof string
}

// schema lists every field of every message, so that a wrong, missing or
// extra field fails TestSchemaFields.
var schema = []fieldFact{
	{"ModelRateLimiter", "resources", 1, rep, msg, "ModelRateLimiter.Resource", ""},
	{"ModelRateLimiter", "priority", 2, opt, u32, "", ""},
	{"ModelRateLimiter.Resource", "name", 1, opt, str, "", ""},
	{"ModelRateLimiter.Resource", "global", 2, opt, boolK, "", ""},
	{"ModelRateLimiter.Resource", "count", 3, opt, u32, "", ""},

	{"ModelInstanceGroup", "name", 1, opt, str, "", ""},
	{"ModelInstanceGroup", "kind", 4, opt, enum, "ModelInstanceGroup.Kind", ""},
	{"ModelInstanceGroup", "count", 2, opt, i32, "", ""},
	{"ModelInstanceGroup", "rate_limiter", 6, opt, msg, "ModelRateLimiter", ""},
	{"ModelInstanceGroup", "gpus", 3, rep, i32, "", ""},
	{"ModelInstanceGroup", "secondary_devices", 8, rep, msg, "ModelInstanceGroup.SecondaryDevice", ""},
	{"ModelInstanceGroup", "profile", 5, rep, str, "", ""},
	{"ModelInstanceGroup", "passive", 7, opt, boolK, "", ""},
	{"ModelInstanceGroup", "host_policy", 9, opt, str, "", ""},
	{"ModelInstanceGroup.SecondaryDevice", "kind", 1, opt, enum, "ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind", ""},
	{"ModelInstanceGroup.SecondaryDevice", "device_id", 2, opt, i64, "", ""},

	{"ModelTensorReshape", "shape", 1, rep, i64, "", ""},

	{"ModelInput", "name", 1, opt, str, "", ""},
	{"ModelInput", "data_type", 2, opt, enum, "DataType", ""},
	{"ModelInput", "format", 3, opt, enum, "ModelInput.Format", ""},
	{"ModelInput", "dims", 4, rep, i64, "", ""},
	{"ModelInput", "reshape", 5, opt, msg, "ModelTensorReshape", ""},
	{"ModelInput", "is_shape_tensor", 6, opt, boolK, "", ""},
	{"ModelInput", "allow_ragged_batch", 7, opt, boolK, "", ""},
	{"ModelInput", "optional", 8, opt, boolK, "", ""},
	{"ModelInput", "is_non_linear_format_io", 9, opt, boolK, "", ""},

	{"ModelOutput", "name", 1, opt, str, "", ""},
	{"ModelOutput", "data_type", 2, opt, enum, "DataType", ""},
	{"ModelOutput", "dims", 3, rep, i64, "", ""},
	{"ModelOutput", "reshape", 5, opt, msg, "ModelTensorReshape", ""},
	{"ModelOutput", "label_filename", 4, opt, str, "", ""},
	{"ModelOutput", "is_shape_tensor", 6, opt, boolK, "", ""},
	{"ModelOutput", "is_non_linear_format_io", 7, opt, boolK, "", ""},

	{"BatchInput", "kind", 1, opt, enum, "BatchInput.Kind", ""},
	{"BatchInput", "target_name", 2, rep, str, "", ""},
	{"BatchInput", "data_type", 3, opt, enum, "DataType", ""},
	{"BatchInput", "source_input", 4, rep, str, "", ""},

	{"BatchOutput", "target_name", 1, rep, str, "", ""},
	{"BatchOutput", "kind", 2, opt, enum, "BatchOutput.Kind", ""},
	{"BatchOutput", "source_input", 3, rep, str, "", ""},

	{"ModelVersionPolicy", "latest", 1, opt, msg, "ModelVersionPolicy.Latest", "policy_choice"},
	{"ModelVersionPolicy", "all", 2, opt, msg, "ModelVersionPolicy.All", "policy_choice"},
	{"ModelVersionPolicy", "specific", 3, opt, msg, "ModelVersionPolicy.Specific", "policy_choice"},
	{"ModelVersionPolicy.Latest", "num_versions", 1, opt, u32, "", ""},
	{"ModelVersionPolicy.Specific", "versions", 1, rep, i64, "", ""},

	{"ModelOptimizationPolicy", "graph", 1, opt, msg, "ModelOptimizationPolicy.Graph", ""},
	{"ModelOptimizationPolicy", "priority", 2, opt, enum, "ModelOptimizationPolicy.ModelPriority", ""},
	{"ModelOptimizationPolicy", "cuda", 3, opt, msg, "ModelOptimizationPolicy.Cuda", ""},
	{"ModelOptimizationPolicy", "execution_accelerators", 4, opt, msg, "ModelOptimizationPolicy.ExecutionAccelerators", ""},
	{"ModelOptimizationPolicy", "input_pinned_memory", 5, opt, msg, "ModelOptimizationPolicy.PinnedMemoryBuffer", ""},
	{"ModelOptimizationPolicy", "output_pinned_memory", 6, opt, msg, "ModelOptimizationPolicy.PinnedMemoryBuffer", ""},
	{"ModelOptimizationPolicy", "gather_kernel_buffer_threshold", 7, opt, u32, "", ""},
	{"ModelOptimizationPolicy", "eager_batching", 8, opt, boolK, "", ""},
	{"ModelOptimizationPolicy.Graph", "level", 1, opt, i32, "", ""},
	{"ModelOptimizationPolicy.Cuda", "graphs", 1, opt, boolK, "", ""},
	{"ModelOptimizationPolicy.Cuda", "busy_wait_events", 2, opt, boolK, "", ""},
	{"ModelOptimizationPolicy.Cuda", "graph_spec", 3, rep, msg, "ModelOptimizationPolicy.Cuda.GraphSpec", ""},
	{"ModelOptimizationPolicy.Cuda", "output_copy_stream", 4, opt, boolK, "", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec", "batch_size", 1, opt, i32, "", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec", "input", 2, rep, msg, "map<string,ModelOptimizationPolicy.Cuda.GraphSpec.Shape>", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec", "graph_lower_bound", 3, opt, msg, "ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec.Shape", "dim", 1, rep, i64, "", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound", "batch_size", 1, opt, i32, "", ""},
	{"ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound", "input", 2, rep, msg, "map<string,ModelOptimizationPolicy.Cuda.GraphSpec.Shape>", ""},
	{"ModelOptimizationPolicy.ExecutionAccelerators", "gpu_execution_accelerator", 1, rep, msg, "ModelOptimizationPolicy.ExecutionAccelerators.Accelerator", ""},
	{"ModelOptimizationPolicy.ExecutionAccelerators", "cpu_execution_accelerator", 2, rep, msg, "ModelOptimizationPolicy.ExecutionAccelerators.Accelerator", ""},
	{"ModelOptimizationPolicy.ExecutionAccelerators.Accelerator", "name", 1, opt, str, "", ""},
	{"ModelOptimizationPolicy.ExecutionAccelerators.Accelerator", "parameters", 2, rep, msg, "map<string,string>", ""},
	{"ModelOptimizationPolicy.PinnedMemoryBuffer", "enable", 1, opt, boolK, "", ""},

	{"ModelQueuePolicy", "timeout_action", 1, opt, enum, "ModelQueuePolicy.TimeoutAction", ""},
	{"ModelQueuePolicy", "default_timeout_microseconds", 2, opt, u64, "", ""},
	{"ModelQueuePolicy", "allow_timeout_override", 3, opt, boolK, "", ""},
	{"ModelQueuePolicy", "max_queue_size", 4, opt, u32, "", ""},

	{"ModelDynamicBatching", "preferred_batch_size", 1, rep, i32, "", ""},
	{"ModelDynamicBatching", "max_queue_delay_microseconds", 2, opt, u64, "", ""},
	{"ModelDynamicBatching", "preserve_ordering", 3, opt, boolK, "", ""},
	{"ModelDynamicBatching", "priority_levels", 4, opt, u64, "", ""},
	{"ModelDynamicBatching", "default_priority_level", 5, opt, u64, "", ""},
	{"ModelDynamicBatching", "default_queue_policy", 6, opt, msg, "ModelQueuePolicy", ""},
	{"ModelDynamicBatching", "priority_queue_policy", 7, rep, msg, "map<uint64,ModelQueuePolicy>", ""},

	{"ModelSequenceBatching", "direct", 3, opt, msg, "ModelSequenceBatching.StrategyDirect", "strategy_choice"},
	{"ModelSequenceBatching", "oldest", 4, opt, msg, "ModelSequenceBatching.StrategyOldest", "strategy_choice"},
	{"ModelSequenceBatching", "max_sequence_idle_microseconds", 1, opt, u64, "", ""},
	{"ModelSequenceBatching", "control_input", 2, rep, msg, "ModelSequenceBatching.ControlInput", ""},
	{"ModelSequenceBatching", "state", 5, rep, msg, "ModelSequenceBatching.State", ""},
	{"ModelSequenceBatching", "iterative_sequence", 6, opt, boolK, "", ""},
	{"ModelSequenceBatching.Control", "kind", 1, opt, enum, "ModelSequenceBatching.Control.Kind", ""},
	{"ModelSequenceBatching.Control", "int32_false_true", 2, rep, i32, "", ""},
	{"ModelSequenceBatching.Control", "fp32_false_true", 3, rep, f32, "", ""},
	{"ModelSequenceBatching.Control", "bool_false_true", 5, rep, boolK, "", ""},
	{"ModelSequenceBatching.Control", "data_type", 4, opt, enum, "DataType", ""},
	{"ModelSequenceBatching.ControlInput", "name", 1, opt, str, "", ""},
	{"ModelSequenceBatching.ControlInput", "control", 2, rep, msg, "ModelSequenceBatching.Control", ""},
	{"ModelSequenceBatching.InitialState", "data_type", 1, opt, enum, "DataType", ""},
	{"ModelSequenceBatching.InitialState", "dims", 2, rep, i64, "", ""},
	{"ModelSequenceBatching.InitialState", "zero_data", 3, opt, boolK, "", "state_data"},
	{"ModelSequenceBatching.InitialState", "data_file", 4, opt, str, "", "state_data"},
	{"ModelSequenceBatching.InitialState", "name", 5, opt, str, "", ""},
	{"ModelSequenceBatching.State", "input_name", 1, opt, str, "", ""},
	{"ModelSequenceBatching.State", "output_name", 2, opt, str, "", ""},
	{"ModelSequenceBatching.State", "data_type", 3, opt, enum, "DataType", ""},
	{"ModelSequenceBatching.State", "dims", 4, rep, i64, "", ""},
	{"ModelSequenceBatching.State", "initial_state", 5, rep, msg, "ModelSequenceBatching.InitialState", ""},
	{"ModelSequenceBatching.State", "use_same_buffer_for_input_output", 6, opt, boolK, "", ""},
	{"ModelSequenceBatching.State", "use_growable_memory", 7, opt, boolK, "", ""},
	{"ModelSequenceBatching.StrategyDirect", "max_queue_delay_microseconds", 1, opt, u64, "", ""},
	{"ModelSequenceBatching.StrategyDirect", "minimum_slot_utilization", 2, opt, f32, "", ""},
	{"ModelSequenceBatching.StrategyOldest", "max_candidate_sequences", 1, opt, i32, "", ""},
	{"ModelSequenceBatching.StrategyOldest", "preferred_batch_size", 2, rep, i32, "", ""},
	{"ModelSequenceBatching.StrategyOldest", "max_queue_delay_microseconds", 3, opt, u64, "", ""},
	{"ModelSequenceBatching.StrategyOldest", "preserve_ordering", 4, opt, boolK, "", ""},

	{"ModelEnsembling", "step", 1, rep, msg, "ModelEnsembling.Step", ""},
	{"ModelEnsembling", "max_inflight_requests", 2, opt, u32, "", ""},
	{"ModelEnsembling.Step", "model_name", 1, opt, str, "", ""},
	{"ModelEnsembling.Step", "model_version", 2, opt, i64, "", ""},
	{"ModelEnsembling.Step", "input_map", 3, rep, msg, "map<string,string>", ""},
	{"ModelEnsembling.Step", "output_map", 4, rep, msg, "map<string,string>", ""},
	{"ModelEnsembling.Step", "model_namespace", 5, opt, str, "", ""},

	{"ModelParameter", "string_value", 1, opt, str, "", ""},

	{"ModelWarmup", "name", 1, opt, str, "", ""},
	{"ModelWarmup", "batch_size", 2, opt, u32, "", ""},
	{"ModelWarmup", "inputs", 3, rep, msg, "map<string,ModelWarmup.Input>", ""},
	{"ModelWarmup", "count", 4, opt, u32, "", ""},
	{"ModelWarmup.Input", "data_type", 1, opt, enum, "DataType", ""},
	{"ModelWarmup.Input", "dims", 2, rep, i64, "", ""},
	{"ModelWarmup.Input", "zero_data", 3, opt, boolK, "", "input_data_type"},
	{"ModelWarmup.Input", "random_data", 4, opt, boolK, "", "input_data_type"},
	{"ModelWarmup.Input", "input_data_file", 5, opt, str, "", "input_data_type"},

	{"ModelOperations", "op_library_filename", 1, rep, str, "", ""},
	{"ModelTransactionPolicy", "decoupled", 1, opt, boolK, "", ""},
	{"ModelRepositoryAgents", "agents", 1, rep, msg, "ModelRepositoryAgents.Agent", ""},
	{"ModelRepositoryAgents.Agent", "name", 1, opt, str, "", ""},
	{"ModelRepositoryAgents.Agent", "parameters", 2, rep, msg, "map<string,string>", ""},
	{"ModelResponseCache", "enable", 1, opt, boolK, "", ""},

	{"ModelMetrics", "metric_control", 1, rep, msg, "ModelMetrics.MetricControl", ""},
	{"ModelMetrics.MetricControl", "metric_identifier", 1, opt, msg, "ModelMetrics.MetricControl.MetricIdentifier", ""},
	{"ModelMetrics.MetricControl", "histogram_options", 2, opt, msg, "ModelMetrics.MetricControl.HistogramOptions", "metric_options"},
	{"ModelMetrics.MetricControl.MetricIdentifier", "family", 1, opt, str, "", ""},
	{"ModelMetrics.MetricControl.HistogramOptions", "buckets", 1, rep, f64, "", ""},

	{"ModelConfig", "name", 1, opt, str, "", ""},
	{"ModelConfig", "platform", 2, opt, str, "", ""},
	{"ModelConfig", "backend", 17, opt, str, "", ""},
	{"ModelConfig", "runtime", 25, opt, str, "", ""},
	{"ModelConfig", "version_policy", 3, opt, msg, "ModelVersionPolicy", ""},
	{"ModelConfig", "max_batch_size", 4, opt, i32, "", ""},
	{"ModelConfig", "input", 5, rep, msg, "ModelInput", ""},
	{"ModelConfig", "output", 6, rep, msg, "ModelOutput", ""},
	{"ModelConfig", "batch_input", 20, rep, msg, "BatchInput", ""},
	{"ModelConfig", "batch_output", 21, rep, msg, "BatchOutput", ""},
	{"ModelConfig", "optimization", 12, opt, msg, "ModelOptimizationPolicy", ""},
	{"ModelConfig", "dynamic_batching", 11, opt, msg, "ModelDynamicBatching", "scheduling_choice"},
	{"ModelConfig", "sequence_batching", 13, opt, msg, "ModelSequenceBatching", "scheduling_choice"},
	{"ModelConfig", "ensemble_scheduling", 15, opt, msg, "ModelEnsembling", "scheduling_choice"},
	{"ModelConfig", "instance_group", 7, rep, msg, "ModelInstanceGroup", ""},
	{"ModelConfig", "default_model_filename", 8, opt, str, "", ""},
	{"ModelConfig", "cc_model_filenames", 9, rep, msg, "map<string,string>", ""},
	{"ModelConfig", "metric_tags", 10, rep, msg, "map<string,string>", ""},
	{"ModelConfig", "parameters", 14, rep, msg, "map<string,ModelParameter>", ""},
	{"ModelConfig", "model_warmup", 16, rep, msg, "ModelWarmup", ""},
	{"ModelConfig", "model_operations", 18, opt, msg, "ModelOperations", ""},
	{"ModelConfig", "model_transaction_policy", 19, opt, msg, "ModelTransactionPolicy", ""},
	{"ModelConfig", "model_repository_agents", 23, opt, msg, "ModelRepositoryAgents", ""},
	{"ModelConfig", "response_cache", 24, opt, msg, "ModelResponseCache", ""},
	{"ModelConfig", "model_metrics", 26, opt, msg, "ModelMetrics", ""},
}

// fieldless are the messages of the schema that have no fields at all.
var fieldless = []string{"ModelVersionPolicy.All"}

// enums lists every enum with its values in declaration order.
var enums = map[string][]enumValue{
	"DataType": {
		{"TYPE_INVALID", 0}, {"TYPE_BOOL", 1}, {"TYPE_UINT8", 2}, {"TYPE_UINT16", 3},
		{"TYPE_UINT32", 4}, {"TYPE_UINT64", 5}, {"TYPE_INT8", 6}, {"TYPE_INT16", 7},
		{"TYPE_INT32", 8}, {"TYPE_INT64", 9}, {"TYPE_FP16", 10}, {"TYPE_FP32", 11},
		{"TYPE_FP64", 12}, {"TYPE_STRING", 13}, {"TYPE_BF16", 14},
	},
	"ModelInstanceGroup.Kind": {
		{"KIND_AUTO", 0}, {"KIND_GPU", 1}, {"KIND_CPU", 2}, {"KIND_MODEL", 3},
	},
	"ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind": {{"KIND_NVDLA", 0}},
	"ModelInput.Format": {
		{"FORMAT_NONE", 0}, {"FORMAT_NHWC", 1}, {"FORMAT_NCHW", 2},
	},
	"BatchInput.Kind": {
		{"BATCH_ELEMENT_COUNT", 0}, {"BATCH_ACCUMULATED_ELEMENT_COUNT", 1},
		{"BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", 2}, {"BATCH_MAX_ELEMENT_COUNT_AS_SHAPE", 3},
		{"BATCH_ITEM_SHAPE", 4}, {"BATCH_ITEM_SHAPE_FLATTEN", 5},
	},
	"BatchOutput.Kind": {{"BATCH_SCATTER_WITH_INPUT_SHAPE", 0}},
	"ModelOptimizationPolicy.ModelPriority": {
		{"PRIORITY_DEFAULT", 0}, {"PRIORITY_MAX", 1}, {"PRIORITY_MIN", 2},
	},
	"ModelQueuePolicy.TimeoutAction": {{"REJECT", 0}, {"DELAY", 1}},
	"ModelSequenceBatching.Control.Kind": {
		{"CONTROL_SEQUENCE_START", 0}, {"CONTROL_SEQUENCE_READY", 1},
		{"CONTROL_SEQUENCE_END", 2}, {"CONTROL_SEQUENCE_CORRID", 3},
	},
}

type enumValue struct {
	Name string
	Num  protoreflect.EnumNumber
}

const pkg = "inference."

func fileDesc() protoreflect.FileDescriptor {
	return modelconfig.File_model_config_proto
}

func walkEnums(fd protoreflect.FileDescriptor, fn func(protoreflect.EnumDescriptor)) {
	each := func(ed protoreflect.EnumDescriptors) {
		for i := range ed.Len() {
			fn(ed.Get(i))
		}
	}
	each(fd.Enums())
	protoschema.WalkMessages(fd.Messages(), func(m protoreflect.MessageDescriptor) { each(m.Enums()) })
}

func TestSchemaPackage(t *testing.T) {
	fd := fileDesc()
	if got := fd.Package(); got != "inference" {
		t.Errorf("proto package = %q, want %q", got, "inference")
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Errorf("syntax = %v, want proto3", got)
	}
}

func TestSchemaFields(t *testing.T) {
	protoschema.Fields(t, fileDesc(), pkg, fields(), fieldless)
}

func TestSchemaEnums(t *testing.T) {
	fd := fileDesc()
	found := map[string]bool{}
	walkEnums(fd, func(e protoreflect.EnumDescriptor) {
		name := string(e.FullName())[len(pkg):]
		found[name] = true
		t.Run(name, func(t *testing.T) {
			want, ok := enums[name]
			if !ok {
				t.Fatalf("enum %s is not in Triton's schema", name)
			}
			vals := make([]protoschema.EnumValue, len(want))
			for i, w := range want {
				vals[i] = protoschema.EnumValue(w)
			}
			protoschema.EnumValues(t, e, vals)
		})
	})
	for name := range enums {
		if !found[name] {
			t.Errorf("enum %s missing", name)
		}
	}
}

// TestSchemaGoNames spot-checks that the generated Go identifiers are the
// ones other packages use, so a rename in the proto shows up here too.
func TestSchemaGoNames(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"DataType", modelconfig.DataType_TYPE_STRING.String(), "TYPE_STRING"},
		{"Kind", modelconfig.ModelInstanceGroup_KIND_MODEL.String(), "KIND_MODEL"},
		{"TimeoutAction", modelconfig.ModelQueuePolicy_DELAY.String(), "DELAY"},
		{"ControlKind", modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID.String(), "CONTROL_SEQUENCE_CORRID"},
		{"ModelConfig", string((&modelconfig.ModelConfig{}).ProtoReflect().Descriptor().FullName()), "inference.ModelConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

// fields is the table as protoschema takes it (the table's own type keeps
// its literals short).
func fields() []protoschema.Field {
	out := make([]protoschema.Field, len(schema))
	for i, f := range schema {
		out[i] = protoschema.Field(f)
	}
	return out
}
