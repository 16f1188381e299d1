package pytorch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/modelconfig"
)

// The state of two test models, from their layers in
// scripts/gen-torch-models.py (FP32 is 4 bytes, INT64 8):
const (
	// cnn.pt: Conv2d(1→4, 3×3) weight 4·1·3·3 = 36 and bias 4, Linear(676→10)
	// weight 6760 and bias 10: 6810 FP32 parameters, no buffers.
	cnnBytes = (36 + 4 + 6760 + 10) * 4
	// batchnorm.pt: Conv2d(1→2, 3×3) weight 2·1·3·3 = 18 and bias 2,
	// BatchNorm2d(2) weight 2 and bias 2 (parameters), running_mean 2 and
	// running_var 2 (FP32 buffers) and num_batches_tracked (an INT64
	// scalar buffer).
	batchnormBytes = (18+2+2+2+2+2)*4 + 8
)

// TestMemoryBytes: a model version reports the bytes of its parameters and
// buffers once per loaded module, by whichever of the model and its
// instances owns the module: without weight sharing each of the two
// instances reports its own module (the first took the one Load loaded),
// with it the model reports the one they share.
func TestMemoryBytes(t *testing.T) {
	for _, tc := range []struct {
		file      string
		bytes     int64
		share     bool
		wantModel int64 // after the instances are made
		wantInst  int64 // each
	}{
		{"cnn.pt", cnnBytes, false, 0, cnnBytes},
		{"cnn.pt", cnnBytes, true, cnnBytes, 0},
		{"batchnorm.pt", batchnormBytes, false, 0, batchnormBytes},
		{"batchnorm.pt", batchnormBytes, true, batchnormBytes, 0},
	} {
		t.Run(fmt.Sprintf("%s/share=%v", tc.file, tc.share), func(t *testing.T) {
			config := fmt.Sprintf(`name: "m" backend: "pytorch"
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
parameters { key: "ENABLE_WEIGHT_SHARING" value: { string_value: "%v" } }`, tc.share)
			spec := newRepo(t).spec("m", tc.file, config)
			m, err := pytorch.New().Load(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := m.Close(); err != nil {
					t.Error(err)
				}
			}()
			report := func(what string, x any, want int64) {
				t.Helper()
				n, ok, err := backend.MemoryBytes(x)
				if !ok || err != nil || n != want {
					t.Errorf("%s: MemoryBytes = %d, %v, %v; want %d", what, n, ok, err, want)
				}
			}
			report("model before its instances", m, tc.bytes)
			var insts []backend.Instance
			for i := range 2 {
				inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{Name: fmt.Sprintf("m_%d", i), Kind: modelconfig.ModelInstanceGroup_KIND_CPU, DeviceID: -1, Index: i})
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := inst.Close(); err != nil {
						t.Error(err)
					}
				}()
				insts = append(insts, inst)
			}
			report("model", m, tc.wantModel)
			for i, inst := range insts {
				report(fmt.Sprintf("instance %d", i), inst, tc.wantInst)
			}
		})
	}
}
