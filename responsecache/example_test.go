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
	infer := func(inputs []tensor.Tensor) (responsecache.Response, responsecache.Result, error) {
		return cache.Do(ctx, "doubler", 1, inputs, func() (responsecache.Response, error) {
			// The ordinary path: scheduler, instance, backend.
			executions++
			xs, err := tensor.View[float32](inputs[0])
			if err != nil {
				return responsecache.Response{}, err
			}
			ys := make([]float32, len(xs))
			for i, x := range xs {
				ys[i] = 2 * x
			}
			out, err := tensor.From("OUTPUT0", inputs[0].Shape, ys)
			return responsecache.Response{Outputs: []tensor.Tensor{out}, Parameters: map[string]any{"scale": int64(2)}}, err
		})
	}

	for _, xs := range [][]float32{{1, 2, 3}, {1, 2, 3}, {4, 5, 6}} {
		in, _ := tensor.Copy("INPUT0", tensor.Shape{3}, xs)
		resp, res, err := infer([]tensor.Tensor{in})
		if err != nil {
			panic(err)
		}
		ys, _ := tensor.View[float32](resp.Outputs[0])
		fmt.Printf("%v -> %v %v hit=%v\n", xs, ys, resp.Parameters, res.Hit)
	}
	st := cache.Stats()
	fmt.Printf("executions=%d entries=%d hits=%d misses=%d\n", executions, st.Entries, st.Hits, st.Misses)
	// Output:
	// [1 2 3] -> [2 4 6] map[scale:2] hit=false
	// [1 2 3] -> [2 4 6] map[scale:2] hit=true
	// [4 5 6] -> [8 10 12] map[scale:2] hit=false
	// executions=2 entries=2 hits=1 misses=2
}
