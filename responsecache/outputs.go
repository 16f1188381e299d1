package responsecache

import (
	"maps"
	"strings"

	"github.com/triton-go/triton/tensor"
)

// align is the alignment of each tensor's data inside the buffer that
// [copyTensors] allocates: the largest element size of any data type, so
// that [tensor.View] works on every copy.
const align = 8

func alignUp(n int) int { return (n + align - 1) &^ (align - 1) }

// copyTensors returns a deep copy of src: the data of all tensors in one
// fresh buffer, each tensor's data starting at a multiple of [align], and
// all shapes in one fresh []int64. Names are shared (strings are
// immutable) unless ownNames is set. Each copied Data and Shape has its capacity clipped to its
// length, so appending to one never writes into its neighbour. A nil Data
// or Shape stays nil; a nil src gives nil. With ownNames, names are cloned
// too, so that a stored entry never pins the memory a name was cut from.
func copyTensors(src []tensor.Tensor, ownNames bool) []tensor.Tensor {
	if src == nil {
		return nil
	}
	nb, nd := 0, 0
	for i := range src {
		nb = alignUp(nb) + len(src[i].Data)
		nd += len(src[i].Shape)
	}
	// Padding the total keeps small buffers out of the tiny allocator's
	// 4-byte-aligned slots.
	buf := make([]byte, alignUp(nb))
	dims := make([]int64, nd)
	out := make([]tensor.Tensor, len(src))
	ob, od := 0, 0
	for i := range src {
		t := &src[i]
		out[i] = tensor.Tensor{Name: t.Name, DataType: t.DataType}
		if ownNames {
			out[i].Name = strings.Clone(t.Name)
		}
		if t.Shape != nil {
			s := dims[od : od+len(t.Shape) : od+len(t.Shape)]
			copy(s, t.Shape)
			out[i].Shape = s
			od += len(t.Shape)
		}
		ob = alignUp(ob)
		if t.Data != nil {
			d := buf[ob : ob+len(t.Data) : ob+len(t.Data)]
			copy(d, t.Data)
			out[i].Data = d
		}
		ob += len(t.Data)
	}
	return out
}

// outputBytes is what outputs count towards an entry's size: their names,
// shapes (8 bytes a dimension) and data.
func outputBytes(ts []tensor.Tensor) int64 {
	var n int64
	for i := range ts {
		n += int64(len(ts[i].Name)) + 8*int64(len(ts[i].Shape)) + int64(len(ts[i].Data))
	}
	return n
}

// copyResponse copies r's outputs as [copyTensors] does and its
// parameters' map (the values are immutable: numbers, bools and strings);
// with ownNames, the parameters' keys and string values are cloned too.
func copyResponse(r Response, ownNames bool) Response {
	out := Response{Outputs: copyTensors(r.Outputs, ownNames)}
	if !ownNames || r.Parameters == nil {
		out.Parameters = maps.Clone(r.Parameters)
		return out
	}
	out.Parameters = make(map[string]any, len(r.Parameters))
	for k, v := range r.Parameters {
		if s, ok := v.(string); ok {
			v = strings.Clone(s)
		}
		out.Parameters[strings.Clone(k)] = v
	}
	return out
}

// responseBytes is what a response counts towards an entry's size: its
// outputs' bytes (outputBytes) and, per parameter, its key, 16 bytes of
// value and a string value's bytes.
func responseBytes(r Response) int64 {
	n := outputBytes(r.Outputs)
	for k, v := range r.Parameters {
		n += int64(len(k)) + 16
		if s, ok := v.(string); ok {
			n += int64(len(s))
		}
	}
	return n
}
