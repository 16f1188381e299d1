package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/internal/testenv"
)

// pytorchRepo writes a repository holding addsub, the PyTorch backend's
// traced add/sub model, and returns its folder.
func pytorchRepo(t *testing.T) string {
	t.Helper()
	testenv.Need(t, filepath.Join(testenv.RepoRoot(t), pytorch.CachePath()), "run make deps (scripts/build-torch-shim.sh builds the shim)")
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "backend", "pytorch", "testdata", "models", "addsub.pt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "addsub", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "addsub", "1", "model.pt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	config := `platform: "pytorch_libtorch"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 2 ] } ]
`
	if err := os.WriteFile(filepath.Join(dir, "addsub", "config.pbtxt"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const addsubRequest = `{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"FP32","data":[1,2]},{"name":"INPUT1","shape":[1,2],"datatype":"FP32","data":[0.5,4]}]}`

// TestServePyTorch: the binary serves a TorchScript model over HTTP, the
// shim found in the checkout, and its metadata names the platform.
func TestServePyTorch(t *testing.T) {
	s := startBinary(t, "--model-repository="+pytorchRepo(t))
	code, _, body := s.do("POST", "/v2/models/addsub/infer", "application/json", []byte(addsubRequest), nil)
	if code != 200 || !strings.Contains(string(body), `"name":"OUTPUT__0","datatype":"FP32","shape":[1,2],"data":[1.5,6.0]`) ||
		!strings.Contains(string(body), `"name":"OUTPUT__1","datatype":"FP32","shape":[1,2],"data":[0.5,-2.0]`) {
		t.Fatalf("infer: %d %s", code, body)
	}
	if code, _, body := s.do("GET", "/v2/models/addsub", "", nil, nil); code != 200 || !strings.Contains(string(body), `"platform":"pytorch_libtorch"`) {
		t.Errorf("metadata: %d %s", code, body)
	}
}

// TestBackendDirectoryFlag: --backend-directory DIR makes the PyTorch
// backend load DIR/pytorch/libtriton_pytorch.so; a DIR/pytorch without it
// fails the model's load with a message naming the file and how to build
// it; a DIR without a pytorch folder (one of Python-based backends) leaves
// the shim where it was found before.
func TestBackendDirectoryFlag(t *testing.T) {
	repo := pytorchRepo(t)
	backends := t.TempDir()
	if err := os.MkdirAll(filepath.Join(backends, "pytorch"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(testenv.RepoRoot(t), pytorch.CachePath())
	if err := os.Symlink(shim, filepath.Join(backends, "pytorch", "libtriton_pytorch.so")); err != nil {
		t.Fatal(err)
	}
	s := startBinary(t, "--model-repository="+repo, "--backend-directory="+backends)
	if code, _, body := s.do("POST", "/v2/models/addsub/infer", "application/json", []byte(addsubRequest), nil); code != 200 || !strings.Contains(string(body), `"data":[1.5,6.0]`) {
		t.Fatalf("infer with --backend-directory: %d %s", code, body)
	}
	s.terminate(60 * time.Second)

	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, "pytorch"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = startBinary(t, "--model-repository="+repo, "--backend-directory="+empty, "--exit-on-error=false")
	code, _, body := s.do("POST", "/v2/repository/index", "application/json", []byte(`{}`), nil)
	want := filepath.Join(empty, "pytorch", "libtriton_pytorch.so") + " (named by the backend directory " + empty + ") is missing"
	if code != 200 || !strings.Contains(string(body), want) || !strings.Contains(string(body), "make deps") {
		t.Errorf("index: %d %s; want the reason %q and how to build the shim", code, body, want)
	}
	s.terminate(60 * time.Second)

	s = startBinary(t, "--model-repository="+repo, "--backend-directory="+t.TempDir())
	if code, _, body := s.do("POST", "/v2/models/addsub/infer", "application/json", []byte(addsubRequest), nil); code != 200 {
		t.Fatalf("infer with a backend directory without pytorch/: %d %s", code, body)
	}
}

// TestServeDigitsEnsemble: the example repository's digits ensemble runs
// its Go, PyTorch and ONNX Runtime steps in the binary; a blank image's
// probabilities come back over HTTP, ten of them adding up to 1.
func TestServeDigitsEnsemble(t *testing.T) {
	testenv.Need(t, filepath.Join(testenv.RepoRoot(t), pytorch.CachePath()), "run make deps (scripts/build-torch-shim.sh builds the shim)")
	s := startBinary(t, "--model-repository="+exampleRepo, "--model-control-mode=explicit",
		"--load-model=digits_pixels", "--load-model=digits_cnn", "--load-model=digits_softmax", "--load-model=digits")
	req := `{"inputs":[{"name":"IMAGE","shape":[1,28,28],"datatype":"UINT8","data":[` + strings.TrimSuffix(strings.Repeat("0,", 28*28), ",") + `]}]}`
	code, _, body := s.do("POST", "/v2/models/digits/infer", "application/json", []byte(req), nil)
	if code != 200 {
		t.Fatalf("infer: %d %s", code, body)
	}
	var resp struct {
		Outputs []struct {
			Name  string
			Shape []int
			Data  []float64
		}
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Outputs) != 1 {
		t.Fatalf("answer %s (%v)", body, err)
	}
	out := resp.Outputs[0]
	sum := 0.0
	for _, p := range out.Data {
		sum += p
	}
	if out.Name != "PROBS" || !slices.Equal(out.Shape, []int{1, 10}) || len(out.Data) != 10 || math.Abs(sum-1) > 1e-5 {
		t.Errorf("output %+v (sum %v), want PROBS [1 10] adding up to 1", out, sum)
	}
}
