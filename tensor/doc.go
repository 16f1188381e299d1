// Package tensor defines the tensors that flow through triton-go: a
// [DataType] enum that matches Triton's, an overflow-checked [Shape], and
// [Tensor], a small struct over raw little-endian row-major bytes laid out
// exactly as the KServe v2 binary protocol and Triton's C API lay them out,
// so that protocol adapters, the scheduler and backends can pass data along
// without converting or copying it.
//
// # Choosing an entry point
//
//   - Wrapping a Go slice you own: [From] (zero-copy, aliases the slice) or
//     [Copy] (the tensor owns a fresh buffer).
//   - Wrapping bytes that arrived off the wire: [New], which checks them
//     with [Tensor.Validate]; or build a [Tensor] literal and validate later.
//   - Reading numbers: [View] returns a []T aliasing the tensor's bytes, and
//     fails instead of returning wrong data (type mismatch, bad length,
//     misaligned data, big-endian host, non-0/1 bools).
//   - Strings ([Bytes], Triton's TYPE_STRING): build with [FromStrings],
//     [FromByteSlices] or [AppendElement]; read with [Tensor.Elements] (an
//     iterator, no allocation), [ByteSlices] (aliasing) or [Strings]
//     (copying); check framing with [ValidateBytes].
//   - Half-precision values: [Float16] and [BFloat16], the element types of
//     [FP16] and [BF16] tensors, with conversions to and from float32.
//   - Batching: [Concat] gathers requests along dimension 0 into one batch
//     (the one copy the batcher makes), and [Tensor.SliceRows] hands each
//     request a zero-copy view of its rows of the batch output.
//
// # Ownership and aliasing
//
// A [Tensor] is a value header over memory it does not necessarily own, as
// a slice is. Functions that alias say so: [From], [New], [View],
// [Tensor.SliceRows], [Tensor.Elements], [ByteSlices], and [Concat] with a
// single part; functions that copy say so too. Constructors keep the Shape
// they are given rather than copying it. Across triton-go, request inputs
// are borrowed by backends until the inference call returns and are never
// retained or modified; outputs are owned by whoever fills them until they
// are handed over. See [Tensor] for the full rules. All functions in this
// package are safe for concurrent use on tensors that nobody is modifying.
//
// # Errors
//
// Malformed tensors and inconsistent arguments give errors that wrap
// [ErrInvalid] and name the tensor and the problem; shape arithmetic errors
// also wrap [ErrNegativeDim] or [ErrOverflow]. [View] of misaligned data
// wraps [ErrMisaligned], and the zero-copy functions on a big-endian host
// wrap errors.ErrUnsupported. Nothing in this package panics on bad input,
// except [AppendElement] on an element that Triton's framing cannot hold.
//
// # Usage
//
//	in, err := tensor.From("INPUT0", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
//	if err != nil { … }
//	// … pass in to a model; on the other side:
//	xs, err := tensor.View[float32](in) // xs aliases in.Data
//
//	names, err := tensor.FromStrings("TEXT", tensor.Shape{2}, []string{"a", "b\x00c"})
//	for i, s := range names.Elements() { … } // s aliases names.Data
package tensor
