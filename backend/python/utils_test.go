package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUtilsModule runs the Python unit tests in stub/ with Debian's
// interpreter, the one the backend starts by default: those of the
// pure-Python part of triton_python_backend_utils (test_utils.py) and those
// of the stub's own code that runs without a server (test_stub.py), each
// module in a process of its own (importing the stub changes the utils
// module).
func TestUtilsModule(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not found: %v", python, err)
	}
	for _, module := range []string{"test_utils", "test_stub"} {
		cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "-v", module)
		cmd.Dir = filepath.Join(".", "stub")
		// No __pycache__ left in the source tree.
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s -m unittest -v %s in %s: %v\n%s", python, module, cmd.Dir, err, out)
		}
		t.Logf("%s", out)
	}
}
