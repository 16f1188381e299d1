package tensor_test

import (
	"math"
	"testing"

	"github.com/triton-go/triton/tensor"
)

func f32bits(b uint32) float32 { return math.Float32frombits(b) }

func TestFloat16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want tensor.Float16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3c00},
		{"minus 2.5", -2.5, 0xc100},
		{"one third", 1.0 / 3, 0x3555},
		{"max", 65504, 0x7bff},
		{"just below overflow tie", 65519.996, 0x7bff},
		{"overflow tie rounds to even (Inf)", 65520, 0x7c00},
		{"large", 1e10, 0x7c00},
		{"negative large", -1e10, 0xfc00},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"smallest normal 2^-14", f32bits(0x38800000), 0x0400},
		{"largest subnormal", 1023 * f32bits(0x33800000), 0x03ff},
		{"smallest subnormal 2^-24", f32bits(0x33800000), 0x0001},
		{"negative smallest subnormal", -f32bits(0x33800000), 0x8001},
		{"2^-25 ties to even zero", f32bits(0x33000000), 0x0000},
		{"1.5*2^-25 rounds up", f32bits(0x33400000), 0x0001},
		{"3*2^-25 ties to even 2", f32bits(0x33c00000), 0x0002},
		{"underflow", 1e-10, 0x0000},
		{"1+2^-11 ties down to even", 1 + f32bits(0x3a000000), 0x3c00},
		{"1+3*2^-11 ties up to even", 1 + 3*f32bits(0x3a000000), 0x3c02},
		{"just above tie rounds up", f32bits(0x3f801001), 0x3c01},
		{"just below tie rounds down", f32bits(0x3f800fff), 0x3c00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tensor.Float16FromFloat32(tt.in); got != tt.want {
				t.Errorf("Float16FromFloat32(%g) = %#04x, want %#04x", tt.in, uint16(got), uint16(tt.want))
			}
		})
	}
}

func TestFloat16Float32(t *testing.T) {
	tests := []struct {
		name string
		in   tensor.Float16
		want float32
	}{
		{"one", 0x3c00, 1},
		{"minus 2.5", 0xc100, -2.5},
		{"max", 0x7bff, 65504},
		{"min", 0xfbff, -65504},
		{"one third", 0x3555, 0.333251953125},
		{"smallest subnormal", 0x0001, f32bits(0x33800000)},
		{"largest subnormal", 0x03ff, 1023 * f32bits(0x33800000)},
		{"+Inf", 0x7c00, float32(math.Inf(1))},
		{"-Inf", 0xfc00, float32(math.Inf(-1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Float32(); got != tt.want {
				t.Errorf("Float16(%#04x).Float32() = %g, want %g", uint16(tt.in), got, tt.want)
			}
		})
	}
	t.Run("negative zero", func(t *testing.T) {
		if got := tensor.Float16(0x8000).Float32(); got != 0 || !math.Signbit(float64(got)) {
			t.Errorf("Float16(0x8000).Float32() = %g, want -0", got)
		}
	})
	t.Run("NaN", func(t *testing.T) {
		for _, h := range []tensor.Float16{0x7e00, 0x7c01, 0xfe00} {
			if got := h.Float32(); !math.IsNaN(float64(got)) {
				t.Errorf("Float16(%#04x).Float32() = %g, want NaN", uint16(h), got)
			}
		}
		for _, f := range []float32{float32(math.NaN()), f32bits(0x7f800001), f32bits(0xffc00000)} {
			h := tensor.Float16FromFloat32(f)
			if h&0x7c00 != 0x7c00 || h&0x03ff == 0 {
				t.Errorf("Float16FromFloat32(NaN %#08x) = %#04x, not a NaN", math.Float32bits(f), uint16(h))
			}
		}
	})
	t.Run("all values round-trip", func(t *testing.T) {
		for b := range 1 << 16 {
			h := tensor.Float16(b)
			f := h.Float32()
			if math.IsNaN(float64(f)) {
				if b&0x7c00 != 0x7c00 || b&0x03ff == 0 {
					t.Fatalf("Float16(%#04x).Float32() = NaN for a non-NaN", b)
				}
				continue
			}
			if got := tensor.Float16FromFloat32(f); got != h {
				t.Fatalf("Float16FromFloat32(Float16(%#04x).Float32() = %g) = %#04x", b, f, uint16(got))
			}
		}
	})
}

func TestBFloat16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want tensor.BFloat16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3f80},
		{"minus 2.5", -2.5, 0xc020},
		{"65504 rounds up to 65536", 65504, 0x4780},
		{"+Inf", float32(math.Inf(1)), 0x7f80},
		{"-Inf", float32(math.Inf(-1)), 0xff80},
		{"max float32 rounds to Inf", math.MaxFloat32, 0x7f80},
		{"largest finite bf16", f32bits(0x7f7f0000), 0x7f7f},
		{"just below Inf tie", f32bits(0x7f7f7fff), 0x7f7f},
		{"tie to even down", f32bits(0x3f808000), 0x3f80},
		{"tie to even up", f32bits(0x3f818000), 0x3f82},
		{"just above tie", f32bits(0x3f808001), 0x3f81},
		{"just below tie", f32bits(0x3f807fff), 0x3f80},
		{"mantissa carry into exponent", f32bits(0x3fffffff), 0x4000},
		{"subnormal exact", f32bits(0x00010000), 0x0001},
		{"subnormal tie to even down", f32bits(0x00008000), 0x0000},
		{"subnormal tie to even up", f32bits(0x00018000), 0x0002},
		{"largest subnormal rounds to smallest normal", f32bits(0x007fffff), 0x0080},
		{"negative tie", f32bits(0xbf818000), 0xbf82},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tensor.BFloat16FromFloat32(tt.in); got != tt.want {
				t.Errorf("BFloat16FromFloat32(%#08x) = %#04x, want %#04x", math.Float32bits(tt.in), uint16(got), uint16(tt.want))
			}
		})
	}
	t.Run("NaN stays NaN", func(t *testing.T) {
		tests := []struct {
			in   uint32
			want tensor.BFloat16
		}{
			{0x7fc00000, 0x7fc0}, // quiet NaN
			{0x7f800001, 0x7fc0}, // payload only in the dropped bits: truncation would give Inf
			{0x7fbfffff, 0x7fff}, // all-ones payload must not round into the sign bit
			{0xff800001, 0xffc0}, // sign kept
			{0x7fa00000, 0x7fe0}, // signaling NaN becomes quiet, payload kept
		}
		for _, tt := range tests {
			got := tensor.BFloat16FromFloat32(f32bits(tt.in))
			if got != tt.want || !math.IsNaN(float64(got.Float32())) {
				t.Errorf("BFloat16FromFloat32(%#08x) = %#04x, want NaN %#04x", tt.in, uint16(got), uint16(tt.want))
			}
		}
	})
	t.Run("all values round-trip", func(t *testing.T) {
		for b := range 1 << 16 {
			h := tensor.BFloat16(b)
			f := h.Float32()
			if math.Float32bits(f) != uint32(b)<<16 {
				t.Fatalf("BFloat16(%#04x).Float32() bits = %#08x", b, math.Float32bits(f))
			}
			if math.IsNaN(float64(f)) {
				continue
			}
			if got := tensor.BFloat16FromFloat32(f); got != h {
				t.Fatalf("BFloat16FromFloat32(BFloat16(%#04x).Float32()) = %#04x", b, uint16(got))
			}
		}
	})
}

func TestBFloat16Float32(t *testing.T) {
	tests := []struct {
		in   tensor.BFloat16
		want float32
	}{
		{0x3f80, 1},
		{0xc020, -2.5},
		{0x4780, 65536},
		{0x7f80, float32(math.Inf(1))},
		{0x0001, f32bits(0x00010000)},
	}
	for _, tt := range tests {
		if got := tt.in.Float32(); got != tt.want {
			t.Errorf("BFloat16(%#04x).Float32() = %g, want %g", uint16(tt.in), got, tt.want)
		}
	}
}
