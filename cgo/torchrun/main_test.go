package torchrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if n := torchrun.Live(); n != 0 {
			fmt.Fprintf(os.Stderr, "torchrun: the shim still holds %d modules or outputs after the tests\n", n)
			code = 1
		}
		if n := torchrun.Workers(); n != 0 {
			fmt.Fprintf(os.Stderr, "torchrun: %d workers not closed after the tests\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

// shimPath is the shim testenv.TorchShim finds, for the examples, which
// have no testing.TB; "" makes Open fail with a message.
func shimPath() string {
	if p := os.Getenv(testenv.TorchShimEnv); p != "" {
		return p
	}
	return filepath.Join(root(), ".cache", "backends", "pytorch", torchrun.ShimName)
}

// testModel is the path of a generated test model, for the examples.
func testModel(name string) string {
	return filepath.Join(root(), "backend", "pytorch", "testdata", "models", name)
}

// root is the folder holding go.mod, above the working directory.
func root() string {
	dir, _ := os.Getwd()
	for dir != filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// open loads the shim (failing tb, with a hint, when it is missing).
func open(tb testing.TB) {
	tb.Helper()
	if err := torchrun.Open(testenv.TorchShim(tb)); err != nil {
		tb.Fatal(err)
	}
}

// modelPath is the path of a generated test model.
func modelPath(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(testenv.RepoRoot(tb), "backend", "pytorch", "testdata", "models", name)
}

// load opens the shim and loads a test model, closed at the end of tb.
func load(tb testing.TB, name string, opts torchrun.Options) *torchrun.Module {
	tb.Helper()
	open(tb)
	m, err := torchrun.Load(modelPath(tb, name), opts)
	if err != nil {
		tb.Fatalf("Load(%s): %v", name, err)
	}
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Error(err)
		}
	})
	return m
}

// val makes a tensor Value of values.
func val[T tensor.Element](tb testing.TB, shape []int64, values ...T) torchrun.Value {
	tb.Helper()
	t, err := tensor.Copy("x", shape, values)
	if err != nil {
		tb.Fatal(err)
	}
	return torchrun.Value{DataType: t.DataType, Shape: shape, Data: t.Data}
}

// view returns v's elements as []T.
func view[T tensor.Element](tb testing.TB, v torchrun.Value) []T {
	tb.Helper()
	s, err := tensor.View[T](tensor.Tensor{Name: "out", DataType: v.DataType, Shape: v.Shape, Data: v.Data})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// forward runs m and fails tb on an error.
func forward(tb testing.TB, m *torchrun.Module, in ...torchrun.Value) []torchrun.Value {
	tb.Helper()
	out, err := m.Forward(context.Background(), in)
	if err != nil {
		tb.Fatalf("Forward: %v", err)
	}
	return out
}
