package pytorch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/internal/findup"
)

// ShimEnv is the environment variable naming the shim library, consulted
// when no path is given with [WithShim].
const ShimEnv = "TRITONGO_PYTORCH_SHIM"

// CachePath is where scripts/build-torch-shim.sh (run by make deps) puts
// the shim, relative to the root of a triton-go checkout: Triton's
// <backend-directory>/<name>/libtriton_<name>.so layout under
// .cache/backends.
func CachePath() string {
	return filepath.Join(".cache", "backends", Name, torchrun.ShimName)
}

// UserCachePath is where the backend looks for the shim outside a
// checkout: os.UserCacheDir()/triton-go/backends/pytorch/libtriton_pytorch.so
// ($XDG_CACHE_HOME, or ~/.cache, on Linux).
func UserCachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "triton-go", "backends", Name, torchrun.ShimName), nil
}

// findShim returns the shim's path, searching in this order:
//
//  1. explicit (WithShim), then $TRITONGO_PYTORCH_SHIM, then
//     <backendDir>/pytorch/libtriton_pytorch.so (WithBackendDirectory,
//     cmd/tritonserver's --backend-directory): the first of them that is
//     set must exist; nothing else is searched;
//  2. the checkout's copy, .cache/backends/pytorch/, in the working
//     directory or the nearest parent that has it;
//  3. the user's cache folder ([UserCachePath]).
//
// The error names every place searched and how to build the shim.
func findShim(explicit, backendDir string) (string, error) {
	set := []struct{ path, how string }{
		{explicit, "pytorch.WithShim"},
		{os.Getenv(ShimEnv), "$" + ShimEnv},
	}
	if backendDir != "" {
		set = append(set, struct{ path, how string }{filepath.Join(backendDir, Name, torchrun.ShimName), "the backend directory " + backendDir})
	}
	for _, s := range set {
		if s.path == "" {
			continue
		}
		if !isFile(s.path) {
			return "", fmt.Errorf("the PyTorch backend's shim library %s (named by %s) is missing; %s", s.path, s.how, shimHowTo)
		}
		return s.path, nil
	}
	var searched []string
	if p, ok := findup.File(CachePath()); ok {
		return p, nil
	}
	searched = append(searched, CachePath()+" in the working directory and its parents")
	if user, err := UserCachePath(); err == nil {
		if isFile(user) {
			return user, nil
		}
		searched = append(searched, user)
	}
	return "", fmt.Errorf("the PyTorch backend's shim library %s was not found (searched %s); %s",
		torchrun.ShimName, strings.Join(searched, ", "), shimHowTo)
}

// shimHowTo says how to enable the backend.
const shimHowTo = "to serve TorchScript models, build the shim in a triton-go checkout with `make deps` " +
	"(or scripts/build-torch-shim.sh; both install libtorch-dev when it is missing), which puts it in " +
	".cache/backends/pytorch/, or copy it to the user's cache folder (triton-go/backends/pytorch/ under $XDG_CACHE_HOME or ~/.cache), " +
	"or name it with " + ShimEnv + ", pytorch.WithShim, or cmd/tritonserver's --backend-directory DIR (DIR/pytorch/" + torchrun.ShimName + ")"

// isFile reports whether p is a regular file (or a link to one).
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
