package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
)

// httpStatus is the one mapping from a [triton.Code] to an HTTP status,
// Triton's HttpCodeFromError (protocol spec §0.2) plus DeadlineExceeded,
// which Triton does not have.
func httpStatus(c triton.Code) int {
	switch c {
	case triton.Internal:
		return http.StatusInternalServerError
	case triton.NotFound:
		return http.StatusNotFound
	case triton.Unavailable:
		return http.StatusServiceUnavailable
	case triton.Unsupported:
		return http.StatusNotImplemented
	case triton.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case triton.Unknown, triton.InvalidArgument, triton.AlreadyExists, triton.Cancelled:
		return http.StatusBadRequest
	}
	// A code this adapter does not know is a bug on the server's side.
	return http.StatusInternalServerError
}

// errorf makes an adapter error with a code, worded as Triton words it.
func errorf(code triton.Code, format string, args ...any) error {
	return &triton.Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// message is the text a client sees for err: [triton.Error.Message] for the
// server's errors (the cause, with Triton's request-id prefix), the plain
// text otherwise.
func message(err error) string {
	if e, ok := errors.AsType[*triton.Error](err); ok {
		return e.Message()
	}
	return err.Error()
}

// statusError is an error answered with a status other than its code's:
// 415 for an unknown Content-Encoding, which is InvalidArgument elsewhere.
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// withStatus makes err answer with status.
func withStatus(status int, err error) error { return &statusError{status, err} }

// writeError answers err as {"error":"<message>"} with the status of its
// code (or of a [withStatus]).
func (h *handler) writeError(w http.ResponseWriter, err error) {
	code := triton.CodeOf(err)
	status := httpStatus(code)
	if se, ok := errors.AsType[*statusError](err); ok {
		status = se.status
	}
	if status >= 500 {
		h.log.Debug("httpapi: request failed", zap.Int("status", status), zap.Error(err))
	}
	if wait, ok := triton.RetryAfter(err); ok && status == http.StatusServiceUnavailable {
		// Whole seconds (RFC 9110), rounded up: at least 1.
		w.Header().Set("Retry-After", strconv.FormatInt(max(int64((wait+time.Second-1)/time.Second), 1), 10))
	}
	writeErrorStatus(w, status, message(err))
}

// writeErrorStatus answers {"error":"<msg>"} with status.
func writeErrorStatus(w http.ResponseWriter, status int, msg string) {
	b := make([]byte, 0, len(msg)+16)
	b = append(b, `{"error":`...)
	b = jsontext.AppendString(b, msg)
	b = append(b, '}')
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeJSON answers 200 with a JSON body.
func writeJSON(w http.ResponseWriter, body []byte) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeEmpty answers status with an empty body (health, load, unload,
// register, unregister).
func writeEmpty(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
}
