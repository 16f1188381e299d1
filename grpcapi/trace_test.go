package grpcapi_test

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/tracetest"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/trace"
)

// TestTraceGRPC: ModelInfer and ModelStreamInfer stamp the gRPC
// activities after the server's, as Triton writes them.
func TestTraceGRPC(t *testing.T) {
	store := settings.NewStore(nil)
	file := filepath.Join(t.TempDir(), "trace.json")
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, File: file})
	tr, err := trace.New(store, trace.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	f := newFixture(t, setup{server: []triton.Option{triton.WithTracer(tr)}})
	// A traceparent means nothing in mode triton: sampled by rate alone.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req := simpleRequest()
	req.Id = "g1"
	if _, err := f.client.ModelInfer(ctx, req); err != nil {
		t.Fatal(err)
	}
	stream, err := f.client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req = simpleRequest()
	req.Id = "g2"
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("end of stream: %v", err)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	traces := tracetest.Read(t, file)
	var ids []string
	names, ns := map[string][]string{}, map[string][]int64{}
	for _, x := range traces {
		ids = append(ids, x.RequestID)
		names[x.RequestID], ns[x.RequestID] = x.Names, x.Ns
	}
	want := []string{"model", "REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END",
		"INFER_RESPONSE_COMPLETE", "GRPC_WAITREAD_START", "GRPC_WAITREAD_END", "GRPC_SEND_START", "GRPC_SEND_END"}
	if !slices.Equal(ids, []string{"g1", "g2"}) {
		t.Fatalf("traced %v", ids)
	}
	for _, id := range ids {
		if !slices.Equal(names[id], want) {
			t.Errorf("%s: %v\nwant %v", id, names[id], want)
		}
		n := ns[id]
		// Read before the request started; sent after it ended.
		if n[8] > n[9] || n[9] > n[0] || n[10] < n[6] || n[11] < n[10] {
			t.Errorf("%s: times %v", id, n)
		}
	}
}

// TestTraceSettingReportsTracer: TraceSetting's trace_count is what the
// tracer has left, and in mode opentelemetry the tracer's own settings
// replace trace_file and log_frequency.
func TestTraceSettingReportsTracer(t *testing.T) {
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: 2, File: filepath.Join(t.TempDir(), "trace.json")})
	tr, err := trace.New(store, trace.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	f := newFixture(t, setup{server: []triton.Option{triton.WithTracer(tr)}, svc: []grpcapi.Option{grpcapi.WithSettings(store)}})
	ctx := t.Context()
	if _, err := f.client.ModelInfer(ctx, simpleRequest()); err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.TraceSetting(ctx, &inferencepb.TraceSettingRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetSettings()["trace_count"].GetValue(); !slices.Equal(got, []string{"1"}) {
		t.Errorf("trace_count %v after one traced request of two, want [1]", got)
	}

	otel := settings.NewStore(nil)
	otel.SetTraceOptions([]settings.TraceOption{{Key: "url", Values: []string{"localhost:4318/v1/traces"}}, {Key: "resource", Values: []string{"a=1", "b=2"}}})
	otel.SetTraceMode(settings.ModeOpenTelemetry)
	g := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithSettings(otel)}})
	resp, err = g.client.TraceSetting(ctx, &inferencepb.TraceSettingRequest{})
	if err != nil {
		t.Fatal(err)
	}
	s := resp.GetSettings()
	if _, ok := s["trace_file"]; ok || !slices.Equal(s["resource"].GetValue(), []string{"a=1", "b=2"}) ||
		!slices.Equal(s["url"].GetValue(), []string{"localhost:4318/v1/traces"}) || !slices.Equal(s["trace_mode"].GetValue(), []string{"opentelemetry"}) {
		t.Errorf("opentelemetry settings %v", s)
	}
}
