package tensor

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
)

// ErrNegativeDim is wrapped by the errors [Shape.NumElements] and
// [Shape.ByteSize] return for a shape with a negative dimension. A concrete
// tensor shape has no wildcards; -1 is only meaningful in a pattern given to
// [Shape.Matches].
var ErrNegativeDim = errors.New("negative dimension")

// ErrOverflow is wrapped by the errors returned when an element count or a
// byte size does not fit in an int64.
var ErrOverflow = errors.New("overflows int64")

// Shape is the shape of a tensor: one dimension per axis, outermost first
// (row-major). A nil or empty Shape is a scalar with one element. A
// dimension of 0 makes an empty tensor; negative dimensions are invalid
// except as the -1 wildcard in a pattern passed to [Shape.Matches].
//
// Shape is a slice: copying a Shape value shares its backing array; use
// [Shape.Clone] before modifying a shape you do not own.
type Shape []int64

// NumElements returns the number of elements in a tensor of shape s: the
// product of its dimensions, 1 for a scalar and 0 when any dimension is 0.
// It returns an error wrapping [ErrNegativeDim] when a dimension is negative
// (even if another is 0) and one wrapping [ErrOverflow] when the product does
// not fit in an int64; both also wrap [ErrInvalid]. It never overflows internally and does not allocate
// unless it fails.
func (s Shape) NumElements() (int64, error) {
	// This is on every request's path, so it is kept small enough to
	// inline: bits.Mul64 gives the full 128-bit product, so overflow shows
	// without a division, and anything unusual (a negative dimension, an
	// overflow, possibly cancelled by a later 0) goes to the slow path.
	// bad collects the sign bit of every dimension and the high bits of
	// every product, so it is non-zero after any negative dimension or
	// overflow.
	n, bad := uint64(1), uint64(0)
	for _, d := range s {
		hi, lo := bits.Mul64(n, uint64(d))
		bad |= uint64(d)>>63 | hi | lo>>63
		n = lo
	}
	if bad != 0 {
		return s.numElementsSlow()
	}
	return int64(n), nil
}

// numElementsSlow is NumElements for shapes with a negative dimension or an
// overflowing product.
func (s Shape) numElementsSlow() (int64, error) {
	zero := false
	for i, d := range s {
		if d < 0 {
			return 0, invalidf("shape %v: dimension %d is %d: %w", s.String(), i, d, ErrNegativeDim)
		}
		zero = zero || d == 0
	}
	if zero {
		return 0, nil
	}
	return 0, invalidf("shape %v: element count %w", s.String(), ErrOverflow)
}

// ByteSize returns the size in bytes of a tensor of shape s and fixed-size
// type dt: [Shape.NumElements] times dt.Size(). Besides the errors of
// NumElements, it returns an error wrapping [ErrOverflow] when the byte size
// does not fit in an int64, and one when dt has no fixed size ([Bytes],
// [Invalid] or out of range). All wrap [ErrInvalid].
func (s Shape) ByteSize(dt DataType) (int64, error) {
	size := int64(dt.Size())
	if size == 0 {
		return 0, invalidf("data type %s has no fixed element size", dtName(dt))
	}
	n, err := s.NumElements()
	if err != nil {
		return 0, err
	}
	if hi, lo := bits.Mul64(uint64(n), uint64(size)); hi != 0 || lo > math.MaxInt64 {
		return 0, invalidf("shape %v of %v: byte size %w", s.String(), dt, ErrOverflow)
	}
	return n * size, nil
}

// String formats s as "[d0,d1,...]", and a scalar as "[]".
func (s Shape) String() string {
	b := make([]byte, 0, 2+len(s)*4)
	b = append(b, '[')
	for i, d := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d, 10)
	}
	b = append(b, ']')
	return string(b)
}

// Equal reports whether s and o have the same rank and dimensions. A nil and
// an empty Shape are equal (both are scalars).
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Matches reports whether the concrete shape s fits pattern, as a request
// shape is checked against a model configuration's dims: both have the same
// rank and every dimension equals the pattern's, except that a -1 in pattern
// matches any non-negative dimension. A shape with a negative dimension
// matches nothing.
func (s Shape) Matches(pattern Shape) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i, d := range s {
		if d < 0 {
			return false
		}
		if p := pattern[i]; p != -1 && p != d {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it. Clone of nil is
// nil.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	c := make(Shape, len(s))
	copy(c, s)
	return c
}

// dtName formats a data type for error messages, showing the number of
// values outside the enum.
func dtName(dt DataType) string {
	if dt.Valid() {
		return dt.String()
	}
	return "DataType(" + strconv.Itoa(int(dt)) + ")"
}
