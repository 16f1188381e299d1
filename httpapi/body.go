package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
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
// decompress, a Content-Encoding of gzip or deflate is undone as the body
// arrives (the decompressed size bounded by h.maxSize too: a zip bomb
// stops at the limit), identity or none is taken as it is, anything else
// is Unsupported; Triton decompresses inference requests only.
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
	if alignAt >= 0 {
		pad = (8 - alignAt%8) % 8
	}
	if enc == "gzip" || enc == "deflate" {
		return h.decompress(w, r, enc, pad)
	}
	return h.readAll(w, r, pad)
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
			return body{}, readError(err, h.maxSize, "")
		}
		return b, nil
	}
	var buf bytes.Buffer
	buf.Write(make([]byte, pad))
	if _, err := buf.ReadFrom(rd); err != nil {
		return body{}, readError(err, h.maxSize, "")
	}
	return body{data: buf.Bytes()[pad:]}, nil
}

// readError is the answer to a body that failed to arrive, or with enc
// set, to decompress: the size limit when the body as received is too
// large.
func readError(err error, limit int64, enc string) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return tooLarge("Request body", 0, limit)
	}
	if enc != "" {
		return errorf(triton.InvalidArgument, "failed to decompress the request body (%s): %v", enc, err)
	}
	return errorf(triton.InvalidArgument, "failed to read the request body: %v", err)
}
