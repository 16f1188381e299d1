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
package trace
