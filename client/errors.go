package client

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
)

// Errors. Every error a client returns is a *triton.Error, whose Code is
// the server's code mapped back from the wire (the inverse of the tables
// in httpapi/errors.go and grpcapi/service.go, Triton's
// HttpCodeFromError and CodeToStatus) and whose Err holds the server's
// message as it came. The mapping loses what the wire loses: HTTP answers
// Unknown, InvalidArgument, AlreadyExists and Cancelled alike with 400,
// which comes back as InvalidArgument.

// errClosed is the cause of calls on a closed client.
var errClosed = errors.New("client: the connection is closed")

// codeOfHTTP maps an HTTP status of an error answer to a code.
func codeOfHTTP(status int) triton.Code {
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusRequestEntityTooLarge,
		http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
		return triton.InvalidArgument
	case http.StatusNotFound:
		return triton.NotFound
	case http.StatusInternalServerError:
		return triton.Internal
	case http.StatusNotImplemented, http.StatusMethodNotAllowed:
		return triton.Unsupported
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusForbidden, http.StatusUnauthorized:
		// 403 is a restricted API without its header (Triton's gRPC
		// answers the same refusal UNAVAILABLE).
		return triton.Unavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return triton.DeadlineExceeded
	case http.StatusConflict:
		return triton.AlreadyExists
	}
	switch {
	case status >= 500:
		return triton.Internal
	case status >= 400:
		return triton.InvalidArgument
	}
	return triton.Unknown
}

// codeOfGRPC maps a gRPC status code to a code.
func codeOfGRPC(c codes.Code) triton.Code {
	switch c {
	case codes.Unknown:
		return triton.Unknown
	case codes.Internal, codes.DataLoss:
		return triton.Internal
	case codes.NotFound:
		return triton.NotFound
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition, codes.ResourceExhausted:
		// ResourceExhausted: a message over the size limit, the client's.
		return triton.InvalidArgument
	case codes.Unavailable, codes.Aborted, codes.PermissionDenied, codes.Unauthenticated:
		return triton.Unavailable
	case codes.Unimplemented:
		return triton.Unsupported
	case codes.AlreadyExists:
		return triton.AlreadyExists
	case codes.Canceled:
		return triton.Cancelled
	case codes.DeadlineExceeded:
		return triton.DeadlineExceeded
	}
	return triton.Unknown
}

// about is what an error concerns: the model, version and request ID that
// the *triton.Error carries.
type about struct {
	model   string
	version int64
	id      string
}

func aboutRequest(req *triton.InferRequest) about {
	return about{model: req.Model, version: req.Version, id: req.ID}
}

// remoteError is the error a server answered: its code and message. The
// "[request id: <id>] " prefix Triton puts before the message of an error
// about a request goes to RequestID, so that the error's Message() is the
// text the server sent.
func remoteError(code triton.Code, a about, msg string) error {
	id := a.id
	if rest, ok := strings.CutPrefix(msg, "[request id: "); ok {
		if i := strings.Index(rest, "] "); i >= 0 {
			if pid := rest[:i]; pid != "<id_unknown>" {
				id = pid
			}
			msg = rest[i+2:]
		}
	}
	var cause error = errors.New(msg)
	if code == triton.DeadlineExceeded {
		// A deadline passed, the call's own (which gRPC sends) or one the
		// server set: errors.Is(err, context.DeadlineExceeded) holds, as
		// when the client notices the deadline first.
		cause = &deadlineError{msg}
	}
	return &triton.Error{Code: code, Model: a.model, Version: a.version, RequestID: id, Err: cause}
}

// deadlineError is a server's message about a deadline that passed.
type deadlineError struct{ msg string }

func (e *deadlineError) Error() string { return e.msg }
func (e *deadlineError) Unwrap() error { return context.DeadlineExceeded }

// localError is an error the client finds itself (a request it cannot
// send), with a code.
func localError(code triton.Code, a about, err error) error {
	return &triton.Error{Code: code, Model: a.model, Version: a.version, RequestID: a.id, Err: err}
}

// transportError is the error of a call that failed on the way: the
// context's error when ctx has ended (Cancelled or DeadlineExceeded,
// wrapping context.Canceled or context.DeadlineExceeded), Unavailable
// otherwise (the server cannot be reached, the connection broke).
func transportError(ctx context.Context, a about, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return ctxError(a, cerr)
	}
	if e, ok := errors.AsType[*triton.Error](err); ok {
		return e
	}
	code := triton.Unavailable
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = triton.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = triton.Cancelled
	}
	return localError(code, a, err)
}

// ctxError is the error of a call whose context ended.
func ctxError(a about, cerr error) error {
	code := triton.Cancelled
	if errors.Is(cerr, context.DeadlineExceeded) {
		code = triton.DeadlineExceeded
	}
	return localError(code, a, cerr)
}

// grpcError turns the error of a gRPC call into a *triton.Error: a status
// with its code and message, the context's error when ctx has ended.
func grpcError(ctx context.Context, a about, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return ctxError(a, cerr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return transportError(ctx, a, err)
	}
	return remoteError(codeOfGRPC(st.Code()), a, st.Message())
}
