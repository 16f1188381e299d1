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
type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	needShim(t)
	return &repo{t: t, dir: t.TempDir()}
}

// model adds <name>/1/model.pt, a copy of the test model file, and
// <name>/config.pbtxt.
func (r *repo) model(name, file, config string) *repo {
	r.t.Helper()
	r.write(filepath.Join(name, "1", "model.pt"), modelFile(r.t, file))
	r.write(filepath.Join(name, "config.pbtxt"), []byte(config))
	return r
}

func (r *repo) write(rel string, data []byte) {
	r.t.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// serve starts a server on the repository, closed when the test ends.
func (r *repo) serve(opts ...triton.Option) *triton.Server {
	r.t.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.dir)}, opts...)...)
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			r.t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// load starts a server with the repository's models and returns the error
// of loading them (the server is closed at once when it starts).
func (r *repo) load(opts ...triton.Option) error {
	r.t.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.dir)}, opts...)...)
	if err == nil {
		err = srv.Close()
	}
	return err
}

// spec writes the model as r.model does and returns its spec, the config
// parsed, normalized and validated as the server does.
func (r *repo) spec(name, file, config string) *backend.ModelSpec {
	r.t.Helper()
	r.model(name, file, config)
	dir := filepath.Join(r.dir, name)
	path := filepath.Join(dir, "config.pbtxt")
	cfg, err := repository.ParseConfig(path, []byte(config))
	if err != nil {
		r.t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		r.t.Fatalf("config: %v", err)
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
