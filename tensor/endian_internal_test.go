package tensor

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

// withBigEndianHost makes the package behave as on a big-endian host for
// the duration of the test. Tests using it must not run in parallel.
func withBigEndianHost(t *testing.T) {
	t.Helper()
	saved := hostLittleEndian
	hostLittleEndian = false
	t.Cleanup(func() { hostLittleEndian = saved })
}

func TestHostEndianness(t *testing.T) {
	// Every platform Go supports that this project targets is little-endian;
	// the check itself must agree with a direct look at memory.
	x := uint16(1)
	if got := *(*byte)(unsafe.Pointer(&x)) == 1; got != hostLittleEndian {
		t.Errorf("hostLittleEndian = %v, memory says %v", hostLittleEndian, got)
	}
}

func TestBigEndianHost(t *testing.T) {
	withBigEndianHost(t)
	t.Run("From", func(t *testing.T) {
		_, err := From("X", Shape{1}, []float32{1})
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("From() error = %v, want ErrUnsupported", err)
		}
	})
	t.Run("View", func(t *testing.T) {
		_, err := View[uint8](Tensor{Name: "X", DataType: Uint8, Shape: Shape{1}, Data: []byte{1}})
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("View() error = %v, want ErrUnsupported", err)
		}
	})
	// Copy encodes element by element on big-endian hosts; the encoding must
	// give the little-endian bytes whatever the host.
	tests := []struct {
		name string
		copy func() (Tensor, error)
		want []byte
	}{
		{"bool", func() (Tensor, error) { return Copy("X", Shape{2}, []bool{true, false}) }, []byte{1, 0}},
		{"int8", func() (Tensor, error) { return Copy("X", Shape{2}, []int8{-1, 2}) }, []byte{0xff, 2}},
		{"int16", func() (Tensor, error) { return Copy("X", Shape{2}, []int16{0x0102, -2}) }, []byte{2, 1, 0xfe, 0xff}},
		{"bf16", func() (Tensor, error) { return Copy("X", Shape{1}, []BFloat16{0x3f80}) }, []byte{0x80, 0x3f}},
		{"uint32", func() (Tensor, error) { return Copy("X", Shape{1}, []uint32{0x01020304}) }, []byte{4, 3, 2, 1}},
		{"fp32", func() (Tensor, error) { return Copy("X", Shape{1}, []float32{1}) }, []byte{0, 0, 0x80, 0x3f}},
		{"fp64", func() (Tensor, error) { return Copy("X", Shape{1}, []float64{-2}) }, []byte{0, 0, 0, 0, 0, 0, 0, 0xc0}},
		{"uint64", func() (Tensor, error) { return Copy("X", Shape{1}, []uint64{0x0102030405060708}) }, []byte{8, 7, 6, 5, 4, 3, 2, 1}},
	}
	for _, tt := range tests {
		t.Run("Copy/"+tt.name, func(t *testing.T) {
			x, err := tt.copy()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x.Data, tt.want) {
				t.Errorf("Copy() data = % x, want % x", x.Data, tt.want)
			}
		})
	}
}

func TestInvalidError(t *testing.T) {
	err := invalidf("shape %v: %w", Shape{-1}, ErrNegativeDim)
	if err.Error() != "shape [-1]: negative dimension" {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrNegativeDim) || errors.Is(err, ErrOverflow) {
		t.Errorf("errors.Is results wrong for %v", err)
	}
}
