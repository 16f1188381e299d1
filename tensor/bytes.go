package tensor

import (
	"encoding/binary"
	"iter"
	"math"
	"strconv"
)

// lenPrefix is the size of the little-endian uint32 length that precedes
// each element of a BYTES tensor.
const lenPrefix = 4

// AppendElement appends one BYTES element to dst in Triton's framing — a
// 4-byte little-endian length followed by elem — and returns the extended
// slice, like append. elem may hold any bytes, NUL and non-UTF-8 included.
// It panics if len(elem) exceeds math.MaxUint32, which the framing cannot
// express.
func AppendElement(dst, elem []byte) []byte {
	if uint64(len(elem)) > math.MaxUint32 {
		panic("tensor: BYTES element longer than 4 GiB - 1")
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(elem)))
	return append(dst, elem...)
}

// ValidateBytes checks that data is exactly n BYTES elements in Triton's
// framing (see [Tensor]): every element's 4-byte length prefix is complete,
// no length runs past the end of data, and no bytes follow the n-th
// element. It never allocates on success, never panics, and rejects
// implausible counts and lengths by arithmetic before reading further.
//
// The error wraps [ErrInvalid] and says which element failed and where.
func ValidateBytes(data []byte, n int64) error {
	_, end, err := walkBytes(data, n, 0)
	if err == nil && end != len(data) {
		err = invalidf("BYTES data: %d trailing bytes after %d elements", len(data)-end, n)
	}
	return err
}

// walkBytes walks the first n elements of BYTES data, checking their
// framing, and returns the offset at which element mark (0 ≤ mark ≤ n)
// starts and the offset just past element n-1. Bytes after that are not
// examined.
func walkBytes(data []byte, n, mark int64) (markOff, end int, err error) {
	if n < 0 {
		return 0, 0, invalidf("BYTES data: negative element count %d", n)
	}
	if n > int64(len(data))/lenPrefix {
		return 0, 0, invalidf("BYTES data: %d bytes cannot hold %d elements (each has a %d-byte length prefix)",
			len(data), n, lenPrefix)
	}
	off := 0
	for i := range n {
		if i == mark {
			markOff = off
		}
		rest := len(data) - off
		if rest < lenPrefix {
			return 0, 0, invalidf("BYTES element %d at offset %d: length prefix truncated (%d of %d bytes)",
				i, off, rest, lenPrefix)
		}
		l := binary.LittleEndian.Uint32(data[off:])
		if uint64(l) > uint64(rest-lenPrefix) {
			return 0, 0, invalidf("BYTES element %d at offset %d: length %d runs past the end of the data (%d bytes left)",
				i, off, l, rest-lenPrefix)
		}
		off += lenPrefix + int(l)
	}
	if mark == n {
		markOff = off
	}
	return markOff, off, nil
}

// Elements returns an iterator over the elements of a [Bytes] tensor,
// yielding each element's index and content. The content aliases t.Data
// (with its capacity cut to its length, so appending to it cannot overwrite
// the next element); copy it to keep it past the tensor's lifetime.
//
// The iterator yields at most Shape.NumElements() elements and stops early,
// silently, at malformed framing, so call [Tensor.Validate] first if that
// matters. It yields nothing for a tensor that is not of type Bytes or whose
// shape is invalid.
func (t Tensor) Elements() iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		if t.DataType != Bytes {
			return
		}
		n, err := t.Shape.NumElements()
		if err != nil {
			return
		}
		data := t.Data
		off := 0
		for i := 0; int64(i) < n; i++ {
			if len(data)-off < lenPrefix {
				return
			}
			l := binary.LittleEndian.Uint32(data[off:])
			if uint64(l) > uint64(len(data)-off-lenPrefix) {
				return
			}
			start := off + lenPrefix
			off = start + int(l)
			if !yield(i, data[start:off:off]) {
				return
			}
		}
	}
}

// bytesElementCount checks that t is a valid Bytes tensor and returns its
// element count.
func bytesElementCount(t Tensor) (int, error) {
	if t.DataType != Bytes {
		return 0, invalidf("tensor %s: data type is %s, not BYTES", strconv.Quote(t.Name), dtName(t.DataType))
	}
	if err := t.Validate(); err != nil {
		return 0, err
	}
	n, _ := t.Shape.NumElements()
	return int(n), nil
}

// ByteSlices returns the elements of a valid [Bytes] tensor as slices that
// alias t.Data (each with its capacity cut to its length). Only the outer
// slice is allocated. It returns an error wrapping [ErrInvalid] if t is not
// of type Bytes or fails [Tensor.Validate].
func ByteSlices(t Tensor) ([][]byte, error) {
	n, err := bytesElementCount(t)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, n)
	for _, e := range t.Elements() {
		out = append(out, e)
	}
	return out, nil
}

// Strings returns the elements of a valid [Bytes] tensor as strings,
// byte for byte (no UTF-8 validation or replacement). The strings do not
// alias t.Data: Strings copies t.Data once and slices the copy, so the whole
// result costs two allocations, but keeping any one string alive keeps that
// whole copy alive; clone a string (strings.Clone) to retain it alone. It
// returns an error wrapping [ErrInvalid] if t is not of type Bytes or fails
// [Tensor.Validate].
func Strings(t Tensor) ([]string, error) {
	n, err := bytesElementCount(t)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	all := string(t.Data)
	off := 0
	for i := range out {
		l := int(binary.LittleEndian.Uint32(t.Data[off:]))
		off += lenPrefix
		out[i] = all[off : off+l]
		off += l
	}
	return out, nil
}

// FromStrings returns a new [Bytes] tensor of the given shape holding
// values, which must have exactly shape.NumElements() entries. The data is
// a fresh buffer of exactly the encoded size; strings may hold any bytes.
// Errors wrap [ErrInvalid].
func FromStrings(name string, shape Shape, values []string) (Tensor, error) {
	return fromElements(name, shape, values)
}

// FromByteSlices is [FromStrings] for byte slices. The data is copied into
// a fresh buffer; values is not retained.
func FromByteSlices(name string, shape Shape, values [][]byte) (Tensor, error) {
	return fromElements(name, shape, values)
}

func fromElements[E string | []byte](name string, shape Shape, values []E) (Tensor, error) {
	n, err := shape.NumElements()
	if err != nil {
		return Tensor{}, named(name, err)
	}
	if int64(len(values)) != n {
		return Tensor{}, invalidf("tensor %s: shape %v needs %d BYTES elements, got %d", strconv.Quote(name), shape.String(), n, len(values))
	}
	size := 0
	for i, v := range values {
		if uint64(len(v)) > math.MaxUint32 {
			return Tensor{}, invalidf("tensor %s: BYTES element %d is %d bytes, more than the framing allows", strconv.Quote(name), i, len(v))
		}
		if size > math.MaxInt-lenPrefix-len(v) {
			return Tensor{}, invalidf("tensor %s: BYTES data size %w", strconv.Quote(name), ErrOverflow)
		}
		size += lenPrefix + len(v)
	}
	data := make([]byte, 0, size)
	for _, v := range values {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(v)))
		data = append(data, v...)
	}
	return Tensor{Name: name, DataType: Bytes, Shape: shape, Data: data}, nil
}
