package python_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/repository"
)

const memoryConfig = `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`

// memoryModel keeps %d MiB of ones (written, so resident) from initialize.
const memoryModel = `
import numpy as np

class TritonPythonModel:
    def initialize(self, args):
        self.kept = np.ones(%d << 20, dtype=np.uint8)

    def execute(self, requests):
        return []
`

// loadOne loads model name of r with a new python backend and takes its
// one instance; both are closed when the test ends (the instance first).
func loadOne(t *testing.T, r *repo, name string) backend.Instance {
	t.Helper()
	dir := filepath.Join(r.Dir, name)
	path := filepath.Join(dir, "config.pbtxt")
	cfg, err := repository.ParseConfig(path, []byte(`name: "`+name+`" `+memoryConfig))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		t.Fatal(err)
	}
	spec := &backend.ModelSpec{Name: name, Version: 1, Config: cfg, Dir: dir, Logger: zap.NewNop()}
	m, err := python.New().Load(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	g := cfg.GetInstanceGroup()[0]
	inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{Name: g.GetName() + "_0", Group: g, Kind: g.GetKind(), DeviceID: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	return inst
}

// TestMemoryBytes: an instance reports its stub's private and shared
// memory, so a model that keeps 80 MiB from initialize reports at least
// 64 MiB more than the same model keeping none (the stubs are otherwise
// alike: the margin is room for what differs between two interpreters'
// heaps); a closed instance, whose stub has exited, reports an error.
func TestMemoryBytes(t *testing.T) {
	r := newRepo(t)
	r.model("small", memoryConfig, fmt.Sprintf(memoryModel, 0))
	r.model("big", memoryConfig, fmt.Sprintf(memoryModel, 80))
	small, big := loadOne(t, r, "small"), loadOne(t, r, "big")
	report := func(inst backend.Instance) int64 {
		t.Helper()
		n, ok, err := backend.MemoryBytes(inst)
		if !ok || err != nil {
			t.Fatalf("MemoryBytes = %d, %v, %v; want a report", n, ok, err)
		}
		return n
	}
	s, b := report(small), report(big)
	t.Logf("small %d MiB, big %d MiB", s>>20, b>>20)
	if s <= 0 || b-s < 64<<20 {
		t.Errorf("small model %d bytes, big model %d bytes; want the big one at least 64 MiB more", s, b)
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := backend.MemoryBytes(big); !ok || err == nil {
		t.Errorf("closed instance: MemoryBytes = %d, %v, %v; want an error", n, ok, err)
	}
}
