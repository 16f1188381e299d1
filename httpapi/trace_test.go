package httpapi_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/tracetest"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/trace"
)

// TestTraceHTTP: the HTTP frontend's stamps around the server's, in
// Triton's order (HTTP_RECV_* first, the model record before
// REQUEST_START), for a request that runs and for one the server refuses;
// a request to an unknown model is not traced.
func TestTraceHTTP(t *testing.T) {
	store := settings.NewStore(nil)
	file := filepath.Join(t.TempDir(), "trace.json")
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, File: file})
	tr, err := trace.New(store, trace.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	srv := newServer(t, repo(), triton.WithTracer(tr))
	h := httpapi.NewHandler(srv, httpapi.WithSettings(store))
	ok := serve(h, req{path: "/v2/models/simple/infer", body: []byte(`{"id":"h1","inputs":[` +
		`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},` +
		`{"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}`)})
	wantStatus(t, ok, 200)
	bad := serve(h, req{path: "/v2/models/simple/infer", body: []byte(`{"id":"h2","inputs":[` +
		`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}]}`)})
	wantStatus(t, bad, 400)
	wantStatus(t, serve(h, req{path: "/v2/models/nosuch/infer", body: []byte(`{}`)}), 400)
	if md := serve(h, req{path: "/v2"}); !strings.Contains(md.Body.String(), `"statistics","trace","logging"`) {
		t.Errorf("server metadata without the trace extension: %s", md.Body.String())
	}
	// The trace settings endpoint now refuses what cannot sample.
	rec := serve(h, req{path: "/v2/trace/setting", body: []byte(`{"trace_rate":"0"}`)})
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "Attempting to set invalid trace setting :sample rate must be non-zero") {
		t.Errorf("rate 0: %d %s", rec.Code, rec.Body.String())
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	traces := tracetest.Read(t, file)
	if len(traces) != 2 {
		t.Fatalf("%d traces, want 2", len(traces))
	}
	want := []string{"HTTP_RECV_START", "HTTP_RECV_END", "model", "REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
		"COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END", "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END"}
	x := traces[0]
	if x.Model != "simple" || x.RequestID != "h1" || !slices.Equal(x.Names, want) {
		t.Errorf("h1: %s %s %v\nwant %v", x.Model, x.RequestID, x.Names, want)
	}
	if !slices.IsSorted(x.Ns) {
		t.Errorf("h1: stamps out of order %v", x.Ns)
	}
	wantBad := []string{"HTTP_RECV_START", "HTTP_RECV_END", "model", "REQUEST_START", "REQUEST_END", "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END"}
	if y := traces[1]; y.RequestID != "h2" || !slices.Equal(y.Names, wantBad) {
		t.Errorf("h2: %s %v\nwant %v", y.RequestID, y.Names, wantBad)
	}
}

// TestTraceSettingReportsTracer: trace_count counts down as the tracer
// samples (Triton reports what is left), and in mode opentelemetry the
// tracer's own settings stand in place of trace_file and log_frequency.
func TestTraceSettingReportsTracer(t *testing.T) {
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: 3, File: filepath.Join(t.TempDir(), "trace.json")})
	tr, err := trace.New(store, trace.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close(context.Background())
	srv := newServer(t, repo(), triton.WithTracer(tr))
	h := httpapi.NewHandler(srv, httpapi.WithSettings(store))
	infer := req{path: "/v2/models/simple/infer", body: []byte(`{"inputs":[` +
		`{"name":"INPUT0","datatype":"INT32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},` +
		`{"name":"INPUT1","datatype":"INT32","shape":[1,16],"data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}]}`)}
	for i, want := range []string{`"trace_count":"3"`, `"trace_count":"2"`, `"trace_count":"1"`, `"trace_count":"0"`, `"trace_count":"0"`} {
		rec := serve(h, req{method: "GET", path: "/v2/trace/setting"})
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("after %d requests: %s, want %s", i, rec.Body.String(), want)
		}
		wantStatus(t, serve(h, infer), 200)
	}
	// An update starts the count again.
	if rec := serve(h, req{path: "/v2/trace/setting", body: []byte(`{"trace_count":"5"}`)}); !strings.Contains(rec.Body.String(), `"trace_count":"5"`) {
		t.Errorf("update: %s", rec.Body.String())
	}

	otel := settings.NewStore(nil)
	otel.SetTraceOptions([]settings.TraceOption{{Key: "url", Values: []string{"localhost:4318/v1/traces"}}, {Key: "resource", Values: []string{"a=1", "b=2"}}})
	otel.SetTraceMode(settings.ModeOpenTelemetry)
	rec := serve(httpapi.NewHandler(srv, httpapi.WithSettings(otel)), req{method: "GET", path: "/v2/trace/setting"})
	const want = `{"trace_level":["OFF"],"trace_rate":"1000","trace_count":"-1","url":"localhost:4318/v1/traces","resource":["a=1","b=2"],"trace_mode":"opentelemetry"}`
	if rec.Body.String() != want {
		t.Errorf("opentelemetry settings %s\nwant %s", rec.Body.String(), want)
	}
}
