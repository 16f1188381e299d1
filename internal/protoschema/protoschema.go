package protoschema

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Field is one field of a protocol's schema. Msg and Type are relative to
// the proto package. Type is the message or enum type of such fields and
// "map<K,V>" for map fields (whose Kind and Card are those of the
// synthetic map entry: message, repeated); "" otherwise.
type Field struct {
	Msg   string
	Field string
	Num   protoreflect.FieldNumber
	Card  protoreflect.Cardinality
	Kind  protoreflect.Kind
	Type  string
	Oneof string
}

// Fields checks every field of the table against the file fd whose proto
// package is pkg (with its trailing dot), and that the file has nothing
// beyond it: no other field, and no message without fields but those
// named in fieldless.
func Fields(t *testing.T, fd protoreflect.FileDescriptor, pkg string, fields []Field, fieldless []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, want := range fields {
		key := want.Msg + "." + want.Field
		if seen[key] {
			t.Errorf("table lists %s twice", key)
		}
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			d, err := FindMessage(fd, want.Msg)
			if err != nil {
				t.Fatal(err)
			}
			if g, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(pkg + want.Msg)); err != nil || g != d {
				t.Errorf("registry lookup of %s%s = %v, %v; want the file's message", pkg, want.Msg, g, err)
			}
			f := d.Fields().ByName(protoreflect.Name(want.Field))
			if f == nil {
				t.Fatalf("field %s missing", key)
			}
			if f.Number() != want.Num {
				t.Errorf("number = %d, want %d", f.Number(), want.Num)
			}
			if f.Cardinality() != want.Card {
				t.Errorf("cardinality = %v, want %v", f.Cardinality(), want.Card)
			}
			if f.Kind() != want.Kind {
				t.Errorf("kind = %v, want %v", f.Kind(), want.Kind)
			}
			if got := TypeOf(f, pkg); got != want.Type {
				t.Errorf("type = %q, want %q", got, want.Type)
			}
			var oneof string
			if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
				oneof = string(o.Name())
			}
			if oneof != want.Oneof {
				t.Errorf("oneof = %q, want %q", oneof, want.Oneof)
			}
			if f.HasPresence() && want.Oneof == "" && f.Kind() != protoreflect.MessageKind {
				t.Errorf("scalar field has explicit presence; the protocol's proto3 fields are not 'optional'")
			}
		})
	}
	WalkMessages(fd.Messages(), func(m protoreflect.MessageDescriptor) {
		name := strings.TrimPrefix(string(m.FullName()), pkg)
		if m.Fields().Len() == 0 && !slices.Contains(fieldless, name) {
			t.Errorf("message %s has no fields and is not in the fieldless list", name)
		}
		if m.Fields().Len() != 0 && slices.Contains(fieldless, name) {
			t.Errorf("message %s has %d fields, want none", name, m.Fields().Len())
		}
		for i := range m.Fields().Len() {
			f := m.Fields().Get(i)
			if key := name + "." + string(f.Name()); !seen[key] {
				t.Errorf("field %s (number %d) is not in the protocol's schema table", key, f.Number())
			}
		}
	})
	for _, name := range fieldless {
		if _, err := FindMessage(fd, name); err != nil {
			t.Error(err)
		}
	}
}

// RPC is one RPC of a service, in declaration order. In and Out are
// relative to the proto package; FullMethod is the generated Go constant.
type RPC struct {
	Name         string
	In, Out      string
	ClientStream bool
	ServerStream bool
	FullMethod   string
}

// Service checks the service named service (a full name) declared in fd:
// its RPCs in declaration order, and the grpc-go description the
// generated code registers (unary RPCs in Methods, streaming ones in
// Streams, Metadata naming fd).
func Service(t *testing.T, fd protoreflect.FileDescriptor, pkg, service string, rpcs []RPC, desc grpc.ServiceDesc) {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		t.Fatal(err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		t.Fatalf("%s is a %T, not a service", service, d)
	}
	if sd.ParentFile() != fd {
		t.Errorf("%s is declared in %s, want %s", service, sd.ParentFile().Path(), fd.Path())
	}
	methods := sd.Methods()
	if methods.Len() != len(rpcs) {
		t.Errorf("%d rpcs, want %d", methods.Len(), len(rpcs))
	}
	for i, want := range rpcs {
		t.Run(want.Name, func(t *testing.T) {
			if i >= methods.Len() {
				t.Fatalf("rpc %d missing", i)
			}
			m := methods.Get(i)
			if string(m.Name()) != want.Name {
				t.Errorf("rpc %d = %s, want %s (declaration order)", i, m.Name(), want.Name)
			}
			if got := string(m.Input().FullName()); got != pkg+want.In {
				t.Errorf("input = %s, want %s", got, pkg+want.In)
			}
			if got := string(m.Output().FullName()); got != pkg+want.Out {
				t.Errorf("output = %s, want %s", got, pkg+want.Out)
			}
			if m.IsStreamingClient() != want.ClientStream {
				t.Errorf("client streaming = %v, want %v", m.IsStreamingClient(), want.ClientStream)
			}
			if m.IsStreamingServer() != want.ServerStream {
				t.Errorf("server streaming = %v, want %v", m.IsStreamingServer(), want.ServerStream)
			}
			if path := "/" + service + "/" + want.Name; want.FullMethod != path {
				t.Errorf("Go full method name = %q, want %q", want.FullMethod, path)
			}
		})
	}
	if desc.ServiceName != service {
		t.Errorf("ServiceDesc.ServiceName = %q, want %q", desc.ServiceName, service)
	}
	if desc.Metadata != fd.Path() {
		t.Errorf("ServiceDesc.Metadata = %v, want %s", desc.Metadata, fd.Path())
	}
	var unary, streams, gotUnary, gotStreams []string
	for _, r := range rpcs {
		if r.ClientStream || r.ServerStream {
			streams = append(streams, fmt.Sprintf("%s client=%v server=%v", r.Name, r.ClientStream, r.ServerStream))
		} else {
			unary = append(unary, r.Name)
		}
	}
	for _, m := range desc.Methods {
		gotUnary = append(gotUnary, m.MethodName)
	}
	for _, s := range desc.Streams {
		gotStreams = append(gotStreams, fmt.Sprintf("%s client=%v server=%v", s.StreamName, s.ClientStreams, s.ServerStreams))
	}
	if !slices.Equal(gotUnary, unary) {
		t.Errorf("ServiceDesc.Methods = %q, want %q", gotUnary, unary)
	}
	if !slices.Equal(gotStreams, streams) {
		t.Errorf("ServiceDesc.Streams = %q, want %q", gotStreams, streams)
	}
}

// EnumValue is one value of an enum, in declaration order.
type EnumValue struct {
	Name string
	Num  protoreflect.EnumNumber
}

// EnumValues checks an enum's values against want, in order.
func EnumValues(t *testing.T, e protoreflect.EnumDescriptor, want []EnumValue) {
	t.Helper()
	vals := e.Values()
	if vals.Len() != len(want) {
		t.Errorf("%s: %d values, want %d", e.FullName(), vals.Len(), len(want))
	}
	for i, w := range want {
		if i >= vals.Len() {
			break
		}
		if v := vals.Get(i); string(v.Name()) != w.Name || v.Number() != w.Num {
			t.Errorf("%s value %d = %s=%d, want %s=%d", e.FullName(), i, v.Name(), v.Number(), w.Name, w.Num)
		}
	}
}

// WalkMessages calls fn for every message, nested ones included, except
// the synthetic map-entry messages.
func WalkMessages(md protoreflect.MessageDescriptors, fn func(protoreflect.MessageDescriptor)) {
	for i := range md.Len() {
		m := md.Get(i)
		if m.IsMapEntry() {
			continue
		}
		fn(m)
		WalkMessages(m.Messages(), fn)
	}
}

// TypeOf renders a field's type as [Field] writes it, names relative to
// pkg.
func TypeOf(f protoreflect.FieldDescriptor, pkg string) string {
	short := func(n protoreflect.FullName) string { return strings.TrimPrefix(string(n), pkg) }
	switch {
	case f.IsMap():
		k, v := f.MapKey(), f.MapValue()
		vs := v.Kind().String()
		if v.Kind() == protoreflect.MessageKind {
			vs = short(v.Message().FullName())
		}
		return fmt.Sprintf("map<%s,%s>", k.Kind(), vs)
	case f.Kind() == protoreflect.MessageKind:
		return short(f.Message().FullName())
	case f.Kind() == protoreflect.EnumKind:
		return short(f.Enum().FullName())
	}
	return ""
}

// FindMessage resolves a dotted message name relative to fd's package.
func FindMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	d := fd.Messages()
	var m protoreflect.MessageDescriptor
	for part := range strings.SplitSeq(name, ".") {
		m = d.ByName(protoreflect.Name(part))
		if m == nil {
			return nil, fmt.Errorf("message %s missing", name)
		}
		d = m.Messages()
	}
	return m, nil
}
