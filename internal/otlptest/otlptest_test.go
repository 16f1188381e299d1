package otlptest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestReceiver sends one span over each protocol with the OpenTelemetry
// SDK's OTLP exporters and finds it, whole, in what the receiver kept.
func TestReceiver(t *testing.T) {
	r := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, proto := range []string{"http", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			var (
				exp sdktrace.SpanExporter
				err error
			)
			if proto == "http" {
				exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(r.HTTPURL))
			} else {
				exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL("http://"+r.GRPCAddr))
			}
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "otlptest-"+proto))))
			start := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
			_, span := tp.Tracer("otlptest").Start(ctx, "span-"+proto, trace.WithTimestamp(start),
				trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.Int64("n", 7)))
			span.AddEvent("EVENT", trace.WithTimestamp(start.Add(time.Millisecond)))
			span.End(trace.WithTimestamp(start.Add(2 * time.Millisecond)))
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			spans, err := r.WaitSpans(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			got := Find(spans, "span-"+proto)
			if len(got) != 1 {
				t.Fatalf("spans named span-%s: %d, want 1 (all: %+v)", proto, len(got), spans)
			}
			s := got[0]
			if s.Kind != "Server" || !s.Start.Equal(start) || !s.End.Equal(start.Add(2*time.Millisecond)) ||
				s.Attributes["n"] != int64(7) || s.Resource["service.name"] != "otlptest-"+proto || s.Scope != "otlptest" ||
				len(s.Events) != 1 || s.Events[0].Name != "EVENT" || !s.Events[0].Time.Equal(start.Add(time.Millisecond)) ||
				s.ParentID != "" || len(s.TraceID) != 32 || len(s.SpanID) != 16 {
				t.Errorf("span = %+v", s)
			}
		})
	}
	if n := r.Batches(); n != 2 {
		t.Errorf("Batches = %d, want 2", n)
	}
}
