// Package httpapi serves a [triton.Server] over Triton Inference Server's
// HTTP/REST protocol: KServe v2 plus Triton's extensions (binary tensor
// data, classification, model repository, model configuration,
// statistics, shared memory, trace and logging settings, parameters,
// schedule policy, generate). Existing Triton clients (tritonclient,
// perf_analyzer, KServe v2 clients), load balancers and Kubernetes probes
// work against it unchanged: paths, methods, JSON shapes, status codes
// and error messages are Triton's (github.com/triton-go/triton's protocol
// reference §1).
//
// # Usage
//
// [NewHandler] returns an http.Handler for the /v2 paths:
//
//	srv, err := triton.NewFromDir("models")
//	if err != nil { ... }
//	defer srv.Close()
//	log.Fatal(http.ListenAndServe(":8000", httpapi.NewHandler(srv)))
//
// Mounted next to an application's own routes, give it the /v2/ subtree;
// the handler sees the full path, so do not strip the prefix:
//
//	h := httpapi.NewHandler(srv)
//	mux := http.NewServeMux()
//	mux.Handle("/v2/", h)
//	mux.Handle("/v2", h) // server metadata lives at /v2 itself
//	mux.HandleFunc("/", appIndex)
//
// Use one handler for both patterns: the trace and logging settings live
// in the handler.
//
// Serving it on a path prefix (http.StripPrefix("/triton", h)) works too,
// but Triton clients expect the protocol at the root of a host and port.
//
// Kubernetes probes: liveness GET /v2/health/live, readiness GET
// /v2/health/ready (200 or 400 with an empty body; 503 once the server is
// shutting down). For a graceful stop call [triton.Server.Shutdown] before
// http.Server.Shutdown: the server reports not ready during its drain
// period and keeps serving the requests in flight.
//
// # Endpoints
//
// Health, server and model metadata, model readiness, inference
// (JSON tensors, binary tensors after the JSON header with
// Inference-Header-Content-Length, raw binary bodies, shared-memory
// tensors, classification, request/tensor parameters, gzip and deflate
// in both directions, see [WithCompressionMinSize] and
// [WithCompressionLevel]), model configuration, statistics, repository
// index/load/unload, system and CUDA shared memory, trace and logging
// settings, and generate and generate_stream (see below). Anything else
// is 404 {"error":"Not Found"}; a wrong method is 405
// {"error":"Method Not Allowed"}. Errors are {"error":"<message>"}
// with the status of their [triton.Code] (Triton's table: InvalidArgument,
// AlreadyExists, Cancelled and Unknown 400, NotFound 404, Internal 500,
// Unsupported 501, Unavailable 503, and DeadlineExceeded, which Triton
// lacks, 504).
//
// # Generate extension
//
// POST /v2/models/{m}[/versions/{v}]/generate and .../generate_stream
// (Triton's provisional generate extension) take a flat JSON object and
// map each member by its key, as Triton does: a key naming a model input
// becomes that input, a string as a BYTES element, a number or boolean as
// the input's datatype, an array as that many elements; the shape is the
// model's (with its batch dimension) with the element count spread over
// it, the innermost variable dimension taking what the fixed ones leave
// and the other variable ones 1. Any other key is a request parameter
// (string, integer or boolean; other values are refused with 400).
// "parameters" holds an object mapped the same way; "id", a string, is
// also the request ID (and, as in Triton, a parameter or input "id" too).
// The answer is one object: "id" (when given), "model_name",
// "model_version" and every output as a member, an output of one element
// as that element, any other as a flat array, members sorted by name:
//
//	curl -d '{"text_input":"Hi","max_tokens":8}' localhost:8000/v2/models/llm/generate
//	{"model_name":"llm","model_version":"1","text_output":"Hi there"}
//
// generate wants exactly one response. generate_stream answers
// Content-Type text/event-stream; charset=utf-8 with one server-sent event
// per response, "data: {...}\n\n", each flushed as soon as the response
// is produced; an error after the first event is the event
// "data: {"error":"..."}\n\n", the status being 200 already. Errors
// before any response are {"error":"..."} with their status, on both
// endpoints. A client that
// disconnects cancels its request: the server sees the request's context
// end, and no more events are written. Neither endpoint compresses its
// answer, whatever Accept-Encoding asks (a compressor would hold events
// back until its block fills; Triton does not compress them either), and
// compressed requests are refused with 400, as Triton does. An
// http.Server WriteTimeout bounds a whole stream: leave it unset (or
// long) on servers that stream, and bound requests with contexts instead.
//
// # Concurrency and resources
//
// The handler is safe for concurrent use; every request runs on the
// goroutine net/http gives it, and inference requests run on the server
// with the request's context, so a client that disconnects cancels its
// inference (the backend sees its ctx end). A request body is read whole
// before it is decoded, so at most [WithMaxRequestSize] bytes (64 MiB by
// default) per request in flight, plus decoded JSON tensors (each bounded
// the same way) and the response; a compressed request is decompressed as
// it arrives. Bodies up to a megabyte use pooled buffers; larger ones, all
// requests together, hold at most [WithMaxBodyMemory] bytes (256 MiB by
// default): a request that finds no room waits for it, in arrival order,
// until its context ends. A compressed body that decompresses more than
// 16 times its compressed size is counted before it is kept, so a
// decompression bomb is refused having cost little more than its
// compressed bytes (docs/reliability.md has the figures). Compressors
// (about 1.3 MB each) and decompressors are pooled: there are about as
// many as responses and requests being compressed or decompressed at
// once. Binary input tensors are not copied: they alias the body, which
// is recycled once the response is written.
// Bound the number of requests in flight with http.Server settings or a
// limiting middleware, and set http.Server's ReadTimeout/ReadHeaderTimeout
// against slow clients; the handler sets no timeouts of its own.
//
// # Security
//
//   - Size limits: [WithMaxRequestSize] bounds the body as received, the
//     body after decompression (a zip bomb stops at the limit, without
//     buffers of the limit), the JSON header and each JSON-decoded input;
//     JSON nests at most 100 deep. Shapes that the JSON data cannot hold
//     fail before any allocation. [WithMaxBodyMemory] bounds large bodies
//     of all requests together.
//   - [WithRestrictedAPI] restricts categories of endpoints (for example
//     model-repository, shared-memory, logging) to requests carrying a
//     header with a secret value, as Triton's --http-restricted-api does.
//     This is a shared-secret check, not authentication: serve over TLS,
//     and put real authentication in a middleware in front of the handler.
//   - Shared memory is off unless [WithSharedMemory] is given (Triton's
//     --allow-client-shm, also off by default). When on, any client can map
//     shared-memory objects of the host by name (regular files under
//     /dev/shm only): restrict the shared-memory category unless clients
//     are trusted.
//   - Model names come from one path segment: a name holding "/" cannot
//     route (not even as %2F), and the server refuses names such as ".."
//     on load and unload, and load file overrides that leave the model
//     folder.
//   - The handler never panics on a request; an unexpected panic is
//     answered with 500 and logged (see [WithLogger]).
//
// # Answers Triton's clients check
//
// Where Triton's published clients or examples compare an answer's code
// or text, the answer is Triton's exactly, even where this package would
// word it otherwise (the examples are in triton-inference-server/client,
// src/python/examples):
//
//   - A load whose file overrides cannot be placed in a model folder (a
//     path element over 255 bytes, a path leaving the folder, a file
//     where a folder must be) is 500
//     {"error":"failed to load '<m>', failed to poll from model repository"},
//     Triton's answer to every failure to poll a model's files; the reason
//     is logged. simple_grpc_model_control.py checks it over gRPC
//     (INTERNAL and that text); HTTP answers the same, as Triton does.
//   - A failed load says "failed to load '<m>'" (simple_http_model_control.py:
//     a malformed config override, an unknown model).
//   - The metadata of an unknown model, and an inference on one, say
//     "Request for unknown model: '<m>' is not found", the inference's
//     error starting with it (simple_http_health_metadata.py,
//     simple_http_infer_client.py).
//
// # Differences from Triton
//
//   - A client's mistake is never answered with a 5xx status, except
//     for the answers Triton's clients check (above). Request JSON
//     that is malformed or mistyped is answered 400; Triton answers some
//     of these with 500 because its JSON library reports them as INTERNAL
//     errors (for example "Unable to parse 'shape'" for a negative
//     dimension). With Triton's messages but a 4xx status: an unknown
//     Content-Encoding is 415 Unsupported Media Type (Triton: 501, with
//     the same Accept-Encoding: gzip, deflate); a string correlation ID
//     over 128 characters is 400 (Triton: 501); an unknown log_format is
//     400 (Triton: 503); an unknown load parameter is 400 (Triton: 500
//     "unexpected error on creating Triton parameter"); an output region
//     of shared memory too small for the output is 400 (Triton: 500).
//     What stays 501 is a feature this server does not offer (shared
//     memory when not enabled, decoupled models on the infer endpoint,
//     setting log_file or trace_file, a repository name).
//   - Input- and output-level "parameters" that are not a JSON object are
//     refused with 400 "Unable to parse 'parameters'"; Triton ignores
//     them.
//   - Errors from decoding a request name the model, and the input at
//     fault: "model 'm', input 'INPUT0': " (or "input #2" before its name
//     is known) before Triton's message, which names neither; Triton's
//     messages that name both are kept as they are.
//   - Error and response JSON is always valid UTF-8: bytes that are not
//     (in a BYTES output written as JSON, or a name quoted in an error)
//     are written as U+FFFD, as encoding/json does; Triton copies them,
//     which strict JSON readers refuse. Use binary_data for BYTES outputs
//     that are not text.
//   - JSON strings that are elements of a BYTES input (infer "data", and
//     the values of generate and generate_stream) must be valid UTF-8, as
//     JSON text is: a body whose such string holds other bytes is refused
//     with 400 "model 'm', input 'IN': JSON strings must be UTF-8; invalid
//     byte 0xff at offset N of the request body; send arbitrary bytes as
//     binary tensor data" (N counts in the body after decompression).
//     Triton keeps the bytes, and its JSON answer then is not valid JSON;
//     here the answer would have changed them to U+FFFD without a word.
//     Binary tensor data carries any bytes.
//   - JSON integers out of range for the input's datatype (300 for UINT8)
//     are refused; Triton truncates them silently.
//   - JSON output doubles print as rapidjson prints them ("1.0",
//     "1.100000023841858"); NaN and infinities, which rapidjson cannot
//     write, are written as NaN, Infinity and -Infinity.
//   - A label file's lines lose a trailing carriage return, so label
//     files written on Windows give the same classification strings.
//   - Inputs in shared memory are copied out of the region before the
//     inference (outputs are written into it): a backend reading the
//     client's memory directly would crash the process if the client
//     shrank its object meanwhile. Being copied, each is bounded by
//     [WithMaxRequestSize] like any input.
//   - Without [WithSharedMemory], inference requests naming a region are
//     refused with the "Client shared memory is disabled" error (501), and
//     system_shared_memory is not listed in the server metadata.
//   - CUDA shared memory answers as a Triton built without GPU support.
//   - Inference requests are traced when the server has a tracer
//     (triton.WithTracer; "trace" is then listed as an extension), with
//     Triton's HTTP_RECV_START/END, INFER_RESPONSE_COMPLETE and
//     HTTP_SEND_START/END stamps (W3C traceparent from the headers in
//     mode opentelemetry); without one the trace settings endpoints only
//     store and report their settings.
//   - The logging extension drives a zap.AtomicLevel ([WithLogLevel]);
//     log_file cannot be set (501), as in current Triton. The log and
//     trace settings can be shared with the gRPC adapter ([WithSettings]),
//     as Triton has one such state per server.
//   - Inference responses smaller than [DefaultCompressionMinSize] (1400
//     bytes) go out uncompressed whatever Accept-Encoding asks (Triton
//     compresses every one; [WithCompressionMinSize](1) does too). Larger
//     ones are compressed at Triton's level by github.com/klauspost/compress
//     (other bytes than zlib's, the same formats), carry
//     Vary: Accept-Encoding, and are sent chunked once compressed past
//     2 KiB, where Triton buffers the whole compressed body to send a
//     Content-Length.
//   - generate on a model that answers with no response or several
//     (a decoupled model) is 400 with Triton's message ("generate expects
//     model to produce exactly 1 response, ..."), and the request is
//     stopped at its second response; Triton has sent the first
//     response's status (200) by then and waits for the last one.
//   - An error that comes before the first response of generate_stream,
//     such as a missing input, is {"error":"..."} with Content-Type
//     application/json and its status, as Triton answers errors it finds
//     before the inference; for an error the model returns as its first
//     response Triton sends that status with an event body instead.
//   - A model whose input has a fixed dimension of 0 cannot take generate
//     values ("The schema can not convert input ..."); Triton divides by
//     that dimension.
//   - [WithHeaderForwardPattern] (Triton's --http-header-forward-pattern)
//     matches and forwards header names in lower case: net/http does not
//     keep the client's spelling, which Triton matches and forwards. A
//     header and a body parameter of the same name give the model the
//     header's value; Triton passes both, the header's last.
//   - Responses carry no "parameters" (the server API returns none).
//   - A version segment of 0 is NotFound (the server's version 0 means
//     "latest"); Triton looks for a version 0 and does not find it either.
package httpapi
