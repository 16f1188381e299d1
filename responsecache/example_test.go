package responsecache_test

import (
	"context"
	"fmt"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
)

// Example shows a server's use: one cache for the server, and Do around
// each execution of a model that sets response_cache { enable: true }.
func Example() {
	cache := responsecache.New(64 << 20) // --response-cache-byte-size=67108864
	ctx := context.Background()

	executions := 0
	infer := func(inputs []tensor.Tensor) ([]tensor.Tensor, responsecache.Result, error) {
		return cache.Do(ctx, "doubler", 1, inputs, func() ([]tensor.Tensor, error) {
			// The ordinary path: scheduler, instance, backend.
			executions++
			xs, err := tensor.View[float32](inputs[0])
			if err != nil {
				return nil, err
			}
			ys := make([]float32, len(xs))
			for i, x := range xs {
				ys[i] = 2 * x
			}
			out, err := tensor.From("OUTPUT0", inputs[0].Shape, ys)
			return []tensor.Tensor{out}, err
		})
	}

	for _, xs := range [][]float32{{1, 2, 3}, {1, 2, 3}, {4, 5, 6}} {
		in, _ := tensor.Copy("INPUT0", tensor.Shape{3}, xs)
		outs, res, err := infer([]tensor.Tensor{in})
		if err != nil {
			panic(err)
		}
		ys, _ := tensor.View[float32](outs[0])
		fmt.Printf("%v -> %v hit=%v\n", xs, ys, res.Hit)
	}
	st := cache.Stats()
	fmt.Printf("executions=%d entries=%d hits=%d misses=%d\n", executions, st.Entries, st.Hits, st.Misses)
	// Output:
	// [1 2 3] -> [2 4 6] hit=false
	// [1 2 3] -> [2 4 6] hit=true
	// [4 5 6] -> [8 10 12] hit=false
	// executions=2 entries=2 hits=1 misses=2
}
