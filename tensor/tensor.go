package tensor

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalid is wrapped by every error that reports a malformed tensor or
// inconsistent arguments: an invalid data type, a bad shape, a data length
// that does not match the shape, broken BYTES framing, a [View] of the wrong
// type, a bad row range. Test for it with errors.Is. Errors caused by a
// shape also wrap [ErrNegativeDim] or [ErrOverflow].
var ErrInvalid = errors.New("invalid tensor")

// ErrMisaligned is wrapped by the error [View] returns when the tensor's
// data does not start at an address aligned for the element type, as happens
// with a tensor cut out of a larger buffer at an arbitrary offset (an HTTP
// body, say). The data is not invalid; copy it into a fresh buffer (whose
// start is aligned) or decode it with encoding/binary instead.
var ErrMisaligned = errors.New("data is not aligned for the element type")

// invalidError is an error that wraps ErrInvalid without repeating its text.
type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// invalidf returns an error formatted like fmt.Errorf that also wraps
// ErrInvalid.
func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Errorf(format, args...)}
}

// named prefixes err with the tensor name, keeping what it wraps.
func named(name string, err error) error {
	return fmt.Errorf("tensor %s: %w", strconv.Quote(name), err)
}

// Memory says where a tensor's data lives. So far every tensor is in [CPU]
// memory; the type exists so that pinned host memory and GPU memory (Triton's
// TRITONSERVER_MEMORY_CPU_PINNED and TRITONSERVER_MEMORY_GPU, with a device
// id) can be added later without changing [Tensor]'s exported fields.
type Memory uint8

// CPU is ordinary, pageable host memory owned by the Go heap or by the
// caller. It is the zero value of [Memory].
const CPU Memory = 0

// String returns "CPU" for [CPU] and "Memory(n)" otherwise.
func (m Memory) String() string {
	if m == CPU {
		return "CPU"
	}
	return fmt.Sprintf("Memory(%d)", uint8(m))
}

// Tensor is a named, typed, shaped block of raw bytes: the unit that flows
// between clients, the scheduler and backends.
//
// # Layout
//
// Data holds the elements in row-major order, little-endian, exactly as the
// KServe v2 binary protocol and Triton's C API lay them out. A fixed-size
// type takes Shape.NumElements() × DataType.Size() bytes; [Bool] elements
// are single bytes that must be 0 or 1. A [Bytes] tensor holds, for each
// element, a 4-byte little-endian uint32 length followed by that many bytes
// of arbitrary content (NUL bytes and non-UTF-8 data included), with nothing
// after the last element. Use [Tensor.Validate] (or construct with [New],
// [From], [Copy], [FromStrings] or [FromByteSlices]) to check these rules.
//
// # Ownership and aliasing
//
// Tensor is a small value header, like a slice: copying it copies the header
// but shares Data and Shape. Nothing in this package copies Data unless its
// documentation says so ([Copy], [Concat] with two or more parts,
// [FromStrings], [FromByteSlices], [Strings]); [From], [View],
// [Tensor.SliceRows], [Tensor.Elements] and [ByteSlices] alias. The rules
// the rest of triton-go follows:
//
//   - Request inputs are borrowed: a backend may read them until its Infer
//     or Execute call returns and must not retain, modify or append to them.
//   - Whoever fills an output owns it until handing it over; after that it
//     must not be modified.
//   - The dynamic batcher copies request inputs into one contiguous batch
//     buffer with [Concat] (skipped for a single request), and hands each
//     request its share of the batch output with [Tensor.SliceRows], a
//     sub-slice of that output rather than a copy.
//   - A Tensor is safe for concurrent reads; concurrent writes to Data must
//     be synchronized by the owner.
//
// # Memory kind
//
// The unexported memory field records where Data lives (see [Memory]). It is
// always [CPU] so far, which is also its zero value, so a composite literal
// Tensor{Name: …, DataType: …, Shape: …, Data: …} is a well-formed CPU
// tensor.
//
// The zero Tensor has an [Invalid] data type and does not validate.
type Tensor struct {
	// Name is the input or output name, as in the model configuration.
	Name string
	// DataType is the element type.
	DataType DataType
	// Shape is the tensor shape; it has no -1 wildcards.
	Shape Shape
	// Data is the raw little-endian row-major element data; see the type
	// documentation for the layout and ownership rules.
	Data []byte

	mem Memory
}

// Memory returns where the tensor's data lives; always [CPU] for now.
func (t Tensor) Memory() Memory { return t.mem }

// New returns a Tensor over data after checking it with [Tensor.Validate].
// It does not copy data: the tensor aliases it, and the caller must not
// modify data while the tensor is in use. On failure it returns the zero
// Tensor and an error wrapping [ErrInvalid].
func New(name string, dt DataType, shape Shape, data []byte) (Tensor, error) {
	t := Tensor{Name: name, DataType: dt, Shape: shape, Data: data}
	if err := t.Validate(); err != nil {
		return Tensor{}, err
	}
	return t, nil
}

// Validate checks that t is well formed: DataType is valid, Shape has no
// negative dimension and its element count (and byte size) fit in an int64,
// and Data has exactly the expected length — or, for [Bytes], exactly
// Shape.NumElements() well-framed elements and no trailing bytes (see
// [ValidateBytes]).
//
// It does not look at the values of fixed-size elements, so it does not
// check that [Bool] bytes are 0 or 1; [View] does. For fixed-size types it
// runs in constant time and does not allocate; for Bytes it walks the
// length prefixes once.
//
// Every error names the tensor and wraps [ErrInvalid] (and [ErrNegativeDim]
// or [ErrOverflow] when the shape is at fault), for example:
//
//	tensor "INPUT0": expected 24 bytes for shape [2,3] of FP32, got 20
func (t Tensor) Validate() error {
	if !t.DataType.Valid() {
		return invalidf("tensor %s: invalid data type %s", strconv.Quote(t.Name), dtName(t.DataType))
	}
	if t.DataType == Bytes {
		n, err := t.Shape.NumElements()
		if err == nil {
			err = ValidateBytes(t.Data, n)
		}
		if err != nil {
			return named(t.Name, err)
		}
		return nil
	}
	want, err := t.Shape.ByteSize(t.DataType)
	if err != nil {
		return named(t.Name, err)
	}
	if int64(len(t.Data)) != want {
		return invalidf("tensor %s: expected %d bytes for shape %v of %v, got %d",
			strconv.Quote(t.Name), want, t.Shape.String(), t.DataType, len(t.Data))
	}
	return nil
}
