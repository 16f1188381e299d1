// Package healthpb is the grpc.health.v1 Health service that Triton
// serves beside GRPCInferenceService: names for grpc-go's own generated
// package (google.golang.org/grpc/health/grpc_health_v1), whose Check,
// Watch and messages are those of Triton's health.proto. grpc-go's file
// adds List, which Triton's lacks: package grpcapi implements Check
// (SERVING while the server is ready) and leaves Watch and List
// Unimplemented, as Triton answers both.
//
// It is not generated from a copy of health.proto: a second Go package
// registering the grpc.health.v1 messages conflicts, at start, with
// grpc-go's, which the OpenTelemetry OTLP exporters link in (through
// grpc-gateway), and the process panics.
package healthpb
