package tensor_test

import (
	"testing"

	"github.com/triton-go/triton/tensor"
)

// allocBudget fails the test if f allocates more than budget times per run.
func allocBudget(t *testing.T, budget float64, f func()) {
	t.Helper()
	if got := testing.AllocsPerRun(100, f); got > budget {
		t.Errorf("allocations per run = %v, budget %v", got, budget)
	}
}

func zeroAllocs[T tensor.Element](t *testing.T) {
	values := make([]T, 64)
	shape := tensor.Shape{8, 8}
	x, err := tensor.From("X", shape, values)
	if err != nil {
		t.Fatal(err)
	}
	var sink []T
	t.Run("From", func(t *testing.T) {
		allocBudget(t, 0, func() { x, _ = tensor.From("X", shape, values) })
	})
	t.Run("View", func(t *testing.T) {
		allocBudget(t, 0, func() { sink, _ = tensor.View[T](x) })
		if len(sink) != 64 {
			t.Errorf("View() len = %d", len(sink))
		}
	})
	t.Run("Validate", func(t *testing.T) {
		allocBudget(t, 0, func() { _ = x.Validate() })
	})
	t.Run("New", func(t *testing.T) {
		allocBudget(t, 0, func() { x, _ = tensor.New("X", x.DataType, shape, x.Data) })
	})
	t.Run("From with shape literal", func(t *testing.T) {
		// The shape must not escape through error formatting: a caller's
		// literal stays on its stack.
		n := 0
		allocBudget(t, 0, func() {
			y, _ := tensor.From("X", tensor.Shape{8, 8}, values)
			v, _ := tensor.View[T](y)
			n += len(v)
		})
		if n == 0 {
			t.Error("View() returned nothing")
		}
	})
	t.Run("Validate with shape literal", func(t *testing.T) {
		allocBudget(t, 0, func() {
			_ = tensor.Tensor{Name: "X", DataType: x.DataType, Shape: tensor.Shape{64}, Data: x.Data}.Validate()
		})
	})
	t.Run("NumElements", func(t *testing.T) {
		allocBudget(t, 0, func() { _, _ = shape.NumElements() })
	})
}

// TestZeroAllocs is the allocation budget of the hot path: wrapping,
// viewing and validating fixed-size tensors must not allocate.
func TestZeroAllocs(t *testing.T) {
	t.Run("BOOL", zeroAllocs[bool])
	t.Run("UINT8", zeroAllocs[uint8])
	t.Run("UINT16", zeroAllocs[uint16])
	t.Run("UINT32", zeroAllocs[uint32])
	t.Run("UINT64", zeroAllocs[uint64])
	t.Run("INT8", zeroAllocs[int8])
	t.Run("INT16", zeroAllocs[int16])
	t.Run("INT32", zeroAllocs[int32])
	t.Run("INT64", zeroAllocs[int64])
	t.Run("FP16", zeroAllocs[tensor.Float16])
	t.Run("FP32", zeroAllocs[float32])
	t.Run("FP64", zeroAllocs[float64])
	t.Run("BF16", zeroAllocs[tensor.BFloat16])
}

func TestBytesAllocs(t *testing.T) {
	x := mustStrings(t, "S", tensor.Shape{4}, "a", "bb", "", "dddd")
	t.Run("ValidateBytes", func(t *testing.T) {
		allocBudget(t, 0, func() { _ = tensor.ValidateBytes(x.Data, 4) })
	})
	t.Run("Validate", func(t *testing.T) {
		allocBudget(t, 0, func() { _ = x.Validate() })
	})
	t.Run("Elements", func(t *testing.T) {
		n := 0
		allocBudget(t, 0, func() {
			for _, e := range x.Elements() {
				n += len(e)
			}
		})
		if n == 0 {
			t.Error("Elements() yielded nothing")
		}
	})
	t.Run("ByteSlices", func(t *testing.T) {
		allocBudget(t, 1, func() { _, _ = tensor.ByteSlices(x) })
	})
	t.Run("Strings", func(t *testing.T) {
		allocBudget(t, 2, func() { _, _ = tensor.Strings(x) })
	})
	t.Run("FromStrings", func(t *testing.T) {
		values := []string{"a", "bb", "", "dddd"}
		allocBudget(t, 1, func() { _, _ = tensor.FromStrings("S", x.Shape, values) })
	})
	t.Run("SliceRows", func(t *testing.T) {
		allocBudget(t, 1, func() { _, _ = x.SliceRows(1, 3) })
	})
}
