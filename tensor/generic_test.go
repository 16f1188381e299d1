package tensor_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/triton-go/triton/tensor"
)

// checkFromView wraps values with From and Copy, checks the bytes against
// the hand-written little-endian encoding want, and views them back.
func checkFromView[T tensor.Element](t *testing.T, dt tensor.DataType, shape tensor.Shape, values []T, want []byte) {
	t.Helper()
	x, err := tensor.From("X", shape, values)
	if err != nil {
		t.Fatalf("From() error = %v", err)
	}
	if x.DataType != dt || x.Name != "X" || !x.Shape.Equal(shape) {
		t.Errorf("From() = %v %q %v, want %v", x.DataType, x.Name, x.Shape, dt)
	}
	if !bytes.Equal(x.Data, want) {
		t.Errorf("From() data = % x, want % x", x.Data, want)
	}
	if err := x.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if len(values) > 0 && unsafe.Pointer(&x.Data[0]) != unsafe.Pointer(&values[0]) {
		t.Error("From() copied the values")
	}
	v, err := View[T](x)
	if err != nil {
		t.Fatalf("View() error = %v", err)
	}
	if len(v) != len(values) {
		t.Fatalf("View() len = %d, want %d", len(v), len(values))
	}
	for i := range v {
		if !same(v[i], values[i]) {
			t.Errorf("View()[%d] = %v, want %v", i, v[i], values[i])
		}
	}
	if len(v) > 0 && unsafe.Pointer(&v[0]) != unsafe.Pointer(&x.Data[0]) {
		t.Error("View() does not alias Data")
	}

	c, err := tensor.Copy("X", shape, values)
	if err != nil {
		t.Fatalf("Copy() error = %v", err)
	}
	if c.DataType != dt || !bytes.Equal(c.Data, want) {
		t.Errorf("Copy() = %v % x, want %v % x", c.DataType, c.Data, dt, want)
	}
	if len(values) > 0 && unsafe.Pointer(&c.Data[0]) == unsafe.Pointer(&values[0]) {
		t.Error("Copy() aliases the values")
	}
}

// View is a local alias so the helper reads naturally.
func View[T tensor.Element](x tensor.Tensor) ([]T, error) { return tensor.View[T](x) }

// same compares elements, treating NaNs with equal bits as equal.
func same[T tensor.Element](a, b T) bool {
	switch a := any(a).(type) {
	case float32:
		return math.Float32bits(a) == math.Float32bits(any(b).(float32))
	case float64:
		return math.Float64bits(a) == math.Float64bits(any(b).(float64))
	}
	return a == b
}

func TestFromView(t *testing.T) {
	t.Run("BOOL", func(t *testing.T) {
		checkFromView(t, tensor.Bool, tensor.Shape{3}, []bool{true, false, true}, []byte{1, 0, 1})
	})
	t.Run("UINT8", func(t *testing.T) {
		checkFromView(t, tensor.Uint8, tensor.Shape{1, 3}, []uint8{0, 7, 255}, []byte{0, 7, 255})
	})
	t.Run("UINT16", func(t *testing.T) {
		checkFromView(t, tensor.Uint16, tensor.Shape{2}, []uint16{1, 0x0203}, []byte{1, 0, 3, 2})
	})
	t.Run("UINT32", func(t *testing.T) {
		checkFromView(t, tensor.Uint32, tensor.Shape{2}, []uint32{1, 0x01020304}, []byte{1, 0, 0, 0, 4, 3, 2, 1})
	})
	t.Run("UINT64", func(t *testing.T) {
		checkFromView(t, tensor.Uint64, tensor.Shape{1}, []uint64{0x0102030405060708}, []byte{8, 7, 6, 5, 4, 3, 2, 1})
	})
	t.Run("INT8", func(t *testing.T) {
		checkFromView(t, tensor.Int8, tensor.Shape{2}, []int8{-1, 5}, []byte{0xff, 5})
	})
	t.Run("INT16", func(t *testing.T) {
		checkFromView(t, tensor.Int16, tensor.Shape{2}, []int16{-2, 0x0102}, []byte{0xfe, 0xff, 2, 1})
	})
	t.Run("INT32", func(t *testing.T) {
		checkFromView(t, tensor.Int32, tensor.Shape{2}, []int32{-1, 256}, []byte{0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0})
	})
	t.Run("INT64", func(t *testing.T) {
		checkFromView(t, tensor.Int64, tensor.Shape{1}, []int64{-2}, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	})
	t.Run("FP16", func(t *testing.T) {
		checkFromView(t, tensor.FP16, tensor.Shape{2}, []tensor.Float16{0x3c00, 0xc100}, []byte{0x00, 0x3c, 0x00, 0xc1})
	})
	t.Run("FP32", func(t *testing.T) {
		checkFromView(t, tensor.FP32, tensor.Shape{2, 1}, []float32{1, -2.5}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0})
	})
	t.Run("FP64", func(t *testing.T) {
		checkFromView(t, tensor.FP64, tensor.Shape{1}, []float64{1}, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
	})
	t.Run("FP64 NaN bits", func(t *testing.T) {
		nan := math.Float64frombits(0x7ff8000000000001)
		checkFromView(t, tensor.FP64, tensor.Shape{1}, []float64{nan}, []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	})
	t.Run("BF16", func(t *testing.T) {
		checkFromView(t, tensor.BF16, tensor.Shape{2}, []tensor.BFloat16{0x3f80, 0xc020}, []byte{0x80, 0x3f, 0x20, 0xc0})
	})
	t.Run("scalar", func(t *testing.T) {
		checkFromView(t, tensor.FP32, tensor.Shape{}, []float32{1}, []byte{0, 0, 0x80, 0x3f})
	})
	t.Run("nil scalar shape", func(t *testing.T) {
		checkFromView(t, tensor.Int8, nil, []int8{3}, []byte{3})
	})
	t.Run("zero dim", func(t *testing.T) {
		checkFromView(t, tensor.FP32, tensor.Shape{0, 4}, []float32{}, nil)
	})
	t.Run("zero dim nil slice", func(t *testing.T) {
		checkFromView[int64](t, tensor.Int64, tensor.Shape{2, 0}, nil, nil)
	})
}

func TestFromAliases(t *testing.T) {
	values := []int32{1, 2, 3}
	x, err := tensor.From("X", tensor.Shape{3}, values)
	if err != nil {
		t.Fatal(err)
	}
	values[1] = 0x01020304
	if !bytes.Equal(x.Data[4:8], []byte{4, 3, 2, 1}) {
		t.Errorf("write to values not visible in Data: % x", x.Data)
	}
	v, err := tensor.View[int32](x)
	if err != nil {
		t.Fatal(err)
	}
	v[2] = -1
	if values[2] != -1 {
		t.Errorf("write through View not visible in values: %v", values)
	}
}

func TestCopyOwns(t *testing.T) {
	values := []uint16{1, 2}
	x, err := tensor.Copy("X", tensor.Shape{2}, values)
	if err != nil {
		t.Fatal(err)
	}
	values[0] = 99
	if !bytes.Equal(x.Data, []byte{1, 0, 2, 0}) {
		t.Errorf("Copy() data changed with values: % x", x.Data)
	}
	if len(x.Data) != cap(x.Data) {
		t.Errorf("Copy() buffer len %d cap %d, want exact", len(x.Data), cap(x.Data))
	}
}

func TestFromErrors(t *testing.T) {
	tests := []struct {
		name    string
		shape   tensor.Shape
		n       int
		wantErr string
		wrapped error
	}{
		{"too few", tensor.Shape{2, 3}, 5, `tensor "X": shape [2,3] needs 6 FP32 elements, got 5`, nil},
		{"too many", tensor.Shape{2}, 3, `needs 2 FP32 elements, got 3`, nil},
		{"scalar needs one", tensor.Shape{}, 0, `shape [] needs 1 FP32 elements, got 0`, nil},
		{"negative", tensor.Shape{-1}, 1, `tensor "X": shape [-1]: dimension 0 is -1`, tensor.ErrNegativeDim},
		{"overflow", tensor.Shape{1 << 40, 1 << 40}, 1, `element count overflows int64`, tensor.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := make([]float32, tt.n)
			for _, f := range []func() (tensor.Tensor, error){
				func() (tensor.Tensor, error) { return tensor.From("X", tt.shape, values) },
				func() (tensor.Tensor, error) { return tensor.Copy("X", tt.shape, values) },
			} {
				x, err := f()
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
					t.Fatalf("error = %v, want ErrInvalid containing %q", err, tt.wantErr)
				}
				if tt.wrapped != nil && !errors.Is(err, tt.wrapped) {
					t.Errorf("error = %v, does not wrap %v", err, tt.wrapped)
				}
				if x.Data != nil || x.DataType != tensor.Invalid {
					t.Errorf("tensor on error = %+v, want zero", x)
				}
			}
		})
	}
}

// alignedBuf returns a buffer whose first byte is 8-byte aligned.
func alignedBuf(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n+8)
	off := (8 - int(uintptr(unsafe.Pointer(&b[0]))%8)) % 8
	return b[off : off+n : off+n]
}

func TestViewErrors(t *testing.T) {
	buf := alignedBuf(t, 64)
	tests := []struct {
		name    string
		view    func(tensor.Tensor) error
		tensor  tensor.Tensor
		wantErr string
		is      error
	}{
		{"dtype mismatch", viewErr[int32], tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{1}, Data: buf[:4]},
			`tensor "X": cannot view FP32 data as INT32`, tensor.ErrInvalid},
		{"signedness mismatch", viewErr[uint8], tensor.Tensor{Name: "X", DataType: tensor.Int8, Shape: tensor.Shape{1}, Data: buf[:1]},
			`cannot view INT8 data as UINT8`, tensor.ErrInvalid},
		{"fp16 is not uint16", viewErr[uint16], tensor.Tensor{Name: "X", DataType: tensor.FP16, Shape: tensor.Shape{1}, Data: buf[:2]},
			`cannot view FP16 data as UINT16`, tensor.ErrInvalid},
		{"bf16 is not fp16", viewErr[tensor.Float16], tensor.Tensor{Name: "X", DataType: tensor.BF16, Shape: tensor.Shape{1}, Data: buf[:2]},
			`cannot view BF16 data as FP16`, tensor.ErrInvalid},
		{"bytes", viewErr[uint8], tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: buf[:4]},
			`cannot view BYTES data as UINT8`, tensor.ErrInvalid},
		{"invalid dtype", viewErr[uint8], tensor.Tensor{Name: "X", Shape: tensor.Shape{1}, Data: buf[:1]},
			`cannot view DataType(0) data as UINT8`, tensor.ErrInvalid},
		{"short", viewErr[float32], tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{2, 3}, Data: buf[:20]},
			`tensor "X": expected 24 bytes for shape [2,3] of FP32, got 20`, tensor.ErrInvalid},
		{"long", viewErr[int64], tensor.Tensor{Name: "X", DataType: tensor.Int64, Shape: tensor.Shape{1}, Data: buf[:9]},
			`expected 8 bytes`, tensor.ErrInvalid},
		{"negative shape", viewErr[float32], tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{-1}, Data: buf[:4]},
			`dimension 0 is -1`, tensor.ErrNegativeDim},
		{"overflow shape", viewErr[float32], tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{1 << 40, 1 << 40}},
			`overflows int64`, tensor.ErrOverflow},
		{"misaligned fp32", viewErr[float32], tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{2}, Data: buf[1:9]},
			`need 4-byte alignment`, tensor.ErrMisaligned},
		{"misaligned int64 by 4", viewErr[int64], tensor.Tensor{Name: "X", DataType: tensor.Int64, Shape: tensor.Shape{1}, Data: buf[4:12]},
			`need 8-byte alignment`, tensor.ErrMisaligned},
		{"misaligned fp16", viewErr[tensor.Float16], tensor.Tensor{Name: "X", DataType: tensor.FP16, Shape: tensor.Shape{1}, Data: buf[3:5]},
			`need 2-byte alignment`, tensor.ErrMisaligned},
		{"bool 2", viewErr[bool], tensor.Tensor{Name: "X", DataType: tensor.Bool, Shape: tensor.Shape{3}, Data: []byte{0, 1, 2}},
			`tensor "X": BOOL element 2 is 2, not 0 or 1`, tensor.ErrInvalid},
		{"bool 255", viewErr[bool], tensor.Tensor{Name: "X", DataType: tensor.Bool, Shape: tensor.Shape{1}, Data: []byte{255}},
			`BOOL element 0 is 255`, tensor.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.view(tt.tensor)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("View() error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("View() error = %v, does not wrap %v", err, tt.is)
			}
		})
	}
	t.Run("misaligned is not invalid", func(t *testing.T) {
		_, err := tensor.View[float32](tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{1}, Data: buf[2:6]})
		if !errors.Is(err, tensor.ErrMisaligned) || errors.Is(err, tensor.ErrInvalid) {
			t.Errorf("View() error = %v, want ErrMisaligned only", err)
		}
	})
}

func viewErr[T tensor.Element](x tensor.Tensor) error {
	v, err := tensor.View[T](x)
	if err == nil {
		return nil
	}
	if v != nil {
		return errors.New("View returned a non-nil slice with an error")
	}
	return err
}

func TestViewAlignment(t *testing.T) {
	buf := alignedBuf(t, 64)
	t.Run("bytes need no alignment", func(t *testing.T) {
		copy(buf[1:], []byte{9, 8, 7})
		v, err := tensor.View[uint8](tensor.Tensor{Name: "X", DataType: tensor.Uint8, Shape: tensor.Shape{3}, Data: buf[1:4]})
		if err != nil || !bytes.Equal(v, []byte{9, 8, 7}) {
			t.Errorf("View[uint8](data[1:]) = %v, %v", v, err)
		}
	})
	t.Run("fp32 at offset 4", func(t *testing.T) {
		copy(buf[4:], []byte{0, 0, 0x80, 0x3f})
		v, err := tensor.View[float32](tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{1}, Data: buf[4:8]})
		if err != nil || len(v) != 1 || v[0] != 1 {
			t.Errorf("View[float32](data[4:]) = %v, %v", v, err)
		}
	})
	t.Run("empty misaligned is fine", func(t *testing.T) {
		v, err := tensor.View[float64](tensor.Tensor{Name: "X", DataType: tensor.FP64, Shape: tensor.Shape{0}, Data: buf[1:1]})
		if err != nil || v == nil || len(v) != 0 {
			t.Errorf("View[float64] of empty = %v (nil %v), %v", v, v == nil, err)
		}
	})
	t.Run("bool 0 and 1", func(t *testing.T) {
		v, err := tensor.View[bool](tensor.Tensor{Name: "X", DataType: tensor.Bool, Shape: tensor.Shape{2, 2}, Data: []byte{1, 0, 0, 1}})
		if err != nil || len(v) != 4 || !v[0] || v[1] || v[2] || !v[3] {
			t.Errorf("View[bool] = %v, %v", v, err)
		}
	})
}

// TestViewBoolScan puts one bad byte at every position of buffers of many
// lengths, covering both the word-at-a-time loop and the tail.
func TestViewBoolScan(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for _, bad := range []byte{2, 0x80, 0xff} {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(i % 2)
				}
				data[pos] = bad
				_, err := tensor.View[bool](tensor.Tensor{Name: "B", DataType: tensor.Bool, Shape: tensor.Shape{int64(n)}, Data: data})
				want := fmt.Sprintf("BOOL element %d is %d,", pos, bad)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("n=%d pos=%d: View[bool] error = %v, want %q", n, pos, err, want)
				}
			}
		}
		data := make([]byte, n)
		data[n-1] = 1
		if v, err := tensor.View[bool](tensor.Tensor{DataType: tensor.Bool, Shape: tensor.Shape{int64(n)}, Data: data}); err != nil || !v[n-1] {
			t.Fatalf("n=%d: View[bool] of valid data = %v, %v", n, v, err)
		}
	}
}
