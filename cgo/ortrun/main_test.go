//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
	"go.uber.org/goleak"

	"github.com/triton-go/triton/cgo/ortrun"
)

// runtimeVersion is the ONNX Runtime release onnxruntime_go v1.27.0 expects
// and scripts/fetch-onnxruntime.sh fetches.
const runtimeVersion = "1.24.1"

// noORT, when not empty, says why the ONNX Runtime library is unavailable.
var noORT string

// libraryPath returns the ONNX Runtime library: $ONNXRUNTIME_LIB, else the
// copy scripts/fetch-onnxruntime.sh puts in the checkout's .cache, found by
// walking up from the working directory to the folder holding go.mod.
func libraryPath() (string, error) {
	if p := os.Getenv("ONNXRUNTIME_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ONNXRUNTIME_LIB: %w", err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	p := filepath.Join(dir, ".cache", "onnxruntime", runtimeVersion, "linux-"+arch, "libonnxruntime.so.1")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the ONNX Runtime %s library is not at %s (run scripts/fetch-onnxruntime.sh, or set ONNXRUNTIME_LIB): %w",
			runtimeVersion, p, err)
	}
	return p, nil
}

// setup initialises onnxruntime_go and binds this package to its library.
func setup() (string, error) {
	lib, err := libraryPath()
	if err != nil {
		return "", err
	}
	ort.SetSharedLibraryPath(lib)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return "", fmt.Errorf("initialising ONNX Runtime from %s: %w", lib, err)
	}
	if err := ortrun.Bind(lib); err != nil {
		_ = ort.DestroyEnvironment()
		return "", err
	}
	return lib, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	_, err := setup()
	if err != nil {
		noORT = err.Error()
		if os.Getenv("CI") != "true" {
			// Examples cannot skip themselves; keep them from running.
			fmt.Fprintf(os.Stderr, "ortrun: skipping the tests and examples that need ONNX Runtime: %s\n", noORT)
			skip := "^Example"
			if s := flag.Lookup("test.skip").Value.String(); s != "" {
				skip = s + "|" + skip
			}
			_ = flag.Set("test.skip", skip)
		}
	}
	code := m.Run()
	if err == nil {
		if derr := ort.DestroyEnvironment(); derr != nil && code == 0 {
			fmt.Fprintln(os.Stderr, "ort.DestroyEnvironment:", derr)
			code = 1
		}
	}
	if code == 0 {
		if lerr := goleak.Find(); lerr != nil {
			fmt.Fprintln(os.Stderr, lerr)
			code = 1
		}
	}
	os.Exit(code)
}

// needORT skips tb when the ONNX Runtime library is missing, or fails it
// under CI (CI=true), where the library must have been fetched.
func needORT(tb testing.TB) {
	tb.Helper()
	if noORT == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("ONNX Runtime is required under CI: %s", noORT)
	}
	tb.Skipf("ONNX Runtime unavailable: %s", noORT)
}
