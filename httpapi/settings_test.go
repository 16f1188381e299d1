package httpapi_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/triton-go/triton/httpapi"
)

func TestLogging(t *testing.T) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	f := newFixture(t, httpapi.WithLogLevel(&level))
	const initial = `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"default"}`
	wantBody(t, f.get("/v2/logging"), initial)

	wantBody(t, f.post("/v2/logging", `{"log_verbose_level":2,"log_format":"ISO8601","log_file":null,"log_info":null}`),
		`{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":2,"log_format":"ISO8601"}`)
	if level.Level() != zapcore.DebugLevel {
		t.Errorf("verbose: level %v, want debug", level.Level())
	}
	wantBody(t, f.post("/v2/logging", `{"log_verbose_level":0,"log_info":false}`),
		`{"log_file":"","log_info":false,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"ISO8601"}`)
	if level.Level() != zapcore.WarnLevel {
		t.Errorf("no info: level %v, want warn", level.Level())
	}
	wantBody(t, f.post("/v2/logging", `{"log_warning":false}`),
		`{"log_file":"","log_info":false,"log_warning":false,"log_error":true,"log_verbose_level":0,"log_format":"ISO8601"}`)
	if level.Level() != zapcore.ErrorLevel {
		t.Errorf("errors only: level %v", level.Level())
	}
	wantStatus(t, f.post("/v2/logging", `{"log_error":false}`), 200)
	if level.Level() != zapcore.DPanicLevel {
		t.Errorf("nothing: level %v", level.Level())
	}

	before := f.get("/v2/logging").Body.String()
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"log_file":"/tmp/x.log"}`, 501, "log file location can not be updated through network protocol"},
		{`{"log_format":"json"}`, 400, "invalid argument for --log_format, got: json"},
		{`{"log_info":"yes"}`, 400, "attempt to access JSON non-boolean as boolean"},
		{`{"log_verbose_level":-1}`, 400, "attempt to access JSON non-unsigned-integer as unsigned-integer"},
		{`{"log_format":1}`, 400, "attempt to access JSON non-string as string"},
		{`{"log_info":true,"log_format":"bad"}`, 400, "invalid argument for --log_format"},
		{`{`, 400, "failed to parse the request JSON buffer"},
		{``, 400, "The document is empty."},
	} {
		wantError(t, f.post("/v2/logging", tc.body), tc.status, tc.msg)
	}
	// Failed updates change nothing, not even the valid parts.
	if after := f.get("/v2/logging").Body.String(); after != before {
		t.Errorf("a failed update changed the settings:\n%s\n%s", before, after)
	}

	// Initial settings follow the level given.
	warn := zap.NewAtomicLevelAt(zapcore.WarnLevel)
	g := newFixture(t, httpapi.WithLogLevel(&warn))
	wantBody(t, g.get("/v2/logging"), `{"log_file":"","log_info":false,"log_warning":true,"log_error":true,"log_verbose_level":0,"log_format":"default"}`)
	// Without a level the settings are stored only.
	h := newFixture(t)
	wantBody(t, h.post("/v2/logging", `{"log_verbose_level":1}`), `{"log_file":"","log_info":true,"log_warning":true,"log_error":true,"log_verbose_level":1,"log_format":"default"}`)
}

func TestTraceSettings(t *testing.T) {
	f := newFixture(t)
	const def = `{"trace_level":["OFF"],"trace_rate":"1000","trace_count":"-1","log_frequency":"0","trace_file":"","trace_mode":"triton"}`
	wantBody(t, f.get("/v2/trace/setting"), def)
	wantBody(t, f.get("/v2/models/simple/trace/setting"), def)

	// Model level overrides; the rest follows the global settings.
	wantBody(t, f.post("/v2/models/simple/trace/setting", `{"trace_level":["TIMESTAMPS","TENSORS"],"trace_rate":"5"}`),
		`{"trace_level":["TIMESTAMPS","TENSORS"],"trace_rate":"5","trace_count":"-1","log_frequency":"0","trace_file":"","trace_mode":"triton"}`)
	wantBody(t, f.post("/v2/trace/setting", `{"trace_count":"10","log_frequency":"3","trace_rate":"7"}`),
		`{"trace_level":["OFF"],"trace_rate":"7","trace_count":"10","log_frequency":"3","trace_file":"","trace_mode":"triton"}`)
	wantBody(t, f.get("/v2/models/simple/trace/setting"),
		`{"trace_level":["TIMESTAMPS","TENSORS"],"trace_rate":"5","trace_count":"10","log_frequency":"3","trace_file":"","trace_mode":"triton"}`)
	// null clears a model's own value.
	wantBody(t, f.post("/v2/models/simple/trace/setting", `{"trace_rate":null,"trace_level":["TENSORS"]}`),
		`{"trace_level":["TENSORS"],"trace_rate":"7","trace_count":"10","log_frequency":"3","trace_file":"","trace_mode":"triton"}`)
	// null on the global settings restores the default.
	wantBody(t, f.post("/v2/trace/setting", `{"trace_rate":null,"trace_count":null,"log_frequency":null,"trace_level":["OFF"]}`), def)
	// Other models see the global settings.
	wantBody(t, f.get("/v2/models/batched/trace/setting"), def)

	for _, tc := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/v2/trace/setting", `{"trace_file":"x.log"}`, 501, "trace file location can not be updated through network protocol"},
		{"/v2/models/simple/trace/setting", `{"trace_file":null}`, 501, "trace file location can not be updated through network protocol"},
		{"/v2/trace/setting", `{"trace_level":["OFF","TIMESTAMPS"]}`, 400, "Expect only one trace level 'OFF' is specified"},
		{"/v2/trace/setting", `{"trace_level":"OFF"}`, 400, "non-array"},
		{"/v2/trace/setting", `{"trace_level":[1]}`, 400, "non-string"},
		{"/v2/trace/setting", `{"trace_rate":"abc"}`, 400, "Unable to parse 'trace_rate', got: abc"},
		{"/v2/trace/setting", `{"trace_rate":"4294967296"}`, 400, "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 4294967296"},
		{"/v2/trace/setting", `{"trace_rate":"-1"}`, 400, "Unable to parse 'trace_rate', value is out of range"},
		{"/v2/trace/setting", `{"trace_rate":5}`, 400, "non-string"},
		{"/v2/trace/setting", `{"trace_count":"-2"}`, 400, "Unable to parse 'trace_count'. Expecting value >= -1, got:-2"},
		{"/v2/trace/setting", `{"trace_count":"2147483648"}`, 400, "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: 2147483648"},
		{"/v2/trace/setting", `{"log_frequency":"x"}`, 400, "Unable to parse 'log_frequency', got: x"},
		{"/v2/trace/setting", `{"log_frequency":"99999999999999999999"}`, 400, "Unable to parse 'log_frequency', value is out of range"},
		{"/v2/trace/setting", `nope`, 400, "failed to parse the request JSON buffer"},
		{"/v2/models/nosuch/trace/setting", `{}`, 400, "Request for unknown model: 'nosuch' is not found"},
	} {
		wantError(t, f.post(tc.path, tc.body), tc.status, tc.msg)
	}
	wantError(t, f.get("/v2/models/nosuch/trace/setting"), 400, "Request for unknown model: 'nosuch' is not found")
	// Failed updates changed nothing.
	wantBody(t, f.get("/v2/trace/setting"), def)
}
