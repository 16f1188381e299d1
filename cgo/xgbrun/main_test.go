//go:build cgo && linux

package xgbrun

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 && opened.Load() {
		if n := liveBoosters(); n != 0 {
			fmt.Fprintf(os.Stderr, "xgbrun: %d boosters not closed after the tests\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

// libraryNames are the names the tests load XGBoost by: Debian's
// libxgboost0 soname, then libxgboost-dev's link (as
// backend/fil/xgboost.LibraryNames).
var libraryNames = []string{"libxgboost.so.0", "libxgboost.so"}

// needLibrary loads XGBoost for a test. Without it the test is skipped on
// a developer's machine and fails under CI=true, where scripts/deps.sh
// (make deps) has installed libxgboost-dev, as internal/testenv does for
// the ONNX Runtime library.
func needLibrary(tb testing.TB) {
	tb.Helper()
	var errs []error
	for _, name := range libraryNames {
		err := Open(name)
		if err == nil {
			return
		}
		errs = append(errs, err)
	}
	msg := fmt.Sprintf("XGBoost is not installed (%v); run make deps (scripts/deps.sh installs libxgboost-dev)", errs)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}
