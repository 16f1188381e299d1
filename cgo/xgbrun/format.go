package xgbrun

import (
	"fmt"
)

// Format is the serialization of a model file. The caller declares it (as
// FIL's model_type does); [Check] and [Load] refuse data of another.
type Format int

// The formats.
const (
	// Legacy is XGBoost's deprecated binary format (FIL's model_type
	// "xgboost", file xgboost.model): what XGBoost 1.x's save_model writes
	// to a file name that ends neither in .json nor in .ubj.
	Legacy Format = iota + 1
	// JSON is XGBoost's JSON model (model_type "xgboost_json").
	JSON
	// UBJSON is XGBoost's Universal Binary JSON model (model_type
	// "xgboost_ubj", XGBoost 1.6 and later).
	UBJSON
)

func (f Format) String() string {
	switch f {
	case Legacy:
		return "XGBoost legacy binary"
	case JSON:
		return "XGBoost JSON"
	case UBJSON:
		return "XGBoost UBJSON"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Check checks that data is a model of format f that XGBoost 1.7 can read
// safely, and returns the bytes to hand to XGBoost (data itself, or for
// JSON data without its leading white space). It needs no library. Errors
// wrap [ErrFormat], or [errors.ErrUnsupported] for gblinear models.
//
// XGBoost's XGBoosterLoadModelFromBuffer does not take a format: it reads
// JSON when the data starts with `{"` (after `{`, white space may come
// first), UBJSON when it starts with `{` and a letter, and the legacy
// binary format otherwise. So Check first refuses data whose first bytes
// say it is another format than f, naming both. Then, by format:
//
//   - legacy binary: the structure is walked as XGBoost reads it, so that
//     no count runs past the end (see checkLegacy): XGBoost would allocate
//     from a garbage count, and loads a file truncated in its attributes
//     without complaint;
//   - UBJSON: the document is decoded with bounds checks, which XGBoost's
//     reader lacks (it reads past its buffer on a truncated file, or
//     crashes), and its trees checked (see checkLoad);
//   - JSON: the document is decoded (XGBoost's reader is bounds-checked,
//     but recursive) and its trees checked as UBJSON's.
//
// Nesting is limited to 64 levels in both JSON forms.
func Check(data []byte, f Format) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		if err == errLinear {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	switch f {
	case Legacy:
		switch g := sniff(data); g {
		case JSON, UBJSON:
			return fail(fmt.Errorf("the data is %s, not %s", g, f))
		case 0:
			return fail(fmt.Errorf("the data starts with '{' (JSON or UBJSON?), not %s", f))
		}
		if err := checkLegacy(data); err != nil {
			return fail(err)
		}
		return data, nil
	case JSON:
		data = trimSpace(data)
		if g := sniff(data); g != JSON {
			return fail(notFormat(data, f, g))
		}
		doc, err := decodeJSON(data)
		if err != nil {
			return fail(err)
		}
		if err := checkLoad(doc); err != nil {
			return fail(err)
		}
		return data, nil
	case UBJSON:
		if g := sniff(data); g != UBJSON {
			return fail(notFormat(data, f, g))
		}
		doc, err := decodeUBJ(data)
		if err != nil {
			return fail(err)
		}
		if err := checkLoad(doc); err != nil {
			return fail(err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("xgbrun: unknown format %d", int(f))
}

func notFormat(data []byte, want, got Format) error {
	switch {
	case len(data) == 0:
		return fmt.Errorf("the data is empty, not %s", want)
	case got == Legacy && len(data) >= 4 && string(data[:4]) == "binf":
		return fmt.Errorf("the data is %s (it starts with \"binf\"), not %s", got, want)
	case got == 0 || got == Legacy:
		return fmt.Errorf("the data is not %s: it starts with %q, not '{'", want, head(data))
	}
	return fmt.Errorf("the data is %s, not %s", got, want)
}

// head is the first bytes of data, for messages.
func head(data []byte) []byte {
	return data[:min(len(data), 8)]
}

// sniff says which format XGBoost's XGBoosterLoadModelFromBuffer would
// read data as (src/learner.cc, LoadModel(dmlc::Stream*)): JSON for '{'
// then '"' after optional white space (std::isspace), UBJSON for '{' then a
// letter, Legacy for anything not starting with '{'; 0 for '{' followed by
// anything else, which XGBoost refuses ("Invalid model format").
func sniff(data []byte) Format {
	if len(data) == 0 || data[0] != '{' {
		return Legacy
	}
	for _, c := range data[1:] {
		switch {
		case c == ' ' || (c >= '\t' && c <= '\r'):
			continue
		case c == '"':
			return JSON
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			return UBJSON
		}
		return 0
	}
	return 0
}

// trimSpace drops leading JSON white space: XGBoost takes data that does
// not start with '{' for the legacy binary format.
func trimSpace(data []byte) []byte {
	for len(data) > 0 && (data[0] == ' ' || data[0] == '\t' || data[0] == '\n' || data[0] == '\r') {
		data = data[1:]
	}
	return data
}
