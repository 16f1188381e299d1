package tensor

// DataType is the element type of a tensor. Its numeric value equals the
// model-configuration enum value (inference.DataType in model_config.proto:
// TYPE_INVALID=0 … TYPE_STRING=13, TYPE_BF16=14), so it converts to and from
// the protobuf enum with a plain integer conversion.
//
// The zero value is [Invalid]. DataType is a plain value and safe for
// concurrent use.
type DataType uint8

// The Triton data types. Bytes is TYPE_STRING in model configurations and
// "BYTES" on the wire.
const (
	Invalid DataType = 0  // TYPE_INVALID, "<invalid>"
	Bool    DataType = 1  // TYPE_BOOL, "BOOL": one byte, 0 or 1
	Uint8   DataType = 2  // TYPE_UINT8, "UINT8"
	Uint16  DataType = 3  // TYPE_UINT16, "UINT16"
	Uint32  DataType = 4  // TYPE_UINT32, "UINT32"
	Uint64  DataType = 5  // TYPE_UINT64, "UINT64"
	Int8    DataType = 6  // TYPE_INT8, "INT8"
	Int16   DataType = 7  // TYPE_INT16, "INT16"
	Int32   DataType = 8  // TYPE_INT32, "INT32"
	Int64   DataType = 9  // TYPE_INT64, "INT64"
	FP16    DataType = 10 // TYPE_FP16, "FP16": IEEE 754 binary16, see [Float16]
	FP32    DataType = 11 // TYPE_FP32, "FP32"
	FP64    DataType = 12 // TYPE_FP64, "FP64"
	Bytes   DataType = 13 // TYPE_STRING, "BYTES": length-prefixed elements, see [ValidateBytes]
	BF16    DataType = 14 // TYPE_BF16, "BF16": bfloat16, see [BFloat16]
)

// numDataTypes is one past the largest valid DataType.
const numDataTypes = 15

var dataTypeInfo = [numDataTypes]struct {
	protocol string
	config   string
	size     int
}{
	Invalid: {"<invalid>", "TYPE_INVALID", 0},
	Bool:    {"BOOL", "TYPE_BOOL", 1},
	Uint8:   {"UINT8", "TYPE_UINT8", 1},
	Uint16:  {"UINT16", "TYPE_UINT16", 2},
	Uint32:  {"UINT32", "TYPE_UINT32", 4},
	Uint64:  {"UINT64", "TYPE_UINT64", 8},
	Int8:    {"INT8", "TYPE_INT8", 1},
	Int16:   {"INT16", "TYPE_INT16", 2},
	Int32:   {"INT32", "TYPE_INT32", 4},
	Int64:   {"INT64", "TYPE_INT64", 8},
	FP16:    {"FP16", "TYPE_FP16", 2},
	FP32:    {"FP32", "TYPE_FP32", 4},
	FP64:    {"FP64", "TYPE_FP64", 8},
	Bytes:   {"BYTES", "TYPE_STRING", 0},
	BF16:    {"BF16", "TYPE_BF16", 2},
}

// Valid reports whether d is one of the fourteen real data types, that is
// neither [Invalid] nor a value outside the enum.
func (d DataType) Valid() bool {
	return d > Invalid && d < numDataTypes
}

// String returns the KServe v2 protocol name of d ("BOOL", "UINT8", …,
// "FP16", "FP32", "FP64", "BYTES", "BF16"), the form used in HTTP/JSON and
// gRPC requests. [Invalid] and values outside the enum give "<invalid>", as in
// Triton.
func (d DataType) String() string {
	if !d.Valid() {
		return dataTypeInfo[Invalid].protocol
	}
	return dataTypeInfo[d].protocol
}

// ConfigName returns the model-configuration name of d ("TYPE_FP32", …).
// [Bytes] gives "TYPE_STRING"; [Invalid] and values outside the enum give
// "TYPE_INVALID".
func (d DataType) ConfigName() string {
	if !d.Valid() {
		return dataTypeInfo[Invalid].config
	}
	return dataTypeInfo[d].config
}

// Size returns the size of one element of type d in bytes. It returns 0 for
// [Bytes], whose elements have variable size, and for invalid types.
func (d DataType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dataTypeInfo[d].size
}

// ParseDataType returns the DataType whose protocol name is s ("FP32",
// "BYTES", …). Matching is case-sensitive, as in Triton; any other string,
// including "<invalid>", "STRING" and "fp32", gives [Invalid].
func ParseDataType(s string) DataType {
	for d := Bool; d < numDataTypes; d++ {
		if dataTypeInfo[d].protocol == s {
			return d
		}
	}
	return Invalid
}

// ParseConfigDataType returns the DataType whose model-configuration name is
// s ("TYPE_FP32", "TYPE_STRING", …). Matching is case-sensitive; any other
// string, including "TYPE_INVALID" and "TYPE_BYTES", gives [Invalid].
func ParseConfigDataType(s string) DataType {
	for d := Bool; d < numDataTypes; d++ {
		if dataTypeInfo[d].config == s {
			return d
		}
	}
	return Invalid
}
