package client

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
)

// The adapters' tables (httpapi/errors.go, grpcapi/service.go: Triton's
// HttpCodeFromError and CodeToStatus plus DeadlineExceeded), read
// backwards: every code comes back from gRPC; from HTTP, the codes that
// share 400 come back as InvalidArgument.
func TestCodeMapping(t *testing.T) {
	for _, c := range []struct {
		code     triton.Code
		status   int
		grpcCode codes.Code
		fromHTTP triton.Code
	}{
		{triton.Unknown, http.StatusBadRequest, codes.Unknown, triton.InvalidArgument},
		{triton.Internal, http.StatusInternalServerError, codes.Internal, triton.Internal},
		{triton.NotFound, http.StatusNotFound, codes.NotFound, triton.NotFound},
		{triton.InvalidArgument, http.StatusBadRequest, codes.InvalidArgument, triton.InvalidArgument},
		{triton.Unavailable, http.StatusServiceUnavailable, codes.Unavailable, triton.Unavailable},
		{triton.Unsupported, http.StatusNotImplemented, codes.Unimplemented, triton.Unsupported},
		{triton.AlreadyExists, http.StatusBadRequest, codes.AlreadyExists, triton.InvalidArgument},
		{triton.Cancelled, http.StatusBadRequest, codes.Canceled, triton.InvalidArgument},
		{triton.DeadlineExceeded, http.StatusGatewayTimeout, codes.DeadlineExceeded, triton.DeadlineExceeded},
	} {
		if got := codeOfGRPC(c.grpcCode); got != c.code {
			t.Errorf("gRPC %v → %v, want %v", c.grpcCode, got, c.code)
		}
		if got := codeOfHTTP(c.status); got != c.fromHTTP {
			t.Errorf("HTTP %d → %v, want %v", c.status, got, c.fromHTTP)
		}
	}
	// Answers from outside the protocol's table.
	for status, want := range map[int]triton.Code{
		http.StatusForbidden: triton.Unavailable, http.StatusMethodNotAllowed: triton.Unsupported,
		http.StatusUnsupportedMediaType: triton.InvalidArgument, http.StatusTooManyRequests: triton.Unavailable,
		http.StatusBadGateway: triton.Unavailable, 418: triton.InvalidArgument, 599: triton.Internal,
	} {
		if got := codeOfHTTP(status); got != want {
			t.Errorf("HTTP %d → %v, want %v", status, got, want)
		}
	}
}

func TestRemoteError(t *testing.T) {
	a := about{model: "m", version: 2}
	for _, c := range []struct {
		msg, id, cause string
	}{
		{"[request id: r7] input 'X' is bad", "r7", "input 'X' is bad"},
		{"[request id: <id_unknown>] expected 2 inputs", "", "expected 2 inputs"},
		{"no prefix", "", "no prefix"},
		{"[request id: unterminated", "", "[request id: unterminated"},
	} {
		err := remoteError(triton.InvalidArgument, a, c.msg)
		var e *triton.Error
		if !errors.As(err, &e) || e.RequestID != c.id || e.Err.Error() != c.cause || e.Model != "m" || e.Version != 2 {
			t.Errorf("remoteError(%q) = %#v", c.msg, err)
		}
		if c.id != "" && e.Message() != c.msg {
			t.Errorf("Message() = %q, want the server's %q", e.Message(), c.msg)
		}
	}
}

func TestRemoteDeadline(t *testing.T) {
	err := remoteError(triton.DeadlineExceeded, about{}, "Deadline Exceeded")
	if !errors.Is(err, context.DeadlineExceeded) || err.(*triton.Error).Message() != "Deadline Exceeded" {
		t.Errorf("remoteError(DeadlineExceeded) = %v, want a message wrapping context.DeadlineExceeded", err)
	}
	if errors.Is(remoteError(triton.Cancelled, about{}, "x"), context.Canceled) {
		t.Error("a server's Cancelled wraps context.Canceled")
	}
}

func TestGRPCErrorContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := grpcError(ctx, about{}, status.Error(codes.Canceled, "context canceled"))
	if triton.CodeOf(err) != triton.Cancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("grpcError after cancel = %v", err)
	}
	err = grpcError(context.Background(), about{}, errors.New("not a status"))
	if triton.CodeOf(err) != triton.Unavailable {
		t.Errorf("grpcError(plain error) = %v, want Unavailable", err)
	}
}
