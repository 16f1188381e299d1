package ensemble_test

import (
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/ensemble"
	"github.com/triton-go/triton/modelconfig"
)

// Compile checks an ensemble against the configurations of its composing
// models, here given by a map instead of a server.
func ExampleCompile() {
	parse := func(text string) *modelconfig.ModelConfig {
		cfg := &modelconfig.ModelConfig{}
		if err := prototext.Unmarshal([]byte(text), cfg); err != nil {
			panic(err)
		}
		return cfg
	}
	models := map[string]*modelconfig.ModelConfig{
		"tokenize": parse(`name: "tokenize" max_batch_size: 0
			input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
			output [ { name: "IDS" data_type: TYPE_INT64 dims: [ -1, 16 ] } ]`),
		"embed": parse(`name: "embed" max_batch_size: 32
			input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ 16 ] } ]
			output [ { name: "embedding" data_type: TYPE_FP32 dims: [ 384 ] } ]`),
	}
	lookup := func(model string, version int64) (*modelconfig.ModelConfig, error) {
		if cfg, ok := models[model]; ok {
			return cfg, nil
		}
		return nil, fmt.Errorf("model %s is not loaded", model)
	}
	ens := parse(`name: "text_embed" platform: "ensemble" max_batch_size: 0
		input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
		output [ { name: "EMBEDDING" data_type: TYPE_FP32 dims: [ -1, 384 ] } ]
		ensemble_scheduling { step [
		  { model_name: "tokenize" model_version: -1
		    input_map { key: "TEXT" value: "TEXT" } output_map { key: "IDS" value: "ids" } },
		  { model_name: "embed" model_version: -1
		    input_map { key: "input_ids" value: "ids" } output_map { key: "embedding" value: "EMBEDDING" } }
		] }`)
	plan, err := ensemble.Compile(ens, lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.Steps(), "steps over", plan.Models())

	// A step whose input takes another datatype fails with Triton's message.
	models["embed"].Input[0].DataType = modelconfig.DataType_TYPE_INT32
	_, err = ensemble.Compile(ens, lookup)
	fmt.Println(err)
	// Output:
	// 2 steps over [{tokenize 0} {embed 0}]
	// in ensemble text_embed, ensemble tensor ids: inconsistent data type: TYPE_INT64 is inferred from model tokenize while TYPE_INT32 is inferred from model embed
}
