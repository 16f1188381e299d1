package client

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/tensor"
)

// The JSON of Triton's HTTP protocol, written by hand on the request path
// (as the server's httpapi does), read with encoding/json on the response
// path, whose JSON is a small header when tensors travel in binary.

// jsonable reports whether t's data can travel as JSON: not FP16 or BF16,
// no NaN or infinity, BYTES elements that are UTF-8.
func jsonable(t tensor.Tensor) bool {
	switch t.DataType {
	case tensor.FP16, tensor.BF16:
		return false
	case tensor.FP32:
		for i := 0; i+4 <= len(t.Data); i += 4 {
			f := float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[i:])))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false
			}
		}
	case tensor.FP64:
		for i := 0; i+8 <= len(t.Data); i += 8 {
			f := math.Float64frombits(binary.LittleEndian.Uint64(t.Data[i:]))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false
			}
		}
	case tensor.Bytes:
		for _, e := range t.Elements() {
			if !utf8.Valid(e) {
				return false
			}
		}
	}
	return true
}

// appendJSONData appends t's elements as a flat JSON array.
func appendJSONData(b []byte, t tensor.Tensor) ([]byte, error) {
	b = append(b, '[')
	if t.DataType == tensor.Bytes {
		n, err := t.Shape.NumElements()
		if err != nil {
			return nil, err
		}
		if err := tensor.ValidateBytes(t.Data, n); err != nil {
			return nil, err
		}
		i := 0
		for _, e := range t.Elements() {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, string(e))
			i++
		}
		return append(b, ']'), nil
	}
	size := t.DataType.Size()
	if size == 0 || len(t.Data)%size != 0 {
		return nil, fmt.Errorf("input '%s': %d bytes is not a whole number of %s elements", t.Name, len(t.Data), t.DataType)
	}
	d := t.Data
	le := binary.LittleEndian
	for i := 0; i < len(d); i += size {
		if i > 0 {
			b = append(b, ',')
		}
		switch t.DataType {
		case tensor.Bool:
			b = strconv.AppendBool(b, d[i] != 0)
		case tensor.Uint8:
			b = strconv.AppendUint(b, uint64(d[i]), 10)
		case tensor.Uint16:
			b = strconv.AppendUint(b, uint64(le.Uint16(d[i:])), 10)
		case tensor.Uint32:
			b = strconv.AppendUint(b, uint64(le.Uint32(d[i:])), 10)
		case tensor.Uint64:
			b = strconv.AppendUint(b, le.Uint64(d[i:]), 10)
		case tensor.Int8:
			b = strconv.AppendInt(b, int64(int8(d[i])), 10)
		case tensor.Int16:
			b = strconv.AppendInt(b, int64(int16(le.Uint16(d[i:]))), 10)
		case tensor.Int32:
			b = strconv.AppendInt(b, int64(int32(le.Uint32(d[i:]))), 10)
		case tensor.Int64:
			b = strconv.AppendInt(b, int64(le.Uint64(d[i:])), 10)
		case tensor.FP32:
			b = strconv.AppendFloat(b, float64(math.Float32frombits(le.Uint32(d[i:]))), 'g', -1, 32)
		case tensor.FP64:
			b = strconv.AppendFloat(b, math.Float64frombits(le.Uint64(d[i:])), 'g', -1, 64)
		default:
			return nil, fmt.Errorf("input '%s': %s data cannot be written as JSON", t.Name, t.DataType)
		}
	}
	return append(b, ']'), nil
}

// decodeJSONData converts an output's JSON "data" (flat or nested) to
// tensor bytes of dt. raw is valid JSON (the response was).
func decodeJSONData(dt tensor.DataType, raw json.RawMessage) ([]byte, error) {
	if dt == tensor.Bytes {
		if out, ok := flatStrings(raw); ok {
			return out, nil
		}
	}
	return decodeJSONTokens(dt, raw)
}

// decodeJSONTokens is decodeJSONData's general path: every token of raw.
func decodeJSONTokens(dt tensor.DataType, raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out []byte
	if size := dt.Size(); size > 0 {
		out = make([]byte, 0, (len(raw)/2+1)*size) // an element takes at least 2 bytes of JSON
	}
	le := binary.LittleEndian
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if _, isDelim := tok.(json.Delim); isDelim {
			continue
		}
		switch v := tok.(type) {
		case bool:
			if dt != tensor.Bool {
				return nil, fmt.Errorf("a boolean in %s data", dt)
			}
			out = append(out, b2u8(v))
		case string:
			if dt != tensor.Bytes {
				return nil, fmt.Errorf("a string in %s data", dt)
			}
			out = tensor.AppendElement(out, []byte(v))
		case json.Number:
			s := string(v)
			switch dt {
			case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
				n, err := strconv.ParseUint(s, 10, dt.Size()*8)
				if err != nil {
					return nil, err
				}
				out = appendUint(out, n, dt.Size())
			case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
				n, err := strconv.ParseInt(s, 10, dt.Size()*8)
				if err != nil {
					return nil, err
				}
				out = appendUint(out, uint64(n), dt.Size())
			case tensor.FP32:
				f, err := strconv.ParseFloat(s, 32)
				if err != nil {
					return nil, err
				}
				out = le.AppendUint32(out, math.Float32bits(float32(f)))
			case tensor.FP64:
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return nil, err
				}
				out = le.AppendUint64(out, math.Float64bits(f))
			default:
				return nil, fmt.Errorf("a number in %s data", dt)
			}
		default:
			return nil, fmt.Errorf("unexpected %v in %s data", tok, dt)
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// flatStrings is decodeJSONData's fast path for BYTES: a flat array of
// strings without escapes, each of valid UTF-8, whose elements are then
// their bytes as they stand. Anything else (escapes, which encoding/json
// decodes, invalid UTF-8, which it replaces, nesting, other values)
// reports false, for the general path. The general path's json.Decoder
// and a token per element cost 2.5 µs and 13 allocations for one short
// string (text_reverse's answer); this, one allocation.
func flatStrings(raw []byte) ([]byte, bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return nil, false
	}
	out := make([]byte, 0, len(raw))
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, skipSpace(raw, i+1) == len(raw)
	}
	for i < len(raw) && raw[i] == '"' {
		end := bytes.IndexAny(raw[i+1:], "\\\"")
		if end < 0 || raw[i+1+end] != '"' || !utf8.Valid(raw[i+1:i+1+end]) {
			return nil, false
		}
		out = tensor.AppendElement(out, raw[i+1:i+1+end])
		i = skipSpace(raw, i+end+2)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == ']':
			return out, skipSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
	return nil, false
}

// skipSpace returns the index of the first byte of raw from i on that is
// not JSON white space.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// appendUint appends the low size bytes of n, little-endian.
func appendUint(b []byte, n uint64, size int) []byte {
	for i := range size {
		b = append(b, byte(n>>(8*i)))
	}
	return b
}

// parameterValue converts a JSON parameter value as Triton's HTTP
// frontend does: a string, a bool, an integer (int64, or uint64 beyond
// int64's range), any other number a float64.
func parameterValue(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, errors.New("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case 't', 'f':
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	}
	s := string(raw)
	if !bytes.ContainsAny(raw, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("parameter value %s is not a string, boolean or number", s)
	}
	return f, nil
}
