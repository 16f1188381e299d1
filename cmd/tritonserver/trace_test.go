package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/trace"
)

// Triton's stderr warnings, as the tests expect them.
const (
	warnFile      = "Warning: '--trace-file' has been deprecated and will be removed in future releases. Please use '--trace-config triton,file=<filepath> instead."
	warnLevel     = "Warning: '--trace-level' has been deprecated and will be removed in future releases. Please use '--trace-config level=<OFF|TIMESTAMPS|TENSORS> instead."
	warnRate      = "Warning: '--trace-rate' has been deprecated and will be removed in future releases. Please use '--trace-config rate=<rate value> instead."
	warnCount     = "Warning: '--trace-count' has been deprecated and will be removed in future releases. Please use '--trace-config count=<count value> instead."
	warnFrequency = "Warning: '--trace-log-frequency' has been deprecated and will be removed in future releases. Please use '--trace-config triton,log-frequency=<log frequency value> instead."

	overRate      = "Warning: Overriding deprecated '--trace-rate' in favor of provided rate value in --trace-config!"
	overLevel     = "Warning: Overriding deprecated '--trace-level' in favor of provided level in --trace-config!"
	overCount     = "Warning: Overriding deprecated '--trace-count' in favor of provided count in --trace-config!"
	overFile      = "Warning: Overriding deprecated '--trace-file' in favor of provided file in --trace-config!"
	overFrequency = "Warning: Overriding deprecated '--trace-log-frequency' in favor of provided log-frequency in --trace-config!"

	ignoredFile      = "Warning: '--trace-file' is deprecated and will be ignored with opentelemetry tracing mode. "
	ignoredFrequency = "Warning: '--trace-log-frequency' is deprecated and will be ignored with opentelemetry tracing mode."
)

// defaultTrace is the trace settings without flags: Triton's.
var defaultTrace = settings.Trace{Rate: 1000, Count: -1, Mode: "triton"}

// TestTraceFlags checks what the --trace-* flags come to, and the exact
// lines tritonserver writes to standard error on the way.
func TestTraceFlags(t *testing.T) {
	with := func(f func(*settings.Trace)) settings.Trace { s := defaultTrace; f(&s); return s }
	for _, tc := range []struct {
		name     string
		args     []string
		settings settings.Trace
		tracer   trace.Config
		stderr   []string
	}{
		{name: "none", settings: defaultTrace, tracer: trace.Config{Mode: "triton"}},
		{name: "triton mode", args: []string{"--trace-config=triton,file=/tmp/t.json", "--trace-config", "level=TIMESTAMPS",
			"--trace-config=rate=1", "--trace-config=count=10", "--trace-config=triton,log-frequency=50"},
			settings: settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: 10, LogFrequency: 50, File: "/tmp/t.json", Mode: "triton"},
			tracer:   trace.Config{Mode: "triton"}},
		{name: "levels are ORed", args: []string{"--trace-config=level=TIMESTAMPS", "--trace-config=level=tensors"},
			settings: with(func(s *settings.Trace) { s.Level = settings.TraceTimestamps | settings.TraceTensors }), tracer: trace.Config{Mode: "triton"}},
		{name: "level aliases", args: []string{"--trace-config=level=MAX"},
			settings: with(func(s *settings.Trace) { s.Level = settings.TraceTimestamps }), tracer: trace.Config{Mode: "triton"}},
		{name: "any OFF disables", args: []string{"--trace-config=level=TIMESTAMPS", "--trace-level=off", "--trace-config=level=tensors"},
			settings: defaultTrace, tracer: trace.Config{Mode: "triton"}, stderr: []string{warnLevel, overLevel, overLevel}},
		{name: "false is OFF", args: []string{"--trace-config=level=TENSORS", "--trace-config=level=false"},
			settings: defaultTrace, tracer: trace.Config{Mode: "triton"}},
		{name: "value with = and ,", args: []string{"--trace-config=triton,file=/tmp/a=b,c.json"},
			settings: with(func(s *settings.Trace) { s.File = "/tmp/a=b,c.json" }), tracer: trace.Config{Mode: "triton"}},
		{name: "mode in any case", args: []string{"--trace-config=TRITON,file=/t", "--trace-config=Mode=x", "--trace-config=mode=Triton"},
			settings: with(func(s *settings.Trace) { s.File = "/t" }), tracer: trace.Config{Mode: "triton"}},
		{name: "unknown and other-mode settings ignored", args: []string{"--trace-config=triton,level=TIMESTAMPS", "--trace-config=colour=blue",
			"--trace-config=opentelemetry,url=http://c:4318/v1/traces", "--trace-config=triton,url=x", "--trace-config=opentelemetry,bsp_max_queue_size=zz"},
			settings: defaultTrace, tracer: trace.Config{Mode: "triton"}},
		{name: "deprecated flags", args: []string{"--trace-file=/tmp/d.json", "--trace-level=TIMESTAMPS", "--trace-level", "TENSORS",
			"--trace-rate=5", "--trace-count=2", "--trace-log-frequency=3"},
			settings: settings.Trace{Level: settings.TraceTimestamps | settings.TraceTensors, Rate: 5, Count: 2, LogFrequency: 3, File: "/tmp/d.json", Mode: "triton"},
			tracer:   trace.Config{Mode: "triton"},
			stderr:   []string{warnFile, warnLevel, warnLevel, warnRate, warnCount, warnFrequency}},
		{name: "trace-config wins", args: []string{"--trace-config=rate=7", "--trace-rate=5", "--trace-count=2", "--trace-config=count=-1",
			"--trace-file=/old", "--trace-config=triton,file=/new", "--trace-log-frequency=3", "--trace-config=triton,log-frequency=0",
			"--trace-level=TIMESTAMPS", "--trace-config=level=TENSORS", "--trace-config=rate=8"},
			settings: settings.Trace{Level: settings.TraceTimestamps | settings.TraceTensors, Rate: 8, Count: -1, File: "/new", Mode: "triton"},
			tracer:   trace.Config{Mode: "triton"},
			// Deprecated flags as they come; then the global lines in order
			// (rate, count, level, rate), then the triton ones.
			stderr: []string{warnRate, warnCount, warnFile, warnFrequency, warnLevel, overRate, overCount, overLevel, overRate, overFile, overFrequency}},
		{name: "opentelemetry mode", args: []string{"--trace-config=mode=opentelemetry", "--trace-config=level=TIMESTAMPS", "--trace-config=rate=1",
			"--trace-config=opentelemetry,url=localhost:4318/v1/traces", "--trace-config=opentelemetry,url=http://collector:4318/v1/traces",
			"--trace-config=opentelemetry,resource=service.name=test_triton", "--trace-config=opentelemetry,resource=test.key=a=b",
			"--trace-config=opentelemetry,bsp_max_queue_size=100", "--trace-config=opentelemetry,bsp_schedule_delay=250",
			"--trace-config=opentelemetry,bsp_max_export_batch_size=10", "--trace-config=opentelemetry,protocol=GRPC",
			"--trace-config=triton,file=/ignored", "--trace-file=/ignored", "--trace-log-frequency=4"},
			settings: settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, Mode: "opentelemetry"},
			tracer: trace.Config{Mode: "opentelemetry", URL: "http://collector:4318/v1/traces", Protocol: "grpc",
				Resource:        []attribute.KeyValue{attribute.String("service.name", "test_triton"), attribute.String("test.key", "a=b")},
				BSPMaxQueueSize: 100, BSPScheduleDelay: 250 * time.Millisecond, BSPMaxExportBatchSize: 10},
			stderr: []string{warnFile, warnFrequency, ignoredFile, ignoredFrequency}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c, err := parseFlags(append([]string{"--model-repository=/m"}, tc.args...), &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if c.trace.settings != tc.settings {
				t.Errorf("settings %+v, want %+v", c.trace.settings, tc.settings)
			}
			if !configEqual(c.trace.tracer, tc.tracer) {
				t.Errorf("tracer config %+v, want %+v", c.trace.tracer, tc.tracer)
			}
			var lines []string
			if s := strings.TrimSuffix(stderr.String(), "\n"); s != "" {
				lines = strings.Split(s, "\n")
			}
			if !slices.Equal(lines, tc.stderr) {
				t.Errorf("stderr:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tc.stderr, "\n"))
			}
			if len(c.warnings) != 0 {
				t.Errorf("flags without effect: %v", c.warnings)
			}
		})
	}
}

func configEqual(a, b trace.Config) bool {
	return a.Mode == b.Mode && a.URL == b.URL && a.Protocol == b.Protocol && slices.Equal(a.Resource, b.Resource) &&
		a.BSPMaxQueueSize == b.BSPMaxQueueSize && a.BSPScheduleDelay == b.BSPScheduleDelay && a.BSPMaxExportBatchSize == b.BSPMaxExportBatchSize
}

// TestTraceFlagErrors checks the errors, word for word as tritonserver's
// (and ours beyond it: protocol, a negative rate or log frequency, a
// resource without "=").
func TestTraceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace-config=,rate=1"}, "Bad option: \"--trace-config\".\nNo trace mode specified. --trace-config option format is <trace mode>,<setting>=<value> or <setting>=<value>. Got ,rate=1"},
		{[]string{"--trace-config=Zipkin,rate=1"}, "Bad option: \"--trace-config\".\ninvalid value for trace mode option: zipkin. Available options are \"triton\" and \"opentelemetry\""},
		{[]string{"--trace-config=rate"}, "Bad option: \"--trace-config\".\n--trace-config option format is '<trace mode>,<setting>=<value>'. Got rate"},
		{[]string{"--trace-config=rate="}, "Bad option: \"--trace-config\".\n--trace-config option format is '<trace mode>,<setting>=<value>'. Got rate="},
		{[]string{"--trace-config==1"}, "Bad option: \"--trace-config\".\n--trace-config option format is '<trace mode>,<setting>=<value>'. Got =1"},
		{[]string{"--trace-config=triton,file"}, "Bad option: \"--trace-config\".\n--trace-config option format is '<trace mode>,<setting>=<value>'. Got triton,file"},
		{[]string{"--trace-config=rate=often"}, "Bad option: \"--trace-config rate\".\nInvalid option value. Got often"},
		{[]string{"--trace-config=rate=-1"}, "Bad option: \"--trace-config rate\".\nProvided option value is out of bound. Got -1"},
		{[]string{"--trace-config=count=99999999999"}, "Bad option: \"--trace-config count\".\nProvided option value is out of bound. Got 99999999999"},
		{[]string{"--trace-config=level=ALL"}, "Bad option: \"--trace-config level\".\ninvalid value for trace level option: all"},
		{[]string{"--trace-config=mode=Zipkin"}, "Bad option: \"--trace-config mode\".\ninvalid value for trace mode option: zipkin. Available options are \"triton\" and \"opentelemetry\""},
		{[]string{"--trace-config=triton,log-frequency=x"}, "Bad option: \"--trace-config triton,log-frequency\".\nInvalid option value. Got x"},
		{[]string{"--trace-config=mode=opentelemetry", "--trace-config=opentelemetry,bsp_max_queue_size=-1"}, "Bad option: \"--trace-config opentelemetry,bsp_max_queue_size\".\nProvided option value is out of bound. Got -1"},
		{[]string{"--trace-config=mode=opentelemetry", "--trace-config=opentelemetry,bsp_schedule_delay=4294967296"}, "Bad option: \"--trace-config opentelemetry,bsp_schedule_delay\".\nProvided option value is out of bound. Got 4294967296"},
		{[]string{"--trace-config=mode=opentelemetry", "--trace-config=opentelemetry,bsp_max_export_batch_size=1.5"}, "Bad option: \"--trace-config opentelemetry,bsp_max_export_batch_size\".\nInvalid option value. Got 1.5"},
		{[]string{"--trace-config=mode=opentelemetry", "--trace-config=opentelemetry,protocol=thrift"}, "Bad option: \"--trace-config opentelemetry,protocol\".\ninvalid value for trace protocol option: thrift. Available options are \"http/protobuf\" and \"grpc\""},
		{[]string{"--trace-config=mode=opentelemetry", "--trace-config=opentelemetry,resource=service.name"}, "Bad option: \"--trace-config opentelemetry,resource\".\n--trace-config opentelemetry,resource option format is <key>=<value>. Got service.name"},
		{[]string{"--trace-level=sometimes"}, "Bad option: \"--trace-level\".\ninvalid value for trace level option: sometimes"},
		{[]string{"--trace-rate=x"}, "Bad option: \"--trace-rate\".\nInvalid option value. Got x"},
		{[]string{"--trace-count=1.5"}, "Bad option: \"--trace-count\".\nInvalid option value. Got 1.5"},
		{[]string{"--trace-log-frequency=-2"}, "Bad option: \"--trace-log-frequency\".\nProvided option value is out of bound. Got -2"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(append([]string{"--model-repository=/m"}, tc.args...), &stderr)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %q, want %q", tc.args, err, tc.want)
		}
	}
}

// TestTraceFlagsWarnFirst: a deprecated flag's warning is written before
// its value is read, so even a bad value warns, as in tritonserver.
func TestTraceFlagsWarnFirst(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseFlags([]string{"--model-repository=/m", "--trace-rate=x"}, &stderr); err == nil {
		t.Fatal("--trace-rate=x accepted")
	}
	if got := stderr.String(); got != warnRate+"\n" {
		t.Errorf("stderr %q, want %q", got, warnRate+"\n")
	}
}
