package healthpb_test

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/triton-go/triton/grpcapi/healthpb"
)

const (
	pkg     = "grpc.health.v1."
	service = "grpc.health.v1.Health"
)

// rpcs are the RPCs of Triton's health.proto in declaration order.
// triton-protocol.md §2.1 lists only Check; Triton's real health.proto also
// declares the server-streaming Watch.
var rpcs = []struct {
	name         string
	in, out      string
	clientStream bool
	serverStream bool
	fullMethod   string // the generated Go constant
}{
	{"Check", "HealthCheckRequest", "HealthCheckResponse", false, false, healthpb.Health_Check_FullMethodName},
	{"Watch", "HealthCheckRequest", "HealthCheckResponse", false, true, healthpb.Health_Watch_FullMethodName},
}

// schema lists every field of every message (names relative to the proto
// package); typ is the enum's name for enum fields.
var schema = []struct {
	msg   string
	field string
	num   protoreflect.FieldNumber
	kind  protoreflect.Kind
	typ   string
}{
	{"HealthCheckRequest", "service", 1, protoreflect.StringKind, ""},
	{"HealthCheckResponse", "status", 1, protoreflect.EnumKind, "HealthCheckResponse.ServingStatus"},
}

// servingStatus are the values of HealthCheckResponse.ServingStatus in
// declaration order.
var servingStatus = []struct {
	name string
	num  protoreflect.EnumNumber
}{
	{"UNKNOWN", 0}, {"SERVING", 1}, {"NOT_SERVING", 2}, {"SERVICE_UNKNOWN", 3},
}

func fileDesc() protoreflect.FileDescriptor {
	return healthpb.File_health_proto
}

func TestSchemaFile(t *testing.T) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath("health.proto")
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
	const goPkg = "github.com/triton-go/triton/grpcapi/healthpb"
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
		if n := m.Messages().Len(); n != 0 {
			t.Errorf("message %s declares %d nested messages, want none", m.Name(), n)
		}
	}
	if want := []string{"HealthCheckRequest", "HealthCheckResponse"}; !slices.Equal(msgs, want) {
		t.Errorf("messages = %q, want %q", msgs, want)
	}
}

func TestSchemaService(t *testing.T) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(service)
	if err != nil {
		t.Fatal(err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		t.Fatalf("%s is a %T, not a service", service, d)
	}
	if sd.ParentFile() != fileDesc() {
		t.Errorf("%s is declared in %s, want health.proto", service, sd.ParentFile().Path())
	}
	methods := sd.Methods()
	if methods.Len() != len(rpcs) {
		t.Errorf("%d rpcs, want %d", methods.Len(), len(rpcs))
	}
	for i, want := range rpcs {
		t.Run(want.name, func(t *testing.T) {
			if i >= methods.Len() {
				t.Fatalf("rpc %d missing", i)
			}
			m := methods.Get(i)
			if string(m.Name()) != want.name {
				t.Errorf("rpc %d = %s, want %s (declaration order)", i, m.Name(), want.name)
			}
			if got := string(m.Input().FullName()); got != pkg+want.in {
				t.Errorf("input = %s, want %s", got, pkg+want.in)
			}
			if got := string(m.Output().FullName()); got != pkg+want.out {
				t.Errorf("output = %s, want %s", got, pkg+want.out)
			}
			if m.IsStreamingClient() != want.clientStream {
				t.Errorf("client streaming = %v, want %v", m.IsStreamingClient(), want.clientStream)
			}
			if m.IsStreamingServer() != want.serverStream {
				t.Errorf("server streaming = %v, want %v", m.IsStreamingServer(), want.serverStream)
			}
			if path := "/" + service + "/" + want.name; want.fullMethod != path {
				t.Errorf("Go full method name = %q, want %q", want.fullMethod, path)
			}
		})
	}

	desc := healthpb.Health_ServiceDesc
	if desc.ServiceName != service {
		t.Errorf("ServiceDesc.ServiceName = %q, want %q", desc.ServiceName, service)
	}
	var got []string
	for _, m := range desc.Methods {
		got = append(got, m.MethodName)
	}
	for _, s := range desc.Streams {
		got = append(got, fmt.Sprintf("%s client=%v server=%v", s.StreamName, s.ClientStreams, s.ServerStreams))
	}
	if want := []string{"Check", "Watch client=false server=true"}; !slices.Equal(got, want) {
		t.Errorf("ServiceDesc methods and streams = %q, want %q", got, want)
	}
}

func TestSchemaFields(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	for _, want := range schema {
		key := protoreflect.FullName(pkg + want.msg + "." + want.field)
		seen[key] = true
		t.Run(want.msg+"."+want.field, func(t *testing.T) {
			d, err := protoregistry.GlobalFiles.FindDescriptorByName(key)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := d.(protoreflect.FieldDescriptor)
			if !ok {
				t.Fatalf("%s is a %T, not a field", key, d)
			}
			if f.ParentFile() != fileDesc() {
				t.Errorf("declared in %s, want health.proto", f.ParentFile().Path())
			}
			if f.Number() != want.num {
				t.Errorf("number = %d, want %d", f.Number(), want.num)
			}
			if f.Cardinality() != protoreflect.Optional || f.HasPresence() || f.ContainingOneof() != nil {
				t.Errorf("cardinality = %v (presence %v, oneof %v), want a plain proto3 singular field",
					f.Cardinality(), f.HasPresence(), f.ContainingOneof() != nil)
			}
			if f.Kind() != want.kind {
				t.Errorf("kind = %v, want %v", f.Kind(), want.kind)
			}
			var typ string
			if f.Kind() == protoreflect.EnumKind {
				typ = string(f.Enum().FullName())[len(pkg):]
			}
			if typ != want.typ {
				t.Errorf("type = %q, want %q", typ, want.typ)
			}
		})
	}
	fd := fileDesc()
	for i := range fd.Messages().Len() {
		m := fd.Messages().Get(i)
		for j := range m.Fields().Len() {
			if f := m.Fields().Get(j); !seen[f.FullName()] {
				t.Errorf("field %s (number %d) is not in Triton's health.proto", f.FullName(), f.Number())
			}
		}
	}
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
	vals := e.Values()
	if vals.Len() != len(servingStatus) {
		t.Errorf("%d values, want %d", vals.Len(), len(servingStatus))
	}
	for i, w := range servingStatus {
		if i >= vals.Len() {
			break
		}
		if v := vals.Get(i); string(v.Name()) != w.name || v.Number() != w.num {
			t.Errorf("value %d = %s=%d, want %s=%d", i, v.Name(), v.Number(), w.name, w.num)
		}
	}
	// The Go constants other packages use.
	goNames := map[healthpb.HealthCheckResponse_ServingStatus]string{
		healthpb.HealthCheckResponse_UNKNOWN:         "UNKNOWN",
		healthpb.HealthCheckResponse_SERVING:         "SERVING",
		healthpb.HealthCheckResponse_NOT_SERVING:     "NOT_SERVING",
		healthpb.HealthCheckResponse_SERVICE_UNKNOWN: "SERVICE_UNKNOWN",
	}
	for _, w := range servingStatus {
		c := healthpb.HealthCheckResponse_ServingStatus(w.num)
		if goNames[c] != w.name || c.String() != w.name {
			t.Errorf("Go constant %d = %s (%s), want %s", w.num, goNames[c], c, w.name)
		}
	}
}
