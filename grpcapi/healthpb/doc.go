// Package healthpb is the Go code generated from health.proto: the
// grpc.health.v1 Health service with the messages Triton's health.proto
// has. Package grpcapi implements Check (SERVING while the server is
// ready); scripts/gen-proto.sh regenerates the code.
package healthpb
