package httpapi

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/triton-go/triton"
)

// tooLarge is the error for a request past the size limit, worded as
// Triton's (clients match "exceeds the maximum allowed value").
func tooLarge(what string, size, limit int64) error {
	sz := "more than " + strconv.FormatInt(limit, 10)
	if size > limit {
		sz = strconv.FormatInt(size, 10)
	}
	return errorf(triton.InvalidArgument,
		"%s size of %s bytes exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).",
		what, sz, limit)
}

// bodyPool recycles request-body buffers up to poolMax bytes: a request's
// binary inputs alias its body, which is released only once the response
// is written (Infer never retains inputs).
var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

const poolMax = 1 << 20

// body is a request body read into memory.
type body struct {
	data []byte
	buf  *[]byte // pooled storage, or nil
}

func (b *body) release() {
	if b.buf != nil && cap(*b.buf) <= poolMax {
		*b.buf = (*b.buf)[:0]
		bodyPool.Put(b.buf)
	}
	b.buf, b.data = nil, nil
}

// readBody reads the request body, at most h.maxSize bytes of it. With
// decompress, a Content-Encoding of gzip or deflate is undone first (the
// decompressed size bounded by h.maxSize too: a zip bomb stops at the
// limit), identity or none is taken as it is, anything else is
// Unsupported; Triton decompresses inference requests only.
//
// alignAt is an offset into the (decompressed) body that should start at an
// 8-byte aligned address, or -1: the binary tensors of an inference
// request start there, and backends view them as typed slices.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, decompress bool, alignAt int) (body, error) {
	enc := ""
	if decompress {
		enc = r.Header.Get("Content-Encoding")
		switch enc {
		case "", "identity", "gzip", "deflate":
		default:
			w.Header().Set("Accept-Encoding", "gzip, deflate")
			return body{}, errorf(triton.Unsupported, "Unsupported compression type")
		}
	}
	if r.ContentLength > h.maxSize {
		return body{}, tooLarge("Request body", r.ContentLength, h.maxSize)
	}
	pad := 0
	if alignAt >= 0 && enc != "gzip" && enc != "deflate" {
		pad = (8 - alignAt%8) % 8
	}
	raw, err := h.readAll(w, r, pad)
	if err != nil {
		return body{}, err
	}
	switch enc {
	case "gzip", "deflate":
		defer raw.release()
		var zr io.ReadCloser
		var err error
		if enc == "gzip" {
			zr, err = gzip.NewReader(bytes.NewReader(raw.data))
		} else {
			zr, err = zlib.NewReader(bytes.NewReader(raw.data))
		}
		if err != nil {
			return body{}, errorf(triton.InvalidArgument, "failed to decompress the request body (%s): %v", enc, err)
		}
		defer zr.Close()
		var out bytes.Buffer
		if alignAt >= 0 {
			out.Write(make([]byte, (8-alignAt%8)%8))
		}
		skip := out.Len()
		n, err := out.ReadFrom(io.LimitReader(zr, h.maxSize+1))
		if err != nil {
			return body{}, errorf(triton.InvalidArgument, "failed to decompress the request body (%s): %v", enc, err)
		}
		if n > h.maxSize {
			return body{}, tooLarge("Decompressed request body", 0, h.maxSize)
		}
		return body{data: out.Bytes()[skip:]}, nil
	}
	return raw, nil
}

// readAll reads the body as it arrives, bounded by h.maxSize, pad bytes
// into its buffer (buffers are 8-byte aligned).
func (h *handler) readAll(w http.ResponseWriter, r *http.Request, pad int) (body, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return body{data: []byte{}}, nil
	}
	rd := http.MaxBytesReader(w, r.Body, h.maxSize)
	if n := r.ContentLength; n >= 0 {
		b := body{}
		total := n + int64(pad)
		if total <= poolMax {
			b.buf = bodyPool.Get().(*[]byte)
			if int64(cap(*b.buf)) < total {
				*b.buf = make([]byte, total, max(total, 4096))
			}
			b.data = (*b.buf)[pad:total]
		} else {
			b.data = make([]byte, total)[pad:]
		}
		if _, err := io.ReadFull(rd, b.data); err != nil {
			b.release()
			return body{}, readError(err, h.maxSize)
		}
		return b, nil
	}
	var buf bytes.Buffer
	buf.Write(make([]byte, pad))
	if _, err := buf.ReadFrom(rd); err != nil {
		return body{}, readError(err, h.maxSize)
	}
	return body{data: buf.Bytes()[pad:]}, nil
}

func readError(err error, limit int64) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return tooLarge("Request body", 0, limit)
	}
	return errorf(triton.InvalidArgument, "failed to read the request body: %v", err)
}

// responseEncoding picks the response compression from Accept-Encoding as
// Triton does: the gzip, deflate or identity coding with the highest
// q-value, the first on ties, identity when none is acceptable.
func responseEncoding(r *http.Request) string {
	best, weight := "identity", 0.0
	for _, ae := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(ae, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			q := 1.0
			if params != "" {
				k, v, ok := strings.Cut(strings.TrimSpace(params), "=")
				if !ok || strings.TrimSpace(k) != "q" {
					continue
				}
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					continue
				}
				q = f
			}
			switch name {
			case "identity", "gzip", "deflate":
				if q > weight {
					best, weight = name, q
				}
			}
		}
	}
	return best
}

// compress returns data compressed with enc ("gzip" or "deflate", the
// zlib format HTTP means by it).
func compress(enc string, data ...[]byte) ([]byte, error) {
	var out bytes.Buffer
	var zw io.WriteCloser
	if enc == "gzip" {
		zw = gzip.NewWriter(&out)
	} else {
		zw = zlib.NewWriter(&out)
	}
	for _, d := range data {
		if _, err := zw.Write(d); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
