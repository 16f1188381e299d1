package settings

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Protocol picks Triton's wording of the few messages its HTTP and gRPC
// frontends word differently.
type Protocol uint8

const (
	// HTTP is the wording of Triton's HTTP/REST frontend.
	HTTP Protocol = iota
	// GRPC is the wording of Triton's gRPC frontend.
	GRPC
)

// Sentinel errors. Every error of an update wraps one of them or
// [errors.ErrUnsupported] (Triton's UNSUPPORTED: log_file and trace_file
// cannot be changed); test with errors.Is.
var (
	// ErrInvalid: a malformed or out-of-range value (Triton's INVALID_ARG).
	ErrInvalid = errors.New("settings: invalid setting value")
	// ErrUnavailable: an unknown log format over HTTP, which Triton answers
	// with UNAVAILABLE (over gRPC it is [ErrInvalid]).
	ErrUnavailable = errors.New("settings: setting value unavailable")
)

// settingError is a refused update: Triton's message, and the sentinel
// that tells its code.
type settingError struct {
	kind error
	msg  string
}

func (e *settingError) Error() string { return e.msg }
func (e *settingError) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &settingError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

// ErrLogFile and ErrTraceFile refuse an update that names log_file or
// trace_file, with Triton's messages. They wrap [errors.ErrUnsupported].
// The updates return them; an adapter that must refuse such a request
// before it has read the rest (Triton checks the file first) returns them
// itself.
var (
	ErrLogFile   = unsupported("log file location can not be updated through network protocol")
	ErrTraceFile = unsupported("trace file location can not be updated through network protocol")
)

func unsupported(msg string) error {
	return &settingError{kind: errors.ErrUnsupported, msg: msg}
}

// The log formats Triton knows.
const (
	LogFormatDefault = "default"
	LogFormatISO8601 = "ISO8601"
)

// Log is the state of the logging extension, as both protocols report it
// (log_file, log_info, log_warning, log_error, log_verbose_level,
// log_format).
type Log struct {
	File                 string // the file the server logs to ([Store.SetLogFile]); "" for standard error
	Info, Warning, Error bool
	VerboseLevel         uint32
	Format               string // LogFormatDefault or LogFormatISO8601
}

// LogUpdate is a change of the log settings: each non-nil field sets its
// setting, nil fields are left alone. File must be nil: any value is
// refused with [ErrLogFile].
type LogUpdate struct {
	File                 *string
	Info, Warning, Error *bool
	VerboseLevel         *uint32
	Format               *string
}

// TraceLevel is a set of trace levels; the zero value is OFF.
type TraceLevel uint8

// The trace levels, as bits of a TraceLevel.
const (
	TraceOff        TraceLevel = 0
	TraceTimestamps TraceLevel = 1 << 0
	TraceTensors    TraceLevel = 1 << 1
)

// Names returns the level as the protocols report it: ["OFF"] for none,
// else "TIMESTAMPS" and/or "TENSORS", in that order.
func (l TraceLevel) Names() []string {
	if l&(TraceTimestamps|TraceTensors) == 0 {
		return []string{"OFF"}
	}
	var names []string
	if l&TraceTimestamps != 0 {
		names = append(names, "TIMESTAMPS")
	}
	if l&TraceTensors != 0 {
		names = append(names, "TENSORS")
	}
	return names
}

// Trace is the trace settings of one scope (global, or a model's with the
// global values filling in what it does not set), as both protocols report
// them (trace_level, trace_rate, trace_count, log_frequency, trace_file,
// trace_mode).
type Trace struct {
	Level        TraceLevel
	Rate         uint32
	Count        int32 // -1: no limit
	LogFrequency uint32
	File         string // the trace file of the command line ([Store.SetTraceDefaults]); "" for none
	Mode         string // the tracer's mode ([Store.SetTraceMode]): "triton" (default) or "opentelemetry"
}

// Valid reports whether a setting can sample, with Triton's reason when it
// cannot: "tracing is disabled" (level OFF), "sample rate must be
// non-zero", "trace file name is not given" (mode triton without a file);
// a count of 0 (no traces left) is invalid with an empty reason, as in
// Triton.
func (t Trace) Valid() (ok bool, reason string) {
	switch {
	case t.Level&(TraceTimestamps|TraceTensors) == 0:
		return false, "tracing is disabled"
	case t.Rate == 0:
		return false, "sample rate must be non-zero"
	case t.Mode != ModeOpenTelemetry && t.File == "":
		return false, "trace file name is not given"
	}
	return t.Count != 0, ""
}

// The keys of a [TraceUpdate], as both protocols name the settings.
const (
	KeyTraceLevel   = "trace_level"
	KeyTraceRate    = "trace_rate"
	KeyTraceCount   = "trace_count"
	KeyLogFrequency = "log_frequency"
	KeyTraceFile    = "trace_file"
)

// TraceUpdate is a change of trace settings keyed by setting name
// (KeyTraceLevel, ...), with the values as strings, as both protocols carry
// them: level names ("OFF" alone, or "TIMESTAMPS" and/or "TENSORS"; other
// names are ignored, as Triton ignores them) or one decimal number. A key
// with no values clears the setting: a model's own value, so that the
// global one applies again, or a global value, which returns to its
// default. Absent keys and unknown keys are left alone; KeyTraceFile, with
// any values, is refused with [ErrTraceFile].
type TraceUpdate map[string][]string

// defaultTrace is Triton's default trace setting.
var defaultTrace = Trace{Rate: 1000, Count: -1, Mode: ModeTriton}

// modelTrace is a model's own trace values; nil ones fall back to the
// global ones.
type modelTrace struct {
	level        *TraceLevel
	rate         *uint32
	count        *int32
	logFrequency *uint32
}

// Store is one server's log and trace settings. Create it with [NewStore];
// the zero value is not usable. Safe for concurrent use.
type Store struct {
	level *zap.AtomicLevel // nil: the log settings are only stored

	mu sync.Mutex
	// mu protects the following.
	log      Log
	global   Trace
	def      Trace // what clearing a global value restores
	checked  bool  // a tracer samples by these settings: refuse invalid ones
	models   map[string]*modelTrace
	watchers map[int]func(scope string, global Trace, models map[string]Trace)
	nextW    int
	options  []TraceOption // mode opentelemetry's settings, as reported

	// remaining, when set, reports the traces a scope has left
	// ([Store.SetTraceRemaining]); read without mu.
	remaining atomic.Pointer[func(model string) (int32, bool)]
}

// The trace modes, as trace_mode reports them.
const (
	ModeTriton        = "triton"
	ModeOpenTelemetry = "opentelemetry"
)

// TraceOption is one setting of the tracer beyond Triton's common ones,
// reported by the trace setting API in mode opentelemetry under its
// command-line name: url, resource, bsp_max_queue_size, ... (Triton
// reports them there; they cannot be changed at run time).
type TraceOption struct {
	Key    string
	Values []string
}

// SetTraceOptions records the tracer's own settings, reported beside the
// common ones in mode opentelemetry ([Store.TraceOptions]).
func (s *Store) SetTraceOptions(opts []TraceOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.options = slices.Clone(opts)
}

// TraceOptions returns what [Store.SetTraceOptions] recorded.
func (s *Store) TraceOptions() []TraceOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.options)
}

// SetTraceRemaining makes the store report as trace_count what f says a
// scope has left (Triton counts trace_count down as it samples; ok false:
// the stored count stands): the tracer sets it, and unsets it (nil) when
// it closes. f must be quick and must not call the store.
func (s *Store) SetTraceRemaining(f func(model string) (left int32, ok bool)) {
	s.remaining.Store(&f)
}

// report is t as the protocols report it: with the traces left.
func (s *Store) report(model string, t Trace) Trace {
	if f := s.remaining.Load(); f != nil && *f != nil && t.Count >= 0 {
		if left, ok := (*f)(model); ok {
			t.Count = left
		}
	}
	return t
}

// NewStore returns a store with Triton's default settings. With a non-nil
// level, the initial log settings are read from it (Debug or below:
// verbose level 1; Info: info, warning and error; Warn: warning and error;
// Error: error only; above: none), and [Store.UpdateLog] sets it.
func NewStore(level *zap.AtomicLevel) *Store {
	s := &Store{
		level:  level,
		log:    Log{Info: true, Warning: true, Error: true, Format: LogFormatDefault},
		global: defaultTrace,
		def:    defaultTrace,
		models: make(map[string]*modelTrace),
	}
	if level != nil {
		switch l := level.Level(); {
		case l <= zapcore.DebugLevel:
			s.log.VerboseLevel = 1
		case l == zapcore.InfoLevel:
		case l == zapcore.WarnLevel:
			s.log.Info = false
		case l == zapcore.ErrorLevel:
			s.log.Info, s.log.Warning = false, false
		default:
			s.log.Info, s.log.Warning, s.log.Error = false, false, false
		}
	}
	return s
}

// SetLogFile records the file the server writes its log to (tritonserver's
// --log-file), reported as log_file; the protocols cannot change it.
func (s *Store) SetLogFile(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log.File = path
}

// Log returns the current log settings.
func (s *Store) Log() Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}

// UpdateLog applies u, whole or not at all, and returns the settings that
// result. With a level (see [NewStore]) it sets the level to the most
// verbose one the new settings enable. Errors: [ErrLogFile] for a File;
// an unknown Format is [ErrUnavailable] "invalid argument for --log_format,
// got: X" over HTTP and [ErrInvalid] "invalid argument for log_format, got:
// X" over gRPC, as Triton words them.
func (s *Store) UpdateLog(p Protocol, u LogUpdate) (Log, error) {
	if u.File != nil {
		return s.Log(), ErrLogFile
	}
	if f := u.Format; f != nil && *f != LogFormatDefault && *f != LogFormatISO8601 {
		if p == HTTP {
			return s.Log(), &settingError{kind: ErrUnavailable, msg: "invalid argument for --log_format, got: " + *f}
		}
		return s.Log(), invalidf("invalid argument for log_format, got: %s", *f)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.log
	set(&l.Info, u.Info)
	set(&l.Warning, u.Warning)
	set(&l.Error, u.Error)
	set(&l.VerboseLevel, u.VerboseLevel)
	set(&l.Format, u.Format)
	if s.level != nil {
		s.level.SetLevel(l.zapLevel())
	}
	return *l, nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// zapLevel is the most verbose level the settings enable.
func (l *Log) zapLevel() zapcore.Level {
	switch {
	case l.VerboseLevel > 0:
		return zapcore.DebugLevel
	case l.Info:
		return zapcore.InfoLevel
	case l.Warning:
		return zapcore.WarnLevel
	case l.Error:
		return zapcore.ErrorLevel
	}
	return zapcore.DPanicLevel
}

// Trace returns the trace settings of model: the global ones for "", else
// the model's own values over the global ones, with Count the traces the
// setting has left when a tracer reports them ([Store.SetTraceRemaining]).
// The store does not know which models exist; the adapters check that
// first.
func (s *Store) Trace(model string) Trace {
	s.mu.Lock()
	t := s.traceLocked(model)
	s.mu.Unlock()
	return s.report(model, t)
}

func (s *Store) traceLocked(model string) Trace {
	t := s.global
	if m := s.models[model]; model != "" && m != nil {
		set(&t.Level, m.level)
		set(&t.Rate, m.rate)
		set(&t.Count, m.count)
		set(&t.LogFrequency, m.logFrequency)
	}
	return t
}

// UpdateTrace applies u to the settings of model ("" for the global ones),
// whole or not at all, and returns that scope's settings as [Store.Trace]
// does. The checks and messages are Triton's, in its order: trace_file
// ([ErrTraceFile]); "OFF" with other levels; then trace_rate (0 to
// 4294967295), trace_count (-1 to 2147483647) and log_frequency (0 to
// 4294967295), each a decimal number and only one of them ([ErrInvalid]).
func (s *Store) UpdateTrace(p Protocol, model string, u TraceUpdate) (Trace, error) {
	t, err := s.updateTrace(p, model, u)
	return s.report(model, t), err
}

func (s *Store) updateTrace(p Protocol, model string, u TraceUpdate) (Trace, error) {
	var (
		own modelTrace // the new values
		clr struct{ level, rate, count, logFrequency bool }
	)
	if _, ok := u[KeyTraceFile]; ok {
		return s.Trace(model), ErrTraceFile
	}
	if vs, ok := u[KeyTraceLevel]; ok {
		if len(vs) == 0 {
			clr.level = true
		}
		var level TraceLevel
		for _, v := range vs {
			switch v {
			case "OFF":
				if len(vs) != 1 {
					return s.Trace(model), invalidf("Expect only one trace level 'OFF' is specified")
				}
				level, own.level = TraceOff, &level
			case "TIMESTAMPS":
				level, own.level = level|TraceTimestamps, &level
			case "TENSORS":
				level, own.level = level|TraceTensors, &level
			}
		}
	}
	num := func(key string, lo, hi int64, clear *bool, setv func(int64)) error {
		vs, ok := u[key]
		switch {
		case !ok:
			return nil
		case len(vs) == 0:
			*clear = true
			return nil
		case len(vs) > 1:
			return invalidf("expect only 1 value for '%s'", key)
		}
		v := vs[0]
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return invalidf("Unable to parse '%s', got: %s", key, v)
		}
		if err == nil && n < lo && key == KeyTraceCount {
			sep := ""
			if p == GRPC {
				sep = " "
			}
			return invalidf("Unable to parse 'trace_count'. Expecting value >= -1, got:%s%s", sep, v)
		}
		if err != nil || n < lo || n > hi {
			return invalidf("Unable to parse '%s', value is out of range [ %d, %d ], got: %s", key, lo, hi, v)
		}
		setv(n)
		return nil
	}
	if err := num(KeyTraceRate, 0, math.MaxUint32, &clr.rate, func(n int64) { own.rate = ptr(uint32(n)) }); err != nil {
		return s.Trace(model), err
	}
	if err := num(KeyTraceCount, -1, math.MaxInt32, &clr.count, func(n int64) { own.count = ptr(int32(n)) }); err != nil {
		return s.Trace(model), err
	}
	if err := num(KeyLogFrequency, 0, math.MaxUint32, &clr.logFrequency, func(n int64) { own.logFrequency = ptr(uint32(n)) }); err != nil {
		return s.Trace(model), err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		g, def := s.global, s.def
		apply(&g.Level, own.level, clr.level, def.Level)
		apply(&g.Rate, own.rate, clr.rate, def.Rate)
		apply(&g.Count, own.count, clr.count, def.Count)
		apply(&g.LogFrequency, own.logFrequency, clr.logFrequency, def.LogFrequency)
		if err := s.checkLocked(g); err != nil {
			return s.global, err
		}
		s.global = g
		s.notifyLocked("")
		return g, nil
	}
	var m modelTrace
	if cur := s.models[model]; cur != nil {
		m = *cur
	}
	applyOwn(&m.level, own.level, clr.level)
	applyOwn(&m.rate, own.rate, clr.rate)
	applyOwn(&m.count, own.count, clr.count)
	applyOwn(&m.logFrequency, own.logFrequency, clr.logFrequency)
	if m == (modelTrace{}) {
		delete(s.models, model)
		s.notifyLocked(model)
		return s.traceLocked(model), nil
	}
	t := s.global
	set(&t.Level, m.level)
	set(&t.Rate, m.rate)
	set(&t.Count, m.count)
	set(&t.LogFrequency, m.logFrequency)
	if err := s.checkLocked(t); err != nil {
		return s.traceLocked(model), err
	}
	s.models[model] = &m
	s.notifyLocked(model)
	return t, nil
}

// checkLocked refuses a setting a tracer could not sample by, unless it
// disables tracing, as Triton does.
func (s *Store) checkLocked(t Trace) error {
	if !s.checked || t.Level == TraceOff {
		return nil
	}
	if ok, reason := t.Valid(); !ok {
		return invalidf("Attempting to set invalid trace setting :%s", reason)
	}
	return nil
}

// apply updates a global value: a new value wins over a clear, which
// restores the default.
func apply[T any](dst *T, v *T, clear bool, def T) {
	switch {
	case v != nil:
		*dst = *v
	case clear:
		*dst = def
	}
}

// applyOwn updates a model's own value: a new value wins over a clear,
// which removes it.
func applyOwn[T any](dst **T, v *T, clear bool) {
	switch {
	case v != nil:
		*dst = v
	case clear:
		*dst = nil
	}
}

func ptr[T any](v T) *T { return &v }

// ClearTrace drops every own trace value of model, so that the global
// settings apply to it again; for model "" it restores the global defaults
// ([Store.SetTraceDefaults]; models' own values stay). An application may call it when a model goes
// away, which Triton itself never does.
func (s *Store) ClearTrace(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		s.global = s.def
	} else {
		delete(s.models, model)
	}
	s.notifyLocked(model)
}

// SetTraceDefaults sets the global trace settings the server starts with
// (tritonserver's --trace-config and --trace-* flags, trace_file and
// log_frequency among them): the current global settings and the values
// that clearing a global setting restores. t.Mode is ignored (see
// [Store.SetTraceMode]). The protocols still cannot change trace_file.
func (s *Store) SetTraceDefaults(t Trace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Mode = s.global.Mode
	s.global, s.def = t, t
	s.notifyLocked("")
}

// SetTraceMode records the mode of the tracer that samples by these
// settings ("triton" or "opentelemetry"; trace.New calls it), reported as
// trace_mode. From then on an update that would leave a setting invalid
// and not disabled ([Trace.Valid]) is refused, as Triton refuses it:
// "Attempting to set invalid trace setting :<reason>" ([ErrInvalid]).
// Without a tracer the settings are only stored and reported.
func (s *Store) SetTraceMode(mode string) {
	if mode == "" {
		mode = ModeTriton
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global.Mode, s.def.Mode, s.checked = mode, mode, true
	s.notifyLocked("")
}

// WatchTrace registers f, called after every change of the trace settings,
// with the scope that changed (a model, or "" for the global settings,
// which the models without values of their own follow) and the settings
// that result ([Store.TraceSnapshot]). f runs with the store locked, in the
// order of the changes: it must be quick and must not call the store.
// It is also called once at once, with scope "". stop unregisters it.
func (s *Store) WatchTrace(f func(scope string, global Trace, models map[string]Trace)) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers == nil {
		s.watchers = make(map[int]func(string, Trace, map[string]Trace))
	}
	id := s.nextW
	s.nextW++
	s.watchers[id] = f
	f("", s.global, s.modelsLocked())
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers, id)
	}
}

func (s *Store) notifyLocked(scope string) {
	if len(s.watchers) == 0 {
		return
	}
	models := s.modelsLocked()
	for _, f := range s.watchers {
		f(scope, s.global, models)
	}
}

func (s *Store) modelsLocked() map[string]Trace {
	models := make(map[string]Trace, len(s.models))
	for m := range s.models {
		models[m] = s.traceLocked(m)
	}
	return models
}

// TraceSnapshot returns the global trace settings and those of every model
// with values of its own (the global ones filling in the rest), read at
// once.
func (s *Store) TraceSnapshot() (global Trace, models map[string]Trace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.global, s.modelsLocked()
}
