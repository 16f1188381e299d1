package torchrun_test

import (
	"context"
	"testing"

	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/tensor"
)

// BenchmarkForward runs the add/sub model on two [1, 16] FP32 inputs, the
// model of the ONNX Runtime benchmarks, through Forward: libtorch's
// forward plus this package's copies and allocations (the result slice
// and one buffer for both outputs).
func BenchmarkForward(b *testing.B) {
	for _, opts := range []struct {
		name string
		opts torchrun.Options
	}{
		{"inference-mode", torchrun.Options{InferenceMode: true}},
		{"no-grad", torchrun.Options{}},
	} {
		b.Run(opts.name, func(b *testing.B) {
			m := load(b, "addsub.pt", opts.opts)
			x := val(b, []int64{1, 16}, make([]float32, 16)...)
			in := []torchrun.Value{x, x}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Forward(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// instrumented is set under -race, -asan and -msan, where allocation
// counts mean nothing.
var instrumented bool

// TestAllocations holds Forward's Go allocation budget: the result slice
// and one buffer for every output's shape and data, plus a [][]byte per
// List[str] output (the C-facing scratch is pooled).
func TestAllocations(t *testing.T) {
	if instrumented {
		t.Skip("allocation counts are not meaningful under -race, -asan or -msan")
	}
	ctx := context.Background()
	for _, tt := range []struct {
		model string
		in    []torchrun.Value
		want  float64
	}{
		{"addsub.pt", []torchrun.Value{val(t, []int64{1, 16}, make([]float32, 16)...), val(t, []int64{1, 16}, make([]float32, 16)...)}, 2},
		{"strings.pt", []torchrun.Value{{DataType: tensor.Bytes, Shape: []int64{2}, Strings: [][]byte{[]byte("a"), []byte("bc")}}}, 3},
		{"dict_in.pt", []torchrun.Value{val(t, []int64{2}, float32(1), 2), val(t, []int64{2}, float32(3), 4)}, 2},
	} {
		m := load(t, tt.model, torchrun.Options{InferenceMode: true})
		var names []string
		if tt.model == "dict_in.pt" {
			names = []string{"a", "b"}
		}
		if n := testing.AllocsPerRun(100, func() {
			var err error
			if names != nil {
				_, err = m.ForwardDict(ctx, names, tt.in)
			} else {
				_, err = m.Forward(ctx, tt.in)
			}
			if err != nil {
				t.Fatal(err)
			}
		}); n != tt.want {
			t.Errorf("%s: %v allocations per Forward, want %v", tt.model, n, tt.want)
		}
	}
}
