package tensor_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

func TestShapeNumElements(t *testing.T) {
	tests := []struct {
		name    string
		shape   tensor.Shape
		want    int64
		wantErr error
	}{
		{"nil scalar", nil, 1, nil},
		{"empty scalar", tensor.Shape{}, 1, nil},
		{"vector", tensor.Shape{5}, 5, nil},
		{"rank 3", tensor.Shape{2, 3, 4}, 24, nil},
		{"ones", tensor.Shape{1, 1, 1, 1}, 1, nil},
		{"zero dim", tensor.Shape{0}, 0, nil},
		{"zero inner dim", tensor.Shape{3, 0, 5}, 0, nil},
		{"zero beside huge dims", tensor.Shape{1 << 62, 0, 1 << 62}, 0, nil},
		{"max int64", tensor.Shape{math.MaxInt64}, math.MaxInt64, nil},
		{"max int64 times one", tensor.Shape{1, math.MaxInt64, 1}, math.MaxInt64, nil},
		{"2^62", tensor.Shape{1 << 31, 1 << 31}, 1 << 62, nil},
		{"largest square", tensor.Shape{3037000499, 3037000499}, 3037000499 * 3037000499, nil},
		{"overflow 2^80", tensor.Shape{1 << 40, 1 << 40}, 0, tensor.ErrOverflow},
		{"overflow 2^63", tensor.Shape{1 << 31, 1 << 31, 2}, 0, tensor.ErrOverflow},
		{"overflow just past", tensor.Shape{3037000500, 3037000500}, 0, tensor.ErrOverflow},
		{"overflow max times two", tensor.Shape{math.MaxInt64, 2}, 0, tensor.ErrOverflow},
		{"overflow wraps to positive", tensor.Shape{1 << 32, 1 << 32, 3}, 0, tensor.ErrOverflow},
		{"wildcard", tensor.Shape{-1, 3}, 0, tensor.ErrNegativeDim},
		{"negative", tensor.Shape{2, -3}, 0, tensor.ErrNegativeDim},
		{"negative beside zero", tensor.Shape{0, -1}, 0, tensor.ErrNegativeDim},
		{"min int64", tensor.Shape{math.MinInt64}, 0, tensor.ErrNegativeDim},
		{"two negatives", tensor.Shape{-2, -2}, 0, tensor.ErrNegativeDim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.shape.NumElements()
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("NumElements() error = %v, want %v", err, tt.wantErr)
				}
				if !errors.Is(err, tensor.ErrInvalid) {
					t.Errorf("error %v does not wrap ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), tt.shape.String()) {
					t.Errorf("error %q does not name the shape %v", err, tt.shape)
				}
				return
			}
			if err != nil {
				t.Fatalf("NumElements() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("NumElements() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestShapeByteSize(t *testing.T) {
	tests := []struct {
		name    string
		shape   tensor.Shape
		dt      tensor.DataType
		want    int64
		wantErr error
	}{
		{"fp32 matrix", tensor.Shape{2, 3}, tensor.FP32, 24, nil},
		{"fp64 scalar", nil, tensor.FP64, 8, nil},
		{"bool vector", tensor.Shape{7}, tensor.Bool, 7, nil},
		{"fp16", tensor.Shape{3}, tensor.FP16, 6, nil},
		{"bf16", tensor.Shape{3}, tensor.BF16, 6, nil},
		{"int64", tensor.Shape{2, 2}, tensor.Int64, 32, nil},
		{"empty", tensor.Shape{0, 5}, tensor.Int8, 0, nil},
		{"2^62 bytes", tensor.Shape{1 << 60}, tensor.FP32, 1 << 62, nil},
		{"byte overflow fp32", tensor.Shape{1 << 61}, tensor.FP32, 0, tensor.ErrOverflow},
		{"byte overflow fp64", tensor.Shape{1 << 60}, tensor.FP64, 0, tensor.ErrOverflow},
		{"max elements uint16", tensor.Shape{math.MaxInt64}, tensor.Uint16, 0, tensor.ErrOverflow},
		{"element overflow", tensor.Shape{1 << 40, 1 << 40}, tensor.Uint8, 0, tensor.ErrOverflow},
		{"negative", tensor.Shape{-1}, tensor.FP32, 0, tensor.ErrNegativeDim},
		{"bytes", tensor.Shape{2}, tensor.Bytes, 0, tensor.ErrInvalid},
		{"invalid", tensor.Shape{2}, tensor.Invalid, 0, tensor.ErrInvalid},
		{"out of range", tensor.Shape{2}, tensor.DataType(99), 0, tensor.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.shape.ByteSize(tt.dt)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
					t.Fatalf("ByteSize() error = %v, want %v and ErrInvalid", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ByteSize() = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestShapeString(t *testing.T) {
	tests := []struct {
		name  string
		shape tensor.Shape
		want  string
	}{
		{"nil", nil, "[]"},
		{"empty", tensor.Shape{}, "[]"},
		{"one", tensor.Shape{7}, "[7]"},
		{"three", tensor.Shape{1, 2, 3}, "[1,2,3]"},
		{"wildcard and zero", tensor.Shape{-1, 0}, "[-1,0]"},
		{"extremes", tensor.Shape{math.MaxInt64, math.MinInt64}, "[9223372036854775807,-9223372036854775808]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.shape.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShapeEqualMatches(t *testing.T) {
	tests := []struct {
		name    string
		s, o    tensor.Shape
		equal   bool
		matches bool // s.Matches(o)
	}{
		{"nil and empty", nil, tensor.Shape{}, true, true},
		{"same", tensor.Shape{2, 3}, tensor.Shape{2, 3}, true, true},
		{"different dim", tensor.Shape{2, 3}, tensor.Shape{2, 4}, false, false},
		{"swapped", tensor.Shape{2, 1}, tensor.Shape{1, 2}, false, false},
		{"different rank", tensor.Shape{1}, tensor.Shape{1, 1}, false, false},
		{"scalar and vector", nil, tensor.Shape{1}, false, false},
		{"wildcard batch", tensor.Shape{8, 3}, tensor.Shape{-1, 3}, false, true},
		{"wildcard zero", tensor.Shape{0, 3}, tensor.Shape{-1, 3}, false, true},
		{"all wildcards", tensor.Shape{5, 6}, tensor.Shape{-1, -1}, false, true},
		{"wildcard rank mismatch", tensor.Shape{8, 3}, tensor.Shape{-1}, false, false},
		{"wildcard other dim mismatch", tensor.Shape{8, 3}, tensor.Shape{-1, 4}, false, false},
		{"negative concrete dim", tensor.Shape{-1, 3}, tensor.Shape{-1, 3}, true, false},
		{"other negative pattern", tensor.Shape{2}, tensor.Shape{-2}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Equal(tt.o); got != tt.equal {
				t.Errorf("%v.Equal(%v) = %v, want %v", tt.s, tt.o, got, tt.equal)
			}
			if got := tt.o.Equal(tt.s); got != tt.equal {
				t.Errorf("%v.Equal(%v) = %v, want %v (symmetry)", tt.o, tt.s, got, tt.equal)
			}
			if got := tt.s.Matches(tt.o); got != tt.matches {
				t.Errorf("%v.Matches(%v) = %v, want %v", tt.s, tt.o, got, tt.matches)
			}
		})
	}
}

func TestShapeClone(t *testing.T) {
	t.Run("nil", func(t *testing.T) {
		if c := tensor.Shape(nil).Clone(); c != nil {
			t.Errorf("Clone(nil) = %v, want nil", c)
		}
	})
	t.Run("independent", func(t *testing.T) {
		s := tensor.Shape{1, 2, 3}
		c := s.Clone()
		if !c.Equal(s) {
			t.Fatalf("Clone() = %v, want %v", c, s)
		}
		c[0] = 99
		if s[0] != 1 {
			t.Errorf("modifying the clone changed the original: %v", s)
		}
	})
	t.Run("empty stays scalar", func(t *testing.T) {
		c := tensor.Shape{}.Clone()
		if len(c) != 0 {
			t.Errorf("Clone() = %v, want []", c)
		}
	})
}
