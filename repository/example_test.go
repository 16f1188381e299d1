package repository_test

import (
	"fmt"
	"testing/fstest"

	"github.com/triton-go/triton/repository"
)

// Scan a repository held in memory, read each model's config, fill in
// Triton's defaults and validate it.
func Example() {
	repo := fstest.MapFS{
		"resnet/config.pbtxt": {Data: []byte(`
name: "resnet"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "input", data_type: TYPE_FP32, format: FORMAT_NCHW, dims: [ 3, 224, 224 ] } ]
output [ { name: "probs", data_type: TYPE_FP32, dims: [ 1000 ] } ]
dynamic_batching { }
`)},
		"resnet/1/model.onnx":  {Data: []byte("...")},
		"resnet/2/model.onnx":  {Data: []byte("...")},
		"resnet/01/model.onnx": {Data: []byte("ignored: leading zero")},
		"plan/3/model.plan":    {Data: []byte("no config.pbtxt")},
	}
	models, err := repository.Scan([]repository.Root{repository.FSRoot(repo)}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, md := range models {
		cfg, found, err := repository.ReadConfig(md)
		if err != nil {
			fmt.Println(err)
			return
		}
		if !found {
			backend, platform, _ := repository.GuessBackend(md)
			cfg.Backend, cfg.Platform = backend, platform
		}
		repository.Normalize(cfg, repository.NormalizeOptions{GPUs: 0})
		if err := repository.Validate(md.Name+"/config.pbtxt", cfg, repository.ValidateOptions{ModelName: md.Name}); err != nil {
			fmt.Println(err)
			continue
		}
		g := cfg.GetInstanceGroup()[0]
		fmt.Printf("%s: versions %v, serving %v, backend %s, preferred %v, %s x%d\n",
			md.Name, md.Versions, repository.SelectVersions(cfg.GetVersionPolicy(), md.Versions),
			cfg.GetBackend(), cfg.GetDynamicBatching().GetPreferredBatchSize(), g.GetKind(), g.GetCount())
	}

	_, err = repository.ParseConfig("bad/config.pbtxt", []byte("name: \"bad\"\ninput {\n  dims: [ 1, 2, ]\n}\n"))
	fmt.Println(err)
	// Output:
	// plan: versions [3], serving [3], backend tensorrt, preferred [], KIND_CPU x1
	// resnet: versions [1 2], serving [2], backend onnxruntime, preferred [8], KIND_CPU x2
	// bad/config.pbtxt:3:17: syntax error: invalid scalar value: ]
}
