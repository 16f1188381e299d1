package tensor

import (
	"math"

	"github.com/x448/float16"
)

// Float16 is an IEEE 754 binary16 ("half precision") number stored as its
// bit pattern: the Go element type of [FP16] tensors. Convert a bit pattern
// with a plain conversion, Float16(bits), and back with uint16(h).
//
// Conversions use github.com/x448/float16, which is checked against all 2^32
// float32 inputs.
type Float16 uint16

// Float16FromFloat32 returns the binary16 value nearest to f, rounding ties
// to even. Values beyond ±65504 (plus half an ulp) become ±Inf, values too
// small even for a subnormal become ±0, and NaN stays NaN (a quiet NaN
// keeping the top payload bits).
func Float16FromFloat32(f float32) Float16 {
	return Float16(float16.Fromfloat32(f))
}

// Float32 returns h as a float32. The conversion is exact: every binary16
// value, subnormals included, is representable as a float32.
func (h Float16) Float32() float32 {
	return float16.Frombits(uint16(h)).Float32()
}

// BFloat16 is a bfloat16 ("brain floating point") number stored as its bit
// pattern: the top 16 bits of a float32, with float32's range and an 8-bit
// significand. It is the Go element type of [BF16] tensors.
type BFloat16 uint16

// BFloat16FromFloat32 returns the bfloat16 value nearest to f, rounding ties
// to even (as PyTorch and TensorFlow do, not by truncation). Finite values
// that round past the largest bfloat16 become ±Inf, and NaN stays NaN
// (quiet, with its sign).
func BFloat16FromFloat32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: truncate, and keep it a NaN by setting the quiet bit.
		return BFloat16(b>>16 | 0x0040)
	}
	// Add just under half an ulp of the result, plus one more when the
	// kept part is odd, so ties go to even; the carry may ripple into the
	// exponent, which is the correct rounding (up to Inf at the top).
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// Float32 returns b as a float32. The conversion is exact.
func (b BFloat16) Float32() float32 {
	return math.Float32frombits(uint32(b) << 16)
}
