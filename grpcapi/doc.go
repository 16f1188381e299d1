// Package grpcapi serves a [triton.Server] over Triton's gRPC protocol:
// the inference.GRPCInferenceService of KServe v2 with Triton's extensions,
// and grpc.health.v1.Health, so that Triton's gRPC clients (tritonclient,
// perf_analyzer, Kubernetes gRPC probes) work unchanged. The messages come
// from our own .proto files, with Triton's names and field numbers
// (packages inferencepb and healthpb).
//
// Add the service to a *grpc.Server of your own, with the server options
// that match Triton's defaults:
//
//	g := grpc.NewServer(grpcapi.ServerOptions()...)
//	grpcapi.New(srv).Register(g)
//	log.Fatal(g.Serve(lis))
//
// What it serves, as Triton does: health (ServerLive, ServerReady,
// ModelReady, and Health.Check answering SERVING while the server is
// ready), metadata and configuration, ModelInfer (raw_input_contents or
// typed contents, BYTES with 4-byte length prefixes, system shared memory,
// classification, raw_output_contents in the response), ModelStreamInfer
// (bidirectional; requests of one sequence answered in order; errors in
// band unless the client sends the metadata triton_grpc_error: true),
// statistics, the model repository (index, load with config and file
// overrides, unload with unload_dependents), system and CUDA shared memory
// registration, and trace and log settings. gzip-compressed calls are
// accepted (the gzip codec is registered on import).
//
// Large tensors: with the codec of [ServerOptions] ([ServerCodec]) and the
// handlers [Service.Register] installs, raw_input_contents and
// raw_output_contents of 32 KiB or more are not copied by protobuf: a
// request's tensors are read off the transport once, into a pooled buffer
// (each 8-byte aligned) that the backend reads in place and that goes back
// to the pool once the response is written; a response's tensors are
// written from the backend's memory. Other messages, and smaller tensors,
// go through grpc-go's protobuf codec as usual.
//
// A call's deadline becomes its ctx deadline, and a cancelled call
// cancels its queued or running requests. Errors are gRPC statuses whose
// codes come from [triton.Code] through one table (Triton's mapping, plus
// DeadlineExceeded) and whose messages are Triton's. [WithRestrictedProtocol]
// guards categories of RPCs with a metadata key, as tritonserver's
// --grpc-restricted-protocol does.
package grpcapi
