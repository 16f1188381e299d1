package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUtilsModule runs the unit tests of the pure-Python part of
// triton_python_backend_utils (stub/test_utils.py) with Debian's interpreter,
// the one the backend starts by default.
func TestUtilsModule(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not found: %v", python, err)
	}
	cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "-v", "test_utils")
	cmd.Dir = filepath.Join(".", "stub")
	// No __pycache__ left in the source tree.
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -m unittest -v test_utils in %s: %v\n%s", python, cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}
