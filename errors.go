// errors.go is the error model: Error, Code and CodeOf.

package triton

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/ratelimit"
)

// Code classifies an error the way Triton does (TRITONSERVER_ERROR_*), plus
// DeadlineExceeded for Go contexts. Adapters map codes to HTTP and gRPC
// statuses, each with one table.
type Code uint8

const (
	// Unknown is an error that fits no other code.
	Unknown Code = iota
	// Internal is a failure inside the server or a backend: a backend error
	// that wraps no sentinel, a backend panic, a backend breaking its
	// contract (an output of the wrong datatype).
	Internal
	// NotFound is a model or version that is not loaded, or a file that is
	// missing.
	NotFound
	// InvalidArgument is a bad request (unknown input, wrong datatype or
	// shape, byte size mismatch, malformed BYTES) or a bad configuration, and
	// a request for a model the server has never heard of (as Triton does).
	InvalidArgument
	// Unavailable is a model that exists but cannot serve now (loading,
	// unloading, not ready), a server that is shutting down, a full queue or
	// an expired queue timeout.
	Unavailable
	// Unsupported is a feature the server or backend does not provide.
	Unsupported
	// AlreadyExists is a resource registered twice.
	AlreadyExists
	// Cancelled is a request whose context was cancelled.
	Cancelled
	// DeadlineExceeded is a request whose context deadline passed. Triton
	// itself has no such code; adapters map it to HTTP 504 / gRPC
	// DEADLINE_EXCEEDED.
	DeadlineExceeded
)

var codeNames = [...]string{
	Unknown:          "Unknown",
	Internal:         "Internal",
	NotFound:         "NotFound",
	InvalidArgument:  "InvalidArgument",
	Unavailable:      "Unavailable",
	Unsupported:      "Unsupported",
	AlreadyExists:    "AlreadyExists",
	Cancelled:        "Cancelled",
	DeadlineExceeded: "DeadlineExceeded",
}

// String returns the code's name, such as "InvalidArgument".
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Error is the error type of the server: a [Code] plus the model, version
// and request it concerns. Its message reads
//
//	triton: model "m" version 3: request "r7": <cause>
//
// omitting the parts that are unknown.
type Error struct {
	// Code classifies the error.
	Code Code
	// Model is the model the error concerns, or "".
	Model string
	// Version is the model version, or 0 when not known or not chosen.
	Version int64
	// RequestID is the client's request id, or "".
	RequestID string
	// Err is the cause. Its text is worded as Triton words it where clients
	// are known to compare messages.
	Err error
}

// Error implements the error interface.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("triton: ")
	if e.Model != "" {
		b.WriteString("model ")
		b.WriteString(strconv.Quote(e.Model))
		if e.Version > 0 {
			b.WriteString(" version ")
			b.WriteString(strconv.FormatInt(e.Version, 10))
		}
		b.WriteString(": ")
	}
	if e.RequestID != "" {
		b.WriteString("request ")
		b.WriteString(strconv.Quote(e.RequestID))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Code.String())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TritonCode returns the code as the number of Triton's
// TRITONSERVER_Error_Code (what a Python model's TritonError.code()
// reads): Unknown 0 to Cancelled 7, and DeadlineExceeded, which Triton
// does not have, as Unavailable (4), the code of Triton's own timeouts.
func (e *Error) TritonCode() int {
	if e.Code == DeadlineExceeded {
		return int(Unavailable)
	}
	return int(e.Code)
}

// Message returns the error text as Triton's core words it for clients: the
// cause, prefixed with "[request id: <id>] " when the error concerns a
// request. Adapters send it on the wire.
func (e *Error) Message() string {
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.RequestID != "" {
		return "[request id: " + e.RequestID + "] " + msg
	}
	return msg
}

// coded gives an error a code without the [*Error] message prefix: for
// errors made deep inside the server and wrapped further (with the model
// and what failed) before they reach the caller as an *Error.
type coded struct {
	code Code
	err  error
}

func (c *coded) Error() string { return c.err.Error() }

func (c *coded) Unwrap() error { return c.err }

// withCode returns err carrying code.
func withCode(code Code, err error) error { return &coded{code: code, err: err} }

// ErrServerClosed is returned (wrapped in an [*Error] with code Unavailable)
// by calls on a server that is shutting down or closed.
var ErrServerClosed = errors.New("triton: server closed")

// CodeOf classifies any error. It returns the code of the first [*Error]
// in err's chain. Otherwise it recognises the backend sentinels
// ([backend.ErrInvalidInput] → InvalidArgument, [backend.ErrUnavailable] →
// Unavailable), [ErrServerClosed] → Unavailable, errors.ErrUnsupported →
// Unsupported, fs.ErrNotExist → NotFound, context.Canceled → Cancelled and
// context.DeadlineExceeded → DeadlineExceeded, the number of a
// [backend.TritonCoder], and returns Unknown for
// anything else, including nil. Errors returned by [Server] methods are
// always [*Error] values, so CodeOf is exact for them.
func CodeOf(err error) Code {
	if err == nil {
		return Unknown
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	if c, ok := errors.AsType[*coded](err); ok {
		return c.code
	}
	return classify(err, Unknown)
}

// tritonCode returns the code of the first backend.TritonCoder in err's
// chain that is not an *Error (whose causes classify it), when its number
// is one of Triton's.
func tritonCode(err error) (Code, bool) {
	tc, ok := errors.AsType[backend.TritonCoder](err)
	if !ok {
		return 0, false
	}
	if _, server := tc.(*Error); server {
		return 0, false
	}
	c := tc.TritonCode()
	return Code(c), c >= int(Unknown) && c <= int(Cancelled)
}

// classify maps well-known causes to codes, and everything else to def.
func classify(err error, def Code) Code {
	if c, ok := tritonCode(err); ok {
		return c
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return Cancelled
	case errors.Is(err, backend.ErrInvalidInput):
		return InvalidArgument
	case errors.Is(err, backend.ErrUnavailable), errors.Is(err, ErrServerClosed),
		errors.Is(err, batcher.ErrQueueFull), errors.Is(err, batcher.ErrTimeout), errors.Is(err, batcher.ErrClosed),
		errors.Is(err, batcher.ErrWouldMiss),
		errors.Is(err, ratelimit.ErrClosed):
		return Unavailable
	case errors.Is(err, batcher.ErrPriority), errors.Is(err, batcher.ErrTimeoutOverride), errors.Is(err, ratelimit.ErrInvalid):
		return InvalidArgument
	case errors.Is(err, errors.ErrUnsupported):
		return Unsupported
	case errors.Is(err, fs.ErrNotExist):
		return NotFound
	}
	return def
}
