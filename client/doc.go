// Package client talks to Triton-compatible inference servers: HTTP and
// gRPC clients for any server that speaks KServe protocol v2 with Triton's
// extensions (this project's cmd/tritonserver, NVIDIA's tritonserver), and
// an in-process connection to a *triton.Server, all behind the same small
// interfaces ([Inferer], [Conn]) with the root package's request and
// response types.
//
// # Choosing an entry point
//
//   - Code that only runs inference takes an [Inferer]: *triton.Server,
//     *triton.Model, and every Conn below satisfy it, so the same function
//     runs against an embedded server or a remote one.
//   - [Local] wraps a *triton.Server in this process as a [Conn]: no
//     encoding, no copies; for tests, and for programs that may serve a
//     model themselves or call a server elsewhere.
//   - [NewHTTP] ("host:8000" or a URL) speaks Triton's HTTP/REST protocol
//     with the binary tensor extension; [NewGRPC] ("host:8001") its gRPC
//     protocol. Prefer gRPC for decoupled (streaming) models, which HTTP
//     cannot serve, and for many small requests over few connections; HTTP
//     where only HTTP gets through.
//
// Beyond [Conn], every connection implements the optional interfaces
// [Repository] (explicit model load, unload and the index) and
// [SystemSharedMemory] (regions of POSIX shared memory), reached by type
// assertion as database/sql's optional driver interfaces are:
//
//	if repo, ok := conn.(client.Repository); ok {
//		err = repo.Load(ctx, "resnet", nil)
//	}
//
// # What each transport does
//
//	call                       Local              HTTP                        gRPC
//	Infer                      Server.Infer       POST .../infer              ModelInfer
//	InferStream                Server.InferStream Infer, one Final response;  ModelStreamInfer, one
//	                                              decoupled: Unsupported      stream per call
//	ServerLive/Ready           Live, Ready        GET /v2/health/...          ServerLive, ServerReady
//	ModelReady                 ModelReady         GET .../ready               ModelReady
//	ServerMetadata             Metadata           GET /v2                     ServerMetadata
//	ModelMetadata, ModelConfig ModelMetadata,     GET /v2/models/{m}[/config] ModelMetadata, ModelConfig
//	                           ModelConfig
//	ModelStatistics            Stats              GET .../stats               ModelStatistics
//	Load, Unload, Index        Load, Unload,      POST /v2/repository/...     RepositoryModelLoad, ...
//	                           Index
//	system shared memory       a registry of the  /v2/systemsharedmemory/...  SystemSharedMemory...
//	                           connection's own
//
// CUDA shared memory, trace and log settings, classification and the
// generate extension have no calls here.
//
// # Requests and responses
//
// A request is a [triton.InferRequest] whatever the transport. Its
// Priority, Timeout (Triton's queue-policy "timeout" parameter, sent in
// microseconds, rounded up) and sequence fields travel as Triton's
// reserved parameters; Parameters hold the custom ones (bool, int64,
// uint64, float64, string). The remote clients refuse, with
// InvalidArgument and before sending, a custom parameter named like a
// reserved one (sequence_id, sequence_start, sequence_end, priority,
// timeout, binary_data_output, headers) or of another type; [Local] hands
// the server whatever the request holds, as *triton.Server does.
//
// HTTP sends every tensor in binary (after the JSON header, sized by
// Inference-Header-Content-Length) and asks for every output in binary,
// unless [WithJSONTensors]. gRPC sends raw_input_contents and reads
// raw_output_contents (typed contents too, from servers that send them).
// Responses carry the model, the version that ran, the request's ID, the
// outputs and the model's response parameters, as [triton.Server.Infer]
// returns them; Final is set by InferStream only.
//
// # Errors
//
// Every error is a *triton.Error: [triton.CodeOf] gives its code, the
// server's code mapped back from the HTTP status or gRPC code (the
// inverse of the adapters' tables, Triton's mapping), and Err holds the
// server's message; the "[request id: <id>] " prefix Triton puts on
// errors about a request goes to RequestID, so the error's Message() is
// the text the server sent. HTTP answers Unknown, InvalidArgument,
// AlreadyExists and Cancelled alike with 400, which comes back as
// InvalidArgument. A server that cannot be reached, or a connection that
// breaks, is Unavailable; so is any call after Close. When ctx ends, the
// error is Cancelled or DeadlineExceeded and wraps ctx.Err(); a
// DeadlineExceeded error from the server (the gRPC deadline passing there
// first) wraps context.DeadlineExceeded too, so errors.Is(err,
// context.DeadlineExceeded) holds whichever side noticed.
//
// # Deadlines and cancellation
//
// Every call takes a ctx, and there are no timeout options. gRPC sends
// ctx's deadline with the call, and the server applies it to the request.
// HTTP has no deadline header: the client closes the connection when ctx
// ends, which cancels the request on the server (Triton and httpapi both
// do). A request's Timeout is not a deadline but the queue policy's, as in
// Triton. An InferStream iterator cancels its request when ctx ends or the
// consumer stops iterating.
//
// # Client-side timings
//
// A context from [WithTiming] makes the HTTP and gRPC clients report how
// much of each Infer and InferStream call was their own work, sending
// and receiving, and so how much was the wait for the server: what
// perf_analyzer reports as Client Send, Client Recv and response wait.
// [Timing] says what each transport counts (HTTP: encoding and writing
// the request, reading and decoding the response; gRPC: marshalling and
// unmarshalling). Built once and reused, such a context costs a few clock
// reads a call and no allocation; without it the clients measure nothing.
// [Local] reports nothing: there is no wire.
//
// # Shared memory
//
// A tensor can live in a region of system shared memory registered with
// the server ([SystemSharedMemory]) instead of the request or response:
// [InputInRegion] and [OutputInRegion] record where, as request
// parameters of a type of this package's, which the clients turn into
// Triton's shared_memory_region, _offset and _byte_size tensor parameters.
// An input in a region has no Data; an output written to a region comes
// back with its name, datatype and shape and no Data, its bytes in the
// region. [CreateSharedMemory] creates and maps the objects (Linux).
// Servers must allow client shared memory (tritonserver
// --allow-client-shm=true, httpapi/grpcapi WithSharedMemory). [Local]
// keeps its regions in a registry of its own, closed with the connection.
//
// # Concurrency, ownership and resources
//
// Clients are safe for concurrent use; share one per server. A request's
// tensors are borrowed until the call returns (for InferStream, until the
// iteration ends) and never modified: HTTP copies a request of up to 64
// KiB into one buffer with its JSON header and streams a larger one from
// the tensors' memory, gRPC copies them once into its message. Response
// outputs belong to the caller; each is a buffer of its own (tensor.View
// works on it), except with [Local], whose outputs are the server's.
//
// The HTTP client keeps up to [WithMaxIdleConnsPerHost] keep-alive
// connections (100 by default); the gRPC client one HTTP/2 connection.
// The package starts no goroutines of its own: those of net/http and
// grpc-go serve the connections, and Close ends them (HTTP: a call still
// running when Close is called closes its connection when it ends).
//
// # Differences from Triton's C++ and Python clients
//
//   - One blocking Infer and a range-over-func InferStream replace
//     async_infer and start_stream with a callback: run requests
//     concurrently from goroutines.
//   - InferStream over gRPC opens one ModelStreamInfer stream per
//     request, with the metadata triton_grpc_error: true, so that a
//     request's error carries its code and ends its stream, and
//     cancelling one request cancels only that one. Triton's clients keep
//     one stream per client and receive errors as text.
//   - ModelReady answers false, not an error, for a model or version the
//     server does not have, over both protocols (Triton's gRPC client
//     raises). A server shutting down makes the remote health calls fail
//     with Unavailable (Triton's HTTP client answers false).
//   - The HTTP client does not send Accept-Encoding unless asked
//     ([WithCompression]) and ignores HTTP_PROXY; gRPC compresses requests
//     with gzip only.
//   - A uint64 custom parameter travels over gRPC as int64_param when it
//     fits (Triton refuses uint64_param for custom parameters); over HTTP
//     it is a JSON number, which servers read as int64 when it fits.
//   - Version 0 means the server's choice (Triton's empty version).
//
// # Usage
//
//	conn, err := client.NewGRPC("localhost:8001")
//	if err != nil { ... }
//	defer conn.Close()
//	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, values)
//	resp, err := conn.Infer(ctx, &triton.InferRequest{Model: "simple", Inputs: []tensor.Tensor{in}})
//	if triton.CodeOf(err) == triton.Unavailable { ... retry elsewhere ... }
//	out, _ := resp.Output("OUTPUT0")
//	sums, err := tensor.View[int32](out)
package client
