package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"unicode/utf8"

	"github.com/triton-go/triton/tensor"
)

// Messages are encoded in Python's own marshal format, version 2 (no
// references between objects), which the stub reads and writes with the
// C code of its standard library (marshal.loads, marshal.dumps(v, 2)):
// several times faster there than JSON. Only the types messages use are
// written and read: None, booleans, integers, floats, str, bytes, lists,
// tuples (read as lists) and dicts with str keys.
const (
	mNull  = '0' // ends a dict
	mNone  = 'N'
	mFalse = 'F'
	mTrue  = 'T'
	mInt   = 'i' // int32
	mLong  = 'l' // arbitrary integer: digit count (signed), 15-bit digits
	mFloat = 'g' // float64
	mStr   = 'u' // UTF-8
	mBytes = 's'
	mList  = '['
	mTuple = '('
	mDict  = '{'
)

// enc appends marshal data.
type enc struct{ b []byte }

func (e *enc) byte1(c byte) { e.b = append(e.b, c) }

func (e *enc) u32(n int) { e.b = binary.LittleEndian.AppendUint32(e.b, uint32(n)) }

func (e *enc) none()      { e.byte1(mNone) }
func (e *enc) dict()      { e.byte1(mDict) }
func (e *enc) end()       { e.byte1(mNull) }
func (e *enc) list(n int) { e.byte1(mList); e.u32(n) }

func (e *enc) boolean(v bool) {
	if v {
		e.byte1(mTrue)
	} else {
		e.byte1(mFalse)
	}
}

func (e *enc) str(s string) {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // invalid bytes become U+FFFD, as Python would refuse them
	}
	e.byte1(mStr)
	e.u32(len(s))
	e.b = append(e.b, s...)
}

// key writes a dict key.
func (e *enc) key(k string) { e.str(k) }

func (e *enc) integer(n int64) {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		e.byte1(mInt)
		e.b = binary.LittleEndian.AppendUint32(e.b, uint32(int32(n)))
		return
	}
	neg := n < 0
	u := uint64(n)
	if neg {
		u = -u
	}
	e.bigDigits(u, neg)
}

func (e *enc) unsigned(u uint64) {
	if u <= math.MaxInt32 {
		e.integer(int64(u))
		return
	}
	e.bigDigits(u, false)
}

func (e *enc) bigDigits(u uint64, neg bool) {
	var digits []uint16
	for u > 0 {
		digits = append(digits, uint16(u&0x7fff))
		u >>= 15
	}
	n := len(digits)
	if neg {
		n = -n
	}
	e.byte1(mLong)
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(int32(n)))
	for _, d := range digits {
		e.b = binary.LittleEndian.AppendUint16(e.b, d)
	}
}

func (e *enc) float(f float64) {
	e.byte1(mFloat)
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(f))
}

func (e *enc) strs(ss []string) {
	e.list(len(ss))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *enc) ints(ns []int64) {
	e.list(len(ns))
	for _, n := range ns {
		e.integer(n)
	}
}

// value writes a parameter value or a map of them.
func (e *enc) value(v any) {
	switch x := v.(type) {
	case nil:
		e.none()
	case bool:
		e.boolean(x)
	case string:
		e.str(x)
	case int:
		e.integer(int64(x))
	case int32:
		e.integer(int64(x))
	case int64:
		e.integer(x)
	case uint32:
		e.integer(int64(x))
	case uint64:
		e.unsigned(x)
	case float32:
		e.float(float64(x))
	case float64:
		e.float(x)
	case []any:
		e.list(len(x))
		for _, y := range x {
			e.value(y)
		}
	case map[string]any:
		e.dict()
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e.key(k)
			e.value(x[k])
		}
		e.end()
	case map[string]string:
		e.dict()
		for k, s := range x {
			e.key(k)
			e.str(s)
		}
		e.end()
	default:
		e.str(fmt.Sprint(x))
	}
}

// dec reads marshal data.
type dec struct {
	b   []byte
	off int
}

var errShort = errors.New("message ends early")

func (d *dec) next() (byte, error) {
	if d.off >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.off] &^ 0x80 // a reference flag (never set by version 2) would be ignored
	d.off++
	return c, nil
}

func (d *dec) peek() byte {
	if d.off >= len(d.b) {
		return 0
	}
	return d.b[d.off] &^ 0x80
}

// none consumes a None and reports whether there was one.
func (d *dec) none() bool {
	if d.peek() != mNone {
		return false
	}
	d.off++
	return true
}

func (d *dec) take(n int) ([]byte, error) {
	if n < 0 || d.off+n > len(d.b) {
		return nil, errShort
	}
	b := d.b[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *dec) u32() (int, error) {
	b, err := d.take(4)
	if err != nil {
		return 0, err
	}
	return int(int32(binary.LittleEndian.Uint32(b))), nil
}

// value reads any value: nil, bool, int64 (or *big.Int beyond 64 bits),
// float64, string, []byte, []any, map[string]any.
func (d *dec) value() (any, error) {
	c, err := d.next()
	if err != nil {
		return nil, err
	}
	switch c {
	case mNone:
		return nil, nil
	case mTrue:
		return true, nil
	case mFalse:
		return false, nil
	case mInt:
		n, err := d.u32()
		return int64(n), err
	case mLong:
		return d.long()
	case mFloat:
		b, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case mStr, mBytes:
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		b, err := d.take(n)
		if err != nil {
			return nil, err
		}
		if c == mBytes {
			return append([]byte(nil), b...), nil
		}
		return string(b), nil
	case mList, mTuple:
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > len(d.b)-d.off {
			return nil, errShort
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.value(); err != nil {
				return nil, err
			}
		}
		return out, nil
	case mDict:
		out := map[string]any{}
		err := d.each(func(k string) error {
			v, err := d.value()
			out[k] = v
			return err
		})
		return out, err
	}
	return nil, fmt.Errorf("marshal type %q is not read here", c)
}

func (d *dec) long() (any, error) {
	n, err := d.u32()
	if err != nil {
		return nil, err
	}
	neg := n < 0
	if neg {
		n = -n
	}
	b, err := d.take(2 * n)
	if err != nil {
		return nil, err
	}
	v := new(big.Int)
	for i := n - 1; i >= 0; i-- {
		v.Lsh(v, 15)
		v.Or(v, big.NewInt(int64(binary.LittleEndian.Uint16(b[2*i:]))))
	}
	if neg {
		v.Neg(v)
	}
	if v.IsInt64() {
		return v.Int64(), nil
	}
	if v.IsUint64() {
		return v.Uint64(), nil
	}
	return v, nil
}

// each reads a dict, calling f with each key; f reads the value.
func (d *dec) each(f func(key string) error) error {
	for {
		if d.peek() == mNull {
			d.off++
			return nil
		}
		k, err := d.str()
		if err != nil {
			return fmt.Errorf("dict key: %w", err)
		}
		if err := f(k); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
}

// items reads a list (or tuple), calling f for each item.
func (d *dec) items(f func(i int) error) error {
	return d.sized(nil, f)
}

// sized reads a list (or tuple) as items does, first telling size (when
// not nil) how many items it has, so that the caller allocates once.
func (d *dec) sized(size func(n int), f func(i int) error) error {
	c, err := d.next()
	if err != nil {
		return err
	}
	if c == mNone {
		return nil
	}
	if c != mList && c != mTuple {
		return fmt.Errorf("want a list, have marshal type %q", c)
	}
	n, err := d.u32()
	if err != nil {
		return err
	}
	if n < 0 || n > len(d.b)-d.off {
		return errShort
	}
	if size != nil {
		size(n)
	}
	for i := range n {
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}

// dtype reads a tensor's data type name: one of Triton's, as a constant
// string (no allocation), or any other as it is.
func (d *dec) dtype() (string, error) {
	c, err := d.next()
	if err != nil {
		return "", err
	}
	if c != mStr && c != mBytes {
		return "", fmt.Errorf("want a str, have marshal type %q", c)
	}
	n, err := d.u32()
	if err != nil {
		return "", err
	}
	b, err := d.take(n)
	if err != nil {
		return "", err
	}
	if dt := tensor.ParseDataType(string(b)); dt.Valid() {
		return dt.String(), nil
	}
	return string(b), nil
}

func (d *dec) str() (string, error) {
	c, err := d.next()
	if err != nil {
		return "", err
	}
	if c != mStr && c != mBytes {
		if c == mNone {
			return "", nil
		}
		return "", fmt.Errorf("want a str, have marshal type %q", c)
	}
	n, err := d.u32()
	if err != nil {
		return "", err
	}
	b, err := d.take(n)
	return string(b), err
}

func (d *dec) integer() (int64, error) {
	v, err := d.value()
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case int64:
		return x, nil
	case uint64:
		return int64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("want an integer, have %T", v)
}

func (d *dec) number() (float64, error) {
	v, err := d.value()
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float64:
		return x, nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, nil
	}
	return 0, fmt.Errorf("want a number, have %T", v)
}

func (d *dec) boolean() (bool, error) {
	v, err := d.value()
	if err != nil {
		return false, err
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case int64:
		return x != 0, nil
	case nil:
		return false, nil
	}
	return false, fmt.Errorf("want a bool, have %T", v)
}
