package onnxruntime

import (
	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/tensor"
)

// ortTypes maps Triton datatypes to ONNX Runtime element types.
var ortTypes = map[tensor.DataType]ort.TensorElementDataType{
	tensor.Bool:   ort.TensorElementDataTypeBool,
	tensor.Uint8:  ort.TensorElementDataTypeUint8,
	tensor.Uint16: ort.TensorElementDataTypeUint16,
	tensor.Uint32: ort.TensorElementDataTypeUint32,
	tensor.Uint64: ort.TensorElementDataTypeUint64,
	tensor.Int8:   ort.TensorElementDataTypeInt8,
	tensor.Int16:  ort.TensorElementDataTypeInt16,
	tensor.Int32:  ort.TensorElementDataTypeInt32,
	tensor.Int64:  ort.TensorElementDataTypeInt64,
	tensor.FP16:   ort.TensorElementDataTypeFloat16,
	tensor.FP32:   ort.TensorElementDataTypeFloat,
	tensor.FP64:   ort.TensorElementDataTypeDouble,
	tensor.Bytes:  ort.TensorElementDataTypeString,
	tensor.BF16:   ort.TensorElementDataTypeBFloat16,
}

// fromORT is ortTypes inverted, indexed by the ONNX Runtime element type
// (small integers), for the request path.
var fromORT = func() (inv [32]tensor.DataType) {
	for dt, ot := range ortTypes {
		inv[ot] = dt
	}
	return inv
}()

// tritonType returns the Triton datatype of an ONNX Runtime element type,
// or tensor.Invalid for types Triton has no name for (complex, float8, int4).
func tritonType(t ort.TensorElementDataType) tensor.DataType {
	if t < 0 || int(t) >= len(fromORT) {
		return tensor.Invalid
	}
	return fromORT[t]
}
