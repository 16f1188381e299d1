package pytorch_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/internal/testrepo"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needShim skips the test (fails it under CI=true) when the checkout has
// no shim: scripts/build-torch-shim.sh builds it.
func needShim(t testing.TB) {
	t.Helper()
	if p := os.Getenv(pytorch.ShimEnv); p != "" {
		testenv.Need(t, p, pytorch.ShimEnv+" names a missing file")
		return
	}
	testenv.Need(t, filepath.Join(testenv.RepoRoot(t), pytorch.CachePath()), "run make deps (scripts/build-torch-shim.sh builds the shim)")
}

// modelFile returns the bytes of testdata/models/<file>.
func modelFile(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "models", file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// repo is a model repository under construction in a temporary folder.
type repo struct{ *testrepo.Repo }

func newRepo(t testing.TB) *repo {
	t.Helper()
	needShim(t)
	return &repo{testrepo.New(t)}
}

// model adds <name>/1/model.pt, a copy of the test model file, and
// <name>/config.pbtxt.
func (r *repo) model(name, file, config string) *repo {
	r.TB.Helper()
	r.Write(filepath.Join(name, "1", "model.pt"), modelFile(r.TB, file))
	r.Write(filepath.Join(name, "config.pbtxt"), []byte(config))
	return r
}

// spec writes the model as r.model does and returns its spec, the config
// parsed, normalized and validated as the server does.
func (r *repo) spec(name, file, config string) *backend.ModelSpec {
	r.TB.Helper()
	r.model(name, file, config)
	dir := filepath.Join(r.Dir, name)
	path := filepath.Join(dir, "config.pbtxt")
	cfg, err := repository.ParseConfig(path, []byte(config))
	if err != nil {
		r.TB.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		r.TB.Fatalf("config: %v", err)
	}
	return &backend.ModelSpec{Name: name, Version: 1, Config: cfg, FS: os.DirFS(dir), Dir: dir, Logger: zap.NewNop()}
}

func infer(t testing.TB, srv *triton.Server, model string, inputs ...tensor.Tensor) *triton.InferResponse {
	t.Helper()
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: inputs})
	if err != nil {
		t.Fatalf("Infer %s: %v", model, err)
	}
	return resp
}

// output returns the output named name of resp.
func output(t testing.TB, resp *triton.InferResponse, name string) tensor.Tensor {
	t.Helper()
	for _, o := range resp.Outputs {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no output %s in %d outputs", name, len(resp.Outputs))
	return tensor.Tensor{}
}

// floats returns the FP32 values of the output named name.
func floats(t testing.TB, resp *triton.InferResponse, name string) []float32 {
	t.Helper()
	v, err := tensor.View[float32](output(t, resp, name))
	if err != nil {
		t.Fatalf("output %s: %v", name, err)
	}
	return slices.Clone(v)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func seq(n int, f func(i int) float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
