// Command readme is the README's first example, as it appears there; run it
// from the root of a checkout with `go run ./examples/readme`
// (examples/readme/main_test.go runs it and checks that the README shows
// this file).
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime" // serves platform "onnxruntime_onnx"
	"github.com/triton-go/triton/tensor"
)

func main() {
	// add_sub in examples/model_repository: an ONNX model, OUTPUT0 = INPUT0 + INPUT1
	// over FP32 [16]; the repository's text_reverse needs cmd/tritonserver's Go backend.
	srv, err := triton.New(triton.WithModelRepository("examples/model_repository"), triton.WithStartupModels("add_sub"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	a, b := make([]float32, 16), make([]float32, 16)
	for i := range a {
		a[i], b[i] = float32(i), 10
	}
	in0, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, a) // zero-copy over the []float32
	in1, _ := tensor.From("INPUT1", tensor.Shape{1, 16}, b)
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add_sub", Inputs: []tensor.Tensor{in0, in1}})
	if err != nil {
		log.Fatal(err)
	}
	out, _ := resp.Output("OUTPUT0") // INPUT0 + INPUT1
	sum, _ := tensor.View[float32](out)
	fmt.Println(resp.Model, resp.Version, sum)
}
