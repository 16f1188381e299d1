package backend

import "errors"

// Sentinel errors for backends to wrap (with fmt.Errorf and %w) so the server
// can classify failures without importing backend-specific types. Anything
// that wraps none of them (nor errors.ErrUnsupported, nor a context error) is
// reported to clients as an internal error.
var (
	// ErrInvalidInput marks a failure caused by the request or the
	// configuration (a tensor the model rejects, a config the model file
	// contradicts). Clients see InvalidArgument.
	ErrInvalidInput = errors.New("invalid input")

	// ErrUnavailable marks a temporary condition (a device busy, a remote
	// runtime restarting). Clients see Unavailable and may retry. Never wrap
	// it when the work may already have happened.
	ErrUnavailable = errors.New("temporarily unavailable")
)

// TritonCoder is an error that carries its code as the number of Triton's
// TRITONSERVER_Error_Code (0 UNKNOWN, 1 INTERNAL, 2 NOT_FOUND, 3
// INVALID_ARG, 4 UNAVAILABLE, 5 UNSUPPORTED, 6 ALREADY_EXISTS, 7
// CANCELLED), for codes the sentinels do not cover (a Python model's
// TritonError): the server gives the error that code. A number outside
// 0–7 is ignored.
type TritonCoder interface {
	error
	TritonCode() int
}
