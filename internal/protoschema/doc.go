// Package protoschema checks generated protobuf code against a table of
// the facts a wire protocol fixes: every field's number, name, kind,
// cardinality, type and oneof, every RPC's messages and streaming flags,
// every enum value. The schema tests of modelconfig, grpcapi/inferencepb
// and grpcapi/healthpb use it, so that Triton's names and numbers are
// checked the same way everywhere.
//
//	protoschema.Fields(t, inferencepb.File_grpc_service_proto, "inference.", []protoschema.Field{
//		{"ServerLiveResponse", "live", 1, protoreflect.Optional, protoreflect.BoolKind, "", ""},
//	}, nil)
package protoschema
