package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/sysshm"
)

// handleSystemSharedMemory serves /v2/systemsharedmemory[/region/{r}]/
// {status,register,unregister}.
func (h *handler) handleSystemSharedMemory(w http.ResponseWriter, r *http.Request, region, action string) {
	m := http.MethodPost
	if action == "status" {
		m = http.MethodGet
	}
	if !h.guard(w, r, wire.SharedMemory, m) {
		return
	}
	switch action {
	case "status":
		var regions []sysshm.Region
		if h.shm != nil {
			var err error
			if regions, err = h.shm.Status(region); err != nil {
				h.writeError(w, errorf(triton.NotFound, "Unable to find system shared memory region: '%s'", region))
				return
			}
		} else if region != "" {
			h.writeError(w, errorf(triton.NotFound, "Unable to find system shared memory region: '%s'", region))
			return
		}
		b := append(make([]byte, 0, 64*len(regions)+2), '[')
		for i, rg := range regions {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsontext.AppendString(b, rg.Name)
			b = append(b, `,"key":`...)
			b = jsontext.AppendString(b, rg.Key)
			b = append(b, `,"offset":`...)
			b = strconv.AppendUint(b, rg.Offset, 10)
			b = append(b, `,"byte_size":`...)
			b = strconv.AppendUint(b, rg.ByteSize, 10)
			b = append(b, '}')
		}
		writeJSON(w, append(b, ']'))
	case "register":
		if h.shm == nil {
			h.writeError(w, wire.ErrSHMDisabled)
			return
		}
		if region == "" {
			h.writeError(w, errorf(triton.InvalidArgument, "'region name' is necessary to register system shared memory region"))
			return
		}
		key, offset, size, err := h.registerBody(w, r)
		if err != nil {
			h.writeError(w, err)
			return
		}
		if err := h.shm.Register(region, key, offset, size); err != nil {
			h.writeError(w, wire.SHMError(err))
			return
		}
		writeJSONEmpty(w)
	case "unregister":
		if h.shm == nil {
			h.writeError(w, wire.ErrSHMDisabled)
			return
		}
		var err error
		if region == "" {
			err = h.shm.UnregisterAll()
		} else if err = h.shm.Unregister(region); errors.Is(err, sysshm.ErrNotFound) {
			err = nil // Triton answers success for a region it does not have
		}
		if err != nil {
			h.writeError(w, wire.SHMError(err))
			return
		}
		writeJSONEmpty(w)
	}
}

// registerBody reads {"key":s,"offset":n,"byte_size":n}.
func (h *handler) registerBody(w http.ResponseWriter, r *http.Request) (key string, offset, size uint64, err error) {
	b, err := h.readBody(w, r, false, -1)
	if err != nil {
		return "", 0, 0, err
	}
	defer b.release()
	v, err := parseJSON(b.data)
	if err != nil {
		return "", 0, 0, errorf(triton.InvalidArgument, "%v", err)
	}
	ms := v.members()
	kv, ok := get(ms, "key")
	if !ok {
		return "", 0, 0, errorf(triton.InvalidArgument, "Shared memory register request has no 'key' field")
	}
	ks, ok := kv.str()
	if !ok {
		return "", 0, 0, parseErr("key", errNotString)
	}
	if ov, ok := get(ms, "offset"); ok {
		if offset, ok = ov.uint(); !ok {
			return "", 0, 0, parseErr("offset", errNotUint)
		}
	}
	sv, ok := get(ms, "byte_size")
	if !ok {
		return "", 0, 0, errorf(triton.InvalidArgument, "Shared memory register request has no 'byte_size' field")
	}
	if size, ok = sv.uint(); !ok {
		return "", 0, 0, parseErr("byte_size", errNotUint)
	}
	return string(ks), offset, size, nil
}

// handleCUDASharedMemory serves /v2/cudasharedmemory/... as a Triton built
// without GPU support does: nothing is ever registered, so status lists
// nothing (and names a system region as one), register fails, unregister
// succeeds.
func (h *handler) handleCUDASharedMemory(w http.ResponseWriter, r *http.Request, region, action string) {
	m := http.MethodPost
	if action == "status" {
		m = http.MethodGet
	}
	if !h.guard(w, r, wire.SharedMemory, m) {
		return
	}
	switch action {
	case "status":
		if region == "" {
			writeJSON(w, []byte("[]"))
			return
		}
		if h.shm != nil {
			if _, err := h.shm.Status(region); err == nil {
				h.writeError(w, errorf(triton.NotFound, "The region named '%s' is registered as system shared memory, not CUDA shared memory", region))
				return
			}
		}
		h.writeError(w, errorf(triton.NotFound, "Unable to find cuda shared memory region: '%s'", region))
	case "register":
		if h.shm == nil {
			h.writeError(w, wire.ErrSHMDisabled)
			return
		}
		if region == "" {
			h.writeError(w, errorf(triton.InvalidArgument, "'region name' is necessary to register cuda shared memory region"))
			return
		}
		h.writeError(w, errorf(triton.InvalidArgument, "failed to register CUDA shared memory region: '%s', GPUs not supported", region))
	case "unregister":
		if h.shm == nil {
			h.writeError(w, wire.ErrSHMDisabled)
			return
		}
		writeJSONEmpty(w)
	}
}

// writeJSONEmpty answers 200 with an empty body on an endpoint whose
// answers are JSON (Triton sets the content type before it knows).
func writeJSONEmpty(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	writeEmpty(w, http.StatusOK)
}
