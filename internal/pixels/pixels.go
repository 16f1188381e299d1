package pixels

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Name is the backend name the example's config uses.
const Name = "pixels"

// Side is the width and height of an image.
const Side = 28

// Backend scales each request's images; it is a [backend.Func].
var Backend = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, ok := r.Input("IMAGE")
		if !ok {
			r.Fail(fmt.Errorf("pixels: no input IMAGE: %w", backend.ErrInvalidInput))
			continue
		}
		out, err := Scale(in)
		if err != nil {
			r.Fail(err)
			continue
		}
		r.SetOutput(out)
	}
	return nil
})

// Scale returns PIXELS for an IMAGE tensor of shape [..., 28, 28]: the
// same leading dimensions, then [1, 28, 28], each byte divided by 255.
func Scale(in tensor.Tensor) (tensor.Tensor, error) {
	n := len(in.Shape)
	if in.DataType != tensor.Uint8 || n < 2 || in.Shape[n-1] != Side || in.Shape[n-2] != Side {
		return tensor.Tensor{}, fmt.Errorf("pixels: IMAGE is %s %v, want UINT8 [..., %d, %d]: %w", in.DataType, in.Shape, Side, Side, backend.ErrInvalidInput)
	}
	shape := append(append(tensor.Shape{}, in.Shape[:n-2]...), 1, Side, Side)
	data := make([]byte, 4*len(in.Data))
	for i, p := range in.Data {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(p)/255))
	}
	return tensor.New("PIXELS", tensor.FP32, shape, data)
}
