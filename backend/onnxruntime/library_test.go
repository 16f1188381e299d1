package onnxruntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// TestLibraryFromUserCache is a `go install`ed binary's case: outside any
// checkout, with nothing set, the backend runs ONNX Runtime from the
// user's cache folder, where cmd/fetch-onnxruntime puts it; with the
// library gone from there, loading fails with the command that puts it
// back.
func TestLibraryFromUserCache(t *testing.T) {
	r := newRepo(t).model("add_sub", "add_sub.onnx", "")
	real := os.Getenv(onnxruntime.LibraryEnv)
	if real == "" {
		real = filepath.Join(testenv.RepoRoot(t), onnxruntime.CachePath())
	}
	t.Setenv(onnxruntime.LibraryEnv, "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Chdir(t.TempDir())
	lib, err := onnxruntime.UserCachePath()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, lib); err != nil {
		t.Fatal(err)
	}

	srv, err := triton.New(triton.WithModelRepository(r.dir))
	if err != nil {
		t.Fatalf("New with the library in the user cache: %v", err)
	}
	a := make([]float32, 16)
	for i := range a {
		a[i] = float32(i)
	}
	in0 := must(tensor.From("INPUT0", tensor.Shape{1, 16}, a))
	in1 := must(tensor.From("INPUT1", tensor.Shape{1, 16}, a))
	sum := must(tensor.View[float32](output(t, infer(t, srv, "add_sub", nil, in0, in1), "OUTPUT0")))
	if sum[15] != 30 {
		t.Errorf("OUTPUT0[15] = %v, want 30", sum[15])
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	_, err = triton.New(triton.WithModelRepository(r.dir))
	if err == nil {
		t.Skip("this machine has an ONNX Runtime in a system library folder")
	}
	for _, p := range []string{`model "add_sub"`, "`" + onnxruntime.FetchCommand() + "`", filepath.Dir(lib)} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the load error does not mention %q:\n%v", p, err)
		}
	}
}
