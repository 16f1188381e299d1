package httpapi

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/triton-go/triton"
)

// maxJSONDepth is how deeply arrays and objects may nest in a request
// (Triton's HTTP frontend limit). Deeper documents are refused before
// anything else looks at them, so no code below recurses further.
const maxJSONDepth = 100

// jval is one JSON value of a request: the bytes of its text, borrowed
// from the request body. Values come only from parseJSON, which validates
// the whole document first, so the accessors below never meet malformed
// text; they decode on demand, which keeps a large "data" array from ever
// being materialized as a tree.
type jval []byte

// member is one member of a JSON object; key aliases the body when it has
// no escapes.
type member struct {
	key []byte
	val jval
}

// jsonSyntaxError is a JSON parse failure, worded as rapidjson (Triton's
// parser) words it.
type jsonSyntaxError struct {
	msg string
	off int
}

func (e *jsonSyntaxError) Error() string {
	return "failed to parse the request JSON buffer: " + e.msg + " at " + strconv.Itoa(e.off)
}

// parseJSON validates data as exactly one JSON value, surrounded by
// optional whitespace and nested at most maxJSONDepth deep, and returns
// that value.
func parseJSON(data []byte) (jval, error) {
	s := scanner{data: data}
	s.skipWS()
	if s.pos == len(data) {
		return nil, &jsonSyntaxError{"The document is empty.", s.pos}
	}
	start := s.pos
	if err := s.value(); err != nil {
		return nil, err
	}
	end := s.pos
	s.skipWS()
	if s.pos != len(data) {
		return nil, &jsonSyntaxError{"The document root must not be followed by other values.", s.pos}
	}
	return jval(data[start:end]), nil
}

// scanner walks JSON text. On text parseJSON has validated it cannot
// fail, so the accessors reuse it to skip values.
type scanner struct {
	data  []byte
	pos   int
	depth int
}

func (s *scanner) fail(msg string) error { return &jsonSyntaxError{msg, s.pos} }

func (s *scanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value() error {
	if s.pos >= len(s.data) {
		return s.fail("Invalid value.")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		return s.str()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return s.fail("Invalid value.")
}

func (s *scanner) enter() error {
	s.depth++
	if s.depth > maxJSONDepth {
		return s.fail("Nesting depth exceeds the limit of " + strconv.Itoa(maxJSONDepth) + ".")
	}
	return nil
}

func (s *scanner) object() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // '{'
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.fail("Missing a name for object member.")
		}
		if err := s.str(); err != nil {
			return err
		}
		s.skipWS()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.fail("Missing a colon after a name of object member.")
		}
		s.pos++
		s.skipWS()
		if err := s.value(); err != nil {
			return err
		}
		s.skipWS()
		if s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',':
				s.pos++
				s.skipWS()
				continue
			case '}':
				s.pos++
				s.depth--
				return nil
			}
		}
		return s.fail("Missing a comma or '}' after an object member.")
	}
}

func (s *scanner) array() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // '['
	s.skipWS()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		s.skipWS()
		if s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',':
				s.pos++
				s.skipWS()
				continue
			case ']':
				s.pos++
				s.depth--
				return nil
			}
		}
		return s.fail("Missing a comma or ']' after an array element.")
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.fail("Invalid value.")
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return s.fail("Invalid value.")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.fail("Missing fraction part in number.")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.fail("Missing exponent in number.")
		}
	}
	return nil
}

func (s *scanner) str() error {
	s.pos++ // '"'
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return nil
		case c == '\\':
			s.pos++
			if s.pos >= len(s.data) {
				return s.fail("Invalid escape character in string.")
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				r, n, ok := hex4(s.data[s.pos+1:])
				if !ok {
					return s.fail("Incorrect hex digit after \\u escape in string.")
				}
				s.pos += 1 + n
				if r >= 0xD800 && r <= 0xDBFF {
					if len(s.data)-s.pos < 2 || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
						return s.fail("The surrogate pair in string is invalid.")
					}
					r2, n2, ok := hex4(s.data[s.pos+2:])
					if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
						return s.fail("The surrogate pair in string is invalid.")
					}
					s.pos += 2 + n2
				} else if r >= 0xDC00 && r <= 0xDFFF {
					return s.fail("The surrogate pair in string is invalid.")
				}
			default:
				return s.fail("Invalid escape character in string.")
			}
		case c < 0x20:
			return s.fail("Invalid encoding in string.")
		default:
			s.pos++
		}
	}
	return s.fail("Missing a closing quotation mark in string.")
}

func hex4(b []byte) (rune, int, bool) {
	if len(b) < 4 {
		return 0, 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, 0, false
		}
	}
	return r, 4, true
}

// skip returns the end of the (valid) value starting at pos.
func skip(data []byte, pos int) int {
	s := scanner{data: data, pos: pos}
	_ = s.value()
	return s.pos
}

func wsEnd(data []byte, pos int) int {
	for pos < len(data) {
		switch data[pos] {
		case ' ', '\t', '\n', '\r':
			pos++
		default:
			return pos
		}
	}
	return pos
}

// JSON kinds, by the first byte of a value.
func (v jval) isObject() bool { return len(v) > 0 && v[0] == '{' }
func (v jval) isArray() bool  { return len(v) > 0 && v[0] == '[' }
func (v jval) isString() bool { return len(v) > 0 && v[0] == '"' }
func (v jval) isNull() bool   { return len(v) > 0 && v[0] == 'n' }
func (v jval) isBool() bool   { return len(v) > 0 && (v[0] == 't' || v[0] == 'f') }
func (v jval) isNumber() bool { return len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) }

// members returns the members of an object in document order (nil for
// anything else).
func (v jval) members() []member { return v.appendMembers(nil) }

// appendMembers appends the members of an object to dst, which callers on
// the request path give a stack array for.
func (v jval) appendMembers(out []member) []member {
	if !v.isObject() {
		return out
	}
	pos := wsEnd(v, 1)
	for pos < len(v) && v[pos] == '"' {
		kend := skip(v, pos)
		key, _ := jval(v[pos:kend]).str()
		pos = wsEnd(v, kend) + 1 // ':'
		pos = wsEnd(v, pos)
		vend := skip(v, pos)
		out = append(out, member{key: key, val: v[pos:vend]})
		pos = wsEnd(v, vend)
		if pos < len(v) && v[pos] == ',' {
			pos = wsEnd(v, pos+1)
		}
	}
	return out
}

// elements returns the elements of an array (nil for anything else).
func (v jval) elements() []jval {
	if !v.isArray() {
		return nil
	}
	var out []jval
	v.each(func(e jval) bool { out = append(out, e); return true })
	return out
}

// each calls f for every element of an array until f returns false.
func (v jval) each(f func(jval) bool) {
	pos := wsEnd(v, 1)
	for pos < len(v) && v[pos] != ']' {
		end := skip(v, pos)
		if !f(v[pos:end]) {
			return
		}
		pos = wsEnd(v, end)
		if pos < len(v) && v[pos] == ',' {
			pos = wsEnd(v, pos+1)
		}
	}
}

// get returns the first member named key, as rapidjson's FindMember does.
func get(ms []member, key string) (jval, bool) {
	for _, m := range ms {
		if string(m.key) == key {
			return m.val, true
		}
	}
	return nil, false
}

// str decodes a string value. The result aliases v when the string has no
// escapes. Bytes are kept as they are (no UTF-8 validation), as rapidjson
// does; the elements of BYTES tensors are held to UTF-8 by [checkUTF8].
func (v jval) str() ([]byte, bool) {
	if !v.isString() {
		return nil, false
	}
	in := v[1 : len(v)-1]
	esc := false
	for _, c := range in {
		if c == '\\' {
			esc = true
			break
		}
	}
	if !esc {
		return in, true
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch in[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _, _ := hex4(in[i+1:])
			i += 4
			if r >= 0xD800 && r <= 0xDBFF {
				r2, _, _ := hex4(in[i+3:])
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, in[i])
		}
	}
	return out, true
}

// checkUTF8 refuses e, a JSON string that is an element of a BYTES
// tensor, when its text is not valid UTF-8. JSON text is UTF-8 (RFC 8259);
// rapidjson, Triton's parser, keeps other bytes as they are, but a JSON
// answer cannot carry them back (appendJSONString writes U+FFFD), so the
// data would change without a word: clients must send such bytes as
// binary tensor data. Escapes decode to valid UTF-8 (the scanner refuses
// lone surrogates), so the raw text tells; the common case is one
// utf8.Valid scan. e must alias body, the request body, whose offset of
// the first bad byte the error gives.
func checkUTF8(body []byte, e jval) error {
	s := e[1 : len(e)-1]
	if utf8.Valid(s) {
		return nil
	}
	i := 0
	for {
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))-uintptr(unsafe.Pointer(unsafe.SliceData(body)))) + i
	return errorf(triton.InvalidArgument, "JSON strings must be UTF-8; invalid byte 0x%02x at offset %d of the request body; send arbitrary bytes as binary tensor data", s[i], off)
}

// boolean returns the value of true or false.
func (v jval) boolean() (bool, bool) {
	if !v.isBool() {
		return false, false
	}
	return v[0] == 't', true
}

// isInteger reports whether a number has neither fraction nor exponent,
// which is what makes rapidjson store it as an integer.
func (v jval) isInteger() bool {
	if !v.isNumber() {
		return false
	}
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// uint returns a non-negative integer that fits in a uint64 (rapidjson's
// IsUint64): no sign, fraction or exponent.
func (v jval) uint() (uint64, bool) {
	if !v.isInteger() || v[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil
}

// int returns an integer that fits in an int64 (rapidjson's IsInt64).
func (v jval) int() (int64, bool) {
	if !v.isInteger() {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// float returns any number as a float64; false for numbers too big for
// one.
func (v jval) float() (float64, bool) {
	if !v.isNumber() {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) { // only a number too big fails
		return 0, false
	}
	return f, true
}

// The messages of TritonJson's typed accessors, which Triton puts after
// "Unable to parse '<field>': ".
const (
	errNotString = "attempt to access JSON non-string as string"
	errNotBool   = "attempt to access JSON non-boolean as boolean"
	errNotUint   = "attempt to access JSON non-unsigned-integer as unsigned-integer"
	errNotInt    = "attempt to access JSON non-signed-integer as signed-integer"
	errNotNumber = "attempt to access JSON non-number as double"
	errNotArray  = "attempt to access JSON non-array as array"
	errNotObject = "attempt to access JSON non-object as object"
)
