package settings_test

import (
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/triton-go/triton/settings"
)

func ptr[T any](v T) *T { return &v }

func TestNewStoreLogFromLevel(t *testing.T) {
	for _, tc := range []struct {
		level                zapcore.Level
		info, warning, error bool
		verbose              uint32
	}{
		{zapcore.DebugLevel, true, true, true, 1},
		{zapcore.InfoLevel, true, true, true, 0},
		{zapcore.WarnLevel, false, true, true, 0},
		{zapcore.ErrorLevel, false, false, true, 0},
		{zapcore.FatalLevel, false, false, false, 0},
	} {
		level := zap.NewAtomicLevelAt(tc.level)
		got := settings.NewStore(&level).Log()
		want := settings.Log{Info: tc.info, Warning: tc.warning, Error: tc.error, VerboseLevel: tc.verbose, Format: "default"}
		if got != want {
			t.Errorf("%v: %+v, want %+v", tc.level, got, want)
		}
	}
	if got := settings.NewStore(nil).Log(); got != (settings.Log{Info: true, Warning: true, Error: true, Format: "default"}) {
		t.Errorf("without a level: %+v", got)
	}
}

func TestUpdateLog(t *testing.T) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	s := settings.NewStore(&level)
	steps := []struct {
		u    settings.LogUpdate
		want zapcore.Level
	}{
		{settings.LogUpdate{VerboseLevel: ptr[uint32](2), Format: ptr("ISO8601")}, zapcore.DebugLevel},
		{settings.LogUpdate{VerboseLevel: ptr[uint32](0), Info: ptr(false)}, zapcore.WarnLevel},
		{settings.LogUpdate{Warning: ptr(false)}, zapcore.ErrorLevel},
		{settings.LogUpdate{Error: ptr(false)}, zapcore.DPanicLevel},
		{settings.LogUpdate{Info: ptr(true)}, zapcore.InfoLevel},
	}
	for i, st := range steps {
		if _, err := s.UpdateLog(settings.GRPC, st.u); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if level.Level() != st.want {
			t.Errorf("step %d: level %v, want %v", i, level.Level(), st.want)
		}
	}
	want := settings.Log{Info: true, Format: "ISO8601"}
	if got := s.Log(); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}

	for _, tc := range []struct {
		p    settings.Protocol
		u    settings.LogUpdate
		kind error
		msg  string
	}{
		{settings.HTTP, settings.LogUpdate{File: ptr("")}, errors.ErrUnsupported, "log file location can not be updated through network protocol"},
		{settings.GRPC, settings.LogUpdate{File: ptr("x"), Info: ptr(false)}, errors.ErrUnsupported, "log file location can not be updated through network protocol"},
		{settings.HTTP, settings.LogUpdate{Format: ptr("json"), Info: ptr(false)}, settings.ErrUnavailable, "invalid argument for --log_format, got: json"},
		{settings.GRPC, settings.LogUpdate{Format: ptr("json"), Info: ptr(false)}, settings.ErrInvalid, "invalid argument for log_format, got: json"},
	} {
		got, err := s.UpdateLog(tc.p, tc.u)
		if !errors.Is(err, tc.kind) || err.Error() != tc.msg {
			t.Errorf("%+v: error %v, want %q (%v)", tc.u, err, tc.msg, tc.kind)
		}
		if got != want {
			t.Errorf("%+v: a refused update changed the settings to %+v", tc.u, got)
		}
	}
	if s.Log() != want || level.Level() != zapcore.InfoLevel {
		t.Errorf("after refused updates: %+v, level %v", s.Log(), level.Level())
	}

	// Without a level the settings are stored only.
	s = settings.NewStore(nil)
	if got, _ := s.UpdateLog(settings.HTTP, settings.LogUpdate{VerboseLevel: ptr[uint32](7)}); got.VerboseLevel != 7 {
		t.Errorf("stored %+v", got)
	}
}

func TestTraceLevelNames(t *testing.T) {
	for l, want := range map[settings.TraceLevel][]string{
		settings.TraceOff:                                {"OFF"},
		settings.TraceTimestamps:                         {"TIMESTAMPS"},
		settings.TraceTensors:                            {"TENSORS"},
		settings.TraceTimestamps | settings.TraceTensors: {"TIMESTAMPS", "TENSORS"},
	} {
		if got := l.Names(); !reflect.DeepEqual(got, want) {
			t.Errorf("%d: %v, want %v", l, got, want)
		}
	}
}

func TestTraceScopes(t *testing.T) {
	s := settings.NewStore(nil)
	def := settings.Trace{Rate: 1000, Count: -1, Mode: "triton"}
	if got := s.Trace(""); got != def {
		t.Fatalf("default %+v", got)
	}
	update := func(model string, u settings.TraceUpdate) settings.Trace {
		t.Helper()
		got, err := s.UpdateTrace(settings.GRPC, model, u)
		if err != nil {
			t.Fatalf("UpdateTrace(%q, %v): %v", model, u, err)
		}
		if again := s.Trace(model); again != got {
			t.Errorf("Trace(%q) %+v, update returned %+v", model, again, got)
		}
		return got
	}
	both := settings.TraceTimestamps | settings.TraceTensors

	// A model's own values override; the rest follows the global ones.
	got := update("m", settings.TraceUpdate{"trace_level": {"TIMESTAMPS", "TENSORS"}, "trace_rate": {"5"}})
	if want := (settings.Trace{Level: both, Rate: 5, Count: -1, Mode: "triton"}); got != want {
		t.Errorf("model: %+v, want %+v", got, want)
	}
	got = update("", settings.TraceUpdate{"trace_count": {"10"}, "log_frequency": {"3"}, "trace_rate": {"7"}, "unknown": {"x"}})
	if want := (settings.Trace{Rate: 7, Count: 10, LogFrequency: 3, Mode: "triton"}); got != want {
		t.Errorf("global: %+v, want %+v", got, want)
	}
	if got, want := s.Trace("m"), (settings.Trace{Level: both, Rate: 5, Count: 10, LogFrequency: 3, Mode: "triton"}); got != want {
		t.Errorf("model after global update: %+v, want %+v", got, want)
	}
	// No values clear a model's own value.
	got = update("m", settings.TraceUpdate{"trace_rate": nil, "trace_level": {"TENSORS", "BOGUS"}})
	if want := (settings.Trace{Level: settings.TraceTensors, Rate: 7, Count: 10, LogFrequency: 3, Mode: "triton"}); got != want {
		t.Errorf("model after clear: %+v, want %+v", got, want)
	}
	// Unknown level names alone change nothing.
	if got := update("m", settings.TraceUpdate{"trace_level": {"BOGUS"}}); got.Level != settings.TraceTensors {
		t.Errorf("unknown level changed the level to %v", got.Level)
	}
	// No values on a global value restore its default.
	if got := update("", settings.TraceUpdate{"trace_rate": nil, "trace_count": {}, "log_frequency": nil, "trace_level": {"OFF"}}); got != def {
		t.Errorf("global after clear: %+v", got)
	}
	if got := s.Trace("other"); got != def {
		t.Errorf("another model: %+v", got)
	}
	// ClearTrace drops a model's own values, or resets the global ones.
	update("", settings.TraceUpdate{"trace_rate": {"1"}})
	s.ClearTrace("m")
	if got := s.Trace("m"); got.Rate != 1 || got.Level != settings.TraceOff {
		t.Errorf("model after ClearTrace: %+v", got)
	}
	update("m", settings.TraceUpdate{"trace_count": {"4"}})
	s.ClearTrace("")
	if got := s.Trace(""); got != def {
		t.Errorf("global after ClearTrace: %+v", got)
	}
	if got := s.Trace("m"); got.Count != 4 || got.Rate != 1000 {
		t.Errorf("model after global ClearTrace: %+v", got)
	}
	// A model whose values are all cleared follows the global ones again.
	update("m", settings.TraceUpdate{"trace_count": nil})
	if got := s.Trace("m"); got != def {
		t.Errorf("model with nothing of its own: %+v", got)
	}
}

func TestTraceErrors(t *testing.T) {
	s := settings.NewStore(nil)
	if _, err := s.UpdateTrace(settings.HTTP, "m", settings.TraceUpdate{"trace_rate": {"9"}}); err != nil {
		t.Fatal(err)
	}
	before, beforeM := s.Trace(""), s.Trace("m")
	for _, tc := range []struct {
		p    settings.Protocol
		u    settings.TraceUpdate
		kind error
		msg  string
	}{
		{settings.HTTP, settings.TraceUpdate{"trace_file": nil, "trace_rate": {"1"}}, errors.ErrUnsupported, "trace file location can not be updated through network protocol"},
		{settings.GRPC, settings.TraceUpdate{"trace_file": {"x.log"}}, errors.ErrUnsupported, "trace file location can not be updated through network protocol"},
		{settings.GRPC, settings.TraceUpdate{"trace_level": {"OFF", "TIMESTAMPS"}}, settings.ErrInvalid, "Expect only one trace level 'OFF' is specified"},
		{settings.GRPC, settings.TraceUpdate{"trace_level": {"TENSORS"}, "trace_rate": {"abc"}}, settings.ErrInvalid, "Unable to parse 'trace_rate', got: abc"},
		{settings.GRPC, settings.TraceUpdate{"trace_rate": {"4294967296"}}, settings.ErrInvalid, "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 4294967296"},
		{settings.GRPC, settings.TraceUpdate{"trace_rate": {"-1"}}, settings.ErrInvalid, "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: -1"},
		{settings.GRPC, settings.TraceUpdate{"trace_rate": {"1", "2"}}, settings.ErrInvalid, "expect only 1 value for 'trace_rate'"},
		{settings.GRPC, settings.TraceUpdate{"trace_count": {"-2"}}, settings.ErrInvalid, "Unable to parse 'trace_count'. Expecting value >= -1, got: -2"},
		{settings.HTTP, settings.TraceUpdate{"trace_count": {"-2"}}, settings.ErrInvalid, "Unable to parse 'trace_count'. Expecting value >= -1, got:-2"},
		{settings.HTTP, settings.TraceUpdate{"trace_count": {"2147483648"}}, settings.ErrInvalid, "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: 2147483648"},
		{settings.HTTP, settings.TraceUpdate{"trace_count": {"-99999999999999999999"}}, settings.ErrInvalid, "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: -99999999999999999999"},
		{settings.GRPC, settings.TraceUpdate{"trace_count": {"1", "2"}}, settings.ErrInvalid, "expect only 1 value for 'trace_count'"},
		{settings.GRPC, settings.TraceUpdate{"log_frequency": {"x"}}, settings.ErrInvalid, "Unable to parse 'log_frequency', got: x"},
		{settings.GRPC, settings.TraceUpdate{"log_frequency": {"99999999999999999999"}}, settings.ErrInvalid, "Unable to parse 'log_frequency', value is out of range [ 0, 4294967295 ], got: 99999999999999999999"},
		{settings.GRPC, settings.TraceUpdate{"log_frequency": {""}}, settings.ErrInvalid, "Unable to parse 'log_frequency', got: "},
	} {
		for _, model := range []string{"", "m"} {
			got, err := s.UpdateTrace(tc.p, model, tc.u)
			if !errors.Is(err, tc.kind) || err.Error() != tc.msg {
				t.Errorf("%v on %q: error %v, want %q (%v)", tc.u, model, err, tc.msg, tc.kind)
			}
			if want := map[string]settings.Trace{"": before, "m": beforeM}[model]; got != want {
				t.Errorf("%v on %q: returned %+v, want the unchanged %+v", tc.u, model, got, want)
			}
		}
	}
	if s.Trace("") != before || s.Trace("m") != beforeM {
		t.Errorf("refused updates changed the settings: %+v %+v", s.Trace(""), s.Trace("m"))
	}
	if errors.Is(settings.ErrTraceFile, settings.ErrInvalid) || !errors.Is(settings.ErrLogFile, errors.ErrUnsupported) {
		t.Errorf("sentinels of the file errors")
	}
}

func TestStoreConcurrent(t *testing.T) {
	level := zap.NewAtomicLevel()
	s := settings.NewStore(&level)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				v := uint32(j % 3)
				if _, err := s.UpdateLog(settings.HTTP, settings.LogUpdate{VerboseLevel: &v, Info: ptr(i%2 == 0)}); err != nil {
					t.Error(err)
				}
				if _, err := s.UpdateTrace(settings.GRPC, "m", settings.TraceUpdate{"trace_rate": {"5"}}); err != nil {
					t.Error(err)
				}
				_ = s.Trace("m")
				_ = s.Log()
			}
		})
	}
	wg.Wait()
}

// TestTraceDefaultsAndMode: the command line's settings are the global
// ones and what clearing restores; with a mode set (a tracer), updates to
// settings that cannot sample are refused with Triton's message, OFF
// always passes, and the watchers see every change with its scope.
func TestTraceDefaultsAndMode(t *testing.T) {
	s := settings.NewStore(nil)
	startup := settings.Trace{Level: settings.TraceTimestamps, Rate: 10, Count: 3, LogFrequency: 2, File: "/tmp/t.json"}
	s.SetTraceDefaults(startup)
	var seen []string
	stop := s.WatchTrace(func(scope string, g settings.Trace, models map[string]settings.Trace) {
		seen = append(seen, scope+":"+g.Mode+":"+strconv.Itoa(int(g.Rate))+":"+strconv.Itoa(len(models)))
	})
	s.SetTraceMode("opentelemetry")
	s.SetTraceMode("")
	want := startup
	want.Mode = "triton"
	if got := s.Trace(""); got != want {
		t.Errorf("startup %+v, want %+v", got, want)
	}
	if _, err := s.UpdateTrace(settings.HTTP, "m", settings.TraceUpdate{settings.KeyTraceRate: {"5"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceRate: {"7"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceRate: nil}); err != nil || got.Rate != 10 {
		t.Errorf("cleared rate %d (%v), want the startup 10", got.Rate, err)
	}
	_, err := s.UpdateTrace(settings.GRPC, "m", settings.TraceUpdate{settings.KeyTraceRate: {"0"}})
	if err == nil || err.Error() != "Attempting to set invalid trace setting :sample rate must be non-zero" || !errors.Is(err, settings.ErrInvalid) {
		t.Errorf("rate 0: %v", err)
	}
	if got := s.Trace("m").Rate; got != 5 {
		t.Errorf("a refused update changed the rate to %d", got)
	}
	if _, err := s.UpdateTrace(settings.GRPC, "m", settings.TraceUpdate{settings.KeyTraceLevel: {"OFF"}, settings.KeyTraceRate: {"0"}}); err != nil {
		t.Errorf("OFF with rate 0: %v", err)
	}
	s.ClearTrace("m")
	stop()
	s.ClearTrace("")
	wantSeen := []string{":triton:10:0", ":opentelemetry:10:0", ":triton:10:0", "m:triton:10:1", ":triton:7:1", ":triton:10:1", "m:triton:10:1", "m:triton:10:0"}
	if !reflect.DeepEqual(seen, wantSeen) {
		t.Errorf("watched %v\nwant    %v", seen, wantSeen)
	}
	for _, tc := range []struct {
		t      settings.Trace
		ok     bool
		reason string
	}{
		{settings.Trace{Rate: 1, Count: -1, File: "f"}, false, "tracing is disabled"},
		{settings.Trace{Level: settings.TraceTensors, Count: -1, File: "f"}, false, "sample rate must be non-zero"},
		{settings.Trace{Level: settings.TraceTensors, Rate: 1, Count: -1, Mode: "triton"}, false, "trace file name is not given"},
		{settings.Trace{Level: settings.TraceTensors, Rate: 1, Count: -1, Mode: "opentelemetry"}, true, ""},
		{settings.Trace{Level: settings.TraceTensors, Rate: 1, Count: 0, File: "f"}, false, ""},
	} {
		if ok, reason := tc.t.Valid(); ok != tc.ok || reason != tc.reason {
			t.Errorf("%+v: %v %q", tc.t, ok, reason)
		}
	}
}
