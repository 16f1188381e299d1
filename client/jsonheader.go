package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The JSON header of an inference response, read without reflection.
// encoding/json takes 2.4 µs (4-5 µs on a busy machine) and 14
// allocations to read text_reverse's 130-byte answer, the largest part of
// what the HTTP client spends on a small request besides net/http itself;
// this reader 0.5 µs and 5 (BenchmarkResponseHeader). It reads the headers Triton and httpapi
// write, and leaves anything else to json.Unmarshal, which then decides:
// it answers only where json.Unmarshal would give the same
// inferResponseJSON, which FuzzResponseHeader checks.

// Bits of the keys a header or an output has had, to refuse duplicates
// (whose handling by encoding/json this reader does not copy).
const (
	seenID = 1 << iota
	seenModel
	seenVersion
	seenParameters
	seenOutputs
	seenName
	seenDatatype
	seenShape
	seenData
)

// headerReader walks a response header.
type headerReader struct {
	b   []byte
	pos int
}

// readResponseHeader fills rj from b as json.Unmarshal would and reports
// true, or reports false, rj in an unspecified state, for text it leaves
// to json.Unmarshal: keys other than the protocol's (encoding/json
// matches them case-insensitively) or repeated ones, null, strings with
// escapes or invalid UTF-8 (which encoding/json decodes or replaces),
// numbers it does not read the same way, nesting deeper than
// maxHeaderDepth, and whatever is not JSON.
func readResponseHeader(b []byte, rj *inferResponseJSON) bool {
	r := headerReader{b: b}
	seen := 0
	ok := r.object(func(key []byte) bool {
		var bit int
		var ok bool
		switch string(key) {
		case "id":
			bit, ok = seenID, r.str(&rj.ID)
		case "model_name":
			bit, ok = seenModel, r.str(&rj.ModelName)
		case "model_version":
			bit, ok = seenVersion, r.str(&rj.ModelVersion)
		case "parameters":
			bit = seenParameters
			rj.Parameters = map[string]json.RawMessage{}
			ok = r.object(func(k []byte) bool {
				if _, dup := rj.Parameters[string(k)]; dup {
					return false
				}
				raw, ok := r.scalar()
				rj.Parameters[string(k)] = raw
				return ok
			})
		case "outputs":
			bit = seenOutputs
			rj.Outputs = []outputJSON{}
			ok = r.array(func() bool {
				rj.Outputs = append(rj.Outputs, outputJSON{})
				return r.output(&rj.Outputs[len(rj.Outputs)-1])
			})
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	return ok && r.end()
}

// output reads one output object.
func (r *headerReader) output(o *outputJSON) bool {
	seen := 0
	return r.object(func(key []byte) bool {
		var bit int
		var ok bool
		switch string(key) {
		case "name":
			bit, ok = seenName, r.str(&o.Name)
		case "datatype":
			bit, ok = seenDatatype, r.str(&o.Datatype)
		case "shape":
			bit = seenShape
			o.Shape = []int64{}
			ok = r.array(func() bool {
				n, ok := r.int()
				o.Shape = append(o.Shape, n)
				return ok
			})
		case "parameters":
			bit = seenParameters
			size := false
			ok = r.object(func(k []byte) bool {
				if string(k) != "binary_data_size" || size {
					return false
				}
				size = true
				n, ok := r.uint()
				o.Parameters.BinaryDataSize = &n
				return ok
			})
		case "data":
			bit = seenData
			start := r.skipSpace()
			ok = r.value(0)
			o.Data = json.RawMessage(r.b[start:r.pos])
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}

// maxHeaderDepth bounds the nesting of an output's data.
const maxHeaderDepth = 64

func (r *headerReader) skipSpace() int {
	for r.pos < len(r.b) {
		switch r.b[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return r.pos
		}
	}
	return r.pos
}

// next skips white space and consumes c if it comes next.
func (r *headerReader) next(c byte) bool {
	if r.skipSpace() < len(r.b) && r.b[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (r *headerReader) end() bool { return r.skipSpace() == len(r.b) }

// object reads {"key": value, ...}, calling member with each key, to read
// the value.
func (r *headerReader) object(member func(key []byte) bool) bool {
	if !r.next('{') {
		return false
	}
	if r.next('}') {
		return true
	}
	for {
		key, ok := r.rawString()
		if !ok || !r.next(':') || !member(key) {
			return false
		}
		if r.next('}') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

// array reads [value, ...], calling elem to read each value.
func (r *headerReader) array(elem func() bool) bool {
	if !r.next('[') {
		return false
	}
	if r.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if r.next(']') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

// rawString reads a string without escapes, of valid UTF-8 and without
// control characters, and returns its bytes.
func (r *headerReader) rawString() ([]byte, bool) {
	if !r.next('"') {
		return nil, false
	}
	start := r.pos
	for r.pos < len(r.b) {
		switch c := r.b[r.pos]; {
		case c == '"':
			s := r.b[start:r.pos]
			r.pos++
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		r.pos++
	}
	return nil, false
}

func (r *headerReader) str(dst *string) bool {
	s, ok := r.rawString()
	*dst = string(s)
	return ok
}

// number reads a JSON number and returns its text.
func (r *headerReader) number() ([]byte, bool) {
	start := r.skipSpace()
	r.optional('-')
	switch {
	case r.optional('0'):
	case r.digits() == 0:
		return nil, false
	}
	if r.optional('.') && r.digits() == 0 {
		return nil, false
	}
	if r.optional('e') || r.optional('E') {
		_ = r.optional('+') || r.optional('-')
		if r.digits() == 0 {
			return nil, false
		}
	}
	return r.b[start:r.pos], true
}

func (r *headerReader) optional(c byte) bool {
	if r.pos < len(r.b) && r.b[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

func (r *headerReader) digits() int {
	start := r.pos
	for r.pos < len(r.b) && r.b[r.pos] >= '0' && r.b[r.pos] <= '9' {
		r.pos++
	}
	return r.pos - start
}

// int reads an integer into an int64 as encoding/json does.
func (r *headerReader) int() (int64, bool) {
	s, ok := r.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	return n, err == nil
}

// uint reads an integer into a uint64 as encoding/json does.
func (r *headerReader) uint() (uint64, bool) {
	s, ok := r.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	return n, err == nil
}

// scalar reads a string (without escapes), a number, true or false, and
// returns its text.
func (r *headerReader) scalar() (json.RawMessage, bool) {
	start := r.skipSpace()
	if r.pos == len(r.b) {
		return nil, false
	}
	var ok bool
	switch r.b[r.pos] {
	case '"':
		_, ok = r.rawString()
	case 't':
		ok = r.literal("true")
	case 'f':
		ok = r.literal("false")
	default:
		_, ok = r.number()
	}
	return json.RawMessage(r.b[start:r.pos]), ok
}

func (r *headerReader) literal(s string) bool {
	if !bytes.HasPrefix(r.b[r.pos:], []byte(s)) {
		return false
	}
	r.pos += len(s)
	return true
}

// value skips a JSON value of an output's data: arrays of strings
// (without escapes), numbers, true, false and null.
func (r *headerReader) value(depth int) bool {
	if r.skipSpace() == len(r.b) {
		return false
	}
	switch r.b[r.pos] {
	case '[':
		if depth == maxHeaderDepth {
			return false
		}
		return r.array(func() bool { return r.value(depth + 1) })
	case 'n':
		return r.literal("null")
	}
	_, ok := r.scalar()
	return ok
}
