package pytorch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// internalSpec writes <tmp>/<name>/1/model.pt (a copy of a test model) and
// returns its spec, the config parsed, normalized and validated.
func internalSpec(t *testing.T, name, file, config string) *backend.ModelSpec {
	t.Helper()
	testenv.Need(t, filepath.Join(testenv.RepoRoot(t), CachePath()), "run make deps (scripts/build-torch-shim.sh builds the shim)")
	data, err := os.ReadFile(filepath.Join("testdata", "models", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1", "model.pt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.pbtxt")
	cfg, err := repository.ParseConfig(path, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		t.Fatal(err)
	}
	return &backend.ModelSpec{Name: name, Version: 1, Config: cfg, FS: os.DirFS(dir), Dir: dir, Logger: zap.NewNop()}
}

// TestWeightSharing: with ENABLE_WEIGHT_SHARING the instances of a model
// run one module, loaded once; without it each instance loads its own.
func TestWeightSharing(t *testing.T) {
	for _, share := range []bool{true, false} {
		config := `name: "m" backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 3 } ]`
		if share {
			config += ` parameters { key: "ENABLE_WEIGHT_SHARING" value: { string_value: "true" } }`
		}
		spec := internalSpec(t, "m", "raises.pt", config)
		bm, err := New().Load(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		m := bm.(*model)
		var insts []*instance
		for i := range 3 {
			inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{Name: "m_" + string(rune('0'+i)), Kind: modelconfig.ModelInstanceGroup_KIND_CPU, DeviceID: -1, Index: i})
			if err != nil {
				t.Fatal(err)
			}
			insts = append(insts, inst.(*instance))
		}
		m.mu.Lock()
		loads := m.loads
		m.mu.Unlock()
		same := insts[0].mod == insts[1].mod && insts[1].mod == insts[2].mod
		if share && (loads != 1 || !same) {
			t.Errorf("weight sharing: %d loads, one module %v; want 1 load shared by the 3 instances", loads, same)
		}
		if !share && (loads != 3 || insts[0].mod == insts[1].mod || insts[1].mod == insts[2].mod) {
			t.Errorf("no weight sharing: %d loads; want one module per instance (3)", loads)
		}
		var errs []error
		for _, inst := range insts {
			errs = append(errs, inst.Close())
		}
		if err := errors.Join(append(errs, m.Close())...); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}
