package python

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
)

// interpreter chooses the Python a model's stubs run with, in this order:
// the model's EXECUTION_ENV_PATH parameter (an unpacked environment
// folder: its bin/python3, with its bin first on PATH and its lib first on
// LD_LIBRARY_PATH); the backend's WithInterpreter; Debian's
// /usr/bin/python3; the first python3 on PATH.
func (b *Backend) interpreter(spec *backend.ModelSpec) (string, []string, error) {
	env, ok := spec.Parameter("EXECUTION_ENV_PATH")
	if packed := filepath.Join(spec.BackendDir, "pb_exec_env_model.py.tar.gz"); !ok && spec.BackendDir != "" {
		if _, err := os.Stat(packed); err == nil { // a Python-based backend's own environment, as Triton finds it
			env, ok = packed, true
		}
	}
	if ok && env != "" {
		env = strings.ReplaceAll(env, "$$TRITON_MODEL_DIRECTORY", spec.Dir)
		if strings.HasSuffix(env, ".tar.gz") || strings.HasSuffix(env, ".tgz") {
			return "", nil, fmt.Errorf("model '%s': EXECUTION_ENV_PATH %s is a packed environment; this server runs unpacked ones: unpack it (tar -xzf) and set EXECUTION_ENV_PATH to the folder: %w",
				spec.Name, env, errors.ErrUnsupported)
		}
		if _, err := os.Stat(filepath.Join(env, "bin", "activate")); err != nil {
			return "", nil, fmt.Errorf("Path %s/bin/activate does not exist. The Python environment should contain an 'activate' script.: %w", env, backend.ErrInvalidInput)
		}
		python := filepath.Join(env, "bin", "python3")
		if _, err := os.Stat(python); err != nil {
			python = filepath.Join(env, "bin", "python")
		}
		if spec.Logger != nil {
			spec.Logger.Info("Using Python execution env "+env, zap.String("interpreter", python))
		}
		return python, []string{
			"PATH=" + filepath.Join(env, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
			"LD_LIBRARY_PATH=" + strings.TrimSuffix(filepath.Join(env, "lib")+string(os.PathListSeparator)+os.Getenv("LD_LIBRARY_PATH"), string(os.PathListSeparator)),
			"VIRTUAL_ENV=" + env,
		}, nil
	}
	if b.python != "" {
		return b.python, nil, nil
	}
	if _, err := os.Stat(DefaultInterpreter); err == nil {
		return DefaultInterpreter, nil, nil
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return "", nil, fmt.Errorf("model '%s': no Python interpreter: %s does not exist and there is no python3 on PATH; install Debian's python3 and python3-numpy: %w",
			spec.Name, DefaultInterpreter, errors.ErrUnsupported)
	}
	return python, nil, nil
}
