package repoagent_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repoagent"
)

// The checksum agent verifies the digests a configuration gives for its
// model's files; the server runs it (and any agent a program adds) when
// the model loads.
func Example() {
	files := fstest.MapFS{"1/model.onnx": {Data: []byte("weights")}}
	cfg := &modelconfig.ModelConfig{ModelRepositoryAgents: &modelconfig.ModelRepositoryAgents{
		Agents: []*modelconfig.ModelRepositoryAgents_Agent{{
			Name:       "checksum",
			Parameters: map[string]string{"MD5:1/model.onnx": "63f4f1e9b725370f459720575cd5f953"},
		}},
	}}
	m := repoagent.Model{Name: "m", FS: files, Config: cfg}
	fmt.Println(repoagent.Run(context.Background(), m, repoagent.Builtin()))

	files["1/model.onnx"].Data[0] = 'W' // the file changed since its digest was written down
	fmt.Println(repoagent.Run(context.Background(), m, repoagent.Builtin()))
	// Output:
	// <nil>
	// repository agent 'checksum': Mismatched MD5 hash for file 1/model.onnx, expect: 63f4f1e9b725370f459720575cd5f953, got: 8831731b52fdc6cb7f162f9767d66e4d: checksum mismatch
}
