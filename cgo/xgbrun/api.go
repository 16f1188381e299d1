package xgbrun

import (
	"errors"
	"strings"
)

// ErrNotOpen is the error of calls made before [Open] has succeeded.
var ErrNotOpen = errors.New("xgbrun: the XGBoost library is not loaded (call Open first)")

// ErrOtherLibrary is wrapped by the error of an [Open] that would load a
// second XGBoost library.
var ErrOtherLibrary = errors.New("already bound to a different XGBoost library")

// ErrClosed is the error of calls on a closed [Booster].
var ErrClosed = errors.New("xgbrun: the booster is closed")

// ErrFormat is wrapped by the errors of [Load] for data that is not a
// well-formed model of the declared format (wrong format, truncated,
// inconsistent), found before or after XGBoost reads it.
var ErrFormat = errors.New("not a well-formed XGBoost model")

// Error is an error XGBoost reported (XGBGetLastError), cleaned of its
// time stamp and stack trace.
type Error struct {
	Op  string // the C API function that failed, as "XGBoosterPredictFromDense"
	Msg string
}

func (e *Error) Error() string { return "XGBoost " + e.Op + ": " + e.Msg }

// cleanMsg drops what dmlc adds to an error message: a "[hh:mm:ss] "
// prefix, the source location ("./src/learner.cc:1017: ") and a "Stack
// trace:" section.
func cleanMsg(s string) string {
	if i := strings.Index(s, "Stack trace:"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 11 && s[0] == '[' && s[3] == ':' && s[6] == ':' && s[9] == ']' && s[10] == ' ' {
		s = s[11:]
	}
	if loc, rest, ok := strings.Cut(s, ": "); ok && !strings.Contains(loc, " ") {
		if file, line, ok := strings.Cut(loc, ":"); ok && strings.Contains(file, ".") && line != "" &&
			strings.Trim(line, "0123456789") == "" {
			s = rest
		}
	}
	return strings.TrimSpace(s)
}

// Output selects what [Booster.Predict] computes.
type Output int

const (
	// Values are what Python's Booster.predict gives: the margins through
	// the objective's transformation (a probability for binary:logistic,
	// the class number for multi:softmax, the margin itself for
	// binary:logitraw).
	Values Output = iota
	// Margins are the untransformed sums (predict's output_margin=True):
	// Groups values per row.
	Margins
	// SoftmaxMargins are the margins through XGBoost's own softmax, bit for
	// bit as multi:softprob computes its values: for a multi:softmax model,
	// the class probabilities softprob would give.
	SoftmaxMargins
)
