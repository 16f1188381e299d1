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
// registration, and trace and log settings. Messages may be compressed
// with gzip or deflate (zlib), the encodings Triton accepts: importing the
// package registers compressors of its own for both with grpc-go, in place
// of grpc-go's gzip (whose gzip.SetLevel then panics), so that inflating
// many messages at once is bounded (see [ServerOptions]).
// [WithInferResponseCompressionLevel] compresses inference responses as
// --grpc-infer-response-compression-level does, and
// [WithHeaderForwardPattern] passes metadata to models as
// --grpc-header-forward-pattern does. ModelReady answers ready=false, not
// an error, for a model of the repository that is unloaded, not loaded or
// lacks the version, and an error for a model the repository does not
// have.
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
// Tracing: with a server that has a tracer (triton.WithTracer), the
// handlers [Service.Register] installs trace ModelInfer and
// ModelStreamInfer requests once the model is known, with Triton's
// GRPC_WAITREAD_START/END, INFER_RESPONSE_COMPLETE and GRPC_SEND_START/END
// stamps, the GRPC_* ones after the server's as Triton writes them (W3C
// traceparent from the incoming metadata in mode opentelemetry). grpc-go
// writes a unary response after the handler returns: there GRPC_SEND_START
// is when the response is ready and GRPC_SEND_END when it is handed to
// grpc-go; on a stream they surround each Send.
//
// A call's deadline becomes its ctx deadline, and a cancelled call
// cancels its queued or running requests. Errors are gRPC statuses whose
// codes come from [triton.Code] through one table (Triton's mapping, plus
// DeadlineExceeded) and whose messages are Triton's. [WithRestrictedProtocol]
// guards categories of RPCs with a metadata key, as tritonserver's
// --grpc-restricted-protocol does (the key "triton-grpc-protocol-<key>"
// that Triton's clients send).
//
// # Answers Triton's clients check
//
// Where Triton's published clients or examples compare an answer's code
// or text, the answer is Triton's exactly, even where this package would
// answer otherwise (the examples are in triton-inference-server/client,
// src/python/examples):
//
//   - A load whose file overrides cannot be placed in a model folder (a
//     path element over 255 bytes, a path leaving the folder, a file
//     where a folder must be) is INTERNAL "failed to load '<m>', failed to
//     poll from model repository", Triton's answer to every failure to
//     poll a model's files, though the client is at fault (Triton's own
//     example notes that INVALID_ARGUMENT would fit better); the reason is
//     logged. simple_grpc_model_control.py checks the code and the text.
//   - A failed load says "failed to load '<m>'" (simple_grpc_model_control.py:
//     a malformed config override, an unknown model).
//   - The metadata of an unknown model says "Request for unknown model:
//     '<m>' is not found" (simple_grpc_health_metadata.py).
//
// # Deviations from Triton
//
// Except where Triton's clients check the code (above), a client's
// mistake is answered INVALID_ARGUMENT where Triton answers a
// server's code: a string correlation ID over 128 characters (Triton:
// UNIMPLEMENTED), an output's shared-memory region too small for the
// output (Triton: INTERNAL), and, with [ServerCodec], a ModelInfer or
// ModelStreamInfer request that is not valid protobuf (grpc-go: INTERNAL,
// ending a stream; here a stream answers it in band and goes on). Two
// remain as Triton has them, since gRPC defines UNIMPLEMENTED as an
// operation not supported: ModelInfer on a decoupled model and a disabled
// shared-memory extension. grpc-go, not this package, answers a message of
// another RPC that is not valid protobuf, or a compressed message that
// does not inflate, INTERNAL, and an unknown grpc-encoding UNIMPLEMENTED
// (as gRPC's compression spec asks).
//
// For what a client can make the server hold in memory, and the limits
// that bound it, see [ServerOptions].
package grpcapi
