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
	"github.com/triton-go/triton/internal/testrepo"
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
type repo struct{ *testrepo.Repo }

func newRepo(t testing.TB) *repo {
	t.Helper()
	needPython(t)
	return &repo{testrepo.New(t)}
}

// model adds <name>/config.pbtxt and <name>/1/model.py.
func (r *repo) model(name, config, source string) *repo {
	r.TB.Helper()
	r.write(filepath.Join(name, "config.pbtxt"), config)
	r.write(filepath.Join(name, "1", "model.py"), source)
	return r
}

// copy adds testdata/<name>.
func (r *repo) copy(name string) *repo {
	r.TB.Helper()
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
		r.TB.Fatal(err)
	}
	return r
}

func (r *repo) write(rel, data string) { r.Write(rel, []byte(data)) }

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

// inferIn sends FP32 IN [len(x)] = x to model and returns its FP32 OUT.
func inferIn(ctx context.Context, t testing.TB, srv *triton.Server, model string, x ...float32) ([]float32, error) {
	t.Helper()
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{int64(len(x))}, x))}})
	if err != nil {
		return nil, err
	}
	return floats(t, resp, "OUT"), nil
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
