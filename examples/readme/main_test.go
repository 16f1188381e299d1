package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestREADMEShowsThisProgram: the README's first Go block is this
// program's source, byte for byte, so what the README shows is what
// TestReadmeRuns runs.
func TestREADMEShowsThisProgram(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(src) {
		t.Errorf("README.md's first Go block differs from examples/readme/main.go; copy the file into the README.\nREADME:\n%s", block)
	}
}

// TestReadmeRuns runs the program as the README says, `go run
// ./examples/readme` from the checkout's root, against
// examples/model_repository with the real ONNX Runtime.
func TestReadmeRuns(t *testing.T) {
	testenv.NeedLibrary(t)
	cmd := exec.Command("go", "run", "./examples/readme")
	cmd.Dir = testenv.RepoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./examples/readme: %v\n%s", err, stderr.String())
	}
	if want := "add_sub 1 [10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25]\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
}
