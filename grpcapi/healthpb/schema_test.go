package healthpb_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/internal/protoschema"
)

const (
	pkg     = "grpc.health.v1."
	service = "grpc.health.v1.Health"
)

// rpcs are the RPCs of grpc-go's health.proto in declaration order: those
// of Triton's (triton-protocol.md §2.1 lists only Check; Triton's real
// health.proto also declares the server-streaming Watch) and List, which
// grpc-go's adds (unimplemented here, as in Triton).
var rpcs = []protoschema.RPC{
	{Name: "Check", In: "HealthCheckRequest", Out: "HealthCheckResponse", FullMethod: healthpb.Health_Check_FullMethodName},
	{Name: "List", In: "HealthListRequest", Out: "HealthListResponse", FullMethod: healthpb.Health_List_FullMethodName},
	{Name: "Watch", In: "HealthCheckRequest", Out: "HealthCheckResponse", ServerStream: true, FullMethod: healthpb.Health_Watch_FullMethodName},
}

// schema lists every field of every message (names relative to the proto
// package); typ is the enum's name for enum fields.
var schema = []protoschema.Field{
	{Msg: "HealthCheckRequest", Field: "service", Num: 1, Card: protoreflect.Optional, Kind: protoreflect.StringKind},
	{Msg: "HealthCheckResponse", Field: "status", Num: 1, Card: protoreflect.Optional, Kind: protoreflect.EnumKind, Type: "HealthCheckResponse.ServingStatus"},
	// grpc-go's List, beyond Triton's health.proto.
	{Msg: "HealthListResponse", Field: "statuses", Num: 1, Card: protoreflect.Repeated, Kind: protoreflect.MessageKind, Type: "map<string,HealthCheckResponse>"},
}

// servingStatus are the values of HealthCheckResponse.ServingStatus in
// declaration order.
var servingStatus = []protoschema.EnumValue{
	{Name: "UNKNOWN", Num: 0}, {Name: "SERVING", Num: 1}, {Name: "NOT_SERVING", Num: 2}, {Name: "SERVICE_UNKNOWN", Num: 3},
}

func fileDesc() protoreflect.FileDescriptor {
	return healthpb.File_health_proto
}

func TestSchemaFile(t *testing.T) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath("grpc/health/v1/health.proto")
	if err != nil {
		t.Fatal(err)
	}
	if fd != fileDesc() {
		t.Errorf("registry's health.proto is not healthpb's")
	}
	if got := fd.Package(); got != "grpc.health.v1" {
		t.Errorf("proto package = %q, want %q", got, "grpc.health.v1")
	}
	if got := fd.Syntax(); got != protoreflect.Proto3 {
		t.Errorf("syntax = %v, want proto3", got)
	}
	if n := fd.Imports().Len(); n != 0 {
		t.Errorf("%d imports, want none", n)
	}
	const goPkg = "google.golang.org/grpc/health/grpc_health_v1"
	if got := fd.Options().(*descriptorpb.FileOptions).GetGoPackage(); got != goPkg {
		t.Errorf("go_package = %q, want %q", got, goPkg)
	}
	if n := fd.Services().Len(); n != 1 {
		t.Errorf("%d services, want 1", n)
	}
	if n := fd.Enums().Len(); n != 0 {
		t.Errorf("%d top-level enums, want none", n)
	}
	var msgs []string
	for i := range fd.Messages().Len() {
		m := fd.Messages().Get(i)
		msgs = append(msgs, string(m.Name()))
		if n := m.Messages().Len(); n != 0 && m.Name() != "HealthListResponse" { // its map entry
			t.Errorf("message %s declares %d nested messages, want none", m.Name(), n)
		}
	}
	// Triton's two, and List's.
	if want := []string{"HealthCheckRequest", "HealthCheckResponse", "HealthListRequest", "HealthListResponse"}; !slices.Equal(msgs, want) {
		t.Errorf("messages = %q, want %q", msgs, want)
	}
}

func TestSchemaService(t *testing.T) {
	protoschema.Service(t, fileDesc(), pkg, service, rpcs, healthpb.Health_ServiceDesc)
}

func TestSchemaFields(t *testing.T) {
	protoschema.Fields(t, fileDesc(), pkg, schema, []string{"HealthListRequest"})
}

func TestSchemaServingStatus(t *testing.T) {
	const name = pkg + "HealthCheckResponse.ServingStatus"
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := d.(protoreflect.EnumDescriptor)
	if !ok {
		t.Fatalf("%s is a %T, not an enum", name, d)
	}
	if e != healthpb.HealthCheckResponse_SERVING.Descriptor() {
		t.Errorf("registry's %s is not healthpb's", name)
	}
	if n := (&healthpb.HealthCheckResponse{}).ProtoReflect().Descriptor().Enums().Len(); n != 1 {
		t.Errorf("HealthCheckResponse declares %d enums, want 1", n)
	}
	protoschema.EnumValues(t, e, servingStatus)
	// The Go constants other packages use.
	goNames := map[healthpb.HealthCheckResponse_ServingStatus]string{
		healthpb.HealthCheckResponse_UNKNOWN:         "UNKNOWN",
		healthpb.HealthCheckResponse_SERVING:         "SERVING",
		healthpb.HealthCheckResponse_NOT_SERVING:     "NOT_SERVING",
		healthpb.HealthCheckResponse_SERVICE_UNKNOWN: "SERVICE_UNKNOWN",
	}
	for _, w := range servingStatus {
		c := healthpb.HealthCheckResponse_ServingStatus(w.Num)
		if goNames[c] != w.Name || c.String() != w.Name {
			t.Errorf("Go constant %d = %s (%s), want %s", w.Num, goNames[c], c, w.Name)
		}
	}
}
