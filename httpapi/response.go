package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/sysshm"
)

// Shared header values of the hot path (net/http only reads them).
var (
	octetStream     = []string{"application/octet-stream"}
	applicationJSON = []string{"application/json"}
)

// writeInferResponse answers an inference: the JSON header (key order as
// Triton's: id, model_name, model_version, parameters when the response has
// any, outputs), then the binary
// outputs in output order. Outputs to shared memory are written into their
// regions and listed without data. The body is compressed when the
// client's Accept-Encoding asks for it and it is at least h.minCompress
// bytes long.
func (h *handler) writeInferResponse(w http.ResponseWriter, r *http.Request, call *inferCall, resp *triton.InferResponse) error {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	if resp.ID != "" {
		b = append(b, `"id":`...)
		b = jsontext.AppendString(b, resp.ID)
		b = append(b, ',')
	}
	b = append(b, `"model_name":`...)
	b = jsontext.AppendString(b, resp.Model)
	b = append(b, `,"model_version":"`...)
	b = strconv.AppendInt(b, resp.Version, 10)
	b = append(b, '"')
	if len(resp.Parameters) > 0 {
		b = append(b, `,"parameters":`...)
		b = appendParameters(b, resp.Parameters)
	}
	b = append(b, `,"outputs":[`...)
	var bins [][]byte
	binSize := 0
	for i, out := range resp.Outputs {
		spec := call.output(out.Name)
		t := out
		if spec.classes > 0 {
			labels, err := h.srv.Labels(call.model, resp.Version, out.Name)
			if err != nil {
				return err
			}
			if t, err = wire.Classify(out, spec.classes, call.maxBatch > 0, labels); err != nil {
				return err
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsontext.AppendString(b, t.Name)
		b = append(b, `,"datatype":`...)
		b = jsontext.AppendString(b, t.DataType.String())
		b = append(b, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, ']')
		switch spec.kind {
		case kindSHM:
			if len(t.Data) > len(spec.shm) {
				// Triton: INTERNAL (500), for a region the client sized.
				return errorf(triton.InvalidArgument, "shared memory size specified with the request for output '%s' (%d bytes) should be at least %d bytes to hold the results",
					t.Name, len(spec.shm), len(t.Data))
			}
			if _, err := sysshm.Copy(spec.shm, t.Data); err != nil {
				return wire.SHMError(err)
			}
		case kindBinary:
			b = append(b, `,"parameters":{"binary_data_size":`...)
			b = strconv.AppendInt(b, int64(len(t.Data)), 10)
			b = append(b, '}')
			if len(t.Data) > 0 {
				bins = append(bins, t.Data)
				binSize += len(t.Data)
			}
		default:
			b = append(b, `,"data":`...)
			var err error
			if b, err = appendJSONData(b, t); err != nil {
				return err
			}
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)

	hdr := w.Header()
	if len(bins) > 0 {
		hdr["Content-Type"] = octetStream
		hdr[headerLengthHeader] = []string{strconv.Itoa(len(b))}
	} else {
		hdr["Content-Type"] = applicationJSON
	}
	if len(b)+binSize >= h.minCompress {
		// Only now does Accept-Encoding choose the answer.
		if _, ok := hdr["Vary"]; ok {
			hdr.Add("Vary", "Accept-Encoding")
		} else {
			hdr["Vary"] = varyAcceptEncoding
		}
		if c := responseEncoding(r); c != identity {
			_ = writeCompressed(w, c, h.level, b, bins) // an error: the client is gone
			return nil
		}
	}
	hdr["Content-Length"] = []string{strconv.Itoa(len(b) + binSize)}
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		return nil // the client is gone; nothing to answer
	}
	for _, d := range bins {
		if _, err := w.Write(d); err != nil {
			return nil
		}
	}
	return nil
}

// appendParameters appends response parameters as a JSON object, keys in
// order (the server has checked the values: bool, int64, uint64, string,
// or a finite float64).
func appendParameters(b []byte, p map[string]any) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(p)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k)
		b = append(b, ':')
		b = jsontext.AppendParameter(b, p[k])
	}
	return append(b, '}')
}
