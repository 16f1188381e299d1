package pytorch

import (
	"fmt"

	"github.com/triton-go/triton/backend"
)

// codedError is an error whose text is exactly Triton's and whose code is
// given by the sentinel it wraps (the server maps the sentinel to the
// code): INVALID_ARG for [backend.ErrInvalidInput], UNAVAILABLE for
// [backend.ErrUnavailable].
type codedError struct {
	msg  string
	code error
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// invalidf is a Triton INVALID_ARG error with the text format gives.
func invalidf(format string, args ...any) error {
	return &codedError{msg: fmt.Sprintf(format, args...), code: backend.ErrInvalidInput}
}

// unavailablef is a Triton UNAVAILABLE error.
func unavailablef(format string, args ...any) error {
	return &codedError{msg: fmt.Sprintf(format, args...), code: backend.ErrUnavailable}
}
