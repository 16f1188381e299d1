package xgbrun

import (
	"fmt"
	"math"
	"strconv"
)

// jsonDecoder reads JSON text into the form decodeUBJ gives (see ubj.go),
// accepting what XGBoost 1.7's JsonReader (src/common/json.cc) writes and
// reads: standard JSON plus the numbers NaN, Infinity and -Infinity, and
// XGBoost's string rules (a raw CR or LF in a string is an error; the
// escapes are \r \n \\ \t \" and \u, which XGBoost keeps as the two
// characters `\u`; any other escape is an error). A duplicate key keeps
// its last value, as XGBoost's reader does; the document is one value, and
// what follows it is ignored. XGBoost's text reader checks its bounds, so
// this decoder is not a safety net for it but gives the model's structure
// to the checks of model.go before XGBoost loads it, and bounds its depth.
type jsonDecoder struct {
	data []byte
	pos  int
}

func decodeJSON(data []byte) (any, error) {
	d := &jsonDecoder{data: data}
	d.space()
	if d.pos == len(d.data) {
		return nil, fmt.Errorf("JSON: empty")
	}
	return d.value(0)
}

func (d *jsonDecoder) errf(format string, args ...any) error {
	return fmt.Errorf("JSON at byte %d: %s", d.pos, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) eof(what string) error {
	return d.errf("%s: unexpected end (truncated?)", what)
}

// space skips XGBoost's spaces: ' ', '\n', '\r', '\t'.
func (d *jsonDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\n', '\r', '\t':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (any, error) {
	d.space()
	if d.pos == len(d.data) {
		return nil, d.eof("value")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.str()
	case c == '-' || c == 'N' || c == 'I' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	default:
		return nil, d.errf("unexpected %q", c)
	}
}

func (d *jsonDecoder) word(w string) error {
	if len(d.data)-d.pos < len(w) {
		return d.eof(w)
	}
	if string(d.data[d.pos:d.pos+len(w)]) != w {
		return d.errf("expected %s", w)
	}
	d.pos += len(w)
	return nil
}

func (d *jsonDecoder) str() (string, error) {
	d.pos++ // the opening quote
	var b []byte
	start := d.pos
	for {
		if d.pos == len(d.data) {
			return "", d.eof("string")
		}
		c := d.data[d.pos]
		switch c {
		case '"':
			b = append(b, d.data[start:d.pos]...)
			d.pos++
			return string(b), nil
		case '\r', '\n':
			return "", d.errf("line break in a string")
		case '\\':
			b = append(b, d.data[start:d.pos]...)
			d.pos++
			if d.pos == len(d.data) {
				return "", d.eof("string")
			}
			switch e := d.data[d.pos]; e {
			case 'r':
				b = append(b, '\r')
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case '\\', '"':
				b = append(b, e)
			case 'u':
				b = append(b, '\\', 'u')
			default:
				return "", d.errf("escape \\%c is not supported by XGBoost", e)
			}
			d.pos++
			start = d.pos
		default:
			d.pos++
		}
	}
}

// number reads XGBoost's number syntax: NaN, [-]Infinity, or
// -?digits(.digits)?([eE][+-]?digits)?; with '.' or an exponent it is a
// float64, otherwise an int64 (one that overflows is an error).
func (d *jsonDecoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == 'N' {
		return math.NaN(), d.word("NaN")
	}
	neg := d.data[d.pos] == '-'
	if neg {
		d.pos++
	}
	if d.pos < len(d.data) && d.data[d.pos] == 'I' {
		if err := d.word("Infinity"); err != nil {
			return nil, err
		}
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	isFloat := false
	n := digits()
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		isFloat = true
		n += digits()
	}
	if n == 0 {
		return nil, d.errf("expected a digit")
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		isFloat = true
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.errf("expected a digit in the exponent")
		}
	}
	text := string(d.data[start:d.pos])
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && f == 0 && !isRangeErr(err) {
			return nil, d.errf("number %q: %v", text, err)
		}
		return f, nil // out-of-range values are ±Inf or 0, as strtof makes them
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, d.errf("integer %q does not fit in 64 bits", text)
	}
	return i, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (d *jsonDecoder) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errf("nested more than %d deep", maxDepth)
	}
	d.pos++ // {
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		if d.pos == len(d.data) {
			return nil, d.eof("object")
		}
		if d.data[d.pos] != '"' {
			return nil, d.errf("expected a key, got %q", d.data[d.pos])
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos == len(d.data) {
			return nil, d.eof("object")
		}
		if d.data[d.pos] != ':' {
			return nil, d.errf("expected ':', got %q", d.data[d.pos])
		}
		d.pos++
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.pos == len(d.data) {
			return nil, d.eof("object")
		}
		switch d.data[d.pos] {
		case '}':
			d.pos++
			return m, nil
		case ',':
			d.pos++
		default:
			return nil, d.errf("expected ',' or '}', got %q", d.data[d.pos])
		}
	}
}

// array reads an array. Arrays of numbers, most of a model, become []int64
// or []float64 rather than []any, which would box every element.
func (d *jsonDecoder) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errf("nested more than %d deep", maxDepth)
	}
	d.pos++ // [
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return []any{}, nil
	}
	var (
		ints   []int64
		floats []float64
		anys   []any
		kind   = 'i' // 'i' ints, 'f' floats, 'a' anys
	)
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case int64:
			switch kind {
			case 'i':
				ints = append(ints, x)
			case 'f':
				floats = append(floats, float64(x))
			default:
				anys = append(anys, x)
			}
		case float64:
			switch kind {
			case 'i':
				kind = 'f'
				floats = make([]float64, len(ints), len(ints)+1)
				for i, n := range ints {
					floats[i] = float64(n)
				}
				ints = nil
				floats = append(floats, x)
			case 'f':
				floats = append(floats, x)
			default:
				anys = append(anys, x)
			}
		default:
			if kind != 'a' {
				anys = make([]any, 0, len(ints)+len(floats)+1)
				for _, n := range ints {
					anys = append(anys, n)
				}
				for _, f := range floats {
					anys = append(anys, f)
				}
				ints, floats, kind = nil, nil, 'a'
			}
			anys = append(anys, v)
		}
		d.space()
		if d.pos == len(d.data) {
			return nil, d.eof("array")
		}
		switch d.data[d.pos] {
		case ']':
			d.pos++
			switch kind {
			case 'i':
				return ints, nil
			case 'f':
				return floats, nil
			}
			return anys, nil
		case ',':
			d.pos++
		default:
			return nil, d.errf("expected ',' or ']', got %q", d.data[d.pos])
		}
	}
}
