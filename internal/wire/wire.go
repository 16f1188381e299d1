package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// maxClassElements is Triton's bound on the elements of one batch item of
// a classified output.
const maxClassElements = 1_000_000

// Classify replaces an output by its top k classes (classification
// extension, protocol spec §1.8): a BYTES tensor of "<value>:<index>"
// strings, highest value first (":<label>" appended when the output's
// label_filename has a line for the index), of shape [batch, k'] for a batching model
// ([k'] otherwise), k' = min(k, elements per batch item). Values print as
// C++'s std::to_string does (floats with 6 decimals); index is the
// position in the batch item's flattened tensor; ties keep index order.
func Classify(t tensor.Tensor, k uint64, batching bool, labels []string) (tensor.Tensor, error) {
	switch t.DataType {
	case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64,
		tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64, tensor.FP32, tensor.FP64:
	default:
		return tensor.Tensor{}, errorf(triton.InvalidArgument, "class result not available for output due to unsupported type '%s'", t.DataType)
	}
	batched := batching && len(t.Shape) > 0
	items, itemShape := int64(1), t.Shape
	if batched {
		items, itemShape = t.Shape[0], t.Shape[1:]
	}
	per, err := itemShape.NumElements()
	if err != nil {
		return tensor.Tensor{}, errorf(triton.Internal, "output '%s': %v", t.Name, err)
	}
	if per > maxClassElements {
		return tensor.Tensor{}, errorf(triton.InvalidArgument, "classification output tensor too large")
	}
	size := int64(t.DataType.Size())
	if int64(len(t.Data)) != items*per*size {
		return tensor.Tensor{}, errorf(triton.Internal, "output tensor shape does not match size of output for '%s'", t.Name)
	}
	kk := min(int64(min(k, math.MaxInt64)), per)
	type class struct {
		idx int64
		f   float64 // FP32, FP64
		i   int64   // signed
		u   uint64  // unsigned
	}
	var out []byte
	classes := make([]class, per)
	for item := range items {
		base := t.Data[item*per*size:]
		for j := range per {
			c := class{idx: j}
			d := base[j*size:]
			switch t.DataType {
			case tensor.Uint8:
				c.u = uint64(d[0])
			case tensor.Uint16:
				c.u = uint64(binary.LittleEndian.Uint16(d))
			case tensor.Uint32:
				c.u = uint64(binary.LittleEndian.Uint32(d))
			case tensor.Uint64:
				c.u = binary.LittleEndian.Uint64(d)
			case tensor.Int8:
				c.i = int64(int8(d[0]))
			case tensor.Int16:
				c.i = int64(int16(binary.LittleEndian.Uint16(d)))
			case tensor.Int32:
				c.i = int64(int32(binary.LittleEndian.Uint32(d)))
			case tensor.Int64:
				c.i = int64(binary.LittleEndian.Uint64(d))
			case tensor.FP32:
				c.f = float64(math.Float32frombits(binary.LittleEndian.Uint32(d)))
			case tensor.FP64:
				c.f = math.Float64frombits(binary.LittleEndian.Uint64(d))
			}
			classes[j] = c
		}
		slices.SortStableFunc(classes, func(a, b class) int {
			return -cmp.Or(cmp.Compare(a.f, b.f), cmp.Compare(a.i, b.i), cmp.Compare(a.u, b.u))
		})
		var s []byte
		for _, c := range classes[:kk] {
			s = s[:0]
			switch t.DataType {
			case tensor.FP32, tensor.FP64:
				s = strconv.AppendFloat(s, c.f, 'f', 6, 64)
			case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
				s = strconv.AppendInt(s, c.i, 10)
			default:
				s = strconv.AppendUint(s, c.u, 10)
			}
			s = append(s, ':')
			s = strconv.AppendInt(s, c.idx, 10)
			if c.idx < int64(len(labels)) {
				s = append(s, ':')
				s = append(s, labels[c.idx]...)
			}
			out = tensor.AppendElement(out, s)
		}
	}
	shape := tensor.Shape{kk}
	if batched {
		shape = tensor.Shape{items, kk}
	}
	return tensor.Tensor{Name: t.Name, DataType: tensor.Bytes, Shape: shape, Data: out}, nil
}

// errorf makes an error with a code, worded as Triton words it.
func errorf(code triton.Code, format string, args ...any) error {
	return &triton.Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Aligned returns data, or a copy of it where it does not start at a
// multiple of dt's element size: backends view inputs as typed slices
// (tensor.View), which needs aligned memory.
func Aligned(data []byte, dt tensor.DataType) []byte {
	size := uintptr(dt.Size())
	if len(data) == 0 || size <= 1 || uintptr(unsafe.Pointer(unsafe.SliceData(data)))%size == 0 {
		return data
	}
	return append(make([]byte, 0, len(data)), data...)
}
