package httpapi

import (
	"net/http"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/internal/wire"
)

// handleHealth serves GET /v2/health/{live,ready}: 200 with an empty body,
// 400 with an empty body when not live/ready, and 503 "Server exiting"
// once the server is shutting down.
func (h *handler) handleHealth(w http.ResponseWriter, r *http.Request, kind string) {
	if !h.guard(w, r, wire.Health, http.MethodGet) {
		return
	}
	if !h.srv.Live() {
		writeErrorStatus(w, http.StatusServiceUnavailable, "Server exiting")
		return
	}
	ok := true
	if kind == "ready" {
		ok = h.srv.Ready(r.Context())
	}
	if ok {
		writeEmpty(w, http.StatusOK)
	} else {
		writeEmpty(w, http.StatusBadRequest)
	}
}

// handleServerMetadata serves GET /v2.
func (h *handler) handleServerMetadata(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r, wire.Metadata, http.MethodGet) {
		return
	}
	md := h.srv.Metadata()
	b := make([]byte, 0, 512)
	b = append(b, `{"name":`...)
	b = jsontext.AppendString(b, md.Name)
	b = append(b, `,"version":`...)
	b = jsontext.AppendString(b, md.Version)
	b = append(b, `,"extensions":[`...)
	for i, e := range wire.Extensions(h.srv.Metadata().Extensions, h.shm != nil) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, e)
	}
	b = append(b, "]}"...)
	writeJSON(w, b)
}

// handleModelReady serves GET /v2/models/{m}[/versions/{v}]/ready: 200
// empty when ready; 400 "Model version not ready" for a loaded version that
// is not ready; the lookup error otherwise (400 for a model the server has
// never heard of, 404 for a version that is not loaded, as Triton).
func (h *handler) handleModelReady(w http.ResponseWriter, r *http.Request, model, verStr string) {
	if !h.guard(w, r, wire.Health, http.MethodGet) {
		return
	}
	ver, err := parseVersion(model, verStr)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if !h.srv.Live() {
		writeErrorStatus(w, http.StatusServiceUnavailable, "Server not ready")
		return
	}
	if h.srv.ModelReady(r.Context(), model, ver) {
		writeEmpty(w, http.StatusOK)
		return
	}
	// Not ready: tell an unknown model and a missing version (errors) from
	// a version that exists but is not ready (false).
	if _, err := h.srv.ModelMetadata(model, ver); err != nil {
		switch triton.CodeOf(err) {
		case triton.InvalidArgument, triton.NotFound:
			h.writeError(w, err)
			return
		}
	}
	writeErrorStatus(w, http.StatusBadRequest, "Model version not ready")
}

// handleModelMetadata serves GET /v2/models/{m}[/versions/{v}].
func (h *handler) handleModelMetadata(w http.ResponseWriter, r *http.Request, model, verStr string) {
	if !h.guard(w, r, wire.Metadata, http.MethodGet) {
		return
	}
	ver, err := parseVersion(model, verStr)
	if err != nil {
		h.writeError(w, err)
		return
	}
	md, err := h.srv.ModelMetadata(model, ver)
	if err != nil {
		h.writeError(w, err)
		return
	}
	versions := md.Versions
	if ver != 0 { // a version in the URL: only that one
		versions = []string{strconv.FormatInt(ver, 10)}
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"name":`...)
	b = jsontext.AppendString(b, md.Name)
	b = append(b, `,"versions":[`...)
	for i, v := range versions {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, v)
	}
	b = append(b, `],"platform":`...)
	b = jsontext.AppendString(b, md.Platform)
	b = append(b, `,"inputs":`...)
	b = appendTensorMetadata(b, md.Inputs)
	b = append(b, `,"outputs":`...)
	b = appendTensorMetadata(b, md.Outputs)
	b = append(b, '}')
	writeJSON(w, b)
}

func appendTensorMetadata(b []byte, ts []triton.TensorMetadata) []byte {
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsontext.AppendString(b, t.Name)
		b = append(b, `,"datatype":`...)
		b = jsontext.AppendString(b, t.DataType)
		b = append(b, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
}

// handleModelConfig serves GET /v2/models/{m}[/versions/{v}]/config.
func (h *handler) handleModelConfig(w http.ResponseWriter, r *http.Request, model, verStr string) {
	if !h.guard(w, r, wire.ModelConfig, http.MethodGet) {
		return
	}
	ver, err := parseVersion(model, verStr)
	if err != nil {
		h.writeError(w, err)
		return
	}
	cfg, err := h.srv.ModelConfig(model, ver)
	if err != nil {
		h.writeError(w, err)
		return
	}
	body, err := modelConfigJSON(cfg)
	if err != nil {
		h.writeError(w, errorf(triton.Internal, "%v", err))
		return
	}
	writeJSON(w, body)
}

// handleStats serves GET /v2/models[/{m}[/versions/{v}]]/stats.
func (h *handler) handleStats(w http.ResponseWriter, r *http.Request, model, verStr string) {
	if !h.guard(w, r, wire.Statistics, http.MethodGet) {
		return
	}
	ver, err := parseVersion(model, verStr)
	if err != nil {
		h.writeError(w, err)
		return
	}
	stats, err := h.srv.Stats(model, ver)
	if err != nil {
		h.writeError(w, err)
		return
	}
	writeJSON(w, appendStats(make([]byte, 0, 1024), stats))
}

// appendStats writes the statistics extension's JSON (protocol spec
// §1.10).
func appendStats(b []byte, stats []triton.ModelStats) []byte {
	dur := func(b []byte, key string, d triton.StatDuration) []byte {
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, `":{"count":`...)
		b = strconv.AppendUint(b, d.Count, 10)
		b = append(b, `,"ns":`...)
		ns := max(d.Total.Nanoseconds(), 0)
		b = strconv.AppendUint(b, uint64(ns), 10)
		return append(b, '}')
	}
	b = append(b, `{"model_stats":[`...)
	for i, s := range stats {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsontext.AppendString(b, s.Name)
		b = append(b, `,"version":"`...)
		b = strconv.AppendInt(b, s.Version, 10)
		b = append(b, `","last_inference":`...)
		var last int64
		if !s.LastInference.IsZero() {
			last = s.LastInference.UnixMilli()
		}
		b = strconv.AppendInt(b, last, 10)
		b = append(b, `,"inference_count":`...)
		b = strconv.AppendUint(b, s.InferenceCount, 10)
		b = append(b, `,"execution_count":`...)
		b = strconv.AppendUint(b, s.ExecutionCount, 10)
		b = append(b, `,"inference_stats":{`...)
		b = dur(b, "success", s.Success)
		b = append(b, ',')
		b = dur(b, "fail", s.Fail)
		b = append(b, ',')
		b = dur(b, "queue", s.Queue)
		b = append(b, ',')
		b = dur(b, "compute_input", s.ComputeInput)
		b = append(b, ',')
		b = dur(b, "compute_infer", s.ComputeInfer)
		b = append(b, ',')
		b = dur(b, "compute_output", s.ComputeOutput)
		b = append(b, ',')
		b = dur(b, "cache_hit", s.CacheHit)
		b = append(b, ',')
		b = dur(b, "cache_miss", s.CacheMiss)
		b = append(b, `},"response_stats":{`...)
		for j, r := range s.Responses {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(r.Index), 10)
			b = append(b, `":{`...)
			b = dur(b, "compute_infer", r.ComputeInfer)
			b = append(b, ',')
			b = dur(b, "compute_output", r.ComputeOutput)
			b = append(b, ',')
			b = dur(b, "success", r.Success)
			b = append(b, ',')
			b = dur(b, "fail", r.Fail)
			b = append(b, ',')
			b = dur(b, "empty_response", r.EmptyResponse)
			b = append(b, ',')
			b = dur(b, "cancel", r.Cancel)
			b = append(b, '}')
		}
		b = append(b, `},"batch_stats":[`...)
		for j, bs := range s.Batches {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"batch_size":`...)
			b = strconv.AppendInt(b, bs.BatchSize, 10)
			b = append(b, ',')
			b = dur(b, "compute_input", bs.ComputeInput)
			b = append(b, ',')
			b = dur(b, "compute_infer", bs.ComputeInfer)
			b = append(b, ',')
			b = dur(b, "compute_output", bs.ComputeOutput)
			b = append(b, '}')
		}
		b = append(b, `],"memory_usage":[]}`...)
	}
	return append(b, "]}"...)
}
