package onnxruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// RuntimeVersion is the ONNX Runtime release this backend is built and
// tested against (the one github.com/yalue/onnxruntime_go v1.27.0 expects).
const RuntimeVersion = "1.24.1"

// LibraryEnv is the environment variable naming the ONNX Runtime shared
// library, consulted when no library path is given as an option.
const LibraryEnv = "ONNXRUNTIME_LIB"

// CachePath is where scripts/fetch-onnxruntime.sh puts the library,
// relative to the root of a triton-go checkout.
func CachePath() string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return filepath.Join(".cache", "onnxruntime", RuntimeVersion, "linux-"+arch, "libonnxruntime.so.1")
}

// errNoLibrary explains how to get the library; it is the whole remedy.
var errNoLibrary = fmt.Errorf("the ONNX Runtime %s shared library was not found: pass its path with "+
	"onnxruntime.WithLibraryPath, set %s to it, or run scripts/fetch-onnxruntime.sh (make deps does) "+
	"in a triton-go checkout, which fetches it from the onnxruntime-node@%s npm package into %s",
	RuntimeVersion, LibraryEnv, RuntimeVersion, CachePath())

// findLibrary returns the library path: explicit, then $ONNXRUNTIME_LIB, then
// the checkout cache found by walking up from the working directory.
func findLibrary(explicit string) (string, error) {
	for _, p := range []string{explicit, os.Getenv(LibraryEnv)} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ONNX Runtime library %s: %w", p, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", errNoLibrary
	}
	for {
		p := filepath.Join(dir, CachePath())
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoLibrary
		}
		dir = parent
	}
}

// env is the process's ONNX Runtime environment. onnxruntime_go keeps one
// environment per process, so every Backend value shares it: the first
// model to load initialises it, the last model to close releases it (and
// with it the library's thread pools and memory).
var env struct {
	mu sync.Mutex
	// mu protects the following.
	refs int
	lib  string // the library the environment was created from
}

// acquireEnv initialises the environment from lib if needed and takes a
// reference to it.
func acquireEnv(lib string) error {
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.refs > 0 {
		if lib != env.lib {
			return fmt.Errorf("ONNX Runtime is already running from %s in this process; cannot also load %s", env.lib, lib)
		}
		env.refs++
		return nil
	}
	ort.SetSharedLibraryPath(lib)
	if err := ort.InitializeEnvironment(ort.WithLogLevelFatal()); err != nil {
		return fmt.Errorf("initialising ONNX Runtime from %s: %w", lib, err)
	}
	if err := bindRunner(lib); err != nil {
		_ = ort.DestroyEnvironment()
		return err
	}
	if v := ort.GetVersion(); v != RuntimeVersion {
		_ = ort.DestroyEnvironment()
		return fmt.Errorf("ONNX Runtime at %s is version %s; this backend needs %s", lib, v, RuntimeVersion)
	}
	env.refs, env.lib = 1, lib
	return nil
}

// releaseEnv drops a reference; the last one destroys the environment.
func releaseEnv() error {
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.refs == 0 {
		return errors.New("ONNX Runtime environment released more often than acquired")
	}
	env.refs--
	if env.refs > 0 {
		return nil
	}
	env.lib = ""
	return ort.DestroyEnvironment()
}
