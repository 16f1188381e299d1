package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/trace"
)

// traceFlags collects the --trace-* flags as tritonserver reads them: the
// deprecated ones are applied as they come, the --trace-config lines are
// kept in order and applied once every flag is read ([traceFlags.resolve]).
type traceFlags struct {
	lines []traceLine // --trace-config, in order, duplicates kept

	// The deprecated flags: their values, and whether each was given.
	level                     settings.TraceLevel
	off                       bool // an OFF was given, here or in --trace-config: tracing is disabled
	rate, count, logFrequency int
	file                      string
	given                     map[string]bool // by flag name: "trace-file", ...

	stderr io.Writer // where tritonserver's trace warnings go; nil: nowhere
}

// traceLine is one --trace-config: a mode ("" for the global settings,
// "triton" or "opentelemetry"), a setting and its value.
type traceLine struct{ mode, setting, value string }

// traceSetup is what the --trace-* flags come to: the trace settings the
// server starts with, and the tracer's configuration.
type traceSetup struct {
	settings settings.Trace
	tracer   trace.Config
	options  []settings.TraceOption // the opentelemetry settings given, as the trace setting API reports them
}

func newTraceFlags() traceFlags {
	return traceFlags{rate: 1000, count: -1, given: map[string]bool{}}
}

// The warnings tritonserver writes to standard error for the deprecated
// flags, and when --trace-config overrides one.
const deprecatedTrace = "Warning: '--%s' has been deprecated and will be removed in future releases. Please use '--trace-config %s instead."

func overridingTrace(flag, what string) string {
	return fmt.Sprintf("Warning: Overriding deprecated '--%s' in favor of provided %s in --trace-config!", flag, what)
}

// warn writes one of tritonserver's trace warnings, a line.
func (f *traceFlags) warn(line string) {
	if f.stderr != nil {
		fmt.Fprintln(f.stderr, line)
	}
}

// deprecated returns the option table's deprecated --trace-* flags, in
// tritonserver's order: each writes tritonserver's warning, before its
// value is read.
func (f *traceFlags) deprecated() []option {
	flag := func(name, instead string, set func(string) error) option {
		return option{name, true, func(v string) error {
			f.warn(fmt.Sprintf(deprecatedTrace, name, instead))
			f.given[name] = true
			return set(v)
		}}
	}
	return []option{
		flag("trace-file", "triton,file=<filepath>", str(&f.file)),
		flag("trace-level", "level=<OFF|TIMESTAMPS|TENSORS>", f.addLevel),
		flag("trace-rate", "rate=<rate value>", unsigned(&f.rate)),
		flag("trace-count", "count=<count value>", integer(&f.count)),
		flag("trace-log-frequency", "triton,log-frequency=<log frequency value>", unsigned(&f.logFrequency)),
	}
}

// addLine reads one --trace-config [<mode>,]<setting>=<value>: the mode is
// what comes before the first comma, the setting runs to the first "="
// after it, the value is the rest (and may hold "=" and ",").
func (f *traceFlags) addLine(v string) error {
	mode, rest := "", v
	comma := strings.Index(v, ",")
	if comma == 0 {
		return fmt.Errorf("No trace mode specified. --trace-config option format is <trace mode>,<setting>=<value> or <setting>=<value>. Got %s", v)
	}
	if comma > 0 {
		m, err := parseTraceMode(v[:comma])
		if err != nil {
			return err
		}
		mode, rest = m, v[comma+1:]
	}
	setting, value, ok := strings.Cut(rest, "=")
	if !ok || setting == "" || value == "" {
		return fmt.Errorf("--trace-config option format is '<trace mode>,<setting>=<value>'. Got %s", v)
	}
	f.lines = append(f.lines, traceLine{mode, setting, value})
	return nil
}

// addLevel ORs one level into the levels given; OFF disables tracing
// whatever else is given.
func (f *traceFlags) addLevel(v string) error {
	l, err := parseTraceLevel(v)
	f.level |= l
	f.off = f.off || (err == nil && l == settings.TraceOff)
	return err
}

// resolve applies the --trace-config lines over the deprecated flags, as
// tritonserver does once every flag is read: global settings first (level
// ORed in, the others replacing a deprecated flag's value with a warning),
// then those of the mode chosen (the other mode's are ignored, so are
// unknown settings). Errors name the setting: Bad option: "--trace-config
// rate". (or "--trace-config triton,log-frequency", ...).
func (f *traceFlags) resolve() (traceSetup, error) {
	mode := trace.ModeTriton
	warnIf := func(flag, what string) {
		if f.given[flag] {
			f.warn(overridingTrace(flag, what))
		}
	}
	for _, l := range f.lines {
		if l.mode != "" {
			continue
		}
		var err error
		switch l.setting {
		case "rate":
			warnIf("trace-rate", "rate value")
			f.rate, err = parseUnsigned(l.value)
		case "level":
			warnIf("trace-level", "level")
			err = f.addLevel(l.value)
		case "mode":
			mode, err = parseTraceMode(l.value)
		case "count":
			warnIf("trace-count", "count")
			f.count, err = parseInt(l.value)
		}
		if err != nil {
			return traceSetup{}, fmt.Errorf("Bad option: \"--trace-config %s\".\n%w", l.setting, err)
		}
	}
	setup := traceSetup{tracer: trace.Config{Mode: mode}}
	switch mode {
	case trace.ModeOpenTelemetry:
		if f.given["trace-file"] {
			f.warn("Warning: '--trace-file' is deprecated and will be ignored with opentelemetry tracing mode. ")
		}
		if f.given["trace-log-frequency"] {
			f.warn("Warning: '--trace-log-frequency' is deprecated and will be ignored with opentelemetry tracing mode.")
		}
		f.file, f.logFrequency = "", 0
		if err := f.openTelemetry(&setup); err != nil {
			return traceSetup{}, err
		}
	default:
		for _, l := range f.lines {
			if l.mode != trace.ModeTriton {
				continue
			}
			var err error
			switch l.setting {
			case "file":
				warnIf("trace-file", "file")
				f.file = l.value
			case "log-frequency":
				warnIf("trace-log-frequency", "log-frequency")
				f.logFrequency, err = parseUnsigned(l.value)
			}
			if err != nil {
				return traceSetup{}, fmt.Errorf("Bad option: \"--trace-config triton,%s\".\n%w", l.setting, err)
			}
		}
	}
	if f.off {
		f.level = settings.TraceOff
	}
	setup.settings = settings.Trace{
		Level: f.level, Rate: uint32(f.rate), Count: int32(f.count),
		LogFrequency: uint32(f.logFrequency), File: f.file, Mode: mode,
	}
	return setup, nil
}

// openTelemetry reads the opentelemetry,<setting> lines into cfg: url (the
// last one wins), resource (each adds or replaces a key=value), the three
// bsp_* of the batch span processor (unsigned 32-bit; absent ones come
// from the OTEL_BSP_* variables when the tracer starts), and, beyond
// Triton, protocol (http/protobuf or grpc). Each setting read is also kept
// as given for the trace setting API, which reports them in this mode
// (resource with every value, the others with the last).
func (f *traceFlags) openTelemetry(setup *traceSetup) error {
	cfg := &setup.tracer
	for _, l := range f.lines {
		if l.mode != trace.ModeOpenTelemetry {
			continue
		}
		var (
			n   int
			err error
		)
		switch l.setting {
		case "url":
			cfg.URL = l.value
		case "protocol":
			switch p := strings.ToLower(l.value); p {
			case trace.ProtocolHTTP, trace.ProtocolGRPC:
				cfg.Protocol = p
			default:
				err = fmt.Errorf("invalid value for trace protocol option: %s. Available options are %q and %q", p, trace.ProtocolHTTP, trace.ProtocolGRPC)
			}
		case "resource":
			key, value, ok := strings.Cut(l.value, "=")
			if !ok || key == "" {
				err = fmt.Errorf("--trace-config opentelemetry,resource option format is <key>=<value>. Got %s", l.value)
				break
			}
			cfg.Resource = append(cfg.Resource, attribute.String(key, value))
		case "bsp_max_queue_size":
			n, err = parseUint32(l.value)
			cfg.BSPMaxQueueSize = n
		case "bsp_schedule_delay":
			n, err = parseUint32(l.value)
			cfg.BSPScheduleDelay = time.Duration(n) * time.Millisecond
		case "bsp_max_export_batch_size":
			n, err = parseUint32(l.value)
			cfg.BSPMaxExportBatchSize = n
		}
		if err != nil {
			return fmt.Errorf("Bad option: \"--trace-config opentelemetry,%s\".\n%w", l.setting, err)
		}
		setup.option(l.setting, l.value)
	}
	return nil
}

// option records an opentelemetry setting for the trace setting API: a
// resource adds a value, another setting replaces its value; settings this
// server does not know are left out.
func (setup *traceSetup) option(key, value string) {
	switch key {
	case "url", "protocol", "resource", "bsp_max_queue_size", "bsp_schedule_delay", "bsp_max_export_batch_size":
	default:
		return
	}
	i := slices.IndexFunc(setup.options, func(o settings.TraceOption) bool { return o.Key == key })
	switch {
	case i < 0:
		setup.options = append(setup.options, settings.TraceOption{Key: key, Values: []string{value}})
	case key == "resource":
		setup.options[i].Values = append(setup.options[i].Values, value)
	default:
		setup.options[i].Values = []string{value}
	}
}

// parseTraceMode reads a trace mode, in any case, as tritonserver does.
func parseTraceMode(v string) (string, error) {
	switch m := strings.ToLower(v); m {
	case trace.ModeTriton, trace.ModeOpenTelemetry:
		return m, nil
	default:
		return "", fmt.Errorf("invalid value for trace mode option: %s. Available options are \"triton\" and \"opentelemetry\"", m)
	}
}

// parseTraceLevel reads a trace level as tritonserver does: false and off
// are OFF; true, on, min, max and timestamps are TIMESTAMPS; tensors is
// TENSORS; in any case.
func parseTraceLevel(v string) (settings.TraceLevel, error) {
	switch l := strings.ToLower(v); l {
	case "false", "off":
		return settings.TraceOff, nil
	case "true", "on", "min", "max", "timestamps":
		return settings.TraceTimestamps, nil
	case "tensors":
		return settings.TraceTensors, nil
	default:
		return 0, errors.New("invalid value for trace level option: " + l)
	}
}

// parseUnsigned reads an int that must not be negative (rate,
// log-frequency): tritonserver takes -1 as 4294967295, which samples next
// to nothing, silently; it is refused here.
func parseUnsigned(v string) (int, error) {
	n, err := parseInt(v)
	if err == nil && n < 0 {
		return 0, fmt.Errorf("Provided option value is out of bound. Got %s", v)
	}
	return n, err
}

// parseUint32 reads a bsp_* value, unsigned 32-bit.
func parseUint32(v string) (int, error) {
	n, err := parseNumber(v, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 32) })
	if err != nil && strings.HasPrefix(strings.TrimSpace(v), "-") {
		err = fmt.Errorf("Provided option value is out of bound. Got %s", v)
	}
	return int(n), err
}

// unsigned is integer for the flags that parseUnsigned reads.
func unsigned(p *int) func(string) error {
	return func(v string) (err error) { *p, err = parseUnsigned(v); return err }
}

// newTracer starts the tracer of the --trace-* flags on the server's
// settings store: it always exists, as in tritonserver, so that tracing
// can be turned on at run time (/v2/trace/setting) even when the flags
// leave it off.
func newTracer(setup traceSetup, st *settings.Store, logger *zap.Logger) (*trace.Tracer, error) {
	st.SetTraceDefaults(setup.settings)
	st.SetTraceOptions(setup.options)
	t, err := trace.New(st, setup.tracer, logger.Named("trace"))
	if err != nil {
		return nil, err
	}
	if setup.tracer.Mode == trace.ModeOpenTelemetry {
		logger.Info("tracing to OpenTelemetry", zap.String("url", setup.tracer.URL), zap.String("protocol", setup.tracer.Protocol))
	}
	return t, nil
}
