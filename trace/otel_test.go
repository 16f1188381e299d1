package trace

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton/internal/otlptest"
	"github.com/triton-go/triton/settings"
)

// otelT0 is when the hand-built requests of these tests start.
var otelT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// otelAt is otelT0 plus ms milliseconds.
func otelAt(ms int) time.Time { return otelT0.Add(time.Duration(ms) * time.Millisecond) }

// otelStamps builds stamps at the given milliseconds after otelT0.
func otelStamps(pairs ...any) []Stamp {
	var out []Stamp
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Stamp{Activity: pairs[i].(Activity), At: otelAt(pairs[i+1].(int))})
	}
	return out
}

// ensembleRecord is an HTTP request to an ensemble whose one step ran
// model "step", continuing the remote span remote.
func ensembleRecord(remote oteltrace.SpanContext) *Record {
	return &Record{
		ID: 41, Model: "ens", Version: 3, RequestID: "req-7", Remote: remote,
		Stamps: otelStamps(
			HTTPRecvStart, 0, HTTPRecvEnd, 1,
			RequestStart, 2, QueueStart, 3,
			RequestEnd, 20,
			InferResponseComplete, 21, HTTPSendStart, 22, HTTPSendEnd, 23),
		Children: []*Record{{
			ID: 42, Parent: 41, Model: "step", Version: 1, Remote: remote,
			Stamps: otelStamps(
				RequestStart, 4, QueueStart, 5,
				ComputeStart, 6, ComputeInputEnd, 7, ComputeOutputStart, 15, ComputeEnd, 16,
				RequestEnd, 18),
		}},
	}
}

// remoteParent is a W3C parent as a traceparent header carries it, not
// sampled (the Tracer has decided to trace; the SDK must not drop it).
func remoteParent(t *testing.T) oteltrace.SpanContext {
	t.Helper()
	tid, err := oteltrace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := oteltrace.SpanIDFromHex("00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	return oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true})
}

// newTestExporter returns an exporter of cfg whose batches wait an hour:
// nothing leaves before close, which must flush it all.
func newTestExporter(t *testing.T, cfg Config, logger *zap.Logger) *otelExporter {
	t.Helper()
	cfg.Mode = ModeOpenTelemetry
	if cfg.BSPScheduleDelay == 0 {
		cfg.BSPScheduleDelay = time.Hour
	}
	exp, err := newOTelExporter(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	return exp.(*otelExporter)
}

// TestOTelExportEnsemble exports an ensemble's trace over each protocol to
// a real OTLP receiver and checks every span as Triton shapes them: names,
// parentage (remote → InferRequest → model → compute; the step's model
// span under the ensemble's), Triton's attributes, the event names in
// order, the record's times, kind server, scope triton-server, the
// resource; and that close flushes what the batch processor held.
func TestOTelExportEnsemble(t *testing.T) {
	rcv := otlptest.Start(t)
	for _, tc := range []struct {
		proto, url string
		resource   []attribute.KeyValue
		service    string
	}{
		{ProtocolHTTP, rcv.HTTPURL, []attribute.KeyValue{attribute.String("test.key", "test.value")}, "triton-inference-server"},
		// Without a scheme, as Triton's QA passes it; service.name overridden.
		{ProtocolGRPC, rcv.GRPCAddr, []attribute.KeyValue{attribute.String("service.name", "test_triton"), attribute.String("test.key", "test.value")}, "test_triton"},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			before := len(rcv.Spans())
			remote := remoteParent(t)
			e := newTestExporter(t, Config{URL: tc.url, Protocol: tc.proto, Resource: tc.resource}, nil)
			e.export(ensembleRecord(remote))
			if n := len(rcv.Spans()) - before; n != 0 {
				t.Fatalf("%d spans exported before close with an hour's schedule delay", n)
			}
			if err := e.close(); err != nil {
				t.Fatal(err)
			}
			spans := rcv.Spans()[before:] // close returned: the receiver has them all
			if len(spans) != 4 {
				t.Fatalf("%d spans, want 4: %+v", len(spans), spans)
			}
			one := func(name string, parent string) otlptest.Span {
				t.Helper()
				var found []otlptest.Span
				for _, s := range otlptest.Find(spans, name) {
					if parent == "" || s.ParentID == parent {
						found = append(found, s)
					}
				}
				if len(found) != 1 {
					t.Fatalf("spans %q under %q: %d, want 1 (all: %+v)", name, parent, len(found), spans)
				}
				return found[0]
			}
			root := one("InferRequest", remote.SpanID().String())
			ens := one("ens", root.SpanID)
			step := one("step", ens.SpanID)
			stepCompute := one("compute", step.SpanID) // the ensemble has no compute of its own
			for _, s := range spans {
				if s.TraceID != remote.TraceID().String() {
					t.Errorf("span %s: trace id %s, want the remote parent's %s", s.Name, s.TraceID, remote.TraceID())
				}
				if s.Kind != "Server" || s.Scope != "triton-server" {
					t.Errorf("span %s: kind %s scope %s, want Server, triton-server", s.Name, s.Kind, s.Scope)
				}
				if s.Resource["service.name"] != tc.service || s.Resource["test.key"] != "test.value" {
					t.Errorf("span %s: resource %v, want service.name=%s test.key=test.value", s.Name, s.Resource, tc.service)
				}
			}
			checkSpan(t, root, 0, 23, nil,
				"HTTP_RECV_START", "HTTP_RECV_END", "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END")
			checkSpan(t, ens, 2, 20, map[string]any{
				"triton.model_name": "ens", "triton.model_version": int64(3), "triton.trace_id": int64(41),
				"triton.trace_parent_id": int64(0), "triton.request_id": "req-7",
			}, "REQUEST_START", "QUEUE_START", "REQUEST_END")
			checkSpan(t, step, 4, 18, map[string]any{
				"triton.model_name": "step", "triton.model_version": int64(1), "triton.trace_id": int64(42),
				"triton.trace_parent_id": int64(41),
			}, "REQUEST_START", "QUEUE_START", "REQUEST_END")
			checkSpan(t, stepCompute, 6, 16, map[string]any{},
				"COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END")
			if got := step.Events[1].Time; !got.Equal(otelAt(5)) {
				t.Errorf("step's QUEUE_START at %v, want %v", got, otelAt(5))
			}
		})
	}
}

// checkSpan checks a span's extent (ms after otelT0), its attributes (all of
// them, when attrs is not nil) and its event names.
func checkSpan(t *testing.T, s otlptest.Span, startMS, endMS int, attrs map[string]any, events ...string) {
	t.Helper()
	if !s.Start.Equal(otelAt(startMS)) || !s.End.Equal(otelAt(endMS)) {
		t.Errorf("span %s: %v..%v, want %v..%v", s.Name, s.Start, s.End, otelAt(startMS), otelAt(endMS))
	}
	if attrs != nil && !mapsEqual(s.Attributes, attrs) {
		t.Errorf("span %s: attributes %v, want %v", s.Name, s.Attributes, attrs)
	}
	if got := s.EventNames(); !slices.Equal(got, events) {
		t.Errorf("span %s: events %v, want %v", s.Name, got, events)
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestOTelExportShapes checks the trees that are not an ensemble: a plain
// in-process request without a remote parent (a fresh trace, a root with
// no events), a request without compute stamps (no compute span), a BLS
// call's child (under the caller's model span, its root parent id kept),
// and a trace with no stamps at all (level TENSORS: nothing to export).
func TestOTelExportShapes(t *testing.T) {
	rcv := otlptest.Start(t)
	e := newTestExporter(t, Config{URL: rcv.HTTPURL}, nil)
	e.export(&Record{ID: 1, Model: "plain", Version: 1, Stamps: otelStamps(
		RequestStart, 0, QueueStart, 1, ComputeStart, 2, ComputeInputEnd, 3, ComputeOutputStart, 4, ComputeEnd, 5, RequestEnd, 6)})
	e.export(&Record{ID: 2, Model: "failed", Version: 1, Stamps: otelStamps(RequestStart, 10, RequestEnd, 11)})
	e.export(&Record{ID: 3, Model: "bls", Version: 1, Stamps: otelStamps(RequestStart, 20, ComputeStart, 21, ComputeEnd, 30, RequestEnd, 31),
		Children: []*Record{{ID: 4, Parent: 3, Model: "callee", Version: 2, Stamps: otelStamps(RequestStart, 22, QueueStart, 23, RequestEnd, 28)}}})
	e.export(&Record{ID: 5, Model: "tensors", Version: 1})
	if err := e.close(); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	want := []string{"InferRequest", "InferRequest", "InferRequest", "bls", "callee", "compute", "compute", "failed", "plain"}
	if !slices.Equal(names, want) {
		t.Fatalf("span names %v, want %v", names, want)
	}
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	plain, failed, bls, callee := byName["plain"], byName["failed"], byName["bls"], byName["callee"]
	for _, s := range []otlptest.Span{plain, failed, bls} {
		var root *otlptest.Span
		for _, r := range otlptest.Find(spans, "InferRequest") {
			if r.SpanID == s.ParentID {
				root = &r
			}
		}
		if root == nil {
			t.Fatalf("span %s: no InferRequest parent", s.Name)
		}
		if root.ParentID != "" || len(root.Events) != 0 || root.TraceID != s.TraceID {
			t.Errorf("root of %s = %+v, want no parent, no events, the same trace", s.Name, *root)
		}
	}
	if plain.TraceID == failed.TraceID {
		t.Error("two requests share a trace id")
	}
	if callee.ParentID != bls.SpanID || callee.Attributes["triton.trace_parent_id"] != int64(3) {
		t.Errorf("callee = %+v, want under bls's span with parent id 3", callee)
	}
	checkSpan(t, failed, 10, 11, nil, "REQUEST_START", "REQUEST_END")
	for _, c := range otlptest.Find(spans, "compute") {
		if c.ParentID != plain.SpanID && c.ParentID != bls.SpanID {
			t.Errorf("compute span under %s, want plain's or bls's", c.ParentID)
		}
	}
}

// TestOTelExportFailure exports to an HTTP server that refuses every
// export: the first failure is logged once until an export works again,
// and close reports the failure of its last flush, naming the endpoint.
func TestOTelExportFailure(t *testing.T) {
	var refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		http.Error(w, "no", http.StatusBadRequest) // not retryable
	}))
	defer srv.Close()
	core, logs := observer.New(zapcore.InfoLevel)
	e := newTestExporter(t, Config{URL: srv.URL + "/v1/traces"}, zap.New(core))
	rec := &Record{ID: 1, Model: "m", Stamps: otelStamps(RequestStart, 0, RequestEnd, 1)}
	for range 2 {
		e.export(rec)
		if err := e.tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err) // the sink logs, and keeps the error for close
		}
	}
	e.export(rec)
	err := e.close()
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/v1/traces") {
		t.Fatalf("close = %v, want the failed flush to %s/v1/traces", err, srv.URL)
	}
	if n := refused.Load(); n != 3 {
		t.Errorf("%d exports reached the server, want 3", n)
	}
	warns := logs.FilterMessageSnippet("exporting spans over OTLP failed").All()
	if len(warns) != 1 {
		t.Errorf("%d warnings, want 1: %v", len(warns), logs.All())
	}
}

// TestOTelBSPSettings checks where the batch span processor's settings
// come from (Config, else the environment, else Triton's defaults) and
// Triton's messages for bad environment values.
func TestOTelBSPSettings(t *testing.T) {
	for _, tc := range []struct {
		name         string
		env          map[string]string
		cfg          Config
		queue, batch int
		delay        time.Duration
		err          string
	}{
		{name: "defaults", queue: 2048, batch: 512, delay: 5 * time.Second},
		{name: "environment", env: map[string]string{envBSPMaxQueueSize: "100", envBSPScheduleDelay: "250", envBSPMaxExportBatchSize: "10"},
			queue: 100, batch: 10, delay: 250 * time.Millisecond},
		{name: "config wins", env: map[string]string{envBSPMaxQueueSize: "100", envBSPScheduleDelay: "x", envBSPMaxExportBatchSize: "10"},
			cfg: Config{BSPMaxQueueSize: 7, BSPScheduleDelay: time.Second, BSPMaxExportBatchSize: 3}, queue: 7, batch: 3, delay: time.Second},
		{name: "not a number", env: map[string]string{envBSPMaxQueueSize: "abc"},
			err: "Bad option: \"OTEL_BSP_MAX_QUEUE_SIZE\".\nInvalid option value. Got abc"},
		{name: "negative", env: map[string]string{envBSPScheduleDelay: "-1"},
			err: "Bad option: \"OTEL_BSP_SCHEDULE_DELAY\".\nProvided option value is out of bound. Got -1"},
		{name: "past 32 bits", env: map[string]string{envBSPMaxExportBatchSize: "4294967296"},
			err: "Bad option: \"OTEL_BSP_MAX_EXPORT_BATCH_SIZE\".\nProvided option value is out of bound. Got 4294967296"},
		{name: "set but empty", env: map[string]string{envBSPMaxQueueSize: ""},
			err: "Bad option: \"OTEL_BSP_MAX_QUEUE_SIZE\".\nInvalid option value. Got "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{envBSPMaxQueueSize, envBSPScheduleDelay, envBSPMaxExportBatchSize} {
				if v, ok := tc.env[k]; ok {
					t.Setenv(k, v)
				} else {
					unsetenv(t, k)
				}
			}
			queue, delay, batch, err := bspSettings(tc.cfg)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %q, want %q", err, tc.err)
				}
				// newOTelExporter refuses the same way.
				if _, err := newOTelExporter(Config{Mode: ModeOpenTelemetry}, nil); err == nil || err.Error() != tc.err {
					t.Errorf("newOTelExporter: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || queue != tc.queue || batch != tc.batch || delay != tc.delay {
				t.Errorf("= %d, %v, %d, %v; want %d, %v, %d", queue, delay, batch, err, tc.queue, tc.delay, tc.batch)
			}
		})
	}
}

// unsetenv removes k for the test, restoring it after.
func unsetenv(t *testing.T, k string) {
	t.Setenv(k, "") // registers the restore
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

// TestOTelURL checks the endpoints Config.URL and Config.Protocol give.
func TestOTelURL(t *testing.T) {
	for _, tc := range []struct{ url, proto, want, err string }{
		{"", "", "http://localhost:4318/v1/traces", ""},
		{"", "http/protobuf", "http://localhost:4318/v1/traces", ""},
		{"", "grpc", "http://localhost:4317", ""},
		{"", "GRPC", "http://localhost:4317", ""},
		{"localhost:4318/v1/traces", "", "http://localhost:4318/v1/traces", ""},
		{"https://collector.example:443/otlp/v1/traces", "", "https://collector.example:443/otlp/v1/traces", ""},
		{"collector:4317", "grpc", "http://collector:4317", ""},
		{"ftp://collector/v1/traces", "", "", `trace: OpenTelemetry url "ftp://collector/v1/traces": want http[s]://<host>[:<port>][/<path>]`},
		{"http://", "", "", `trace: OpenTelemetry url "http://": want http[s]://<host>[:<port>][/<path>]`},
		{"", "zipkin", "", `trace: unknown OTLP protocol "zipkin": want "http/protobuf" or "grpc"`},
	} {
		got, err := otlpURL(tc.url, tc.proto)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("otlpURL(%q, %q) error %v, want %q", tc.url, tc.proto, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("otlpURL(%q, %q) = %q, %v; want %q", tc.url, tc.proto, got, err, tc.want)
		}
	}
}

// TestOTelTracer runs mode opentelemetry end to end through the Tracer:
// a request whose headers carry a W3C traceparent is traced whatever the
// rate (Triton's forced sampling) and continues that trace; an in-process
// request continues the span of its context (a Go service embedding the
// server); Close flushes both.
func TestOTelTracer(t *testing.T) {
	rcv := otlptest.Start(t)
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1000, Count: -1})
	tr, err := New(store, Config{Mode: ModeOpenTelemetry, URL: rcv.HTTPURL, BSPScheduleDelay: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := store.Trace("").Mode; got != ModeOpenTelemetry {
		t.Errorf("trace_mode %q, want opentelemetry", got)
	}
	run := func(x *Trace, model string) {
		t.Helper()
		if x == nil {
			t.Fatalf("request to %s not traced", model)
		}
		x.Bind(model, 1, "")
		for i, a := range []Activity{RequestStart, QueueStart, ComputeStart, ComputeInputEnd, ComputeOutputStart, ComputeEnd, RequestEnd} {
			x.Stamp(a, otelAt(i))
		}
		x.End()
	}
	carrier := propagation.HeaderCarrier(http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
	run(tr.Start(context.Background(), "remote", carrier), "remote")
	if x := tr.Start(context.Background(), "unsampled", nil); x != nil {
		t.Error("the first request without a parent was traced at rate 1000")
	}

	// The caller's own span, from its own SDK provider.
	callerTP := sdktrace.NewTracerProvider()
	ctx, caller := callerTP.Tracer("service").Start(context.Background(), "handler")
	run(tr.Start(ctx, "inproc", nil), "inproc")
	caller.End()
	if err := callerTP.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 6 {
		t.Fatalf("%d spans, want 6 (root, model, compute for two requests): %+v", len(spans), spans)
	}
	for _, tc := range []struct {
		model         string
		trace, parent string
	}{
		{"remote", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"},
		{"inproc", caller.SpanContext().TraceID().String(), caller.SpanContext().SpanID().String()},
	} {
		m := otlptest.Find(spans, tc.model)
		if len(m) != 1 {
			t.Fatalf("model spans %s: %d, want 1", tc.model, len(m))
		}
		var root *otlptest.Span
		for _, s := range otlptest.Find(spans, "InferRequest") {
			if s.SpanID == m[0].ParentID {
				root = &s
			}
		}
		if root == nil || root.TraceID != tc.trace || root.ParentID != tc.parent || m[0].TraceID != tc.trace {
			t.Errorf("request %s: root %+v, want trace %s under span %s", tc.model, root, tc.trace, tc.parent)
		}
	}
}

// TestOTelEndpointEnvironment: without a url, the SDK's endpoint variables
// choose the collector, as they do for Triton's exporter.
func TestOTelEndpointEnvironment(t *testing.T) {
	rcv := otlptest.Start(t)
	for _, tc := range []struct{ proto, env, value string }{
		{ProtocolHTTP, envTracesEndpoint, rcv.HTTPURL},
		{ProtocolGRPC, envEndpoint, "http://" + rcv.GRPCAddr},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			unsetenv(t, envEndpoint)
			unsetenv(t, envTracesEndpoint)
			t.Setenv(tc.env, tc.value)
			before := len(rcv.Spans())
			e := newTestExporter(t, Config{Protocol: tc.proto}, nil)
			e.export(&Record{ID: 1, Model: "env-" + tc.proto, Stamps: otelStamps(RequestStart, 0, RequestEnd, 1)})
			if err := e.close(); err != nil {
				t.Fatal(err)
			}
			if got := otlptest.Find(rcv.Spans()[before:], "env-"+tc.proto); len(got) != 1 {
				t.Errorf("spans of env-%s at %s=%s: %d, want 1", tc.proto, tc.env, tc.value, len(got))
			}
		})
	}
}

// TestOTelEventsInTimeOrder: events follow their times, not the order the
// stamps were taken in (the gRPC frontend's come after the server's, and
// compute's may come after REQUEST_END).
func TestOTelEventsInTimeOrder(t *testing.T) {
	rcv := otlptest.Start(t)
	e := newTestExporter(t, Config{URL: rcv.HTTPURL}, nil)
	e.export(&Record{ID: 1, Model: "g", Version: 1, Stamps: otelStamps(
		RequestStart, 2, QueueStart, 3, RequestEnd, 8, ComputeStart, 4, ComputeInputEnd, 5, ComputeOutputStart, 6, ComputeEnd, 7,
		InferResponseComplete, 9, GRPCWaitReadStart, 0, GRPCWaitReadEnd, 1, GRPCSendStart, 10, GRPCSendEnd, 11)})
	if err := e.close(); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	for name, want := range map[string][]string{
		"InferRequest": {"GRPC_WAITREAD_START", "GRPC_WAITREAD_END", "INFER_RESPONSE_COMPLETE", "GRPC_SEND_START", "GRPC_SEND_END"},
		"g":            {"REQUEST_START", "QUEUE_START", "REQUEST_END"},
		"compute":      {"COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END"},
	} {
		s := otlptest.Find(spans, name)
		if len(s) != 1 {
			t.Fatalf("spans %s: %d, want 1", name, len(s))
		}
		if got := s[0].EventNames(); !slices.Equal(got, want) {
			t.Errorf("span %s: events %v, want %v", name, got, want)
		}
	}
	root := otlptest.Find(spans, "InferRequest")[0]
	checkSpan(t, root, 0, 11, nil, root.EventNames()...)
}
