package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/triton-go/triton"
)

// logSettings is the state of the logging extension.
type logSettings struct {
	level *zap.AtomicLevel // nil: settings are only stored

	mu sync.Mutex
	// mu protects the following.
	info, warning, errors bool
	verbose               uint64
	format                string
}

func newLogSettings(level *zap.AtomicLevel) *logSettings {
	s := &logSettings{level: level, info: true, warning: true, errors: true, format: "default"}
	if level != nil {
		switch l := level.Level(); {
		case l <= zapcore.DebugLevel:
			s.verbose = 1
		case l == zapcore.InfoLevel:
		case l == zapcore.WarnLevel:
			s.info = false
		case l == zapcore.ErrorLevel:
			s.info, s.warning = false, false
		default:
			s.info, s.warning, s.errors = false, false, false
		}
	}
	return s
}

// zapLevel is the most verbose level the settings enable.
func (s *logSettings) zapLevel() zapcore.Level {
	switch {
	case s.verbose > 0:
		return zapcore.DebugLevel
	case s.info:
		return zapcore.InfoLevel
	case s.warning:
		return zapcore.WarnLevel
	case s.errors:
		return zapcore.ErrorLevel
	}
	return zapcore.DPanicLevel
}

// handleLogging serves GET and POST /v2/logging. A POST sets any subset of
// log_info, log_warning, log_error (booleans), log_verbose_level (unsigned)
// and log_format ("default" or "ISO8601"); null values are ignored; a
// log_file is refused (501), as Triton refuses it. The whole update is
// checked before any of it is applied. The answer is the full settings.
func (h *handler) handleLogging(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r, catLogging, http.MethodGet, http.MethodPost) {
		return
	}
	s := h.logs
	if r.Method == http.MethodPost {
		b, err := h.readBody(w, r, false, -1)
		if err != nil {
			h.writeError(w, err)
			return
		}
		defer b.release()
		v, err := parseJSON(b.data)
		if err != nil {
			h.writeError(w, errorf(triton.InvalidArgument, "%v", err))
			return
		}
		ms := v.members()
		var upd struct {
			info, warning, errors *bool
			verbose               *uint64
			format                *string
		}
		notNull := func(key string) (jval, bool) {
			v, ok := get(ms, key)
			return v, ok && !v.isNull()
		}
		if _, ok := notNull("log_file"); ok {
			h.writeError(w, errorf(triton.Unsupported, "log file location can not be updated through network protocol"))
			return
		}
		for _, f := range []struct {
			key string
			dst **bool
		}{{"log_info", &upd.info}, {"log_warning", &upd.warning}, {"log_error", &upd.errors}} {
			if v, ok := notNull(f.key); ok {
				b, ok := v.boolean()
				if !ok {
					h.writeError(w, errorf(triton.InvalidArgument, "%s", errNotBool))
					return
				}
				*f.dst = &b
			}
		}
		if v, ok := notNull("log_verbose_level"); ok {
			n, ok := v.uint()
			if !ok {
				h.writeError(w, errorf(triton.InvalidArgument, "%s", errNotUint))
				return
			}
			upd.verbose = &n
		}
		if v, ok := notNull("log_format"); ok {
			f, ok := v.str()
			if !ok {
				h.writeError(w, errorf(triton.InvalidArgument, "%s", errNotString))
				return
			}
			if string(f) != "default" && string(f) != "ISO8601" {
				h.writeError(w, errorf(triton.Unavailable, "invalid argument for --log_format, got: %s", f))
				return
			}
			str := string(f)
			upd.format = &str
		}
		s.mu.Lock()
		if upd.info != nil {
			s.info = *upd.info
		}
		if upd.warning != nil {
			s.warning = *upd.warning
		}
		if upd.errors != nil {
			s.errors = *upd.errors
		}
		if upd.verbose != nil {
			s.verbose = *upd.verbose
		}
		if upd.format != nil {
			s.format = *upd.format
		}
		if s.level != nil {
			s.level.SetLevel(s.zapLevel())
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	b := append(make([]byte, 0, 160), `{"log_file":"","log_info":`...)
	b = strconv.AppendBool(b, s.info)
	b = append(b, `,"log_warning":`...)
	b = strconv.AppendBool(b, s.warning)
	b = append(b, `,"log_error":`...)
	b = strconv.AppendBool(b, s.errors)
	b = append(b, `,"log_verbose_level":`...)
	b = strconv.AppendUint(b, s.verbose, 10)
	b = append(b, `,"log_format":`...)
	b = appendJSONString(b, s.format)
	s.mu.Unlock()
	writeJSON(w, append(b, '}'))
}

// Trace levels, as bits.
const (
	traceTimestamps = 1 << iota
	traceTensors
)

// traceSetting is a set of trace settings; at the model level a nil field
// falls back to the global one.
type traceSetting struct {
	level        *int
	rate         *uint32
	count        *int32
	logFrequency *uint32
}

// traceSettings is the state of the trace extension. The settings are
// stored and reported as Triton reports them, but this server produces no
// traces: the extension is not listed in the server metadata.
type traceSettings struct {
	mu sync.Mutex
	// mu protects the following.
	global traceSetting // always fully set
	models map[string]*traceSetting
}

func ptr[T any](v T) *T { return &v }

func defaultTrace() traceSetting {
	return traceSetting{level: ptr(0), rate: ptr[uint32](1000), count: ptr[int32](-1), logFrequency: ptr[uint32](0)}
}

func newTraceSettings() *traceSettings {
	return &traceSettings{global: defaultTrace(), models: make(map[string]*traceSetting)}
}

// handleTrace serves GET and POST /v2/trace/setting (model "") and
// /v2/models/{m}/trace/setting. The model must be ready. A POST sets any
// subset of trace_level (array of "OFF", "TIMESTAMPS", "TENSORS"),
// trace_rate, trace_count and log_frequency (decimal strings); null clears
// a model's own value (the global one applies again) or resets a global
// one to its default; trace_file is refused (501). The answer is the full
// settings of the scope.
func (h *handler) handleTrace(w http.ResponseWriter, r *http.Request, model string) {
	if !h.guard(w, r, catTrace, http.MethodGet, http.MethodPost) {
		return
	}
	if model != "" && !h.srv.ModelReady(r.Context(), model, 0) {
		if _, err := h.srv.ModelMetadata(model, 0); err != nil && triton.CodeOf(err) == triton.InvalidArgument {
			h.writeError(w, err)
			return
		}
		h.writeError(w, errorf(triton.InvalidArgument, "Request for unknown model : %s", model))
		return
	}
	ts := h.traces
	if r.Method == http.MethodPost {
		b, err := h.readBody(w, r, false, -1)
		if err != nil {
			h.writeError(w, err)
			return
		}
		defer b.release()
		v, err := parseJSON(b.data)
		if err != nil {
			h.writeError(w, errorf(triton.InvalidArgument, "%v", err))
			return
		}
		upd, clear, err := parseTraceUpdate(v.members())
		if err != nil {
			h.writeError(w, err)
			return
		}
		ts.mu.Lock()
		dst := &ts.global
		if model != "" {
			if ts.models[model] == nil {
				ts.models[model] = &traceSetting{}
			}
			dst = ts.models[model]
		}
		def := defaultTrace()
		if clear.level {
			dst.level = nil
		}
		if clear.rate {
			dst.rate = nil
		}
		if clear.count {
			dst.count = nil
		}
		if clear.logFrequency {
			dst.logFrequency = nil
		}
		if upd.level != nil {
			dst.level = upd.level
		}
		if upd.rate != nil {
			dst.rate = upd.rate
		}
		if upd.count != nil {
			dst.count = upd.count
		}
		if upd.logFrequency != nil {
			dst.logFrequency = upd.logFrequency
		}
		if model == "" { // the global settings are always complete
			dst.level = cmpOr(dst.level, def.level)
			dst.rate = cmpOr(dst.rate, def.rate)
			dst.count = cmpOr(dst.count, def.count)
			dst.logFrequency = cmpOr(dst.logFrequency, def.logFrequency)
		}
		ts.mu.Unlock()
	}
	ts.mu.Lock()
	eff := ts.global
	if m := ts.models[model]; model != "" && m != nil {
		eff.level = cmpOr(m.level, eff.level)
		eff.rate = cmpOr(m.rate, eff.rate)
		eff.count = cmpOr(m.count, eff.count)
		eff.logFrequency = cmpOr(m.logFrequency, eff.logFrequency)
	}
	ts.mu.Unlock()
	b := append(make([]byte, 0, 160), `{"trace_level":[`...)
	switch l := *eff.level; {
	case l == 0:
		b = append(b, `"OFF"`...)
	default:
		sep := ""
		if l&traceTimestamps != 0 {
			b = append(b, `"TIMESTAMPS"`...)
			sep = ","
		}
		if l&traceTensors != 0 {
			b = append(b, sep...)
			b = append(b, `"TENSORS"`...)
		}
	}
	b = append(b, `],"trace_rate":"`...)
	b = strconv.AppendUint(b, uint64(*eff.rate), 10)
	b = append(b, `","trace_count":"`...)
	b = strconv.AppendInt(b, int64(*eff.count), 10)
	b = append(b, `","log_frequency":"`...)
	b = strconv.AppendUint(b, uint64(*eff.logFrequency), 10)
	b = append(b, `","trace_file":"","trace_mode":"triton"}`...)
	writeJSON(w, b)
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

type traceClear struct{ level, rate, count, logFrequency bool }

// parseTraceUpdate checks a trace settings update with Triton's messages.
func parseTraceUpdate(ms []member) (traceSetting, traceClear, error) {
	var upd traceSetting
	var clr traceClear
	if _, ok := get(ms, "trace_file"); ok {
		return upd, clr, errorf(triton.Unsupported, "trace file location can not be updated through network protocol")
	}
	if v, ok := get(ms, "trace_level"); ok {
		if v.isNull() {
			clr.level = true
		} else {
			if !v.isArray() {
				return upd, clr, errorf(triton.InvalidArgument, "%s", errNotArray)
			}
			levels := v.elements()
			level, set := 0, false
			for _, e := range levels {
				s, ok := e.str()
				if !ok {
					return upd, clr, errorf(triton.InvalidArgument, "%s", errNotString)
				}
				switch string(s) {
				case "OFF":
					if len(levels) != 1 {
						return upd, clr, errorf(triton.InvalidArgument, "Expect only one trace level 'OFF' is specified")
					}
					level, set = 0, true
				case "TIMESTAMPS":
					level, set = level|traceTimestamps, true
				case "TENSORS":
					level, set = level|traceTensors, true
				}
			}
			if set {
				upd.level = &level
			}
		}
	}
	num := func(key string, lo, hi int64, clear *bool, set func(int64)) error {
		v, ok := get(ms, key)
		if !ok {
			return nil
		}
		if v.isNull() {
			*clear = true
			return nil
		}
		s, ok := v.str()
		if !ok {
			return errorf(triton.InvalidArgument, "%s", errNotString)
		}
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				return errorf(triton.InvalidArgument, "Unable to parse '%s', got: %s", key, s)
			}
		}
		if err != nil || n < lo || n > hi {
			if key == "trace_count" && err == nil && n < lo {
				return errorf(triton.InvalidArgument, "Unable to parse 'trace_count'. Expecting value >= -1, got:%s", s)
			}
			return errorf(triton.InvalidArgument, "Unable to parse '%s', value is out of range [ %d, %d ], got: %s", key, lo, hi, s)
		}
		set(n)
		return nil
	}
	if err := num("trace_rate", 0, math.MaxUint32, &clr.rate, func(n int64) { upd.rate = ptr(uint32(n)) }); err != nil {
		return upd, clr, err
	}
	if err := num("trace_count", -1, math.MaxInt32, &clr.count, func(n int64) { upd.count = ptr(int32(n)) }); err != nil {
		return upd, clr, err
	}
	if err := num("log_frequency", 0, math.MaxUint32, &clr.logFrequency, func(n int64) { upd.logFrequency = ptr(uint32(n)) }); err != nil {
		return upd, clr, err
	}
	return upd, clr, nil
}
