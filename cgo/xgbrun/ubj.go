package xgbrun

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxDepth bounds the nesting of objects and arrays in a JSON or UBJSON
// model. XGBoost's readers are recursive, one C++ frame (or three) per
// level, so a file nested a million deep would overflow the stack of the
// thread that loads it; XGBoost's own models nest about eight deep.
const maxDepth = 64

// The decoded form of a JSON or UBJSON document, shared by both readers:
// map[string]any for an object, []any for an array, typed arrays as the
// UBJSON writer makes them ([]float32, []uint8, []int32, []int64) and, from
// JSON text, arrays of numbers as []int64 (all integers) or []float64;
// string, int64, float64, bool and nil for the scalars.

// ubjDecoder reads UBJSON as XGBoost 1.7's UBJReader (src/common/json.cc)
// does, with the bounds checks that reader lacks: it memcpys lengths read
// from the file without comparing them with what is left, so a truncated
// or corrupt file makes XGBoost read past its buffer or try to allocate
// petabytes. The grammar is XGBoost's subset: strings and object keys have
// an 'L' (int64) length; a typed array is '$' type '#' 'L' count with type
// 'd', 'U', 'l' or 'L'; a counted array is '#' 'L' count; scalars are Z T F
// d S i U I l L C; D and H are refused, as XGBoost refuses them; a
// duplicate key keeps its first value (std::map::emplace); the document is
// one value, and what follows it is ignored.
type ubjDecoder struct {
	data []byte
	pos  int
}

// decodeUBJ decodes data as XGBoost would read it, or says where and why
// XGBoost would fail or misbehave.
func decodeUBJ(data []byte) (any, error) {
	d := &ubjDecoder{data: data}
	if len(data) == 0 {
		return nil, fmt.Errorf("UBJSON: empty")
	}
	return d.value(0)
}

func (d *ubjDecoder) errf(format string, args ...any) error {
	return fmt.Errorf("UBJSON at byte %d: %s", d.pos, fmt.Sprintf(format, args...))
}

// need fails unless n more bytes are left.
func (d *ubjDecoder) need(n int64, what string) error {
	if n < 0 || n > int64(len(d.data)-d.pos) {
		return d.errf("%s needs %d bytes, %d are left (truncated?)", what, n, len(d.data)-d.pos)
	}
	return nil
}

func (d *ubjDecoder) byte1(what string) (byte, error) {
	if d.pos >= len(d.data) {
		return 0, d.errf("%s: unexpected end (truncated?)", what)
	}
	c := d.data[d.pos]
	d.pos++
	return c, nil
}

func (d *ubjDecoder) expect(c byte, what string) error {
	got, err := d.byte1(what)
	if err != nil {
		return err
	}
	if got != c {
		d.pos--
		return d.errf("%s: expected %q, got %q", what, c, got)
	}
	return nil
}

func (d *ubjDecoder) fixed(n int, what string) ([]byte, error) {
	if err := d.need(int64(n), what); err != nil {
		return nil, err
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// count reads an 'L' count or length: an int64 that must be at least 0 and,
// as each of the count's items takes at least unit bytes, at most what is
// left divided by unit.
func (d *ubjDecoder) count(unit int64, what string) (int, error) {
	if err := d.expect('L', what+" length marker"); err != nil {
		return 0, err
	}
	b, err := d.fixed(8, what+" length")
	if err != nil {
		return 0, err
	}
	n := int64(binary.BigEndian.Uint64(b))
	if n < 0 {
		return 0, d.errf("%s: negative length %d", what, n)
	}
	if n > int64(len(d.data)-d.pos)/unit {
		return 0, d.errf("%s of %d items of %d bytes or more runs past the end (%d bytes left; truncated?)",
			what, n, unit, len(d.data)-d.pos)
	}
	return int(n), nil
}

func (d *ubjDecoder) str(what string) (string, error) {
	n, err := d.count(1, what)
	if err != nil {
		return "", err
	}
	s := string(d.data[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}

func (d *ubjDecoder) value(depth int) (any, error) {
	c, err := d.byte1("value")
	if err != nil {
		return nil, err
	}
	switch c {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	case 'Z':
		return nil, nil
	case 'T':
		return true, nil
	case 'F':
		// XGBoost 1.7 reads F as true (a bug in UBJReader::Parse); its
		// writer never writes booleans into a model.
		return true, nil
	case 'd':
		b, err := d.fixed(4, "float32")
		if err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case 'S':
		return d.str("string")
	case 'i', 'C':
		b, err := d.fixed(1, "int8")
		if err != nil {
			return nil, err
		}
		return int64(int8(b[0])), nil
	case 'U':
		b, err := d.fixed(1, "uint8")
		if err != nil {
			return nil, err
		}
		return int64(b[0]), nil
	case 'I':
		b, err := d.fixed(2, "int16")
		if err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case 'l':
		b, err := d.fixed(4, "int32")
		if err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case 'L':
		b, err := d.fixed(8, "int64")
		if err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case 'D':
		d.pos--
		return nil, d.errf("float64 values are not supported by XGBoost")
	case 'H':
		d.pos--
		return nil, d.errf("high-precision numbers are not supported by XGBoost")
	}
	d.pos--
	return nil, d.errf("unknown marker %q", c)
}

func (d *ubjDecoder) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errf("nested more than %d deep", maxDepth)
	}
	m := map[string]any{}
	for {
		if d.pos >= len(d.data) {
			return nil, d.errf("object: unexpected end (truncated?)")
		}
		if d.data[d.pos] == '}' {
			d.pos++
			return m, nil
		}
		k, err := d.str("object key")
		if err != nil {
			return nil, err
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
}

func (d *ubjDecoder) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errf("nested more than %d deep", maxDepth)
	}
	if d.pos >= len(d.data) {
		return nil, d.errf("array: unexpected end (truncated?)")
	}
	switch d.data[d.pos] {
	case '$':
		d.pos++
		t, err := d.byte1("typed array type")
		if err != nil {
			return nil, err
		}
		if err := d.expect('#', "typed array count marker"); err != nil {
			return nil, err
		}
		size := map[byte]int64{'d': 4, 'U': 1, 'l': 4, 'L': 8}[t]
		if size == 0 {
			d.pos -= 2
			return nil, d.errf("typed array of %q is not supported by XGBoost", t)
		}
		n, err := d.count(size, "typed array")
		if err != nil {
			return nil, err
		}
		b := d.data[d.pos : d.pos+n*int(size)]
		d.pos += n * int(size)
		switch t {
		case 'd':
			a := make([]float32, n)
			for i := range a {
				a[i] = math.Float32frombits(binary.BigEndian.Uint32(b[4*i:]))
			}
			return a, nil
		case 'U':
			return append([]uint8(nil), b...), nil
		case 'l':
			a := make([]int32, n)
			for i := range a {
				a[i] = int32(binary.BigEndian.Uint32(b[4*i:]))
			}
			return a, nil
		default:
			a := make([]int64, n)
			for i := range a {
				a[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
			}
			return a, nil
		}
	case '#':
		d.pos++
		n, err := d.count(1, "array")
		if err != nil {
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = d.value(depth); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	var a []any
	for {
		if d.pos >= len(d.data) {
			return nil, d.errf("array: unexpected end (truncated?)")
		}
		if d.data[d.pos] == ']' {
			d.pos++
			if a == nil {
				a = []any{}
			}
			return a, nil
		}
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
}
