package tensor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

var (
	sinkTensor tensor.Tensor
	sinkErr    error
)

func benchFromView[T tensor.Element](b *testing.B, n int) {
	values := make([]T, n)
	shape := tensor.Shape{int64(n)}
	b.Run("From", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkTensor, sinkErr = tensor.From("X", shape, values)
		}
	})
	x, err := tensor.From("X", shape, values)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("View", func(b *testing.B) {
		b.ReportAllocs()
		var v []T
		for b.Loop() {
			v, sinkErr = tensor.View[T](x)
		}
		if len(v) != n {
			b.Fatal("bad view")
		}
	})
	b.Run("Validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkErr = x.Validate()
		}
	})
}

// BenchmarkFromView measures wrapping a slice and viewing it back; both
// must be constant-time and allocation-free (bool's View scans the data).
func BenchmarkFromView(b *testing.B) {
	b.Run("FP32/1Mi", func(b *testing.B) { benchFromView[float32](b, 1<<20) })
	b.Run("INT64/1Ki", func(b *testing.B) { benchFromView[int64](b, 1<<10) })
	b.Run("FP16/1Ki", func(b *testing.B) { benchFromView[tensor.Float16](b, 1<<10) })
	b.Run("BOOL/1Ki", func(b *testing.B) { benchFromView[bool](b, 1<<10) })
}

func BenchmarkValidateBytes(b *testing.B) {
	for _, n := range []int{1, 64, 4096} {
		values := make([]string, n)
		for i := range values {
			values[i] = strings.Repeat("x", i%32)
		}
		x, err := tensor.FromStrings("S", tensor.Shape{int64(n)}, values)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("elements=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(x.Data)))
			for b.Loop() {
				sinkErr = tensor.ValidateBytes(x.Data, int64(n))
			}
		})
	}
}

// BenchmarkConcat gathers 8 requests into one batch, as the dynamic
// batcher does.
func BenchmarkConcat(b *testing.B) {
	const parts = 8
	for _, rowElems := range []int{16, 4096} {
		fp := make([]tensor.Tensor, parts)
		str := make([]tensor.Tensor, parts)
		for i := range parts {
			fp[i] = mustFrom(b, "in", tensor.Shape{1, int64(rowElems)}, make([]float32, rowElems))
			vals := make([]string, rowElems)
			for j := range vals {
				vals[j] = "token"
			}
			str[i] = mustStrings(b, "in", tensor.Shape{1, int64(rowElems)}, vals...)
		}
		for _, c := range []struct {
			name  string
			parts []tensor.Tensor
		}{
			{fmt.Sprintf("FP32/8x%d", rowElems), fp},
			{fmt.Sprintf("BYTES/8x%d", rowElems), str},
		} {
			b.Run(c.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(parts * len(c.parts[0].Data)))
				for b.Loop() {
					sinkTensor, sinkErr = tensor.Concat("batch", c.parts)
				}
			})
		}
	}
}

// BenchmarkSliceRows scatters one row of a batch of 8; for BYTES the cost
// grows with the offset since the framing has to be walked.
func BenchmarkSliceRows(b *testing.B) {
	const rows, rowElems = 8, 256
	fp := mustFrom(b, "out", tensor.Shape{rows, rowElems}, make([]float32, rows*rowElems))
	vals := make([]string, rows*rowElems)
	for i := range vals {
		vals[i] = "token"
	}
	str := mustStrings(b, "out", tensor.Shape{rows, rowElems}, vals...)
	for _, c := range []struct {
		name string
		x    tensor.Tensor
	}{{"FP32/8x256", fp}, {"BYTES/8x256", str}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkTensor, sinkErr = c.x.SliceRows(rows-1, rows)
			}
		})
	}
}
