package tensor_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

func TestValidate(t *testing.T) {
	framed := func(elems ...string) []byte {
		var b []byte
		for _, e := range elems {
			b = tensor.AppendElement(b, []byte(e))
		}
		return b
	}
	tests := []struct {
		name    string
		tensor  tensor.Tensor
		wantErr string // substring; "" for success
		wrapped error  // also wrapped besides ErrInvalid
	}{
		{"bool", tensor.Tensor{Name: "X", DataType: tensor.Bool, Shape: tensor.Shape{3}, Data: []byte{0, 1, 0}}, "", nil},
		{"bool bytes are not checked", tensor.Tensor{Name: "X", DataType: tensor.Bool, Shape: tensor.Shape{1}, Data: []byte{7}}, "", nil},
		{"uint8", tensor.Tensor{Name: "X", DataType: tensor.Uint8, Shape: tensor.Shape{2}, Data: make([]byte, 2)}, "", nil},
		{"uint16", tensor.Tensor{Name: "X", DataType: tensor.Uint16, Shape: tensor.Shape{2}, Data: make([]byte, 4)}, "", nil},
		{"uint32", tensor.Tensor{Name: "X", DataType: tensor.Uint32, Shape: tensor.Shape{2}, Data: make([]byte, 8)}, "", nil},
		{"uint64", tensor.Tensor{Name: "X", DataType: tensor.Uint64, Shape: tensor.Shape{2}, Data: make([]byte, 16)}, "", nil},
		{"int8", tensor.Tensor{Name: "X", DataType: tensor.Int8, Shape: tensor.Shape{2}, Data: make([]byte, 2)}, "", nil},
		{"int16", tensor.Tensor{Name: "X", DataType: tensor.Int16, Shape: tensor.Shape{2}, Data: make([]byte, 4)}, "", nil},
		{"int32", tensor.Tensor{Name: "X", DataType: tensor.Int32, Shape: tensor.Shape{2}, Data: make([]byte, 8)}, "", nil},
		{"int64", tensor.Tensor{Name: "X", DataType: tensor.Int64, Shape: tensor.Shape{2}, Data: make([]byte, 16)}, "", nil},
		{"fp16", tensor.Tensor{Name: "X", DataType: tensor.FP16, Shape: tensor.Shape{2}, Data: make([]byte, 4)}, "", nil},
		{"fp32", tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{2, 3}, Data: make([]byte, 24)}, "", nil},
		{"fp64", tensor.Tensor{Name: "X", DataType: tensor.FP64, Shape: tensor.Shape{2}, Data: make([]byte, 16)}, "", nil},
		{"bf16", tensor.Tensor{Name: "X", DataType: tensor.BF16, Shape: tensor.Shape{2}, Data: make([]byte, 4)}, "", nil},
		{"bytes", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{2}, Data: framed("ab", "")}, "", nil},
		{"scalar", tensor.Tensor{Name: "X", DataType: tensor.FP32, Data: make([]byte, 4)}, "", nil},
		{"bytes scalar", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{}, Data: framed("s")}, "", nil},
		{"zero dim nil data", tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{0, 3}}, "", nil},
		{"bytes zero dim", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{4, 0}}, "", nil},

		{"short", tensor.Tensor{Name: "INPUT0", DataType: tensor.FP32, Shape: tensor.Shape{2, 3}, Data: make([]byte, 20)},
			`tensor "INPUT0": expected 24 bytes for shape [2,3] of FP32, got 20`, nil},
		{"long", tensor.Tensor{Name: "X", DataType: tensor.Int16, Shape: tensor.Shape{2}, Data: make([]byte, 5)},
			`tensor "X": expected 4 bytes for shape [2] of INT16, got 5`, nil},
		{"scalar without data", tensor.Tensor{Name: "X", DataType: tensor.FP64}, `expected 8 bytes for shape [] of FP64, got 0`, nil},
		{"zero dim with data", tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{0}, Data: make([]byte, 4)},
			`expected 0 bytes`, nil},
		{"invalid type", tensor.Tensor{Name: "X", Shape: tensor.Shape{1}, Data: []byte{0}}, `tensor "X": invalid data type DataType(0)`, nil},
		{"out of range type", tensor.Tensor{Name: "X", DataType: 99, Shape: tensor.Shape{1}}, `tensor "X": invalid data type DataType(99)`, nil},
		{"zero tensor", tensor.Tensor{}, `tensor "": invalid data type`, nil},
		{"negative dim", tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{2, -1}},
			`tensor "X": shape [2,-1]: dimension 1 is -1`, tensor.ErrNegativeDim},
		{"element overflow", tensor.Tensor{Name: "X", DataType: tensor.FP32, Shape: tensor.Shape{1 << 40, 1 << 40}},
			`tensor "X": shape [1099511627776,1099511627776]: element count overflows int64`, tensor.ErrOverflow},
		{"byte overflow", tensor.Tensor{Name: "X", DataType: tensor.FP64, Shape: tensor.Shape{1 << 62}},
			`byte size overflows int64`, tensor.ErrOverflow},
		{"bytes element overflow", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{1 << 40, 1 << 40}},
			`element count overflows`, tensor.ErrOverflow},
		{"bytes trailing", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: framed("a", "b")},
			`tensor "X": BYTES data: 5 trailing bytes after 1 elements`, nil},
		{"bytes too few", tensor.Tensor{Name: "X", DataType: tensor.Bytes, Shape: tensor.Shape{3}, Data: framed("abcdefgh", "b")},
			`tensor "X": BYTES element 2 at offset 17: length prefix truncated (0 of 4 bytes)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tensor.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, tensor.ErrInvalid) {
				t.Errorf("Validate() = %v, does not wrap ErrInvalid", err)
			}
			if tt.wrapped != nil && !errors.Is(err, tt.wrapped) {
				t.Errorf("Validate() = %v, does not wrap %v", err, tt.wrapped)
			}
		})
	}
}

func TestValidateExactMessage(t *testing.T) {
	err := tensor.Tensor{Name: "INPUT0", DataType: tensor.FP32, Shape: tensor.Shape{2, 3}, Data: make([]byte, 20)}.Validate()
	const want = `tensor "INPUT0": expected 24 bytes for shape [2,3] of FP32, got 20`
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}

func TestNew(t *testing.T) {
	t.Run("aliases data", func(t *testing.T) {
		data := make([]byte, 8)
		x, err := tensor.New("X", tensor.Int32, tensor.Shape{2}, data)
		if err != nil {
			t.Fatal(err)
		}
		if x.Name != "X" || x.DataType != tensor.Int32 || !x.Shape.Equal(tensor.Shape{2}) {
			t.Errorf("New() = %+v", x)
		}
		if &x.Data[0] != &data[0] || len(x.Data) != 8 {
			t.Error("New() copied the data")
		}
		if x.Memory() != tensor.CPU {
			t.Errorf("Memory() = %v, want CPU", x.Memory())
		}
	})
	t.Run("error gives zero tensor", func(t *testing.T) {
		x, err := tensor.New("X", tensor.Int32, tensor.Shape{2}, make([]byte, 7))
		if !errors.Is(err, tensor.ErrInvalid) {
			t.Fatalf("New() error = %v, want ErrInvalid", err)
		}
		if x.Name != "" || x.Data != nil || x.Shape != nil || x.DataType != tensor.Invalid {
			t.Errorf("New() on error = %+v, want zero Tensor", x)
		}
	})
}

func TestMemory(t *testing.T) {
	if tensor.CPU != 0 {
		t.Errorf("CPU = %d, want 0 (the zero value)", tensor.CPU)
	}
	if got := (tensor.Tensor{}).Memory(); got != tensor.CPU {
		t.Errorf("zero Tensor Memory() = %v, want CPU", got)
	}
	if got := tensor.CPU.String(); got != "CPU" {
		t.Errorf("CPU.String() = %q", got)
	}
	if got := tensor.Memory(3).String(); got != "Memory(3)" {
		t.Errorf("Memory(3).String() = %q", got)
	}
}
