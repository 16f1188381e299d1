package python_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needPython skips the test (fails it under CI=true) without Debian's
// python3.
func needPython(t testing.TB) {
	t.Helper()
	testenv.Need(t, python.DefaultInterpreter, "run make deps (scripts/deps.sh installs python3-numpy)")
}

// repo is a model repository under construction in a temporary folder.
type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	needPython(t)
	return &repo{t: t, dir: t.TempDir()}
}

// model adds <name>/config.pbtxt and <name>/1/model.py.
func (r *repo) model(name, config, source string) *repo {
	r.t.Helper()
	r.write(filepath.Join(name, "config.pbtxt"), config)
	r.write(filepath.Join(name, "1", "model.py"), source)
	return r
}

// copy adds testdata/<name>.
func (r *repo) copy(name string) *repo {
	r.t.Helper()
	src := filepath.Join("testdata", name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r.write(filepath.Join(name, rel), string(data))
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return r
}

func (r *repo) write(rel, data string) {
	r.t.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
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

// load starts a server and returns the error of loading its models.
func (r *repo) load(opts ...triton.Option) error {
	r.t.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.dir)}, opts...)...)
	if err == nil {
		err = srv.Close()
	}
	return err
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func infer(t testing.TB, srv *triton.Server, model string, inputs ...tensor.Tensor) (*triton.InferResponse, error) {
	t.Helper()
	return srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: inputs})
}

func floats(t testing.TB, resp *triton.InferResponse, name string) []float32 {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Fatalf("no output %q in %v", name, resp.Outputs)
	}
	v, err := tensor.View[float32](out)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(v)
}
