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
