//go:build cgo && (linux || darwin)

package ortrun

import (
	"errors"
	"fmt"
)

// Tensor is a tensor as it crosses the shim, in both directions.
//
// Type is the ONNX element type, ONNXTensorElementDataType's numeric value:
// FLOAT 1, UINT8 2, INT8 3, UINT16 4, INT16 5, INT32 6, INT64 7, STRING 8,
// BOOL 9, FLOAT16 10, DOUBLE 11, UINT32 12, UINT64 13, BFLOAT16 16 (the
// values of onnxruntime_go's TensorElementDataType constants). Other types
// (complex, float8, 4- and 2-bit) are not supported.
//
// Shape holds the dimensions; a Shape of length 0 is a scalar (one
// element), and dimensions of 0 (no elements) are allowed.
//
// Data holds the elements as raw little-endian, row-major bytes, exactly
// elements × element size of them (a BOOL is one byte, 0 or 1). For STRING
// it holds Triton's BYTES framing: for each element, its length as 4
// little-endian bytes, then its bytes, which may be anything (NUL bytes and
// invalid UTF-8 included).
type Tensor struct {
	Type  int32
	Shape []int64
	Data  []byte
}

// typeString is ONNX's STRING element type.
const typeString = 8

// elemSizes[t] is the byte size of an element of ONNX type t: 0 for STRING
// and the types the shim does not handle. The C side has the same table.
var elemSizes = [...]uint8{1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}

// elemSize is the byte size of an element of ONNX type t (0 for STRING and
// unsupported types).
func elemSize(t int32) int {
	if t < 0 || int(t) >= len(elemSizes) {
		return 0
	}
	return int(elemSizes[t])
}

var typeNames = [...]string{
	0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
	8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
	15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
	20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "UINT2", 25: "INT2",
}

// typeName names ONNX element type t for messages: "FLOAT (1)".
func typeName(t int32) string {
	if t >= 0 && int(t) < len(typeNames) {
		return fmt.Sprintf("%s (%d)", typeNames[t], t)
	}
	return fmt.Sprintf("%d", t)
}

// valueTypeName names an ONNXType for messages.
func valueTypeName(t int) string {
	names := [...]string{"value of unknown type", "tensor", "sequence", "map", "opaque value", "sparse tensor", "optional"}
	if t >= 0 && t < len(names) {
		return names[t]
	}
	return fmt.Sprintf("value of ONNX type %d", t)
}

// ErrTerminated is wrapped by the errors [Session.Run] returns when its
// context ended before or during the run.
var ErrTerminated = errors.New("run terminated")

// ErrNotBound is wrapped by the errors [NewSession] returns before [Bind]
// has succeeded.
var ErrNotBound = errors.New("ONNX Runtime is not bound (call Bind first)")

// ErrFraming is wrapped by the errors [Session.Run] returns for a STRING
// input whose Data is not exactly its elements in Triton's BYTES framing.
var ErrFraming = errors.New("malformed BYTES data")

// codeInvalidArgument is ORT's ORT_INVALID_ARGUMENT.
const codeInvalidArgument = 2

var codeNames = [...]string{
	"ORT_OK", "ORT_FAIL", "ORT_INVALID_ARGUMENT", "ORT_NO_SUCHFILE", "ORT_NO_MODEL", "ORT_ENGINE_ERROR",
	"ORT_RUNTIME_EXCEPTION", "ORT_INVALID_PROTOBUF", "ORT_MODEL_LOADED", "ORT_NOT_IMPLEMENTED",
	"ORT_INVALID_GRAPH", "ORT_EP_FAIL", "ORT_MODEL_LOAD_CANCELED", "ORT_MODEL_REQUIRES_COMPILATION",
	"ORT_NOT_FOUND",
}

// Error is a failure reported by ONNX Runtime. Code is ORT's OrtErrorCode
// (ORT_FAIL = 1, ORT_INVALID_ARGUMENT = 2, ...), Op the ORT C API function
// that failed ("Run", "CreateTensorWithDataAsOrtValue", ...), and Msg ORT's
// message. [Session.Run] wraps it with the input or output it concerns.
type Error struct {
	Code int
	Op   string
	Msg  string
}

func (e *Error) Error() string {
	code := fmt.Sprintf("ORT error code %d", e.Code)
	if e.Code >= 0 && e.Code < len(codeNames) {
		code = codeNames[e.Code]
	}
	return "ONNX Runtime " + e.Op + ": " + code + ": " + e.Msg
}

// InvalidArgument reports whether ORT blamed its arguments
// (ORT_INVALID_ARGUMENT): for Run, typically an input whose shape or type
// the model does not accept.
func (e *Error) InvalidArgument() bool { return e.Code == codeInvalidArgument }
