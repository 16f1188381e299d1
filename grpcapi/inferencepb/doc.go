// Package inferencepb is the Go code generated from grpc_service.proto:
// the messages and service stubs of Triton's inference.GRPCInferenceService
// (KServe v2 plus Triton's extensions). Package grpcapi implements the
// service; Go clients dial it with [NewGRPCInferenceServiceClient].
//
// The .proto file is our own, with Triton's names and field numbers;
// scripts/gen-proto.sh regenerates the code.
package inferencepb
