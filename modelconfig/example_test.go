package modelconfig_test

import (
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
)

// A config.pbtxt in Triton's text format parses straight into a ModelConfig.
func Example() {
	const pbtxt = `
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  {
    name: "input"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
  }
]
output { name: "probs" data_type: TYPE_FP32 dims: [ 1000 ] }
dynamic_batching { preferred_batch_size: [ 4, 8 ] }
instance_group [ { kind: KIND_CPU, count: 2 } ]
`
	var cfg modelconfig.ModelConfig
	if err := prototext.Unmarshal([]byte(pbtxt), &cfg); err != nil {
		fmt.Println("parse:", err)
		return
	}
	in := cfg.GetInput()[0]
	fmt.Println(cfg.GetName(), cfg.GetPlatform(), cfg.GetMaxBatchSize())
	fmt.Println(in.GetName(), in.GetDataType(), in.GetFormat(), in.GetDims())
	fmt.Println(cfg.GetDynamicBatching().GetPreferredBatchSize())
	fmt.Println(cfg.GetInstanceGroup()[0].GetKind(), cfg.GetInstanceGroup()[0].GetCount())
	// Output:
	// resnet50 onnxruntime_onnx 8
	// input TYPE_FP32 FORMAT_NCHW [3 224 224]
	// [4 8]
	// KIND_CPU 2
}
