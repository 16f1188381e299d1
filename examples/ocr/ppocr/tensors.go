package ppocr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// ImageTensor returns img as an RGB image tensor named name: UINT8
// [H, W, 3], rows top to bottom, pixels left to right (HWC), alpha dropped.
func ImageTensor(name string, img image.Image) (tensor.Tensor, error) {
	b := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
		b = rgba.Bounds()
	}
	data := make([]uint8, 0, 3*b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := rgba.Pix[rgba.PixOffset(b.Min.X, y):]
		for x := range b.Dx() {
			data = append(data, row[4*x:4*x+3]...)
		}
	}
	return tensor.From(name, tensor.Shape{int64(b.Dy()), int64(b.Dx()), 3}, data)
}

// TensorImage returns the image held by an RGB image tensor (UINT8
// [H, W, 3], see [ImageTensor]) as a new, opaque RGBA image. Errors wrap
// [backend.ErrInvalidInput].
func TensorImage(t tensor.Tensor) (*image.RGBA, error) {
	if err := check(t, tensor.Uint8, tensor.Shape{-1, -1, 3}); err != nil {
		return nil, err
	}
	h, w := int(t.Shape[0]), int(t.Shape[1])
	if h == 0 || w == 0 {
		return nil, fmt.Errorf("tensor %q: image of shape %v is empty: %w", t.Name, t.Shape, backend.ErrInvalidInput)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i, j := 0, 0; i < len(t.Data); i, j = i+3, j+4 {
		img.Pix[j], img.Pix[j+1], img.Pix[j+2], img.Pix[j+3] = t.Data[i], t.Data[i+1], t.Data[i+2], 0xff
	}
	return img, nil
}

// check verifies a tensor's data type, its shape against pattern (-1
// matches any size) and its data length; errors name the tensor and wrap
// backend.ErrInvalidInput.
func check(t tensor.Tensor, dt tensor.DataType, pattern tensor.Shape) error {
	if t.DataType != dt {
		return fmt.Errorf("tensor %q has data type %v, want %v: %w", t.Name, t.DataType, dt, backend.ErrInvalidInput)
	}
	if !t.Shape.Matches(pattern) {
		return fmt.Errorf("tensor %q has shape %v, want %v: %w", t.Name, t.Shape, pattern, backend.ErrInvalidInput)
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("%w: %w", err, backend.ErrInvalidInput)
	}
	return nil
}

// input returns the request's input name after [check]ing it.
func input(r *backend.Request, name string, dt tensor.DataType, pattern tensor.Shape) (tensor.Tensor, error) {
	t, ok := r.Input(name)
	if !ok {
		return t, fmt.Errorf("input %q is missing: %w", name, backend.ErrInvalidInput)
	}
	return t, check(t, dt, pattern)
}

// output returns a response's output name after checking it as [check]
// does; a mismatch is the called model's fault, so errors do not wrap
// backend.ErrInvalidInput.
func output(resp *backend.InferResponse, name string, dt tensor.DataType, pattern tensor.Shape) (tensor.Tensor, error) {
	t, ok := resp.Output(name)
	if !ok {
		return t, fmt.Errorf("model %q returned no output %q", resp.Model, name)
	}
	if err := check(t, dt, pattern); err != nil {
		return t, fmt.Errorf("model %q: %s", resp.Model, err) // not %w: not the caller's input
	}
	return t, nil
}

// values returns a checked tensor's elements: a view when its data is
// aligned, otherwise a copy.
func values[T float32 | int32](t tensor.Tensor) ([]T, error) {
	v, err := tensor.View[T](t)
	if errors.Is(err, tensor.ErrMisaligned) {
		v = make([]T, len(t.Data)/4)
		_, err = binary.Decode(t.Data, binary.LittleEndian, v)
	}
	return v, err
}
