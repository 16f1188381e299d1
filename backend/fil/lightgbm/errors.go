package lightgbm

import (
	"errors"
	"fmt"
	"strconv"
)

// FormatError is the error Load, LoadFS and Parse return for a file they
// cannot read as a LightGBM text model: not one at all (an XGBoost JSON or
// binary model handed over by mistake), cut short, or inconsistent (arrays
// of the wrong length, a child or feature index out of range, a tree that
// is not a tree). Err says what is wrong; for what this package does not
// support (an unknown objective or model version) it wraps
// [errors.ErrUnsupported], so that
//
//	errors.Is(err, errors.ErrUnsupported)
//
// tells a model we cannot serve from a broken file.
type FormatError struct {
	// Path is the file as given to Load, LoadFS or Parse (which may be
	// given none).
	Path string
	// Line is the 1-based line the problem was found on; 0 when it
	// concerns the file as a whole (a missing field, a truncated file).
	Line int
	// Err is the cause.
	Err error
}

// Error formats the error as "lightgbm: path:line: cause", leaving out
// what is unknown.
func (e *FormatError) Error() string {
	s := "lightgbm: "
	if e.Path != "" {
		s += e.Path + ":"
	}
	if e.Line > 0 {
		s += strconv.Itoa(e.Line) + ":"
	}
	if e.Path != "" || e.Line > 0 {
		s += " "
	}
	return s + e.Err.Error()
}

// Unwrap returns Err.
func (e *FormatError) Unwrap() error { return e.Err }

// errUnsupported builds a cause that wraps errors.ErrUnsupported.
func errUnsupported(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errors.ErrUnsupported)...)
}
