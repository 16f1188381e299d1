package fuzztensor

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/triton-go/triton/tensor"
)

// MaxFit is the most elements a shape may have for [Make] to fit data to
// it; larger shapes keep the fuzzer's data as it is.
const MaxFit = 4096

// Make returns a tensor named name of datatype dt with one dimension per
// byte of shape (at most 4), each read as a signed byte so that negative
// dimensions occur. Without fit, data is the tensor's data as it is. With
// fit, and a valid shape of at most MaxFit elements, data is repeated or
// cut to the shape's byte size (zeros if data is empty); for BYTES it is
// cut into that many elements, each with its length prefix.
func Make(name string, dt tensor.DataType, shape, data []byte, fit bool) tensor.Tensor {
	t := tensor.Tensor{Name: name, DataType: dt, Data: data}
	for _, d := range shape[:min(len(shape), 4)] {
		t.Shape = append(t.Shape, int64(int8(d)))
	}
	n, err := t.Shape.NumElements()
	if !fit || err != nil || n > MaxFit {
		return t
	}
	if dt == tensor.Bytes {
		var b bytes.Buffer
		for i := range int(n) {
			lo, hi := i*len(data)/int(n), (i+1)*len(data)/int(n)
			b.Write(binary.LittleEndian.AppendUint32(nil, uint32(hi-lo)))
			b.Write(data[lo:hi])
		}
		t.Data = b.Bytes()
		return t
	}
	t.Data = make([]byte, int(n)*max(dt.Size(), 1))
	if len(data) > 0 {
		for i := range t.Data {
			t.Data[i] = data[i%len(data)]
		}
	}
	return t
}

// Values returns x's elements as T, failing tb if they are not.
func Values[T tensor.Element](tb testing.TB, x tensor.Tensor) []T {
	tb.Helper()
	v, err := tensor.View[T](x)
	if err != nil {
		tb.Fatalf("%s: %v", x.Name, err)
	}
	return v
}
