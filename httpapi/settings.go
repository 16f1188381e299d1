package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/settings"
)

// handleLogging serves GET and POST /v2/logging. A POST sets any subset of
// log_info, log_warning, log_error (booleans), log_verbose_level (unsigned,
// at most 4294967295) and log_format ("default" or "ISO8601"); null values
// are ignored; a log_file is refused (501), as Triton refuses it; an
// unknown log_format is 400 (Triton: 503). The whole
// update is checked before any of it is applied (package settings holds
// the state and its rules). The answer is the full settings.
func (h *handler) handleLogging(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r, wire.Logging, http.MethodGet, http.MethodPost) {
		return
	}
	l := h.settings.Log()
	if r.Method == http.MethodPost {
		b, err := h.readBody(w, r, false, -1)
		if err != nil {
			h.writeError(w, err)
			return
		}
		defer b.release()
		upd, err := parseLogUpdate(b.data)
		if err != nil {
			h.writeError(w, err)
			return
		}
		if l, err = h.settings.UpdateLog(settings.HTTP, upd); err != nil {
			h.writeError(w, settingsError(err))
			return
		}
	}
	out := append(make([]byte, 0, 160), `{"log_file":`...)
	out = jsontext.AppendString(out, l.File)
	out = append(out, `,"log_info":`...)
	out = strconv.AppendBool(out, l.Info)
	out = append(out, `,"log_warning":`...)
	out = strconv.AppendBool(out, l.Warning)
	out = append(out, `,"log_error":`...)
	out = strconv.AppendBool(out, l.Error)
	out = append(out, `,"log_verbose_level":`...)
	out = strconv.AppendUint(out, uint64(l.VerboseLevel), 10)
	out = append(out, `,"log_format":`...)
	out = jsontext.AppendString(out, l.Format)
	writeJSON(w, append(out, '}'))
}

// parseLogUpdate reads a POST /v2/logging body, checking the JSON types
// with Triton's messages; the values are the store's to check.
func parseLogUpdate(data []byte) (settings.LogUpdate, error) {
	var upd settings.LogUpdate
	v, err := parseJSON(data)
	if err != nil {
		return upd, errorf(triton.InvalidArgument, "%v", err)
	}
	ms := v.members()
	notNull := func(key string) (jval, bool) {
		v, ok := get(ms, key)
		return v, ok && !v.isNull()
	}
	if _, ok := notNull("log_file"); ok {
		return upd, wire.SettingsError(settings.ErrLogFile)
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"log_info", &upd.Info}, {"log_warning", &upd.Warning}, {"log_error", &upd.Error}} {
		if v, ok := notNull(f.key); ok {
			b, ok := v.boolean()
			if !ok {
				return upd, errorf(triton.InvalidArgument, "%s", errNotBool)
			}
			*f.dst = &b
		}
	}
	if v, ok := notNull("log_verbose_level"); ok {
		n, ok := v.uint()
		if !ok {
			return upd, errorf(triton.InvalidArgument, "%s", errNotUint)
		}
		if n > math.MaxUint32 {
			return upd, errorf(triton.InvalidArgument, "Unable to parse 'log_verbose_level', value is out of range [ 0, %d ], got: %d", uint32(math.MaxUint32), n)
		}
		verbose := uint32(n)
		upd.VerboseLevel = &verbose
	}
	if v, ok := notNull("log_format"); ok {
		f, ok := v.str()
		if !ok {
			return upd, errorf(triton.InvalidArgument, "%s", errNotString)
		}
		format := string(f)
		upd.Format = &format
	}
	return upd, nil
}

// handleTrace serves GET and POST /v2/trace/setting (model "") and
// /v2/models/{m}/trace/setting. The model must be ready. A POST sets any
// subset of trace_level (array of "OFF", "TIMESTAMPS", "TENSORS"),
// trace_rate, trace_count and log_frequency (decimal strings); null clears
// a model's own value (the global one applies again) or resets a global
// one to its default; trace_file is refused (501). The answer is the full
// settings of the scope.
func (h *handler) handleTrace(w http.ResponseWriter, r *http.Request, model string) {
	if !h.guard(w, r, wire.Trace, http.MethodGet, http.MethodPost) {
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
	t := h.settings.Trace(model)
	if r.Method == http.MethodPost {
		b, err := h.readBody(w, r, false, -1)
		if err != nil {
			h.writeError(w, err)
			return
		}
		defer b.release()
		upd, err := parseTraceUpdate(b.data)
		if err != nil {
			h.writeError(w, err)
			return
		}
		if t, err = h.settings.UpdateTrace(settings.HTTP, model, upd); err != nil {
			h.writeError(w, settingsError(err))
			return
		}
	}
	out := append(make([]byte, 0, 160), `{"trace_level":[`...)
	for i, name := range t.Level.Names() {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsontext.AppendString(out, name)
	}
	out = append(out, `],"trace_rate":"`...)
	out = strconv.AppendUint(out, uint64(t.Rate), 10)
	out = append(out, `","trace_count":"`...)
	out = strconv.AppendInt(out, int64(t.Count), 10)
	out = append(out, '"')
	if t.Mode == settings.ModeOpenTelemetry {
		// Triton's opentelemetry settings in place of the trace file's: a
		// string, or an array when given more than once (resource).
		for _, o := range h.settings.TraceOptions() {
			out = append(out, ',')
			out = jsontext.AppendString(out, o.Key)
			out = append(out, ':')
			if len(o.Values) == 1 {
				out = jsontext.AppendString(out, o.Values[0])
				continue
			}
			out = append(out, '[')
			for i, v := range o.Values {
				if i > 0 {
					out = append(out, ',')
				}
				out = jsontext.AppendString(out, v)
			}
			out = append(out, ']')
		}
	} else {
		out = append(out, `,"log_frequency":"`...)
		out = strconv.AppendUint(out, uint64(t.LogFrequency), 10)
		out = append(out, `","trace_file":`...)
		out = jsontext.AppendString(out, t.File)
	}
	out = append(out, `,"trace_mode":`...)
	out = jsontext.AppendString(out, t.Mode)
	writeJSON(w, append(out, '}'))
}

// parseTraceUpdate reads a POST trace setting body into an update, checking
// the JSON types with Triton's messages: null becomes a key without values
// (clear), a string one value, a level array its names (an empty array
// changes nothing, as in Triton). The values are the store's to check.
func parseTraceUpdate(data []byte) (settings.TraceUpdate, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, errorf(triton.InvalidArgument, "%v", err)
	}
	ms := v.members()
	if _, ok := get(ms, settings.KeyTraceFile); ok {
		return nil, wire.SettingsError(settings.ErrTraceFile)
	}
	upd := settings.TraceUpdate{}
	if v, ok := get(ms, settings.KeyTraceLevel); ok {
		switch {
		case v.isNull():
			upd[settings.KeyTraceLevel] = nil
		case !v.isArray():
			return nil, errorf(triton.InvalidArgument, "%s", errNotArray)
		default:
			var names []string
			for _, e := range v.elements() {
				s, ok := e.str()
				if !ok {
					return nil, errorf(triton.InvalidArgument, "%s", errNotString)
				}
				names = append(names, string(s))
			}
			if len(names) > 0 {
				upd[settings.KeyTraceLevel] = names
			}
		}
	}
	for _, key := range []string{settings.KeyTraceRate, settings.KeyTraceCount, settings.KeyLogFrequency} {
		v, ok := get(ms, key)
		switch {
		case !ok:
		case v.isNull():
			upd[key] = nil
		default:
			s, ok := v.str()
			if !ok {
				return nil, errorf(triton.InvalidArgument, "%s", errNotString)
			}
			upd[key] = []string{string(s)}
		}
	}
	return upd, nil
}

// settingsError gives a settings error its code, as wire.SettingsError
// does, except that a value the settings do not know (Triton's
// UNAVAILABLE, 503, for an unknown log_format) is the client's mistake:
// 400.
func settingsError(err error) error {
	if errors.Is(err, settings.ErrUnavailable) {
		return &triton.Error{Code: triton.InvalidArgument, Err: err}
	}
	return wire.SettingsError(err)
}
