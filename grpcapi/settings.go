package grpcapi

import (
	"context"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/settings"
)

// LogSettings answers the log settings, after applying the request's, if
// any: log_info, log_warning, log_error (bool_param), log_verbose_level
// (uint32_param) and log_format (string_param, "default" or "ISO8601").
// log_file is refused (UNIMPLEMENTED), a value of the wrong type or an
// unknown format is INVALID_ARGUMENT, with Triton's messages; a refused
// request changes nothing. The settings are the server's, shared with the
// HTTP adapter through [WithSettings]. The answer has all six keys.
func (s *Service) LogSettings(ctx context.Context, req *inferencepb.LogSettingsRequest) (*inferencepb.LogSettingsResponse, error) {
	if err := s.allowed(ctx, wire.Logging); err != nil {
		return nil, err
	}
	l := s.settings.Log()
	if ps := req.GetSettings(); len(ps) > 0 {
		upd, err := logUpdate(ps)
		if err != nil {
			return nil, s.toStatus(err)
		}
		if l, err = s.settings.UpdateLog(settings.GRPC, upd); err != nil {
			return nil, s.toStatus(wire.SettingsError(err))
		}
	}
	str := func(v string) *inferencepb.LogSettingsResponse_SettingValue {
		return &inferencepb.LogSettingsResponse_SettingValue{ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_StringParam{StringParam: v}}
	}
	boolean := func(v bool) *inferencepb.LogSettingsResponse_SettingValue {
		return &inferencepb.LogSettingsResponse_SettingValue{ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_BoolParam{BoolParam: v}}
	}
	return &inferencepb.LogSettingsResponse{Settings: map[string]*inferencepb.LogSettingsResponse_SettingValue{
		"log_file":    str(l.File),
		"log_info":    boolean(l.Info),
		"log_warning": boolean(l.Warning),
		"log_error":   boolean(l.Error),
		"log_verbose_level": {ParameterChoice: &inferencepb.LogSettingsResponse_SettingValue_Uint32Param{
			Uint32Param: l.VerboseLevel,
		}},
		"log_format": str(l.Format),
	}}, nil
}

// logUpdate reads a LogSettings request, checking the value types in
// Triton's order (log_file first) with its messages; the values are the
// store's to check. Unknown keys are ignored, as in Triton.
func logUpdate(ps map[string]*inferencepb.LogSettingsRequest_SettingValue) (settings.LogUpdate, error) {
	var upd settings.LogUpdate
	if _, ok := ps["log_file"]; ok {
		return upd, wire.SettingsError(settings.ErrLogFile)
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{{"log_info", &upd.Info}, {"log_warning", &upd.Warning}, {"log_error", &upd.Error}} {
		if p, ok := ps[f.key]; ok {
			v, ok := p.GetParameterChoice().(*inferencepb.LogSettingsRequest_SettingValue_BoolParam)
			if !ok {
				return upd, errorf(triton.InvalidArgument, "expect boolean for '%s'", f.key)
			}
			*f.dst = &v.BoolParam
		}
	}
	if p, ok := ps["log_verbose_level"]; ok {
		v, ok := p.GetParameterChoice().(*inferencepb.LogSettingsRequest_SettingValue_Uint32Param)
		if !ok {
			return upd, errorf(triton.InvalidArgument, "expect int32 for 'log_verbose_level'")
		}
		upd.VerboseLevel = &v.Uint32Param
	}
	if p, ok := ps["log_format"]; ok {
		v, ok := p.GetParameterChoice().(*inferencepb.LogSettingsRequest_SettingValue_StringParam)
		if !ok {
			return upd, errorf(triton.InvalidArgument, "expect string for 'log_format'")
		}
		upd.Format = &v.StringParam
	}
	return upd, nil
}

// TraceSetting answers the trace settings of model_name (empty: the global
// ones), after applying the request's, if any: trace_level ("OFF", or
// "TIMESTAMPS" and/or "TENSORS"), trace_rate, trace_count and
// log_frequency (one decimal string each). A key with no values clears a
// model's own value (the global one applies again) or resets a global one
// to its default; trace_file is refused (UNIMPLEMENTED); bad values are
// INVALID_ARGUMENT with Triton's messages, and a refused request changes
// nothing. The model must be ready ("Request for unknown model : m"; the
// model lookup's error for a model the server never heard of). The
// settings are the server's, shared with the HTTP adapter through
// [WithSettings]; they are stored and reported, but no traces are
// produced. The answer has every key Triton's has.
func (s *Service) TraceSetting(ctx context.Context, req *inferencepb.TraceSettingRequest) (*inferencepb.TraceSettingResponse, error) {
	if err := s.allowed(ctx, wire.Trace); err != nil {
		return nil, err
	}
	model := req.GetModelName()
	if model != "" && !s.srv.ModelReady(ctx, model, 0) {
		if _, err := s.srv.ModelMetadata(model, 0); err != nil && triton.CodeOf(err) == triton.InvalidArgument {
			return nil, s.toStatus(err)
		}
		return nil, s.toStatus(errorf(triton.InvalidArgument, "Request for unknown model : %s", model))
	}
	t := s.settings.Trace(model)
	if ps := req.GetSettings(); len(ps) > 0 {
		upd := make(settings.TraceUpdate, len(ps))
		for k, v := range ps {
			upd[k] = v.GetValue()
		}
		var err error
		if t, err = s.settings.UpdateTrace(settings.GRPC, model, upd); err != nil {
			return nil, s.toStatus(wire.SettingsError(err))
		}
	}
	val := func(vs ...string) *inferencepb.TraceSettingResponse_SettingValue {
		return &inferencepb.TraceSettingResponse_SettingValue{Value: vs}
	}
	out := map[string]*inferencepb.TraceSettingResponse_SettingValue{
		"trace_level": val(t.Level.Names()...),
		"trace_rate":  val(strconv.FormatUint(uint64(t.Rate), 10)),
		"trace_count": val(strconv.FormatInt(int64(t.Count), 10)),
		"trace_mode":  val(t.Mode),
	}
	if t.Mode == settings.ModeOpenTelemetry {
		for _, o := range s.settings.TraceOptions() { // in place of the trace file's, as Triton answers
			out[o.Key] = val(o.Values...)
		}
	} else {
		out["log_frequency"] = val(strconv.FormatUint(uint64(t.LogFrequency), 10))
		out["trace_file"] = val(t.File)
	}
	return &inferencepb.TraceSettingResponse{Settings: out}, nil
}
