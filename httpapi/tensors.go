package httpapi

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/tensor"
)

// errShapeMismatch is the error for a "data" array whose element count is
// not the product of the shape.
func errShapeMismatch() error {
	return errorf(triton.InvalidArgument, "Failed to parse 'data' field: shape does not match true shape of 'data' field")
}

// decodeJSONInput decodes an input's "data" (nested or flat, row-major)
// into tensor memory of t's datatype and shape. Elements must have the
// JSON type of the datatype (protocol spec §1.6, §3): BOOL true/false,
// UINT* unsigned integers, INT* integers (1.0 is not one), FP32/FP64 any
// number, BYTES strings of valid UTF-8 ([checkUTF8]; body is the request
// body, which in aliases). Integers out of the datatype's range are
// refused rather than truncated.
func (h *handler) decodeJSONInput(t tensor.Tensor, in []member, body []byte) ([]byte, error) {
	count, err := t.Shape.NumElements()
	if err != nil {
		return nil, parseErr("shape", err.Error())
	}
	if count == 0 {
		// Triton does not look at "data" at all for an empty tensor.
		return []byte{}, nil
	}
	data, _ := get(in, "data")
	if !data.isArray() {
		return nil, parseErr("data", errNotArray)
	}
	switch t.DataType {
	case tensor.FP16, tensor.BF16:
		return nil, errorf(triton.InvalidArgument, "receiving %s data via JSON is not supported. Please use the binary data format for input %s", t.DataType, t.Name)
	case tensor.Invalid:
		return nil, errorf(triton.InvalidArgument, "invalid datatype for input %s", t.Name)
	case tensor.Bytes:
		return h.decodeJSONBytes(t, data, count, body)
	}
	// Every element takes at least one byte of JSON text: a count the text
	// cannot hold fails before anything is allocated.
	if count > int64(len(data)) {
		return nil, errShapeMismatch()
	}
	size := int64(t.DataType.Size())
	if count*size > h.maxSize {
		return nil, errorf(triton.InvalidArgument, "Input '%s' has a byte_size (%d bytes) that exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).",
			t.Name, count*size, h.maxSize)
	}
	out := make([]byte, count*size)
	var i int64
	err = forEachScalar(data, func(e jval) error {
		if i >= count {
			return errShapeMismatch()
		}
		if err := putElement(out[i*size:], t.DataType, e, t.Name); err != nil {
			return err
		}
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if i != count {
		return nil, errShapeMismatch()
	}
	return out, nil
}

// decodeJSONBytes decodes a BYTES input: each element a string of valid
// UTF-8, framed as a 4-byte little-endian length and the bytes.
func (h *handler) decodeJSONBytes(t tensor.Tensor, data jval, count int64, body []byte) ([]byte, error) {
	var n, total int64
	err := forEachScalar(data, func(e jval) error {
		s, ok := e.str()
		if !ok {
			return errorf(triton.InvalidArgument, "Unable to parse JSON bytes array: %s", errNotString)
		}
		if err := checkUTF8(body, e); err != nil {
			return err
		}
		n++
		total += 4 + int64(len(s))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n != count {
		return nil, errShapeMismatch()
	}
	if total > h.maxSize {
		return nil, errorf(triton.InvalidArgument, "Input '%s' has a byte_size (%d bytes) that exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).",
			t.Name, total, h.maxSize)
	}
	out := make([]byte, 0, total)
	_ = forEachScalar(data, func(e jval) error {
		s, _ := e.str()
		out = tensor.AppendElement(out, s)
		return nil
	})
	return out, nil
}

// forEachScalar calls f for every non-array value in v, depth first, in
// document order.
func forEachScalar(v jval, f func(jval) error) error {
	if !v.isArray() {
		return f(v)
	}
	pos := wsEnd(v, 1)
	for pos < len(v) && v[pos] != ']' {
		end := skip(v, pos)
		if err := forEachScalar(v[pos:end], f); err != nil {
			return err
		}
		pos = wsEnd(v, end)
		if pos < len(v) && v[pos] == ',' {
			pos = wsEnd(v, pos+1)
		}
	}
	return nil
}

// putElement writes one JSON element as a little-endian value of dt at
// the start of dst.
func putElement(dst []byte, dt tensor.DataType, e jval, name string) error {
	if dt == tensor.Bool {
		b, ok := e.boolean()
		if !ok {
			return parseErr("data", errNotBool)
		}
		dst[0] = b2u8(b)
		return nil
	}
	if dt == tensor.FP32 || dt == tensor.FP64 {
		f, ok := parseFloat(e)
		if !ok {
			return parseErr("data", errNotNumber)
		}
		if dt == tensor.FP32 {
			binary.LittleEndian.PutUint32(dst, math.Float32bits(float32(f)))
		} else {
			binary.LittleEndian.PutUint64(dst, math.Float64bits(f))
		}
		return nil
	}
	unsigned := dt == tensor.Uint8 || dt == tensor.Uint16 || dt == tensor.Uint32 || dt == tensor.Uint64
	var u uint64
	if unsigned {
		n, ok := parseUint(e)
		if !ok {
			return parseErr("data", errNotUint)
		}
		if bits := 8 * dt.Size(); bits < 64 && n>>bits != 0 {
			return outOfRange(e, dt, name)
		}
		u = n
	} else {
		n, ok := parseInt(e)
		if !ok {
			return parseErr("data", errNotInt)
		}
		if bits := 8 * dt.Size(); bits < 64 && (n < -(1<<(bits-1)) || n >= 1<<(bits-1)) {
			return outOfRange(e, dt, name)
		}
		u = uint64(n)
	}
	switch dt.Size() {
	case 1:
		dst[0] = byte(u)
	case 2:
		binary.LittleEndian.PutUint16(dst, uint16(u))
	case 4:
		binary.LittleEndian.PutUint32(dst, uint32(u))
	default:
		binary.LittleEndian.PutUint64(dst, u)
	}
	return nil
}

func outOfRange(e jval, dt tensor.DataType, name string) error {
	return errorf(triton.InvalidArgument, "Unable to parse 'data': value %s is out of range for %s input '%s'", e, dt, name)
}

func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// parseUint and parseInt are jval.uint and jval.int without the string
// conversion, for the elements of large arrays.
func parseUint(v jval) (uint64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func parseInt(v jval) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	u, ok := parseUint(digits)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func parseFloat(v jval) (float64, bool) {
	if !v.isNumber() {
		return 0, false
	}
	// The text is a validated JSON number; convert it in place.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(v), len(v)), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// appendJSONData appends an output's elements as a flat JSON array:
// integers as integers, BOOL as true/false, FP32 widened to double and FP64
// printed as rapidjson prints doubles, BYTES elements as strings of their
// bytes. FP16 and BF16 cannot travel in JSON.
func appendJSONData(b []byte, t tensor.Tensor) ([]byte, error) {
	count, err := t.Shape.NumElements()
	if err != nil {
		return nil, errorf(triton.Internal, "output '%s': %v", t.Name, err)
	}
	switch t.DataType {
	case tensor.FP16, tensor.BF16:
		return nil, errorf(triton.InvalidArgument, "sending %s data via JSON is not supported. Please use the binary data format for output", t.DataType)
	case tensor.Bytes:
		if err := tensor.ValidateBytes(t.Data, count); err != nil {
			return nil, errorf(triton.Internal, "output tensor shape does not match size of output for '%s'", t.Name)
		}
		b = append(b, '[')
		i := 0
		for _, e := range t.Elements() {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, e)
			i++
		}
		return append(b, ']'), nil
	}
	size := t.DataType.Size()
	if size == 0 {
		return nil, errorf(triton.InvalidArgument, "Invalid data type for output tensor")
	}
	if int64(len(t.Data)) != count*int64(size) {
		return nil, errorf(triton.Internal, "output tensor shape does not match size of output for '%s'", t.Name)
	}
	d := t.Data
	b = append(b, '[')
	for i := 0; i < len(d); i += size {
		if i > 0 {
			b = append(b, ',')
		}
		switch t.DataType {
		case tensor.Bool:
			if d[i] != 0 {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		case tensor.Uint8:
			b = strconv.AppendUint(b, uint64(d[i]), 10)
		case tensor.Uint16:
			b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint16(d[i:])), 10)
		case tensor.Uint32:
			b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint32(d[i:])), 10)
		case tensor.Uint64:
			b = strconv.AppendUint(b, binary.LittleEndian.Uint64(d[i:]), 10)
		case tensor.Int8:
			b = strconv.AppendInt(b, int64(int8(d[i])), 10)
		case tensor.Int16:
			b = strconv.AppendInt(b, int64(int16(binary.LittleEndian.Uint16(d[i:]))), 10)
		case tensor.Int32:
			b = strconv.AppendInt(b, int64(int32(binary.LittleEndian.Uint32(d[i:]))), 10)
		case tensor.Int64:
			b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(d[i:])), 10)
		case tensor.FP32:
			b = jsontext.AppendDouble(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(d[i:]))))
		case tensor.FP64:
			b = jsontext.AppendDouble(b, math.Float64frombits(binary.LittleEndian.Uint64(d[i:])))
		}
	}
	return append(b, ']'), nil
}
