package warmup_test

import (
	"fmt"
	"testing/fstest"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

func ExampleSamples() {
	const config = `
name: "classifier"
backend: "onnxruntime"
max_batch_size: 8
input { name: "IMAGE" data_type: TYPE_FP32 dims: [2] }
input { name: "LABEL" data_type: TYPE_STRING dims: [1] }
output { name: "SCORE" data_type: TYPE_FP32 dims: [1] }
model_warmup {
  name: "random batch of 3"
  batch_size: 3
  count: 2
  inputs { key: "IMAGE" value { data_type: TYPE_FP32 dims: [2] random_data: true } }
  inputs { key: "LABEL" value { data_type: TYPE_STRING dims: [1] input_data_file: "label.bin" } }
}`
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(config), cfg); err != nil {
		panic(err)
	}
	modelDir := fstest.MapFS{ // in a server: os.DirFS or an os.Root's FS of the model folder
		"warmup/label.bin": {Data: tensor.AppendElement(nil, []byte("cat"))},
	}

	samples, err := warmup.Samples(cfg, modelDir)
	if err != nil {
		panic(err)
	}
	for _, s := range samples {
		fmt.Printf("%q: %d rows, run %d times\n", s.Name, s.BatchSize, s.Count)
		for _, in := range s.Inputs {
			fmt.Printf("  %s %v %v\n", in.Name, in.DataType, in.Shape)
		}
		image, err := tensor.View[float32](s.Inputs[0]) // inputs are sorted by name
		if err != nil {
			panic(err)
		}
		fmt.Printf("  IMAGE rows: %.4f\n", image)
		labels, err := tensor.Strings(s.Inputs[1])
		if err != nil {
			panic(err)
		}
		fmt.Printf("  LABEL rows: %q\n", labels)
	}

	cfg.ModelWarmup[0].BatchSize = 16
	_, err = warmup.Samples(cfg, modelDir)
	fmt.Println(err)
	// Output:
	// "random batch of 3": 3 rows, run 2 times
	//   IMAGE FP32 [3,2]
	//   LABEL BYTES [3,1]
	//   IMAGE rows: [0.1962 -0.0975 0.1962 -0.0975 0.1962 -0.0975]
	//   LABEL rows: ["cat" "cat" "cat"]
	// warmup: sample "random batch of 3": batch_size must be <= max_batch_size 8, got 16
}
