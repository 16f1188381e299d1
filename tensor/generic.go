package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// Element is the set of Go types that map one to one onto a fixed-size
// [DataType]; see [DataTypeOf]. The terms are exact types, not ~T
// approximations: [Float16] and [BFloat16] share uint16's underlying type,
// so allowing ~uint16 would make the data type of a uint16-based type
// ambiguous.
type Element interface {
	bool | uint8 | uint16 | uint32 | uint64 |
		int8 | int16 | int32 | int64 |
		float32 | float64 | Float16 | BFloat16
}

// DataTypeOf returns the data type whose elements have Go type T: bool →
// [Bool], uint8 → [Uint8], …, float32 → [FP32], float64 → [FP64], [Float16]
// → [FP16], [BFloat16] → [BF16].
func DataTypeOf[T Element]() DataType {
	switch any((*T)(nil)).(type) {
	case *bool:
		return Bool
	case *uint8:
		return Uint8
	case *uint16:
		return Uint16
	case *uint32:
		return Uint32
	case *uint64:
		return Uint64
	case *int8:
		return Int8
	case *int16:
		return Int16
	case *int32:
		return Int32
	case *int64:
		return Int64
	case *float32:
		return FP32
	case *float64:
		return FP64
	case *Float16:
		return FP16
	case *BFloat16:
		return BF16
	}
	panic("unreachable")
}

// hostLittleEndian reports whether this machine stores integers
// little-endian, the byte order of tensor data. [From] and [View]
// reinterpret memory in place and so only work on such hosts (amd64, arm64,
// riscv64, wasm, …). It is a variable so tests can exercise the big-endian
// paths.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// errBigEndian is returned by From and View on big-endian hosts.
var errBigEndian = fmt.Errorf("zero-copy tensor access needs a little-endian host: %w", errors.ErrUnsupported)

// asBytes returns the memory of values as bytes, without copying.
func asBytes[T Element](values []T) []byte {
	if len(values) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(values)*int(unsafe.Sizeof(zero)))
}

// checkCount checks that shape is valid and holds exactly n elements.
func checkCount[T Element](name string, shape Shape, n int) error {
	want, err := shape.NumElements()
	if err != nil {
		return named(name, err)
	}
	if want != int64(n) {
		return invalidf("tensor %s: shape %v needs %d %v elements, got %d", strconv.Quote(name), shape.String(), want, DataTypeOf[T](), n)
	}
	return nil
}

// From returns a tensor that wraps values without copying: its Data is
// values' own memory, reinterpreted as little-endian bytes. The tensor and
// the slice alias each other — a write through either is visible through the
// other — so the caller must not modify values while the tensor is in use,
// and must treat the tensor as borrowed from values. shape is kept, not
// copied, and must hold exactly len(values) elements. Use [Copy] for a
// tensor that owns its data.
//
// From does not allocate. Errors wrap [ErrInvalid] (bad shape or element
// count) or, on a big-endian host, errors.ErrUnsupported.
func From[T Element](name string, shape Shape, values []T) (Tensor, error) {
	if err := checkCount[T](name, shape, len(values)); err != nil {
		return Tensor{}, err
	}
	if !hostLittleEndian {
		return Tensor{}, named(name, errBigEndian)
	}
	return Tensor{Name: name, DataType: DataTypeOf[T](), Shape: shape, Data: asBytes(values)}, nil
}

// Copy is like [From] but copies values into a new buffer that the returned
// tensor owns, converting to little-endian byte order on any host. shape is
// kept, not copied. Errors wrap [ErrInvalid].
func Copy[T Element](name string, shape Shape, values []T) (Tensor, error) {
	if err := checkCount[T](name, shape, len(values)); err != nil {
		return Tensor{}, err
	}
	data := make([]byte, len(values)*int(unsafe.Sizeof(*new(T))))
	if hostLittleEndian {
		copy(data, asBytes(values))
	} else {
		putLittleEndian(data, values)
	}
	return Tensor{Name: name, DataType: DataTypeOf[T](), Shape: shape, Data: data}, nil
}

// putLittleEndian encodes values into dst in little-endian order, element
// by element, whatever the host byte order.
func putLittleEndian[T Element](dst []byte, values []T) {
	var zero T
	switch unsafe.Sizeof(zero) {
	case 1:
		copy(dst, asBytes(values))
	case 2:
		for i := range values {
			binary.LittleEndian.PutUint16(dst[2*i:], *(*uint16)(unsafe.Pointer(&values[i])))
		}
	case 4:
		for i := range values {
			binary.LittleEndian.PutUint32(dst[4*i:], *(*uint32)(unsafe.Pointer(&values[i])))
		}
	case 8:
		for i := range values {
			binary.LittleEndian.PutUint64(dst[8*i:], *(*uint64)(unsafe.Pointer(&values[i])))
		}
	}
}

// View returns t's elements as a []T that aliases t.Data, without copying:
// writes through the slice change the tensor, and the slice is only valid
// as long as the tensor's data is (for a request input: until the backend's
// Infer call returns). Copy it to keep it.
//
// T must match t.DataType exactly (see [DataTypeOf]), t.Shape must be valid
// and t.Data must have exactly the size it implies. For [Bool], every byte
// must be 0 or 1, since any other byte is not a valid Go bool; this check
// reads the data once. View does not allocate on success.
//
// Errors wrap [ErrInvalid] for a type, shape, length or bool-value problem;
// [ErrMisaligned] when t.Data's start is not aligned for T (as with a tensor
// over data[1:]); and errors.ErrUnsupported on a big-endian host, where a
// view would show byte-swapped values.
func View[T Element](t Tensor) ([]T, error) {
	if dt := DataTypeOf[T](); t.DataType != dt {
		return nil, invalidf("tensor %s: cannot view %s data as %s", strconv.Quote(t.Name), dtName(t.DataType), dt)
	}
	want, err := t.Shape.ByteSize(t.DataType)
	if err != nil {
		return nil, named(t.Name, err)
	}
	if int64(len(t.Data)) != want {
		return nil, invalidf("tensor %s: expected %d bytes for shape %v of %v, got %d",
			strconv.Quote(t.Name), want, t.Shape.String(), t.DataType, len(t.Data))
	}
	if !hostLittleEndian {
		return nil, named(t.Name, errBigEndian)
	}
	if len(t.Data) == 0 {
		return []T{}, nil
	}
	var zero T
	p := unsafe.Pointer(unsafe.SliceData(t.Data))
	if align := unsafe.Alignof(zero); uintptr(p)%align != 0 {
		return nil, fmt.Errorf("tensor %s: %v data at address %#x, need %d-byte alignment: %w",
			strconv.Quote(t.Name), t.DataType, uintptr(p), align, ErrMisaligned)
	}
	if t.DataType == Bool {
		if i := firstNonBool(t.Data); i >= 0 {
			return nil, invalidf("tensor %s: BOOL element %d is %d, not 0 or 1", strconv.Quote(t.Name), i, t.Data[i])
		}
	}
	return unsafe.Slice((*T)(p), len(t.Data)/int(unsafe.Sizeof(zero))), nil
}

// firstNonBool returns the index of the first byte of b that is neither 0
// nor 1, or -1. It tests eight bytes at a time: a word has such a byte
// exactly when some byte has a bit other than the lowest set.
func firstNonBool(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0xfefefefefefefefe != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] > 1 {
			return i
		}
	}
	return -1
}
