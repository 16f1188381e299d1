package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/cgo/torchrun"
)

// RepoRoot returns the folder holding go.mod, found from the working
// directory up.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Need skips tb (fails it under CI=true) when path is missing; how says
// what makes it.
func Need(tb testing.TB, path, how string) {
	tb.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	msg := path + " is missing; " + how
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// NeedLibrary checks for the ONNX Runtime library the onnxruntime backend
// will find: $ONNXRUNTIME_LIB, or the one scripts/fetch-onnxruntime.sh
// puts in the checkout.
func NeedLibrary(tb testing.TB) {
	tb.Helper()
	if p := os.Getenv(onnxruntime.LibraryEnv); p != "" {
		Need(tb, p, onnxruntime.LibraryEnv+" names a missing file")
		return
	}
	Need(tb, filepath.Join(RepoRoot(tb), onnxruntime.CachePath()), "run make deps (scripts/fetch-onnxruntime.sh)")
}

// Model returns the path of .cache/models/<rel>, a real model fetched by
// scripts/fetch-models.sh, after checking for it and for the ONNX Runtime
// library.
func Model(tb testing.TB, rel string) string {
	tb.Helper()
	NeedLibrary(tb)
	p := filepath.Join(RepoRoot(tb), ".cache", "models", filepath.FromSlash(rel))
	Need(tb, p, "run make deps (scripts/fetch-models.sh fetches the real models into .cache/models)")
	return p
}

// TorchShimEnv names the environment variable that points the tests at a
// PyTorch shim library other than the checkout's.
const TorchShimEnv = "TRITONGO_PYTORCH_SHIM"

// TorchShim returns the PyTorch shim library, cgo/torchrun's
// libtriton_pytorch.so: $TRITONGO_PYTORCH_SHIM, or the one
// scripts/build-torch-shim.sh builds in the checkout's
// .cache/backends/pytorch. Unlike the fetched files it fails tb when the
// file is missing, on every machine: the shim is built from this
// repository's sources, and make deps builds it.
func TorchShim(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv(TorchShimEnv)
	if p == "" {
		p = filepath.Join(RepoRoot(tb), ".cache", "backends", "pytorch", torchrun.ShimName)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("the PyTorch shim is missing (%v); run make deps (scripts/build-torch-shim.sh builds it), or set %s",
			err, TorchShimEnv)
	}
	return p
}
