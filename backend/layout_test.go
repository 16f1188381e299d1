package backend_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

func view(t *testing.T, x tensor.Tensor) []float32 {
	t.Helper()
	v, err := tensor.View[float32](x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLayouts: a state laid out [2, batch, 2] is gathered and scattered
// along dimension 1, and a shared input is passed once for the batch.
func TestLayouts(t *testing.T) {
	a := &backend.Request{ID: "a", BatchSize: 1, Inputs: []tensor.Tensor{
		f32(t, "S", tensor.Shape{2, 1, 2}, 1, 2, 3, 4), f32(t, "SR", tensor.Shape{1}, 16)}}
	b := &backend.Request{ID: "b", BatchSize: 2, Inputs: []tensor.Tensor{
		f32(t, "S", tensor.Shape{2, 2, 2}, 5, 6, 7, 8, 9, 10, 11, 12), f32(t, "SR", tensor.Shape{1}, 16)}}
	batch := backend.NewBatch(true, a, b)
	batch.SetLayouts(map[string]backend.Layout{"S": {Axis: 1}, "SN": {Axis: 1}, "SR": {Shared: true}})

	s, err := batch.Input("S")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Shape.Equal(tensor.Shape{2, 3, 2}) || !slices.Equal(view(t, s), []float32{1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}) {
		t.Fatalf("gathered S %v %v", s.Shape, view(t, s))
	}
	sr, err := batch.Input("SR")
	if err != nil || !sr.Shape.Equal(tensor.Shape{1}) || view(t, sr)[0] != 16 {
		t.Fatalf("shared SR %v, %v", sr, err)
	}

	// The output comes back in the same layout; each request gets its rows.
	sn := s
	sn.Name = "SN"
	if err := batch.SetOutput(sn); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    *backend.Request
		want []float32
	}{{a, []float32{1, 2, 3, 4}}, {b, []float32{5, 6, 7, 8, 9, 10, 11, 12}}} {
		outs := c.r.Outputs()
		if len(outs) != 1 {
			t.Fatalf("request %s has %d outputs", c.r.ID, len(outs))
		}
		out := outs[0]
		if out.Shape[1] != c.r.BatchSize || !slices.Equal(view(t, out), c.want) {
			t.Fatalf("request %s: SN %v %v, want %v", c.r.ID, out.Shape, view(t, out), c.want)
		}
	}

	// Requests that disagree on a shared input cannot share a batch.
	b.Inputs[1] = f32(t, "SR", tensor.Shape{1}, 8)
	batch = backend.NewBatch(true, a, b)
	batch.SetLayouts(map[string]backend.Layout{"SR": {Shared: true}})
	if _, err := batch.Input("SR"); !errors.Is(err, backend.ErrInvalidInput) {
		t.Fatalf("differing shared input: %v", err)
	}
}
