package python

import (
	"context"
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
// the model's EXECUTION_ENV_PATH parameter (an environment folder, or a
// packed one, .tar.gz, which is unpacked: its bin/python3, with its bin
// first on PATH and its lib first on LD_LIBRARY_PATH); the backend's
// WithInterpreter; Debian's /usr/bin/python3; the first python3 on PATH.
// release, when not nil, gives back the unpacked environment.
func (b *Backend) interpreter(ctx context.Context, spec *backend.ModelSpec) (python string, vars []string, release func(), err error) {
	env, ok := spec.Parameter("EXECUTION_ENV_PATH")
	if packed := filepath.Join(spec.BackendDir, "pb_exec_env_model.py.tar.gz"); !ok && spec.BackendDir != "" {
		if _, err := os.Stat(packed); err == nil { // a Python-based backend's own environment, as Triton finds it
			env, ok = packed, true
		}
	}
	if ok && env != "" {
		env = strings.ReplaceAll(env, "$$TRITON_MODEL_DIRECTORY", spec.Dir)
		if isPacked(env) {
			log := spec.Logger
			if log == nil {
				log = zap.NewNop()
			}
			dir, rel, aerr := b.envs.acquire(ctx, env, log)
			if aerr != nil {
				return "", nil, nil, fmt.Errorf("model '%s': EXECUTION_ENV_PATH: %w", spec.Name, aerr)
			}
			defer func() { // err: the named result, set by the returns below
				if err != nil {
					rel()
				}
			}()
			env, release = dir, rel
		}
		if _, err := os.Stat(filepath.Join(env, "bin", "activate")); err != nil {
			return "", nil, nil, tritonErrorf(codeInvalidArg, "Path %s/bin/activate does not exist. The Python environment should contain an 'activate' script.", env)
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
			"VIRTUAL_ENV_PROMPT=(" + env + ")",
		}, release, nil
	}
	if b.python != "" {
		return b.python, nil, nil, nil
	}
	if _, err := os.Stat(DefaultInterpreter); err == nil {
		return DefaultInterpreter, nil, nil, nil
	}
	python, err = exec.LookPath("python3")
	if err != nil {
		return "", nil, nil, fmt.Errorf("model '%s': no Python interpreter: %s does not exist and there is no python3 on PATH; install Debian's python3 and python3-numpy: %w",
			spec.Name, DefaultInterpreter, errors.ErrUnsupported)
	}
	return python, nil, nil, nil
}
