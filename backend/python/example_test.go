package python_test

import (
	"context"
	"fmt"
	"log"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/python" // registers "python"
	"github.com/triton-go/triton/tensor"
)

// A Python-based backend, as Triton has them: examples/backends/units/model.py
// serves every model whose config names backend "units", each converting
// with its own parameters (celsius_to_fahrenheit: scale 1.8, offset 32;
// miles_to_km: scale 1.609344); the models' folders hold no code.
func Example_pythonBasedBackend() {
	srv, err := triton.New(
		triton.WithModelRepository("../../examples/model_repository"),
		triton.WithBackendDirectory("../../examples/backends"),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels("celsius_to_fahrenheit", "miles_to_km"),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, model := range []string{"celsius_to_fahrenheit", "miles_to_km"} {
		in, err := tensor.From("IN", tensor.Shape{1, 3}, []float64{0, 10, 100})
		if err != nil {
			log.Fatal(err)
		}
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}})
		if err != nil {
			log.Fatal(err)
		}
		out, _ := resp.Output("OUT")
		v, err := tensor.View[float64](out)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %.4f\n", model, v)
	}
	cfg, err := srv.ModelConfig("miles_to_km", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("runtime:", cfg.GetRuntime())
	// Output:
	// celsius_to_fahrenheit: [32.0000 50.0000 212.0000]
	// miles_to_km: [0.0000 16.0934 160.9344]
	// runtime: model.py
}
