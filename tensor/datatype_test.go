package tensor_test

import (
	"testing"

	"github.com/triton-go/triton/tensor"
)

func TestDataType(t *testing.T) {
	tests := []struct {
		dt     tensor.DataType
		value  uint8
		proto  string
		config string
		size   int
	}{
		{tensor.Bool, 1, "BOOL", "TYPE_BOOL", 1},
		{tensor.Uint8, 2, "UINT8", "TYPE_UINT8", 1},
		{tensor.Uint16, 3, "UINT16", "TYPE_UINT16", 2},
		{tensor.Uint32, 4, "UINT32", "TYPE_UINT32", 4},
		{tensor.Uint64, 5, "UINT64", "TYPE_UINT64", 8},
		{tensor.Int8, 6, "INT8", "TYPE_INT8", 1},
		{tensor.Int16, 7, "INT16", "TYPE_INT16", 2},
		{tensor.Int32, 8, "INT32", "TYPE_INT32", 4},
		{tensor.Int64, 9, "INT64", "TYPE_INT64", 8},
		{tensor.FP16, 10, "FP16", "TYPE_FP16", 2},
		{tensor.FP32, 11, "FP32", "TYPE_FP32", 4},
		{tensor.FP64, 12, "FP64", "TYPE_FP64", 8},
		{tensor.Bytes, 13, "BYTES", "TYPE_STRING", 0},
		{tensor.BF16, 14, "BF16", "TYPE_BF16", 2},
	}
	for _, tt := range tests {
		t.Run(tt.proto, func(t *testing.T) {
			if uint8(tt.dt) != tt.value {
				t.Errorf("numeric value = %d, want %d (Triton config enum)", uint8(tt.dt), tt.value)
			}
			if got := tt.dt.String(); got != tt.proto {
				t.Errorf("String() = %q, want %q", got, tt.proto)
			}
			if got := tt.dt.ConfigName(); got != tt.config {
				t.Errorf("ConfigName() = %q, want %q", got, tt.config)
			}
			if got := tt.dt.Size(); got != tt.size {
				t.Errorf("Size() = %d, want %d", got, tt.size)
			}
			if !tt.dt.Valid() {
				t.Error("Valid() = false, want true")
			}
			if got := tensor.ParseDataType(tt.proto); got != tt.dt {
				t.Errorf("ParseDataType(%q) = %v, want %v", tt.proto, got, tt.dt)
			}
			if got := tensor.ParseConfigDataType(tt.config); got != tt.dt {
				t.Errorf("ParseConfigDataType(%q) = %v, want %v", tt.config, got, tt.dt)
			}
		})
	}
}

func TestDataTypeInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		dt   tensor.DataType
	}{
		{"zero", tensor.Invalid},
		{"one past the end", tensor.DataType(15)},
		{"max", tensor.DataType(255)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dt.Valid() {
				t.Error("Valid() = true")
			}
			if got := tt.dt.String(); got != "<invalid>" {
				t.Errorf("String() = %q, want <invalid>", got)
			}
			if got := tt.dt.ConfigName(); got != "TYPE_INVALID" {
				t.Errorf("ConfigName() = %q, want TYPE_INVALID", got)
			}
			if got := tt.dt.Size(); got != 0 {
				t.Errorf("Size() = %d, want 0", got)
			}
		})
	}
	if tensor.Invalid != 0 {
		t.Errorf("Invalid = %d, want 0", tensor.Invalid)
	}
}

func TestParseDataTypeRejects(t *testing.T) {
	for _, s := range []string{"", "fp32", "Fp32", " FP32", "FP32 ", "STRING", "<invalid>", "TYPE_FP32", "FLOAT", "BFLOAT16"} {
		t.Run("protocol/"+s, func(t *testing.T) {
			if got := tensor.ParseDataType(s); got != tensor.Invalid {
				t.Errorf("ParseDataType(%q) = %v, want Invalid", s, got)
			}
		})
	}
	for _, s := range []string{"", "type_fp32", "TYPE_BYTES", "FP32", "TYPE_INVALID", "TYPE_FLOAT32"} {
		t.Run("config/"+s, func(t *testing.T) {
			if got := tensor.ParseConfigDataType(s); got != tensor.Invalid {
				t.Errorf("ParseConfigDataType(%q) = %v, want Invalid", s, got)
			}
		})
	}
}

func TestDataTypeOf(t *testing.T) {
	tests := []struct {
		name string
		got  tensor.DataType
		want tensor.DataType
	}{
		{"bool", tensor.DataTypeOf[bool](), tensor.Bool},
		{"uint8", tensor.DataTypeOf[uint8](), tensor.Uint8},
		{"byte", tensor.DataTypeOf[byte](), tensor.Uint8},
		{"uint16", tensor.DataTypeOf[uint16](), tensor.Uint16},
		{"uint32", tensor.DataTypeOf[uint32](), tensor.Uint32},
		{"uint64", tensor.DataTypeOf[uint64](), tensor.Uint64},
		{"int8", tensor.DataTypeOf[int8](), tensor.Int8},
		{"int16", tensor.DataTypeOf[int16](), tensor.Int16},
		{"int32", tensor.DataTypeOf[int32](), tensor.Int32},
		{"int64", tensor.DataTypeOf[int64](), tensor.Int64},
		{"float32", tensor.DataTypeOf[float32](), tensor.FP32},
		{"float64", tensor.DataTypeOf[float64](), tensor.FP64},
		{"Float16", tensor.DataTypeOf[tensor.Float16](), tensor.FP16},
		{"BFloat16", tensor.DataTypeOf[tensor.BFloat16](), tensor.BF16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("DataTypeOf[%s]() = %v, want %v", tt.name, tt.got, tt.want)
			}
		})
	}
}
