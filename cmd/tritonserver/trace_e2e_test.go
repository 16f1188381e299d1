package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/otlptest"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/internal/tracetest"
)

// reverseInfer is one request to text_reverse over HTTP.
func reverseInfer(t *testing.T, s *binaryServer, id string) {
	t.Helper()
	body := `{"id":"` + id + `","inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["abc"]}]}`
	if code, _, resp := s.do("POST", "/v2/models/text_reverse/infer", "application/json", []byte(body), nil); code != 200 || !strings.Contains(string(resp), `"cba"`) {
		t.Fatalf("infer: %d %s", code, resp)
	}
}

// TestTraceFileFlagEndToEnd serves text_reverse with --trace-config
// triton,file=... at rate 1 and checks, after a clean shutdown, that the
// trace file is one JSON array holding both requests' model records and
// Triton's timestamps in order; and that the trace settings report the
// file and mode the flags gave.
func TestTraceFileFlagEndToEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	s := startBinary(t, append(reverseOnly, "--trace-config", "triton,file="+path,
		"--trace-config=level=TIMESTAMPS", "--trace-config=rate=1")...)
	code, _, body := s.do("GET", "/v2/trace/setting", "", nil, nil)
	var got map[string]any
	if code != 200 || json.Unmarshal(body, &got) != nil || got["trace_file"] != path || got["trace_mode"] != "triton" ||
		got["trace_rate"] != "1" || !slices.Equal(asStrings(got["trace_level"]), []string{"TIMESTAMPS"}) {
		t.Errorf("GET /v2/trace/setting: %d %s; want trace_file %s, mode triton, rate 1, level TIMESTAMPS", code, body, path)
	}
	reverseInfer(t, s, "first")
	reverseInfer(t, s, "second")
	s.terminate(30 * time.Second)

	var ids []string
	for _, x := range tracetest.Read(t, path) {
		if x.Model != "text_reverse" || x.Version == nil || *x.Version != 1 {
			t.Errorf("trace %d: model %q version %v, want text_reverse version 1", x.ID, x.Model, x.Version)
		}
		if !slices.IsSorted(x.Ns) {
			t.Errorf("trace %d: stamps out of order %v", x.ID, x.Ns)
		}
		ids = append(ids, x.RequestID)
		for _, want := range []string{"REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_END", "REQUEST_END"} {
			if !slices.Contains(x.Names, want) {
				t.Errorf("trace %d (%s): records %v, no %s", x.ID, x.RequestID, x.Names, want)
			}
		}
		if i, j := slices.Index(x.Names, "REQUEST_START"), slices.Index(x.Names, "REQUEST_END"); i < 0 || j < i {
			t.Errorf("trace %d: REQUEST_END not after REQUEST_START in %v", x.ID, x.Names)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"first", "second"}) {
		t.Errorf("traced requests %v, want first and second", ids)
	}
}

func asStrings(v any) []string {
	vs, _ := v.([]any)
	var out []string
	for _, x := range vs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestTraceOpenTelemetryFlagEndToEnd serves text_reverse in mode
// opentelemetry at rate 1000, exporting over OTLP/HTTP and over OTLP/gRPC
// to a real OTLP receiver. One request carries a W3C traceparent (an HTTP
// header, or gRPC metadata): it is traced although it is not the 1000th
// (Triton's forced sampling) and continues that trace; the next one, with
// none, is not traced. The spans of the traced one: InferRequest (under
// the remote parent, the frontend's stamps as events) → text_reverse
// (Triton's attributes) → compute; the resource has service.name and the
// --trace-config resource; the shutdown flushed them (the schedule delay
// is an hour).
func TestTraceOpenTelemetryFlagEndToEnd(t *testing.T) {
	rcv := otlptest.Start(t)
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
		parent   = "00-" + traceID + "-" + parentID + "-01"
	)
	for _, tc := range []struct {
		name, url, protocol string
		rootEvents          []string
	}{
		{"http", rcv.HTTPURL, "http/protobuf", []string{"HTTP_RECV_START", "HTTP_RECV_END", "INFER_RESPONSE_COMPLETE", "HTTP_SEND_START", "HTTP_SEND_END"}},
		{"grpc", rcv.GRPCAddr, "grpc", []string{"GRPC_WAITREAD_START", "GRPC_WAITREAD_END", "INFER_RESPONSE_COMPLETE", "GRPC_SEND_START", "GRPC_SEND_END"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rcv.Spans())
			s := startBinary(t, append(reverseOnly, "--trace-config=mode=opentelemetry", "--trace-config=level=TIMESTAMPS",
				"--trace-config=opentelemetry,url="+tc.url, "--trace-config=opentelemetry,protocol="+tc.protocol,
				"--trace-config=opentelemetry,resource=test.key="+tc.name, "--trace-config=opentelemetry,bsp_schedule_delay=3600000")...)
			code, _, body := s.do("GET", "/v2/trace/setting", "", nil, nil)
			if code != 200 || !strings.Contains(string(body), `"trace_mode":"opentelemetry"`) ||
				!strings.Contains(string(body), `"url":"`+tc.url+`"`) || !strings.Contains(string(body), `"resource":"test.key=`+tc.name+`"`) ||
				!strings.Contains(string(body), `"bsp_schedule_delay":"3600000"`) || strings.Contains(string(body), "trace_file") {
				t.Errorf("GET /v2/trace/setting: %d %s; want trace_mode opentelemetry with its url, resource and bsp_schedule_delay, no trace_file", code, body)
			}
			// The request that carries a parent goes over the protocol the
			// spans are exported with, so that both frontends are seen.
			id := "otel-" + tc.name
			if tc.name == "http" {
				req := `{"id":"` + id + `","inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["abc"]}]}`
				if code, _, resp := s.do("POST", "/v2/models/text_reverse/infer", "application/json", []byte(req), map[string]string{"traceparent": parent}); code != 200 {
					t.Fatalf("infer: %d %s", code, resp)
				}
			} else {
				grpcReverse(t, s, id, metadata.Pairs("traceparent", parent))
			}
			reverseInfer(t, s, "no-parent")
			s.terminate(30 * time.Second)
			// The receiver answers an export once it holds the spans: the
			// binary has exited, so its shutdown flushed them here.
			spans := rcv.Spans()[before:]
			if len(spans) != 3 {
				t.Fatalf("%d spans, want 3: %+v", len(spans), spans)
			}
			root, model, compute := otlptest.Find(spans, "InferRequest"), otlptest.Find(spans, "text_reverse"), otlptest.Find(spans, "compute")
			if len(root) != 1 || len(model) != 1 || len(compute) != 1 {
				t.Fatalf("spans %+v, want one each of InferRequest, text_reverse, compute", spans)
			}
			if root[0].ParentID != parentID || model[0].ParentID != root[0].SpanID || compute[0].ParentID != model[0].SpanID {
				t.Errorf("parentage: root %s (parent %q, want %s), model under %s, compute under %s",
					root[0].SpanID, root[0].ParentID, parentID, model[0].ParentID, compute[0].ParentID)
			}
			for _, sp := range spans {
				if sp.TraceID != traceID {
					t.Errorf("span %s: trace %s, want the traceparent's %s", sp.Name, sp.TraceID, traceID)
				}
				if sp.Resource["service.name"] != "triton-inference-server" || sp.Resource["test.key"] != tc.name || sp.Scope != "triton-server" || sp.Kind != "Server" {
					t.Errorf("span %s: resource %v scope %s kind %s", sp.Name, sp.Resource, sp.Scope, sp.Kind)
				}
			}
			if got := root[0].EventNames(); !slices.Equal(got, tc.rootEvents) {
				t.Errorf("root span events %v, want %v", got, tc.rootEvents)
			}
			a := model[0].Attributes
			if a["triton.model_name"] != "text_reverse" || a["triton.model_version"] != int64(1) || a["triton.request_id"] != id ||
				a["triton.trace_parent_id"] != int64(0) {
				t.Errorf("model span attributes %v", a)
			}
			if got := model[0].EventNames(); !slices.Equal(got, []string{"REQUEST_START", "QUEUE_START", "REQUEST_END"}) {
				t.Errorf("model span events %v", got)
			}
			if got := compute[0].EventNames(); !slices.Equal(got, []string{"COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END"}) {
				t.Errorf("compute span events %v", got)
			}
		})
	}
}

// grpcReverse sends one request to text_reverse over gRPC with md.
func grpcReverse(t *testing.T, s *binaryServer, id string, md metadata.MD) {
	t.Helper()
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), 30*time.Second)
	defer cancel()
	resp, err := inferencepb.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, &inferencepb.ModelInferRequest{
		ModelName: "text_reverse", Id: id,
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "TEXT", Datatype: "BYTES", Shape: []int64{1},
			Contents: &inferencepb.InferTensorContents{BytesContents: [][]byte{[]byte("abc")}}}},
	})
	if err != nil || resp.GetId() != id {
		t.Fatalf("ModelInfer: %v, %v", resp, err)
	}
}

// TestTraceBadEnvironment: in mode opentelemetry a bad OTEL_BSP_* value
// stops the server at start with tritonserver's message.
func TestTraceBadEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a server that starts is killed
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), append(reverseOnly, "--http-port=0", "--grpc-port=0", "--metrics-port=0",
		"--trace-config=mode=opentelemetry", "--trace-config=level=TIMESTAMPS")...)
	cmd.Env = append(os.Environ(), "OTEL_BSP_MAX_QUEUE_SIZE=abc")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the server ran with OTEL_BSP_MAX_QUEUE_SIZE=abc:\n%s", out)
	}
	if want := "Bad option: \"OTEL_BSP_MAX_QUEUE_SIZE\".\nInvalid option value. Got abc"; !strings.Contains(string(out), want) {
		t.Errorf("output:\n%s\nwant %q", out, want)
	}
}

// TestTraceOpenTelemetryEnsembleEndToEnd runs the add_sub_twice ensemble
// (two ONNX Runtime steps) in mode opentelemetry and checks Triton's
// shape of it: each step's model span under the ensemble's, with its own
// compute span, and triton.trace_parent_id naming the ensemble's trace.
func TestTraceOpenTelemetryEnsembleEndToEnd(t *testing.T) {
	testenv.NeedLibrary(t)
	rcv := otlptest.Start(t)
	s := startBinary(t, "--model-repository="+exampleRepo, "--model-control-mode=explicit", "--load-model=add_sub", "--load-model=add_sub_twice",
		"--trace-config=mode=opentelemetry", "--trace-config=level=TIMESTAMPS", "--trace-config=rate=1",
		"--trace-config=opentelemetry,url="+rcv.HTTPURL)
	code, _, body := s.do("POST", "/v2/models/add_sub_twice/infer", "application/json",
		[]byte(`{"inputs":[{"name":"A","shape":[1,16],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},`+
			`{"name":"B","shape":[1,16],"datatype":"FP32","data":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,-1]}]}`), nil)
	if code != 200 {
		t.Fatalf("ensemble infer: %d %s", code, body)
	}
	s.terminate(30 * time.Second)
	spans := rcv.Spans()
	ens, steps := otlptest.Find(spans, "add_sub_twice"), otlptest.Find(spans, "add_sub")
	if len(ens) != 1 || len(steps) != 2 {
		t.Fatalf("spans %+v, want one add_sub_twice and two add_sub", spans)
	}
	root := otlptest.Find(spans, "InferRequest")
	if len(root) != 1 || ens[0].ParentID != root[0].SpanID {
		t.Fatalf("add_sub_twice under %s, want the one InferRequest %+v", ens[0].ParentID, root)
	}
	for _, st := range steps {
		if st.ParentID != ens[0].SpanID || st.Attributes["triton.trace_parent_id"] != ens[0].Attributes["triton.trace_id"] {
			t.Errorf("step %+v: want under add_sub_twice's span, parent id %v", st, ens[0].Attributes["triton.trace_id"])
		}
		var computes int
		for _, c := range otlptest.Find(spans, "compute") {
			if c.ParentID == st.SpanID {
				computes++
			}
		}
		if computes != 1 {
			t.Errorf("step %s: %d compute spans, want 1", st.SpanID, computes)
		}
		if st.Start.Before(ens[0].Start) || st.End.After(ens[0].End) {
			t.Errorf("step %v..%v outside the ensemble's %v..%v", st.Start, st.End, ens[0].Start, ens[0].End)
		}
	}
}
