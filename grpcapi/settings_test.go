package grpcapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/settings"
)

// logValues flattens a LogSettings answer to its typed values.
func logValues(resp *inferencepb.LogSettingsResponse) map[string]any {
	out := map[string]any{}
	for k, v := range resp.GetSettings() {
		switch c := v.GetParameterChoice().(type) {
		case *inferencepb.LogSettingsResponse_SettingValue_BoolParam:
			out[k] = c.BoolParam
		case *inferencepb.LogSettingsResponse_SettingValue_Uint32Param:
			out[k] = c.Uint32Param
		case *inferencepb.LogSettingsResponse_SettingValue_StringParam:
			out[k] = c.StringParam
		default:
			out[k] = nil
		}
	}
	return out
}

func logValue(v any) *inferencepb.LogSettingsRequest_SettingValue {
	switch v := v.(type) {
	case bool:
		return &inferencepb.LogSettingsRequest_SettingValue{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_BoolParam{BoolParam: v}}
	case uint32:
		return &inferencepb.LogSettingsRequest_SettingValue{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_Uint32Param{Uint32Param: v}}
	case string:
		return &inferencepb.LogSettingsRequest_SettingValue{ParameterChoice: &inferencepb.LogSettingsRequest_SettingValue_StringParam{StringParam: v}}
	}
	return &inferencepb.LogSettingsRequest_SettingValue{}
}

func logRequest(kv ...any) *inferencepb.LogSettingsRequest {
	req := &inferencepb.LogSettingsRequest{Settings: map[string]*inferencepb.LogSettingsRequest_SettingValue{}}
	for i := 0; i < len(kv); i += 2 {
		req.Settings[kv[i].(string)] = logValue(kv[i+1])
	}
	return req
}

func logSettingsWant(info, warning, errs bool, verbose uint32, format string) map[string]any {
	return map[string]any{"log_file": "", "log_info": info, "log_warning": warning, "log_error": errs, "log_verbose_level": verbose, "log_format": format}
}

func TestLogSettings(t *testing.T) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithLogLevel(&level)}})
	ctx := context.Background()
	call := func(req *inferencepb.LogSettingsRequest) map[string]any {
		t.Helper()
		resp, err := f.client.LogSettings(ctx, req)
		if err != nil {
			t.Fatalf("LogSettings(%v): %v", req, err)
		}
		return logValues(resp)
	}
	if got, want := call(&inferencepb.LogSettingsRequest{}), logSettingsWant(true, true, true, 0, "default"); !maps.Equal(got, want) {
		t.Errorf("initial %v, want %v", got, want)
	}
	for _, step := range []struct {
		req   *inferencepb.LogSettingsRequest
		want  map[string]any
		level zapcore.Level
	}{
		{logRequest("log_verbose_level", uint32(2), "log_format", "ISO8601", "unknown", "x"), logSettingsWant(true, true, true, 2, "ISO8601"), zapcore.DebugLevel},
		{logRequest("log_verbose_level", uint32(0), "log_info", false), logSettingsWant(false, true, true, 0, "ISO8601"), zapcore.WarnLevel},
		{logRequest("log_warning", false), logSettingsWant(false, false, true, 0, "ISO8601"), zapcore.ErrorLevel},
		{logRequest("log_error", false, "log_format", "default"), logSettingsWant(false, false, false, 0, "default"), zapcore.DPanicLevel},
		{logRequest("log_info", true, "log_warning", true, "log_error", true), logSettingsWant(true, true, true, 0, "default"), zapcore.InfoLevel},
	} {
		if got := call(step.req); !maps.Equal(got, step.want) {
			t.Errorf("after %v: %v, want %v", step.req, got, step.want)
		}
		if level.Level() != step.level {
			t.Errorf("after %v: level %v, want %v", step.req, level.Level(), step.level)
		}
	}

	for _, tc := range []struct {
		req  *inferencepb.LogSettingsRequest
		code codes.Code
		msg  string
	}{
		{logRequest("log_file", "/tmp/x.log"), codes.Unimplemented, "log file location can not be updated through network protocol"},
		{logRequest("log_file", "", "log_info", "not a bool"), codes.Unimplemented, "log file location can not be updated through network protocol"},
		{logRequest("log_info", "yes"), codes.InvalidArgument, "expect boolean for 'log_info'"},
		{logRequest("log_warning", uint32(1)), codes.InvalidArgument, "expect boolean for 'log_warning'"},
		{logRequest("log_error", nil), codes.InvalidArgument, "expect boolean for 'log_error'"},
		{logRequest("log_verbose_level", true), codes.InvalidArgument, "expect int32 for 'log_verbose_level'"},
		{logRequest("log_format", uint32(1)), codes.InvalidArgument, "expect string for 'log_format'"},
		{logRequest("log_info", false, "log_format", "json"), codes.InvalidArgument, "invalid argument for log_format, got: json"},
	} {
		_, err := f.client.LogSettings(ctx, tc.req)
		wantStatus(t, err, tc.code, tc.msg)
	}
	// Refused requests change nothing, not even their valid parts.
	if got, want := call(&inferencepb.LogSettingsRequest{}), logSettingsWant(true, true, true, 0, "default"); !maps.Equal(got, want) {
		t.Errorf("after refused requests: %v, want %v", got, want)
	}
	if level.Level() != zapcore.InfoLevel {
		t.Errorf("refused requests changed the level to %v", level.Level())
	}

	// The initial settings follow the level given; without one they are
	// only stored.
	warn := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	g := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithLogLevel(&warn)}})
	resp, err := g.client.LogSettings(ctx, &inferencepb.LogSettingsRequest{})
	if got, want := logValues(resp), logSettingsWant(false, true, true, 0, "default"); err != nil || !maps.Equal(got, want) {
		t.Errorf("from a warn level: %v, %v; want %v", got, err, want)
	}
	h := newFixture(t, setup{})
	resp, err = h.client.LogSettings(ctx, logRequest("log_verbose_level", uint32(1)))
	if got, want := logValues(resp), logSettingsWant(true, true, true, 1, "default"); err != nil || !maps.Equal(got, want) {
		t.Errorf("without a level: %v, %v; want %v", got, err, want)
	}
}

// traceValues flattens a TraceSetting answer to key=v1,v2 strings, sorted.
func traceValues(resp *inferencepb.TraceSettingResponse) string {
	var parts []string
	for k, v := range resp.GetSettings() {
		parts = append(parts, k+"="+strings.Join(v.GetValue(), ","))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// traceRequest makes a TraceSetting request; a nil value is a key without
// values.
func traceRequest(model string, kv map[string][]string) *inferencepb.TraceSettingRequest {
	req := &inferencepb.TraceSettingRequest{ModelName: model, Settings: map[string]*inferencepb.TraceSettingRequest_SettingValue{}}
	for k, v := range kv {
		req.Settings[k] = &inferencepb.TraceSettingRequest_SettingValue{Value: v}
	}
	return req
}

func traceWant(level string, rate, count, freq int) string {
	return fmt.Sprintf("log_frequency=%d trace_count=%d trace_file= trace_level=%s trace_mode=triton trace_rate=%d", freq, count, level, rate)
}

func TestTraceSetting(t *testing.T) {
	files := repo()
	files["unready/config.pbtxt"] = `name: "unready" backend: "unready" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`
	files["unready/1/model"] = ""
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("unready", notReadyBackend{})}})
	ctx := context.Background()
	call := func(model string, kv map[string][]string) string {
		t.Helper()
		resp, err := f.client.TraceSetting(ctx, traceRequest(model, kv))
		if err != nil {
			t.Fatalf("TraceSetting(%q, %v): %v", model, kv, err)
		}
		return traceValues(resp)
	}
	def := traceWant("OFF", 1000, -1, 0)
	for _, tc := range []struct {
		model string
		kv    map[string][]string
		want  string
	}{
		{"", nil, def},
		{"simple", nil, def},
		// A model's own values override; the rest follows the global ones.
		{"simple", map[string][]string{"trace_level": {"TIMESTAMPS", "TENSORS"}, "trace_rate": {"5"}}, traceWant("TIMESTAMPS,TENSORS", 5, -1, 0)},
		{"", map[string][]string{"trace_count": {"10"}, "log_frequency": {"3"}, "trace_rate": {"7"}, "unknown": {"x"}}, traceWant("OFF", 7, 10, 3)},
		{"simple", nil, traceWant("TIMESTAMPS,TENSORS", 5, 10, 3)},
		// No values clear a model's own value.
		{"simple", map[string][]string{"trace_rate": nil, "trace_level": {"TENSORS"}}, traceWant("TENSORS", 7, 10, 3)},
		{"simple", map[string][]string{"trace_level": nil}, traceWant("OFF", 7, 10, 3)},
		// No values on the global settings restore the defaults.
		{"", map[string][]string{"trace_rate": nil, "trace_count": {}, "log_frequency": nil, "trace_level": {"OFF"}}, def},
		{"batched", nil, def},
	} {
		if got := call(tc.model, tc.kv); got != tc.want {
			t.Errorf("%q %v:\n got %s\nwant %s", tc.model, tc.kv, got, tc.want)
		}
	}

	for _, tc := range []struct {
		model string
		kv    map[string][]string
		code  codes.Code
		msg   string
	}{
		{"", map[string][]string{"trace_file": {"x.log"}}, codes.Unimplemented, "trace file location can not be updated through network protocol"},
		{"simple", map[string][]string{"trace_file": nil, "trace_rate": {"1"}}, codes.Unimplemented, "trace file location can not be updated through network protocol"},
		{"", map[string][]string{"trace_level": {"OFF", "TIMESTAMPS"}}, codes.InvalidArgument, "Expect only one trace level 'OFF' is specified"},
		{"", map[string][]string{"trace_rate": {"abc"}}, codes.InvalidArgument, "Unable to parse 'trace_rate', got: abc"},
		{"", map[string][]string{"trace_rate": {"4294967296"}}, codes.InvalidArgument, "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 4294967296"},
		{"", map[string][]string{"trace_rate": {"1", "2"}}, codes.InvalidArgument, "expect only 1 value for 'trace_rate'"},
		{"", map[string][]string{"trace_count": {"-2"}}, codes.InvalidArgument, "Unable to parse 'trace_count'. Expecting value >= -1, got: -2"},
		{"", map[string][]string{"trace_count": {"2147483648"}}, codes.InvalidArgument, "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: 2147483648"},
		{"", map[string][]string{"log_frequency": {"x"}}, codes.InvalidArgument, "Unable to parse 'log_frequency', got: x"},
		{"", map[string][]string{"log_frequency": {"1", "2"}}, codes.InvalidArgument, "expect only 1 value for 'log_frequency'"},
		{"nosuch", nil, codes.InvalidArgument, "Request for unknown model: 'nosuch' is not found"},
		{"nosuch", map[string][]string{"trace_rate": {"1"}}, codes.InvalidArgument, "Request for unknown model: 'nosuch' is not found"},
		{"unready", nil, codes.InvalidArgument, "Request for unknown model : unready"},
	} {
		_, err := f.client.TraceSetting(ctx, traceRequest(tc.model, tc.kv))
		wantStatus(t, err, tc.code, tc.msg)
	}
	// Refused requests changed nothing.
	if got := call("", nil); got != def {
		t.Errorf("after refused requests: %s", got)
	}
	if got := call("simple", nil); got != def {
		t.Errorf("simple after refused requests: %s", got)
	}
}

// TestSharedSettings serves one server over both adapters with one
// settings store: a change made over one protocol is seen over the other,
// as Triton has one state per server.
func TestSharedSettings(t *testing.T) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	st := settings.NewStore(&level)
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithSettings(st)}})
	h := httpapi.NewHandler(f.srv, httpapi.WithSettings(st))
	ctx := context.Background()
	httpDo := func(method, path, body string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		if rec.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
		return rec.Body.String()
	}

	// Logging: gRPC → HTTP, HTTP → gRPC.
	if _, err := f.client.LogSettings(ctx, logRequest("log_verbose_level", uint32(3), "log_format", "ISO8601")); err != nil {
		t.Fatal(err)
	}
	if got, want := httpDo("GET", "/v2/logging", ""), `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":3,"log_format":"ISO8601"}`; got != want {
		t.Errorf("HTTP after a gRPC update: %s, want %s", got, want)
	}
	httpDo("POST", "/v2/logging", `{"log_verbose_level":0,"log_info":false}`)
	resp, err := f.client.LogSettings(ctx, &inferencepb.LogSettingsRequest{})
	if got, want := logValues(resp), logSettingsWant(false, true, true, 0, "ISO8601"); err != nil || !maps.Equal(got, want) {
		t.Errorf("gRPC after an HTTP update: %v, %v; want %v", got, err, want)
	}
	if level.Level() != zapcore.WarnLevel {
		t.Errorf("level %v, want warn", level.Level())
	}

	// Trace: gRPC → HTTP, HTTP → gRPC, globally and per model.
	if _, err := f.client.TraceSetting(ctx, traceRequest("simple", map[string][]string{"trace_rate": {"5"}, "trace_level": {"TIMESTAMPS"}})); err != nil {
		t.Fatal(err)
	}
	if got, want := httpDo("GET", "/v2/models/simple/trace/setting", ""), `{"trace_level":["TIMESTAMPS"],"trace_rate":"5","trace_count":"-1","log_frequency":"0","trace_file":"","trace_mode":"triton"}`; got != want {
		t.Errorf("HTTP after a gRPC update: %s, want %s", got, want)
	}
	httpDo("POST", "/v2/trace/setting", `{"trace_count":"9"}`)
	tr, err := f.client.TraceSetting(ctx, traceRequest("simple", nil))
	if got, want := traceValues(tr), traceWant("TIMESTAMPS", 5, 9, 0); err != nil || got != want {
		t.Errorf("gRPC after an HTTP update: %s, %v; want %s", got, err, want)
	}
	if got := st.Trace("").Count; got != 9 {
		t.Errorf("store's global count %d", got)
	}
}
