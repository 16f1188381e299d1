package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/internal/wire"
)

// handleRepositoryIndex serves POST /v2/repository[/{repo}]/index (the
// repository name is ignored, as Triton ignores it). Body: empty or
// {"ready": bool}.
func (h *handler) handleRepositoryIndex(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r, wire.ModelRepository, http.MethodPost) {
		return
	}
	b, err := h.readBody(w, r, false, -1)
	if err != nil {
		h.writeError(w, err)
		return
	}
	defer b.release()
	readyOnly := false
	if len(b.data) > 0 {
		v, err := parseJSON(b.data)
		if err != nil {
			h.writeError(w, errorf(triton.InvalidArgument, "%v", err))
			return
		}
		if rv, ok := get(v.members(), "ready"); ok {
			if readyOnly, ok = rv.boolean(); !ok {
				h.writeError(w, errorf(triton.InvalidArgument, "Invalid value for 'ready': expected a boolean"))
				return
			}
		}
	}
	out := append(make([]byte, 0, 256), '[')
	n := 0
	for _, st := range h.srv.Index(r.Context()) {
		if readyOnly && st.State != "READY" {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"name":`...)
		out = jsontext.AppendString(out, st.Name)
		if st.Version > 0 {
			out = append(out, `,"version":"`...)
			out = strconv.AppendInt(out, st.Version, 10)
			out = append(out, '"')
		}
		if st.State != "" {
			out = append(out, `,"state":`...)
			out = jsontext.AppendString(out, st.State)
		}
		if st.Reason != "" {
			out = append(out, `,"reason":`...)
			out = jsontext.AppendString(out, st.Reason)
		}
		out = append(out, '}')
	}
	writeJSON(w, append(out, ']'))
}

// handleRepositoryControl serves POST
// /v2/repository[/{repo}]/models/{m}/{load,unload}. A repository name is
// Unsupported, as in Triton. Loads and unloads run to their end even if
// the client disconnects: they change server state, which a dropped
// connection should not leave half done.
func (h *handler) handleRepositoryControl(w http.ResponseWriter, r *http.Request, repo, model, action string) {
	if !h.guard(w, r, wire.ModelRepository, http.MethodPost) {
		return
	}
	if repo != "" {
		h.writeError(w, errorf(triton.Unsupported, "'repository_name' specification is not supported"))
		return
	}
	b, err := h.readBody(w, r, false, -1)
	if err != nil {
		h.writeError(w, err)
		return
	}
	defer b.release()
	var params []member
	if len(b.data) > 0 {
		v, err := parseJSON(b.data)
		if err != nil {
			h.writeError(w, errorf(triton.InvalidArgument, "%v", err))
			return
		}
		if pv, ok := get(v.members(), "parameters"); ok {
			if !pv.isObject() {
				h.writeError(w, parseErr("parameters", errNotObject))
				return
			}
			params = pv.members()
		}
	}
	ctx := context.WithoutCancel(r.Context())
	if action == "unload" {
		opts := &triton.UnloadOptions{}
		if v, ok := get(params, "unload_dependents"); ok {
			if opts.Dependents, ok = v.boolean(); !ok {
				h.writeError(w, parseErr("unload_dependents", errNotBool))
				return
			}
		}
		if err := h.srv.Unload(ctx, model, opts); err != nil {
			h.writeError(w, err)
			return
		}
		writeJSONEmpty(w)
		return
	}
	opts, err := loadOptions(params)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if err := h.srv.Load(ctx, model, opts); err != nil {
		h.writeError(w, err)
		return
	}
	writeJSONEmpty(w)
}

// loadOptions reads a load's parameters: "config" (a ModelConfig in JSON)
// and "file:<path>" (base64 file contents, path relative to the model
// folder, such as "1/model.onnx"). Every value is a string. Any other key
// is refused with Triton's message, as 400 (Triton: 500).
func loadOptions(params []member) (*triton.LoadOptions, error) {
	if len(params) == 0 {
		return nil, nil
	}
	opts := &triton.LoadOptions{}
	for _, m := range params {
		key := string(m.key)
		s, ok := m.val.str()
		if !ok {
			return nil, parseErr(key, errNotString)
		}
		switch {
		case key == "config":
			opts.Config = string(s)
		case strings.HasPrefix(key, "file:"):
			data, err := base64.StdEncoding.DecodeString(string(s))
			if err != nil {
				return nil, errorf(triton.InvalidArgument, "failed to decode the base64 content of load parameter '%s': %v", key, err)
			}
			if opts.Files == nil {
				opts.Files = make(map[string][]byte)
			}
			opts.Files[strings.TrimPrefix(key, "file:")] = data
		default:
			// Triton: INTERNAL (500), for a client's unknown key.
			return nil, errorf(triton.InvalidArgument, "unexpected error on creating Triton parameter")
		}
	}
	return opts, nil
}
