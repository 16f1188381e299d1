package pixels

import (
	"errors"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

func TestScale(t *testing.T) {
	img := make([]byte, 2*Side*Side)
	img[0], img[Side*Side-1], img[Side*Side] = 255, 51, 1
	in, err := tensor.New("IMAGE", tensor.Uint8, tensor.Shape{2, Side, Side}, img)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Scale(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "PIXELS" || !out.Shape.Equal(tensor.Shape{2, 1, Side, Side}) {
		t.Fatalf("output %s %v, want PIXELS [2 1 28 28]", out.Name, out.Shape)
	}
	v, err := tensor.View[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]float32{0: 1, Side*Side - 1: 0.2, Side * Side: 1.0 / 255, 1: 0} {
		if v[i] != want {
			t.Errorf("PIXELS[%d] = %v, want %v", i, v[i], want)
		}
	}
}

func TestScaleRefuses(t *testing.T) {
	for _, in := range []tensor.Tensor{
		{Name: "IMAGE", DataType: tensor.FP32, Shape: tensor.Shape{Side, Side}, Data: make([]byte, 4*Side*Side)},
		{Name: "IMAGE", DataType: tensor.Uint8, Shape: tensor.Shape{Side, 27}, Data: make([]byte, Side*27)},
		{Name: "IMAGE", DataType: tensor.Uint8, Shape: tensor.Shape{Side * Side}, Data: make([]byte, Side*Side)},
	} {
		if _, err := Scale(in); !errors.Is(err, backend.ErrInvalidInput) {
			t.Errorf("Scale(%s %v) = %v, want ErrInvalidInput", in.DataType, in.Shape, err)
		}
	}
}
