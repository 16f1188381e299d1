package onnxruntime_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// repoRoot is the folder holding go.mod, found from the working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// need skips (locally) or fails (under CI) when a file the test needs is
// missing: under CI the README's test command fetches everything first, so
// a missing file is a broken set-up, never a reason to pass.
func need(t testing.TB, path, how string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	msg := path + " is missing; " + how
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// needLibrary checks for the ONNX Runtime library the backend will find.
func needLibrary(t testing.TB) {
	t.Helper()
	if p := os.Getenv("ONNXRUNTIME_LIB"); p != "" {
		need(t, p, "ONNXRUNTIME_LIB names a missing file")
		return
	}
	need(t, filepath.Join(repoRoot(t), ".cache/onnxruntime/1.24.1/linux-x64/libonnxruntime.so.1"), "run make deps (scripts/fetch-onnxruntime.sh)")
}
