// Command batching shows the dynamic batcher coalescing concurrent calls:
// 64 goroutines call Infer on a model with dynamic_batching, a Go backend
// that takes 2 ms per batch whatever its size, and 2 instances. It prints
// the batch sizes the backend saw and the throughput, then the same without
// dynamic batching.
//
//	go run ./examples/batching
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"sync"
	"testing/fstest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

const config = `
name: "scale"
backend: "slow"
max_batch_size: 32
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
`

func main() {
	for _, batching := range []string{"dynamic_batching { max_queue_delay_microseconds: 500 }", ""} {
		if err := run(os.Stdout, batching, 64, 20); err != nil {
			log.Fatal(err)
		}
	}
}

// run serves the model (with the given scheduling section) and sends
// callers × perCaller requests, reporting batch sizes and throughput.
func run(w io.Writer, scheduling string, callers, perCaller int) error {
	var mu sync.Mutex
	sizes := map[int64]int{}
	slow := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		mu.Lock()
		sizes[b.Size()]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a model whose cost hardly depends on the batch size
		x, err := b.Input("X")
		if err != nil {
			return err
		}
		in, _ := tensor.View[float32](x)
		out := make([]float32, len(in))
		for i, v := range in {
			out[i] = 2 * v
		}
		y, _ := tensor.From("Y", x.Shape, out)
		return b.SetOutput(y)
	})
	repo := fstest.MapFS{
		"scale/config.pbtxt": {Data: []byte(config + scheduling)},
		"scale/1/README":     {Data: []byte("Go backend")},
	}
	srv, err := triton.New(triton.WithRepository(repo), triton.WithBackend("slow", slow))
	if err != nil {
		return err
	}
	defer srv.Close()

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			for i := range perCaller {
				x, _ := tensor.From("X", tensor.Shape{1, 4}, []float32{float32(g), float32(i), 1, 2})
				resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "scale", Inputs: []tensor.Tensor{x}})
				if err != nil {
					errs <- err
					return
				}
				y, _ := resp.Output("Y")
				if v, _ := tensor.View[float32](y); v[0] != 2*float32(g) || v[1] != 2*float32(i) {
					errs <- fmt.Errorf("caller %d got %v", g, v)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	elapsed := time.Since(start)
	name := "dynamic batching"
	if scheduling == "" {
		name = "no batching"
	}
	total := callers * perCaller
	fmt.Fprintf(w, "%s: %d requests in %v (%.0f requests/s)\n", name, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	for _, size := range slices.Sorted(maps.Keys(sizes)) {
		fmt.Fprintf(w, "  batches of %2d: %d\n", size, sizes[size])
	}
	return nil
}
