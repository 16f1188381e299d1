package tensor_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/triton-go/triton/tensor"
)

// FuzzValidateBytes checks that ValidateBytes never panics on arbitrary
// data and counts, that every error wraps ErrInvalid, and that data it
// accepts decodes and re-encodes byte for byte.
func FuzzValidateBytes(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0, 0, 0, 0}, int64(1))
	f.Add(tensor.AppendElement(tensor.AppendElement(nil, []byte("ab\x00")), []byte("\xff")), int64(2))
	f.Add([]byte{5, 0, 0, 0, 'a'}, int64(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, int64(1))
	f.Add([]byte{1, 0, 0, 0, 'a', 0}, int64(1))
	f.Add([]byte{1, 0}, int64(1))
	f.Add([]byte{}, int64(-1))
	f.Add([]byte{0, 0, 0, 0}, int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, data []byte, n int64) {
		err := tensor.ValidateBytes(data, n)
		x := tensor.Tensor{Name: "F", DataType: tensor.Bytes, Shape: tensor.Shape{n}, Data: data}
		count := 0
		for range x.Elements() {
			count++
		}
		if err != nil {
			if !errors.Is(err, tensor.ErrInvalid) {
				t.Fatalf("ValidateBytes error %v does not wrap ErrInvalid", err)
			}
			if x.Validate() == nil {
				t.Fatal("Validate accepts what ValidateBytes rejects")
			}
			if _, err := tensor.ByteSlices(x); err == nil {
				t.Fatal("ByteSlices accepts what ValidateBytes rejects")
			}
			return
		}
		if int64(count) != n {
			t.Fatalf("Elements yielded %d elements, want %d", count, n)
		}
		elems, err := tensor.ByteSlices(x)
		if err != nil || int64(len(elems)) != n {
			t.Fatalf("ByteSlices = %d elements, %v; want %d", len(elems), err, n)
		}
		y, err := tensor.FromByteSlices("F", tensor.Shape{n}, elems)
		if err != nil || !bytes.Equal(y.Data, data) {
			t.Fatalf("FromByteSlices round trip = % x, %v; want % x", y.Data, err, data)
		}
		strs, err := tensor.Strings(x)
		if err != nil {
			t.Fatal(err)
		}
		z, err := tensor.FromStrings("F", tensor.Shape{n}, strs)
		if err != nil || !bytes.Equal(z.Data, data) {
			t.Fatalf("FromStrings round trip = % x, %v; want % x", z.Data, err, data)
		}
		if n > 0 {
			mid := n / 2
			a, err1 := x.SliceRows(0, mid)
			b, err2 := x.SliceRows(mid, n)
			if err1 != nil || err2 != nil || !bytes.Equal(append(bytes.Clone(a.Data), b.Data...), data) {
				t.Fatalf("SliceRows split at %d: %v, %v", mid, err1, err2)
			}
			c, err := tensor.Concat("F", []tensor.Tensor{a, b})
			if err != nil || !bytes.Equal(c.Data, data) || !c.Shape.Equal(x.Shape) {
				t.Fatalf("Concat of halves = %v % x, %v", c.Shape, c.Data, err)
			}
		}
	})
}

// FuzzShape checks NumElements and ByteSize against arbitrary-precision
// arithmetic. The shape is the input read as little-endian int64s; small
// selects a mode that keeps dimensions small so the non-overflowing paths
// are explored as well.
func FuzzShape(f *testing.F) {
	dims := func(ds ...int64) []byte {
		var b []byte
		for _, d := range ds {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
		return b
	}
	f.Add(dims(), uint8(0), uint8(11))
	f.Add(dims(2, 3, 4), uint8(0), uint8(11))
	f.Add(dims(1<<40, 1<<40), uint8(0), uint8(11))
	f.Add(dims(3037000499, 3037000499), uint8(0), uint8(1))
	f.Add(dims(1<<31, 1<<31, 2), uint8(0), uint8(12))
	f.Add(dims(0, -1), uint8(0), uint8(3))
	f.Add(dims(math.MaxInt64, 0), uint8(0), uint8(13))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7}, uint8(1), uint8(5))
	f.Fuzz(func(t *testing.T, raw []byte, small uint8, dtByte uint8) {
		var s tensor.Shape
		if small%2 == 1 {
			for _, b := range raw {
				s = append(s, int64(int8(b)))
			}
		} else {
			for len(raw) >= 8 {
				s = append(s, int64(binary.LittleEndian.Uint64(raw)))
				raw = raw[8:]
			}
		}
		dt := tensor.DataType(dtByte % 16)

		// The exact product, except that once it passes 2^63 only the
		// facts that it is too big, zero or negative are kept, so that long
		// shapes stay cheap.
		maxInt := big.NewInt(math.MaxInt64)
		want := big.NewInt(1)
		negative, zero, huge := false, false, false
		for _, d := range s {
			switch {
			case d < 0:
				negative = true
			case d == 0:
				zero = true
			case !huge:
				want.Mul(want, big.NewInt(d))
				huge = want.Cmp(maxInt) > 0
			}
		}
		if zero {
			want.SetInt64(0)
		}

		n, err := s.NumElements()
		switch {
		case negative:
			if !errors.Is(err, tensor.ErrNegativeDim) {
				t.Fatalf("%v.NumElements() = %d, %v; want ErrNegativeDim", s, n, err)
			}
		case want.Cmp(maxInt) > 0:
			if !errors.Is(err, tensor.ErrOverflow) {
				t.Fatalf("%v.NumElements() = %d, %v; want ErrOverflow (product %v)", s, n, err, want)
			}
		default:
			if err != nil || n != want.Int64() {
				t.Fatalf("%v.NumElements() = %d, %v; want %v", s, n, err, want)
			}
		}
		if err != nil && !errors.Is(err, tensor.ErrInvalid) {
			t.Fatalf("NumElements error %v does not wrap ErrInvalid", err)
		}

		size, err := s.ByteSize(dt)
		wantSize := new(big.Int).Mul(want, big.NewInt(int64(dt.Size())))
		switch {
		case dt.Size() == 0 || negative:
			if err == nil {
				t.Fatalf("%v.ByteSize(%v) = %d, want an error", s, dt, size)
			}
		case wantSize.Cmp(maxInt) > 0:
			if !errors.Is(err, tensor.ErrOverflow) {
				t.Fatalf("%v.ByteSize(%v) = %d, %v; want ErrOverflow", s, dt, size, err)
			}
		default:
			if err != nil || size != wantSize.Int64() {
				t.Fatalf("%v.ByteSize(%v) = %d, %v; want %v", s, dt, size, err, wantSize)
			}
		}

		if !s.Matches(s) && !negative {
			t.Fatalf("%v does not match itself", s)
		}
		if !s.Equal(s.Clone()) {
			t.Fatalf("%v differs from its clone", s)
		}
		_ = s.String()
	})
}
