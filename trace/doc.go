// Package trace samples inference requests and records where each spent
// its time, as Triton's tracing does, and hands every finished trace to an
// exporter: Triton's trace file (mode "triton": one JSON array of records,
// rotated by log_frequency) or OpenTelemetry (mode "opentelemetry": spans
// exported over OTLP).
//
// A [Tracer] decides which requests are traced from the server's trace
// settings (a settings.Store: trace_level, trace_rate, trace_count,
// log_frequency, trace_file, globally and per model; a change takes effect
// for the next request). A sampled request carries a [Trace] in its
// context: the HTTP and gRPC adapters start it and stamp their own
// activities (HTTP_RECV_START …), the server stamps the request's stages
// (REQUEST_START, QUEUE_START, COMPUTE_START …, REQUEST_END), ensemble
// steps and BLS calls get child traces, and once the request has been
// answered the whole tree, as a [Record], goes to the exporter.
//
// Tracing off costs one atomic load per request and no allocation.
//
// # Entry points
//
//   - [New] once per server, over its settings.Store; hand it to the server
//     with triton.WithTracer, and [Tracer.Close] it after the server.
//   - [Tracer.Start] samples a request; [NewContext] and [FromContext]
//     carry its trace; the methods of [Trace] (nil-safe) stamp it, bind it
//     to the request, make children and end it.
//   - [Tracer.Flush] waits until the ended traces are in the file.
//
// # Sampling
//
// As Triton: each setting in force (the global one, each model's own) has
// a counter of the requests that reached it; the rate-th, 2·rate-th …
// requests are traced while count (-1: no limit) lasts. An update of the
// settings replaces the changed settings with new ones whose counters
// start at 0; the others keep theirs. A setting that cannot sample (level
// OFF, rate 0, count 0, or no trace file in mode triton) samples nothing.
// In mode opentelemetry a request with a valid W3C parent (the carrier's
// traceparent, or for an in-process request the span in its context) is
// traced whatever rate and count say.
//
// # The trace file
//
// Mode triton writes Triton's layout: a JSON array of flat records, a
// model record ({"id","model_name","model_version","request_id",
// "parent_id"}) before each id's REQUEST_START, one timestamp per record
// ({"id","timestamps":[{"name","ns"}]}, ns on the monotonic clock) and, at
// level TENSORS, tensor records with Triton's data rendering. The records
// of one request's tree are written together. With log_frequency N, every
// N traces go to <file>.0, <file>.1 …, each a complete array; with 0 they
// are streamed to <file> ("[" … "]" at Close). Unlike Triton, strings are
// JSON-escaped, and traces are not held in memory until shutdown. One
// goroutine encodes and writes; a file that cannot be created is logged
// ("failed creating trace file: …"), never fatal.
package trace
