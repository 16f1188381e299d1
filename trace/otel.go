package trace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// The OpenTelemetry names Triton uses.
const (
	otelTracerName  = "triton-server"           // the instrumentation scope
	otelServiceName = "triton-inference-server" // service.name, before Config.Resource
	otelRootSpan    = "InferRequest"
	otelComputeSpan = "compute"
)

// The OTLP protocols of Config.Protocol, and their default endpoints.
const (
	ProtocolHTTP = "http/protobuf" // Triton's, the default
	ProtocolGRPC = "grpc"          // beyond Triton

	defaultHTTPURL = "http://localhost:4318/v1/traces"
	defaultGRPCURL = "http://localhost:4317"

	// The SDK's endpoint variables, which apply when Config.URL is "".
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// The batch span processor's defaults, and the environment variables
// that change them, as Triton reads them.
const (
	envBSPMaxQueueSize       = "OTEL_BSP_MAX_QUEUE_SIZE"
	envBSPScheduleDelay      = "OTEL_BSP_SCHEDULE_DELAY"
	envBSPMaxExportBatchSize = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"

	defaultBSPMaxQueueSize       = 2048
	defaultBSPScheduleDelayMS    = 5000
	defaultBSPMaxExportBatchSize = 512
)

// closeTimeout bounds the last flush of [otelExporter.close]: an
// unreachable collector must not hold the server's shutdown for the
// exporter's minute of retries.
const closeTimeout = 15 * time.Second

// otelExporter is the exporter of mode opentelemetry: each finished
// Record tree becomes spans with the record's own timestamps, batched by
// the SDK's batch span processor and exported over OTLP.
type otelExporter struct {
	tp     *sdktrace.TracerProvider
	tracer oteltrace.Tracer
	sink   *otlpSink
	log    *zap.Logger

	tensorsOnce sync.Once // logs once that level TENSORS has no spans
}

var _ exporter = (*otelExporter)(nil)

// newOTelExporter returns the exporter of mode opentelemetry (called by
// New when cfg.Mode is "opentelemetry"): an OpenTelemetry SDK
// TracerProvider with a batch span processor tuned by cfg.BSP* (0: the
// OTEL_BSP_* environment variables, else Triton's defaults), the resource
// service.name=triton-inference-server plus cfg.Resource, exporting over
// OTLP/HTTP to cfg.URL (default http://localhost:4318/v1/traces) or, with
// cfg.Protocol "grpc", over OTLP/gRPC (default http://localhost:4317).
// The exporters also honour the SDK's OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, certificates, compression, and the endpoint when
// cfg.URL is "", as Triton's exporter does); cfg.URL wins over their
// endpoint. Bad environment values are refused with Triton's messages
// (`Bad option: "OTEL_BSP_MAX_QUEUE_SIZE".` and the reason).
func newOTelExporter(cfg Config, logger *zap.Logger) (exporter, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	queue, delay, batch, err := bspSettings(cfg)
	if err != nil {
		return nil, err
	}
	endpoint, err := otlpURL(cfg.URL, cfg.Protocol)
	if err != nil {
		return nil, err
	}
	// Without a url, the OTLP endpoint variables apply, as they do to
	// Triton's exporter; the SDK reads them.
	env := cfg.URL == "" && (os.Getenv(envEndpoint) != "" || os.Getenv(envTracesEndpoint) != "")
	if env {
		endpoint = "the endpoint of " + envTracesEndpoint + " or " + envEndpoint
	}
	ctx := context.Background()
	var exp sdktrace.SpanExporter
	switch strings.ToLower(cfg.Protocol) {
	case "", ProtocolHTTP:
		var opts []otlptracehttp.Option
		if !env {
			opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if !env {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("trace: OTLP exporter for %s: %w", endpoint, err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", otelServiceName)}, cfg.Resource...)...))
	if err != nil {
		return nil, fmt.Errorf("trace: OpenTelemetry resource: %w", err)
	}
	sink := &otlpSink{SpanExporter: exp, endpoint: endpoint, log: logger}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(sink,
			sdktrace.WithMaxQueueSize(queue),
			sdktrace.WithBatchTimeout(delay),
			sdktrace.WithMaxExportBatchSize(batch)),
		sdktrace.WithResource(res),
		// The Tracer has sampled already (rate, count, or a remote
		// parent): every trace it exports is recorded, whatever the
		// parent's sampled flag says, as Triton's always-on sampler does.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	return &otelExporter{tp: tp, tracer: tp.Tracer(otelTracerName), sink: sink, log: logger}, nil
}

// bspSettings returns the batch span processor's settings: cfg's, else
// the environment's, else Triton's defaults.
func bspSettings(cfg Config) (queue int, delay time.Duration, batch int, err error) {
	queue, batch, delay = cfg.BSPMaxQueueSize, cfg.BSPMaxExportBatchSize, cfg.BSPScheduleDelay
	if queue <= 0 {
		if queue, err = envUint32(envBSPMaxQueueSize, defaultBSPMaxQueueSize); err != nil {
			return
		}
	}
	if delay <= 0 {
		var ms int
		if ms, err = envUint32(envBSPScheduleDelay, defaultBSPScheduleDelayMS); err != nil {
			return
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	if batch <= 0 {
		if batch, err = envUint32(envBSPMaxExportBatchSize, defaultBSPMaxExportBatchSize); err != nil {
			return
		}
	}
	return
}

// envUint32 reads an unsigned 32-bit environment variable, def when
// unset, with Triton's messages for a bad value (Triton takes "-1" as
// 4294967295 and wraps values past 32 bits; both are refused here).
func envUint32(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
	switch {
	case errors.Is(err, strconv.ErrRange) || (err != nil && strings.HasPrefix(strings.TrimSpace(v), "-")):
		err = fmt.Errorf("Provided option value is out of bound. Got %s", v)
	case err != nil:
		err = fmt.Errorf("Invalid option value. Got %s", v)
	}
	if err != nil {
		return 0, fmt.Errorf("Bad option: \"%s\".\n%w", name, err)
	}
	return int(min(n, math.MaxInt32)), nil
}

// otlpURL checks the endpoint of Config.URL, a full URL as Triton takes
// it ("http://host:4318/v1/traces"; without a scheme, http:// is meant:
// "localhost:4318/v1/traces"), or the protocol's default.
func otlpURL(raw, protocol string) (string, error) {
	p := strings.ToLower(protocol)
	if p != "" && p != ProtocolHTTP && p != ProtocolGRPC {
		return "", fmt.Errorf("trace: unknown OTLP protocol %q: want %q or %q", protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if raw == "" {
		if p == ProtocolGRPC {
			return defaultGRPCURL, nil
		}
		return defaultHTTPURL, nil
	}
	full := raw
	if !strings.Contains(raw, "://") {
		full = "http://" + raw
	}
	u, err := url.Parse(full)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("trace: OpenTelemetry url %q: want http[s]://<host>[:<port>][/<path>]", raw)
	}
	return u.String(), nil
}

// export turns one finished trace tree into spans, as Triton shapes them
// (spec/trace.md §6): a root "InferRequest" span whose events are the
// frontend's stamps, its parent the remote span the request continues; a
// span named after the model from REQUEST_START to REQUEST_END with
// Triton's triton.* attributes; under it a "compute" span from
// COMPUTE_START to COMPUTE_END; and the children's model spans (ensemble
// steps, BLS calls) under their parent's model span. Every span is of
// kind server and carries the record's own times. It only queues the
// spans: the batch span processor exports them.
func (e *otelExporter) export(r *Record) {
	start, end, ok := treeBounds(r)
	if !ok {
		return // no stamps (level TENSORS alone): nothing to place in time
	}
	if hasTensors(r) {
		e.tensorsOnce.Do(func() {
			e.log.Warn("Tensor level tracing is not supported by the mode: OPENTELEMETRY")
		})
	}
	ctx := context.Background()
	if r.Remote.IsValid() {
		ctx = oteltrace.ContextWithRemoteSpanContext(ctx, r.Remote)
	}
	ctx, root := e.tracer.Start(ctx, otelRootSpan, oteltrace.WithTimestamp(start), oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	var frontend []Stamp
	for _, s := range r.Stamps {
		if s.Activity.Frontend() {
			frontend = append(frontend, s)
		}
	}
	addEvents(root, frontend)
	e.modelSpan(ctx, r, start)
	root.End(oteltrace.WithTimestamp(end))
}

// modelSpan starts and ends the span of r's model under the span in ctx,
// with r's compute span and its children's model spans under it. at is
// when the parent span started: the time of a record with no stamps of
// its own.
func (e *otelExporter) modelSpan(ctx context.Context, r *Record, at time.Time) {
	start, end, ok := recordBounds(r)
	if !ok {
		start, end = at, at
	}
	if s, ok := stampOf(r, RequestStart); ok {
		start = s
	}
	if s, ok := stampOf(r, RequestEnd); ok {
		end = s
	}
	attrs := []attribute.KeyValue{
		attribute.String("triton.model_name", r.Model),
		attribute.Int64("triton.model_version", r.Version),
		attribute.Int64("triton.trace_id", int64(r.ID)),
		attribute.Int64("triton.trace_parent_id", int64(r.Parent)),
	}
	if r.RequestID != "" {
		attrs = append(attrs, attribute.String("triton.request_id", r.RequestID))
	}
	ctx, span := e.tracer.Start(ctx, r.Model, oteltrace.WithTimestamp(start),
		oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(attrs...))
	var own, compute []Stamp
	for _, s := range r.Stamps {
		switch {
		case isCompute(s.Activity):
			compute = append(compute, s)
		case !s.Activity.Frontend() || r.Parent != 0:
			own = append(own, s)
		}
	}
	addEvents(span, own)
	if len(compute) > 0 {
		cstart, cend := compute[0].At, compute[len(compute)-1].At
		if s, ok := stampOf(r, ComputeStart); ok {
			cstart = s
		}
		if s, ok := stampOf(r, ComputeEnd); ok {
			cend = s
		}
		_, cs := e.tracer.Start(ctx, otelComputeSpan, oteltrace.WithTimestamp(cstart), oteltrace.WithSpanKind(oteltrace.SpanKindServer))
		addEvents(cs, compute)
		cs.End(oteltrace.WithTimestamp(cend))
	}
	for _, c := range r.Children {
		e.modelSpan(ctx, c, start)
	}
	span.End(oteltrace.WithTimestamp(end))
}

// close exports what the batch span processor holds and shuts the
// provider down, within closeTimeout. It reports an export that failed
// during this last flush.
func (e *otelExporter) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	e.sink.takeErr()
	err := e.tp.ForceFlush(ctx)
	err = errors.Join(err, e.tp.Shutdown(ctx))
	if ferr := e.sink.takeErr(); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if err != nil {
		return fmt.Errorf("trace: flushing spans to %s: %w", e.sink.endpoint, err)
	}
	return nil
}

// addEvents adds stamps to span as events, in the order of their times
// (the gRPC frontend's stamps, for one, are recorded after the server's,
// as Triton records them), ties in the order taken.
func addEvents(span oteltrace.Span, stamps []Stamp) {
	slices.SortStableFunc(stamps, func(a, b Stamp) int { return a.At.Compare(b.At) })
	for _, s := range stamps {
		span.AddEvent(s.Activity.String(), oteltrace.WithTimestamp(s.At))
	}
}

func isCompute(a Activity) bool { return a >= ComputeStart && a <= ComputeEnd }

// stampOf returns the time of r's first stamp of activity a.
func stampOf(r *Record, a Activity) (time.Time, bool) {
	for _, s := range r.Stamps {
		if s.Activity == a {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// recordBounds returns the earliest and latest of r's own stamps.
func recordBounds(r *Record) (start, end time.Time, ok bool) {
	for _, s := range r.Stamps {
		if !ok || s.At.Before(start) {
			start = s.At
		}
		if !ok || s.At.After(end) {
			end = s.At
		}
		ok = true
	}
	return start, end, ok
}

// treeBounds returns the earliest and latest stamps of r and its
// descendants: the root span's extent.
func treeBounds(r *Record) (start, end time.Time, ok bool) {
	start, end, ok = recordBounds(r)
	for _, c := range r.Children {
		cs, ce, cok := treeBounds(c)
		if !cok {
			continue
		}
		if !ok || cs.Before(start) {
			start = cs
		}
		if !ok || ce.After(end) {
			end = ce
		}
		ok = true
	}
	return start, end, ok
}

func hasTensors(r *Record) bool {
	if len(r.Tensors) > 0 {
		return true
	}
	for _, c := range r.Children {
		if hasTensors(c) {
			return true
		}
	}
	return false
}

// otlpSink is the OTLP exporter as the batch span processor sees it: a
// failed export is logged (once, until one succeeds again) to the
// server's logger rather than to OpenTelemetry's global error handler,
// and kept for close to report.
type otlpSink struct {
	sdktrace.SpanExporter
	endpoint string
	log      *zap.Logger

	mu      sync.Mutex
	failing bool
	err     error // the last failure since takeErr
}

func (s *otlpSink) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := s.SpanExporter.ExportSpans(ctx, spans)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && !s.failing:
		s.log.Warn("trace: exporting spans over OTLP failed; they are dropped (logged once until an export succeeds)",
			zap.String("endpoint", s.endpoint), zap.Int("spans", len(spans)), zap.Error(err))
	case err == nil && s.failing:
		s.log.Info("trace: exporting spans over OTLP works again", zap.String("endpoint", s.endpoint))
	}
	s.failing = err != nil
	if err != nil {
		s.err = err
	}
	return nil
}

// takeErr returns the last failed export since the previous call.
func (s *otlpSink) takeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	s.err = nil
	return err
}
