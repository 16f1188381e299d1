package onnxruntime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/modelconfig"
)

// sentimentWeights are the bytes of sentiment.onnx's initializers, from
// scripts/gen-test-models.py: W FP32 [84, 3] (84 = len(VOCAB), the lines of
// sentiment_vocab.txt), B FP32 [3], and axis1 and axis2, INT64 [1] each.
const sentimentWeights = 84*3*4 + 3*4 + 8 + 8

const sentimentConfig = `name: "sentiment" backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT_IDS" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "ATTENTION_MASK" data_type: TYPE_INT64 dims: [ -1 ] }
]
output [ { name: "LOGITS" data_type: TYPE_FP32 dims: [ 3 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`

// TestMemoryBytes: each instance, a session of its own, reports the
// bytes of the model's initializers, from a repository on disk and from
// one that is only an fs.FS (the model file read into memory).
func TestMemoryBytes(t *testing.T) {
	for _, onDisk := range []bool{true, false} {
		t.Run(fmt.Sprintf("on_disk=%v", onDisk), func(t *testing.T) {
			spec := seqSpec(t, "sentiment", "sentiment.onnx", sentimentConfig)
			if !onDisk {
				spec.Dir = ""
			}
			m, err := onnxruntime.New().Load(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := m.Close(); err != nil {
					t.Error(err)
				}
			}()
			if n, ok, err := backend.MemoryBytes(m); ok {
				t.Errorf("model: MemoryBytes = %d, %v; want no report (its instances report)", n, err)
			}
			for i := range 2 {
				inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{
					Name: fmt.Sprintf("sentiment_%d", i), Group: spec.Config.GetInstanceGroup()[0], Kind: modelconfig.ModelInstanceGroup_KIND_CPU, Index: i, DeviceID: -1,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := inst.Close(); err != nil {
						t.Error(err)
					}
				}()
				if n, ok, err := backend.MemoryBytes(inst); !ok || err != nil || n != sentimentWeights {
					t.Errorf("instance %d: MemoryBytes = %d, %v, %v; want %d", i, n, ok, err, sentimentWeights)
				}
			}
		})
	}
}
