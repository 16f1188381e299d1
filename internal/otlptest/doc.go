// Package otlptest runs a real OTLP trace receiver in-process, on
// loopback, for the tests of trace export: the OpenTelemetry Collector's
// OTLP receiver, serving OTLP/HTTP and OTLP/gRPC, whose consumer keeps
// every span it receives in a flat, comparable form ([Span]).
//
// It is for tests only: nothing outside _test.go files imports it, so the
// Collector is never linked into cmd/tritonserver.
package otlptest
