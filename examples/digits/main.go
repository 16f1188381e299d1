// Command digits serves the example repository's digits ensemble inside
// this process, three frameworks in one pipeline: a Go step scales a
// 28×28 grey image, a small CNN in TorchScript runs on libtorch (the
// pytorch backend), and an ONNX softmax on ONNX Runtime turns its logits
// into probabilities. It classifies images drawn here from concurrent
// goroutines, whose requests batch in the CNN, and prints what came back.
//
//	go run ./examples/digits
//
// The CNN's weights are random (fixed by the generator's seed), not
// trained: the classes mean nothing, the plumbing is the point. The same
// repository is served over HTTP and gRPC by cmd/tritonserver (`make run`).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"sync"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime" // registers "onnxruntime"
	_ "github.com/triton-go/triton/backend/pytorch"     // registers "pytorch"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/tensor"
)

// Models are the ensemble and its steps, loaded at start.
var Models = []string{"digits_pixels", "digits_cnn", "digits_softmax", "digits"}

func main() {
	repo := flag.String("model-repository", "examples/model_repository", "model repository folder")
	n := flag.Int("requests", 64, "concurrent requests")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *repo, *n); err != nil {
		log.Fatal(err)
	}
}

// newServer serves the digits models of the repository at dir.
func newServer(dir string) (*triton.Server, error) {
	return triton.New(
		triton.WithModelRepository(dir),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(Models...),
		triton.WithBackend(pixels.Name, pixels.Backend),
	)
}

// run classifies n images from n goroutines and writes the results to w.
func run(ctx context.Context, w io.Writer, dir string, n int) error {
	srv, err := newServer(dir)
	if err != nil {
		return err
	}
	defer srv.Close()

	probs := make([][]float32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { probs[i], errs[i] = classify(ctx, srv, stroke(i%pixels.Side)) })
	}
	wg.Wait()
	for i, p := range probs {
		if errs[i] != nil {
			return errs[i]
		}
		if i < 4 {
			c := argmax(p)
			fmt.Fprintf(w, "image %d (a stroke at column %d): class %d, p = %.4f\n", i, i%pixels.Side, c, p[c])
		}
	}
	st, err := srv.Model("digits_cnn").Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d requests: the CNN ran %d batches for %d inferences\n", n, st.ExecutionCount, st.InferenceCount)
	return nil
}

// classify runs the digits ensemble on one image.
func classify(ctx context.Context, srv *triton.Server, img []byte) ([]float32, error) {
	in, err := tensor.New("IMAGE", tensor.Uint8, tensor.Shape{1, pixels.Side, pixels.Side}, img)
	if err != nil {
		return nil, err
	}
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "digits", Inputs: []tensor.Tensor{in}})
	if err != nil {
		return nil, err
	}
	out, ok := resp.Output("PROBS")
	if !ok {
		return nil, fmt.Errorf("digits answered without PROBS")
	}
	p, err := tensor.View[float32](out)
	return slices.Clone(p), err
}

// stroke draws a vertical line at column x, three pixels wide.
func stroke(x int) []byte {
	img := make([]byte, pixels.Side*pixels.Side)
	for y := 4; y < pixels.Side-4; y++ {
		for dx := -1; dx <= 1; dx++ {
			if c := x + dx; c >= 0 && c < pixels.Side {
				img[y*pixels.Side+c] = 255
			}
		}
	}
	return img
}

func argmax(p []float32) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}
