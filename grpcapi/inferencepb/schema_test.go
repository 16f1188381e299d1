package inferencepb_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/protoschema"
	"github.com/triton-go/triton/modelconfig"
)

// Short names for the tables below.
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
	byt   = protoreflect.BytesKind
	msg   = protoreflect.MessageKind

	pc = "parameter_choice"
)

const (
	pkg     = "inference."
	service = "inference.GRPCInferenceService"
)

// rpcFact is one row of triton-protocol.md §2.2, in declaration order.
// Message names are relative to the proto package "inference".
type rpcFact struct {
	Name         string
	In, Out      string
	ClientStream bool
	ServerStream bool
	FullMethod   string // the generated Go constant
}

var rpcs = []rpcFact{
	{"ServerLive", "ServerLiveRequest", "ServerLiveResponse", false, false, inferencepb.GRPCInferenceService_ServerLive_FullMethodName},
	{"ServerReady", "ServerReadyRequest", "ServerReadyResponse", false, false, inferencepb.GRPCInferenceService_ServerReady_FullMethodName},
	{"ModelReady", "ModelReadyRequest", "ModelReadyResponse", false, false, inferencepb.GRPCInferenceService_ModelReady_FullMethodName},
	{"ServerMetadata", "ServerMetadataRequest", "ServerMetadataResponse", false, false, inferencepb.GRPCInferenceService_ServerMetadata_FullMethodName},
	{"ModelMetadata", "ModelMetadataRequest", "ModelMetadataResponse", false, false, inferencepb.GRPCInferenceService_ModelMetadata_FullMethodName},
	{"ModelInfer", "ModelInferRequest", "ModelInferResponse", false, false, inferencepb.GRPCInferenceService_ModelInfer_FullMethodName},
	{"ModelStreamInfer", "ModelInferRequest", "ModelStreamInferResponse", true, true, inferencepb.GRPCInferenceService_ModelStreamInfer_FullMethodName},
	{"ModelConfig", "ModelConfigRequest", "ModelConfigResponse", false, false, inferencepb.GRPCInferenceService_ModelConfig_FullMethodName},
	{"ModelStatistics", "ModelStatisticsRequest", "ModelStatisticsResponse", false, false, inferencepb.GRPCInferenceService_ModelStatistics_FullMethodName},
	{"RepositoryIndex", "RepositoryIndexRequest", "RepositoryIndexResponse", false, false, inferencepb.GRPCInferenceService_RepositoryIndex_FullMethodName},
	{"RepositoryModelLoad", "RepositoryModelLoadRequest", "RepositoryModelLoadResponse", false, false, inferencepb.GRPCInferenceService_RepositoryModelLoad_FullMethodName},
	{"RepositoryModelUnload", "RepositoryModelUnloadRequest", "RepositoryModelUnloadResponse", false, false, inferencepb.GRPCInferenceService_RepositoryModelUnload_FullMethodName},
	{"SystemSharedMemoryStatus", "SystemSharedMemoryStatusRequest", "SystemSharedMemoryStatusResponse", false, false, inferencepb.GRPCInferenceService_SystemSharedMemoryStatus_FullMethodName},
	{"SystemSharedMemoryRegister", "SystemSharedMemoryRegisterRequest", "SystemSharedMemoryRegisterResponse", false, false, inferencepb.GRPCInferenceService_SystemSharedMemoryRegister_FullMethodName},
	{"SystemSharedMemoryUnregister", "SystemSharedMemoryUnregisterRequest", "SystemSharedMemoryUnregisterResponse", false, false, inferencepb.GRPCInferenceService_SystemSharedMemoryUnregister_FullMethodName},
	{"CudaSharedMemoryStatus", "CudaSharedMemoryStatusRequest", "CudaSharedMemoryStatusResponse", false, false, inferencepb.GRPCInferenceService_CudaSharedMemoryStatus_FullMethodName},
	{"CudaSharedMemoryRegister", "CudaSharedMemoryRegisterRequest", "CudaSharedMemoryRegisterResponse", false, false, inferencepb.GRPCInferenceService_CudaSharedMemoryRegister_FullMethodName},
	{"CudaSharedMemoryUnregister", "CudaSharedMemoryUnregisterRequest", "CudaSharedMemoryUnregisterResponse", false, false, inferencepb.GRPCInferenceService_CudaSharedMemoryUnregister_FullMethodName},
	{"TraceSetting", "TraceSettingRequest", "TraceSettingResponse", false, false, inferencepb.GRPCInferenceService_TraceSetting_FullMethodName},
	{"LogSettings", "LogSettingsRequest", "LogSettingsResponse", false, false, inferencepb.GRPCInferenceService_LogSettings_FullMethodName},
}

// fieldFact is one field of triton-protocol.md §2.3. Message and type names
// are relative to the proto package "inference". For message fields typ is
// the name of the type; for map fields it is "map<K,V>" (and kind/card are
// those of the synthetic map entry: message, repeated).
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
	{"ServerLiveResponse", "live", 1, opt, boolK, "", ""},
	{"ServerReadyResponse", "ready", 1, opt, boolK, "", ""},
	{"ModelReadyRequest", "name", 1, opt, str, "", ""},
	{"ModelReadyRequest", "version", 2, opt, str, "", ""},
	{"ModelReadyResponse", "ready", 1, opt, boolK, "", ""},
	{"ServerMetadataResponse", "name", 1, opt, str, "", ""},
	{"ServerMetadataResponse", "version", 2, opt, str, "", ""},
	{"ServerMetadataResponse", "extensions", 3, rep, str, "", ""},
	{"ModelMetadataRequest", "name", 1, opt, str, "", ""},
	{"ModelMetadataRequest", "version", 2, opt, str, "", ""},
	{"ModelMetadataResponse", "name", 1, opt, str, "", ""},
	{"ModelMetadataResponse", "versions", 2, rep, str, "", ""},
	{"ModelMetadataResponse", "platform", 3, opt, str, "", ""},
	{"ModelMetadataResponse", "inputs", 4, rep, msg, "ModelMetadataResponse.TensorMetadata", ""},
	{"ModelMetadataResponse", "outputs", 5, rep, msg, "ModelMetadataResponse.TensorMetadata", ""},
	{"ModelMetadataResponse.TensorMetadata", "name", 1, opt, str, "", ""},
	{"ModelMetadataResponse.TensorMetadata", "datatype", 2, opt, str, "", ""},
	{"ModelMetadataResponse.TensorMetadata", "shape", 3, rep, i64, "", ""},

	{"InferParameter", "bool_param", 1, opt, boolK, "", pc},
	{"InferParameter", "int64_param", 2, opt, i64, "", pc},
	{"InferParameter", "string_param", 3, opt, str, "", pc},
	{"InferParameter", "double_param", 4, opt, f64, "", pc},
	{"InferParameter", "uint64_param", 5, opt, u64, "", pc},

	{"InferTensorContents", "bool_contents", 1, rep, boolK, "", ""},
	{"InferTensorContents", "int_contents", 2, rep, i32, "", ""},
	{"InferTensorContents", "int64_contents", 3, rep, i64, "", ""},
	{"InferTensorContents", "uint_contents", 4, rep, u32, "", ""},
	{"InferTensorContents", "uint64_contents", 5, rep, u64, "", ""},
	{"InferTensorContents", "fp32_contents", 6, rep, f32, "", ""},
	{"InferTensorContents", "fp64_contents", 7, rep, f64, "", ""},
	{"InferTensorContents", "bytes_contents", 8, rep, byt, "", ""},

	{"ModelInferRequest", "model_name", 1, opt, str, "", ""},
	{"ModelInferRequest", "model_version", 2, opt, str, "", ""},
	{"ModelInferRequest", "id", 3, opt, str, "", ""},
	{"ModelInferRequest", "parameters", 4, rep, msg, "map<string,InferParameter>", ""},
	{"ModelInferRequest", "inputs", 5, rep, msg, "ModelInferRequest.InferInputTensor", ""},
	{"ModelInferRequest", "outputs", 6, rep, msg, "ModelInferRequest.InferRequestedOutputTensor", ""},
	{"ModelInferRequest", "raw_input_contents", 7, rep, byt, "", ""},
	{"ModelInferRequest.InferInputTensor", "name", 1, opt, str, "", ""},
	{"ModelInferRequest.InferInputTensor", "datatype", 2, opt, str, "", ""},
	{"ModelInferRequest.InferInputTensor", "shape", 3, rep, i64, "", ""},
	{"ModelInferRequest.InferInputTensor", "parameters", 4, rep, msg, "map<string,InferParameter>", ""},
	{"ModelInferRequest.InferInputTensor", "contents", 5, opt, msg, "InferTensorContents", ""},
	{"ModelInferRequest.InferRequestedOutputTensor", "name", 1, opt, str, "", ""},
	{"ModelInferRequest.InferRequestedOutputTensor", "parameters", 2, rep, msg, "map<string,InferParameter>", ""},

	{"ModelInferResponse", "model_name", 1, opt, str, "", ""},
	{"ModelInferResponse", "model_version", 2, opt, str, "", ""},
	{"ModelInferResponse", "id", 3, opt, str, "", ""},
	{"ModelInferResponse", "parameters", 4, rep, msg, "map<string,InferParameter>", ""},
	{"ModelInferResponse", "outputs", 5, rep, msg, "ModelInferResponse.InferOutputTensor", ""},
	{"ModelInferResponse", "raw_output_contents", 6, rep, byt, "", ""},
	{"ModelInferResponse.InferOutputTensor", "name", 1, opt, str, "", ""},
	{"ModelInferResponse.InferOutputTensor", "datatype", 2, opt, str, "", ""},
	{"ModelInferResponse.InferOutputTensor", "shape", 3, rep, i64, "", ""},
	{"ModelInferResponse.InferOutputTensor", "parameters", 4, rep, msg, "map<string,InferParameter>", ""},
	{"ModelInferResponse.InferOutputTensor", "contents", 5, opt, msg, "InferTensorContents", ""},

	{"ModelStreamInferResponse", "error_message", 1, opt, str, "", ""},
	{"ModelStreamInferResponse", "infer_response", 2, opt, msg, "ModelInferResponse", ""},

	{"ModelConfigRequest", "name", 1, opt, str, "", ""},
	{"ModelConfigRequest", "version", 2, opt, str, "", ""},
	{"ModelConfigResponse", "config", 1, opt, msg, "ModelConfig", ""},

	{"ModelStatisticsRequest", "name", 1, opt, str, "", ""},
	{"ModelStatisticsRequest", "version", 2, opt, str, "", ""},
	{"StatisticDuration", "count", 1, opt, u64, "", ""},
	{"StatisticDuration", "ns", 2, opt, u64, "", ""},
	{"InferStatistics", "success", 1, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "fail", 2, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "queue", 3, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "compute_input", 4, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "compute_infer", 5, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "compute_output", 6, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "cache_hit", 7, opt, msg, "StatisticDuration", ""},
	{"InferStatistics", "cache_miss", 8, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "compute_infer", 1, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "compute_output", 2, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "success", 3, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "fail", 4, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "empty_response", 5, opt, msg, "StatisticDuration", ""},
	{"InferResponseStatistics", "cancel", 6, opt, msg, "StatisticDuration", ""},
	{"InferBatchStatistics", "batch_size", 1, opt, u64, "", ""},
	{"InferBatchStatistics", "compute_input", 2, opt, msg, "StatisticDuration", ""},
	{"InferBatchStatistics", "compute_infer", 3, opt, msg, "StatisticDuration", ""},
	{"InferBatchStatistics", "compute_output", 4, opt, msg, "StatisticDuration", ""},
	{"MemoryUsage", "type", 1, opt, str, "", ""},
	{"MemoryUsage", "id", 2, opt, i64, "", ""},
	{"MemoryUsage", "byte_size", 3, opt, u64, "", ""},
	{"ModelStatistics", "name", 1, opt, str, "", ""},
	{"ModelStatistics", "version", 2, opt, str, "", ""},
	{"ModelStatistics", "last_inference", 3, opt, u64, "", ""},
	{"ModelStatistics", "inference_count", 4, opt, u64, "", ""},
	{"ModelStatistics", "execution_count", 5, opt, u64, "", ""},
	{"ModelStatistics", "inference_stats", 6, opt, msg, "InferStatistics", ""},
	{"ModelStatistics", "batch_stats", 7, rep, msg, "InferBatchStatistics", ""},
	{"ModelStatistics", "memory_usage", 8, rep, msg, "MemoryUsage", ""},
	{"ModelStatistics", "response_stats", 9, rep, msg, "map<string,InferResponseStatistics>", ""},
	{"ModelStatisticsResponse", "model_stats", 1, rep, msg, "ModelStatistics", ""},

	{"ModelRepositoryParameter", "bool_param", 1, opt, boolK, "", pc},
	{"ModelRepositoryParameter", "int64_param", 2, opt, i64, "", pc},
	{"ModelRepositoryParameter", "string_param", 3, opt, str, "", pc},
	{"ModelRepositoryParameter", "bytes_param", 4, opt, byt, "", pc},
	{"RepositoryIndexRequest", "repository_name", 1, opt, str, "", ""},
	{"RepositoryIndexRequest", "ready", 2, opt, boolK, "", ""},
	{"RepositoryIndexResponse", "models", 1, rep, msg, "RepositoryIndexResponse.ModelIndex", ""},
	{"RepositoryIndexResponse.ModelIndex", "name", 1, opt, str, "", ""},
	{"RepositoryIndexResponse.ModelIndex", "version", 2, opt, str, "", ""},
	{"RepositoryIndexResponse.ModelIndex", "state", 3, opt, str, "", ""},
	{"RepositoryIndexResponse.ModelIndex", "reason", 4, opt, str, "", ""},
	{"RepositoryModelLoadRequest", "repository_name", 1, opt, str, "", ""},
	{"RepositoryModelLoadRequest", "model_name", 2, opt, str, "", ""},
	{"RepositoryModelLoadRequest", "parameters", 3, rep, msg, "map<string,ModelRepositoryParameter>", ""},
	{"RepositoryModelUnloadRequest", "repository_name", 1, opt, str, "", ""},
	{"RepositoryModelUnloadRequest", "model_name", 2, opt, str, "", ""},
	{"RepositoryModelUnloadRequest", "parameters", 3, rep, msg, "map<string,ModelRepositoryParameter>", ""},

	{"SystemSharedMemoryStatusRequest", "name", 1, opt, str, "", ""},
	{"SystemSharedMemoryStatusResponse", "regions", 1, rep, msg, "map<string,SystemSharedMemoryStatusResponse.RegionStatus>", ""},
	{"SystemSharedMemoryStatusResponse.RegionStatus", "name", 1, opt, str, "", ""},
	{"SystemSharedMemoryStatusResponse.RegionStatus", "key", 2, opt, str, "", ""},
	{"SystemSharedMemoryStatusResponse.RegionStatus", "offset", 3, opt, u64, "", ""},
	{"SystemSharedMemoryStatusResponse.RegionStatus", "byte_size", 4, opt, u64, "", ""},
	{"SystemSharedMemoryRegisterRequest", "name", 1, opt, str, "", ""},
	{"SystemSharedMemoryRegisterRequest", "key", 2, opt, str, "", ""},
	{"SystemSharedMemoryRegisterRequest", "offset", 3, opt, u64, "", ""},
	{"SystemSharedMemoryRegisterRequest", "byte_size", 4, opt, u64, "", ""},
	{"SystemSharedMemoryUnregisterRequest", "name", 1, opt, str, "", ""},

	{"CudaSharedMemoryStatusRequest", "name", 1, opt, str, "", ""},
	{"CudaSharedMemoryStatusResponse", "regions", 1, rep, msg, "map<string,CudaSharedMemoryStatusResponse.RegionStatus>", ""},
	{"CudaSharedMemoryStatusResponse.RegionStatus", "name", 1, opt, str, "", ""},
	{"CudaSharedMemoryStatusResponse.RegionStatus", "device_id", 2, opt, u64, "", ""},
	{"CudaSharedMemoryStatusResponse.RegionStatus", "byte_size", 3, opt, u64, "", ""},
	{"CudaSharedMemoryRegisterRequest", "name", 1, opt, str, "", ""},
	{"CudaSharedMemoryRegisterRequest", "raw_handle", 2, opt, byt, "", ""},
	{"CudaSharedMemoryRegisterRequest", "device_id", 3, opt, i64, "", ""},
	{"CudaSharedMemoryRegisterRequest", "byte_size", 4, opt, u64, "", ""},
	{"CudaSharedMemoryUnregisterRequest", "name", 1, opt, str, "", ""},

	{"TraceSettingRequest", "settings", 1, rep, msg, "map<string,TraceSettingRequest.SettingValue>", ""},
	{"TraceSettingRequest", "model_name", 2, opt, str, "", ""},
	{"TraceSettingRequest.SettingValue", "value", 1, rep, str, "", ""},
	{"TraceSettingResponse", "settings", 1, rep, msg, "map<string,TraceSettingResponse.SettingValue>", ""},
	{"TraceSettingResponse.SettingValue", "value", 1, rep, str, "", ""},

	{"LogSettingsRequest", "settings", 1, rep, msg, "map<string,LogSettingsRequest.SettingValue>", ""},
	{"LogSettingsRequest.SettingValue", "bool_param", 1, opt, boolK, "", pc},
	{"LogSettingsRequest.SettingValue", "uint32_param", 2, opt, u32, "", pc},
	{"LogSettingsRequest.SettingValue", "string_param", 3, opt, str, "", pc},
	{"LogSettingsResponse", "settings", 1, rep, msg, "map<string,LogSettingsResponse.SettingValue>", ""},
	{"LogSettingsResponse.SettingValue", "bool_param", 1, opt, boolK, "", pc},
	{"LogSettingsResponse.SettingValue", "uint32_param", 2, opt, u32, "", pc},
	{"LogSettingsResponse.SettingValue", "string_param", 3, opt, str, "", pc},
}

// fieldless are the messages §2.3 lists as empty.
var fieldless = []string{
	"ServerLiveRequest",
	"ServerReadyRequest",
	"ServerMetadataRequest",
	"RepositoryModelLoadResponse",
	"RepositoryModelUnloadResponse",
	"SystemSharedMemoryRegisterResponse",
	"SystemSharedMemoryUnregisterResponse",
	"CudaSharedMemoryRegisterResponse",
	"CudaSharedMemoryUnregisterResponse",
}

func fileDesc() protoreflect.FileDescriptor {
	return inferencepb.File_grpc_service_proto
}

func TestSchemaFile(t *testing.T) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath("grpc_service.proto")
	if err != nil {
		t.Fatal(err)
	}
	if fd != fileDesc() {
		t.Errorf("registry's grpc_service.proto is not inferencepb's")
	}
	if got := fd.Package(); got != "inference" {
		t.Errorf("proto package = %q, want %q", got, "inference")
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Errorf("syntax = %v, want proto3", got)
	}
	var imports []string
	for i := range fd.Imports().Len() {
		imports = append(imports, fd.Imports().Get(i).Path())
	}
	if !slices.Equal(imports, []string{"model_config.proto"}) {
		t.Errorf("imports = %q, want [model_config.proto]", imports)
	}
	const goPkg = "github.com/triton-go/triton/grpcapi/inferencepb"
	if got := fd.Options().(*descriptorpb.FileOptions).GetGoPackage(); got != goPkg {
		t.Errorf("go_package = %q, want %q", got, goPkg)
	}
	if n := fd.Services().Len(); n != 1 {
		t.Errorf("%d services, want 1", n)
	}
	// §2.3 declares no enums and the file has no extensions.
	if n := fd.Enums().Len(); n != 0 {
		t.Errorf("%d top-level enums, want none", n)
	}
	if n := fd.Extensions().Len(); n != 0 {
		t.Errorf("%d extensions, want none", n)
	}
	protoschema.WalkMessages(fd.Messages(), func(m protoreflect.MessageDescriptor) {
		if n := m.Enums().Len(); n != 0 {
			t.Errorf("message %s declares %d enums, want none", m.FullName(), n)
		}
	})
}

func TestSchemaService(t *testing.T) {
	want := make([]protoschema.RPC, len(rpcs))
	for i, r := range rpcs {
		want[i] = protoschema.RPC(r)
	}
	protoschema.Service(t, fileDesc(), pkg, service, want, inferencepb.GRPCInferenceService_ServiceDesc)
}

func TestSchemaFields(t *testing.T) {
	protoschema.Fields(t, fileDesc(), pkg, fields(), fieldless)
}

// The generated Go field has modelconfig's type (checked at compile time).
var _ func(*inferencepb.ModelConfigResponse) *modelconfig.ModelConfig = (*inferencepb.ModelConfigResponse).GetConfig

// TestSchemaModelConfig checks that ModelConfigResponse.config is the
// inference.ModelConfig of model_config.proto, the one package modelconfig
// generates, not a look-alike.
func TestSchemaModelConfig(t *testing.T) {
	f := (&inferencepb.ModelConfigResponse{}).ProtoReflect().Descriptor().Fields().ByName("config")
	if f == nil {
		t.Fatal("ModelConfigResponse.config missing")
	}
	want := (&modelconfig.ModelConfig{}).ProtoReflect().Descriptor()
	if f.Message() != want {
		t.Errorf("config's type is %s from %s, want modelconfig's inference.ModelConfig",
			f.Message().FullName(), f.Message().ParentFile().Path())
	}
	if got := want.FullName(); got != "inference.ModelConfig" {
		t.Errorf("modelconfig.ModelConfig is %s, want inference.ModelConfig", got)
	}
	if got := f.Message().ParentFile().Path(); got != "model_config.proto" {
		t.Errorf("config's type is declared in %s, want model_config.proto", got)
	}
}

// TestSchemaGoNames checks that the generated Go types are the messages of
// the schema, so a rename in the proto shows up here too.
func TestSchemaGoNames(t *testing.T) {
	tests := []struct {
		m    proto.Message
		want protoreflect.FullName
	}{
		{&inferencepb.ModelInferRequest{}, "inference.ModelInferRequest"},
		{&inferencepb.ModelInferRequest_InferInputTensor{}, "inference.ModelInferRequest.InferInputTensor"},
		{&inferencepb.ModelInferRequest_InferRequestedOutputTensor{}, "inference.ModelInferRequest.InferRequestedOutputTensor"},
		{&inferencepb.ModelInferResponse_InferOutputTensor{}, "inference.ModelInferResponse.InferOutputTensor"},
		{&inferencepb.ModelStreamInferResponse{}, "inference.ModelStreamInferResponse"},
		{&inferencepb.ModelMetadataResponse_TensorMetadata{}, "inference.ModelMetadataResponse.TensorMetadata"},
		{&inferencepb.InferParameter{}, "inference.InferParameter"},
		{&inferencepb.InferTensorContents{}, "inference.InferTensorContents"},
		{&inferencepb.ModelRepositoryParameter{}, "inference.ModelRepositoryParameter"},
		{&inferencepb.RepositoryIndexResponse_ModelIndex{}, "inference.RepositoryIndexResponse.ModelIndex"},
		{&inferencepb.SystemSharedMemoryStatusResponse_RegionStatus{}, "inference.SystemSharedMemoryStatusResponse.RegionStatus"},
		{&inferencepb.CudaSharedMemoryStatusResponse_RegionStatus{}, "inference.CudaSharedMemoryStatusResponse.RegionStatus"},
		{&inferencepb.TraceSettingRequest_SettingValue{}, "inference.TraceSettingRequest.SettingValue"},
		{&inferencepb.TraceSettingResponse_SettingValue{}, "inference.TraceSettingResponse.SettingValue"},
		{&inferencepb.LogSettingsRequest_SettingValue{}, "inference.LogSettingsRequest.SettingValue"},
		{&inferencepb.LogSettingsResponse_SettingValue{}, "inference.LogSettingsResponse.SettingValue"},
		{&inferencepb.ModelStatistics{}, "inference.ModelStatistics"},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			d := tt.m.ProtoReflect().Descriptor()
			if d.FullName() != tt.want {
				t.Errorf("Go type %T is %s, want %s", tt.m, d.FullName(), tt.want)
			}
			if d.ParentFile() != fileDesc() {
				t.Errorf("%s is declared in %s, want grpc_service.proto", d.FullName(), d.ParentFile().Path())
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
