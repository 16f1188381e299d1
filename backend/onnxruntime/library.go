package onnxruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/internal/findup"
	"github.com/triton-go/triton/internal/ortdist"
)

// RuntimeVersion is the ONNX Runtime release this backend is built and
// tested against (the one github.com/yalue/onnxruntime_go v1.27.0 expects).
const RuntimeVersion = ortdist.Version

// LibraryEnv is the environment variable naming the ONNX Runtime shared
// library, consulted when no library path is given as an option.
const LibraryEnv = "ONNXRUNTIME_LIB"

// CachePath is where scripts/fetch-onnxruntime.sh puts the library,
// relative to the root of a triton-go checkout.
func CachePath() string { return ortdist.CheckoutPath() }

// UserCachePath is where `go run github.com/triton-go/triton/cmd/fetch-onnxruntime`
// puts the library, and where the backend looks for it outside a checkout:
// os.UserCacheDir()/triton-go/onnxruntime/<RuntimeVersion>/linux-<arch>/libonnxruntime.so.1
// ($XDG_CACHE_HOME, or ~/.cache, on Linux).
func UserCachePath() (string, error) { return ortdist.UserCachePath() }

// modulePath is this module's path, for the fix command's version.
const modulePath = "github.com/triton-go/triton"

// FetchCommand is the command that installs the library where the backend
// looks for it (the user's cache folder, [UserCachePath]): go run of
// cmd/fetch-onnxruntime at the version of triton-go this program was built
// with, or @latest when that version is unknown (a build from a checkout).
func FetchCommand() string {
	version := "latest"
	if bi, ok := debug.ReadBuildInfo(); ok {
		mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
		for _, m := range mods {
			if m.Path == modulePath && m.Replace == nil && strings.HasPrefix(m.Version, "v") && !strings.Contains(m.Version, "+") {
				version = m.Version
				break
			}
		}
	}
	return "go run " + modulePath + "/cmd/fetch-onnxruntime@" + version
}

// systemLibDirs are the folders searched last, after $LD_LIBRARY_PATH's:
// where a system package or a manual install puts shared libraries.
func systemLibDirs() []string {
	multiarch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	dirs := []string{"/usr/local/lib"}
	if multiarch != "" {
		dirs = append(dirs, "/usr/local/lib/"+multiarch, "/usr/lib/"+multiarch, "/lib/"+multiarch)
	}
	return append(dirs, "/usr/lib64", "/usr/lib", "/lib64", "/lib")
}

// systemLibNames are the file names looked for in the system folders: the
// release's own file first, then the soname.
var systemLibNames = []string{"libonnxruntime.so." + RuntimeVersion, "libonnxruntime.so.1"}

// findLibrary returns the library's path, searching in this order:
//
//  1. explicit (WithLibraryPath), then $ONNXRUNTIME_LIB: when set, the
//     file must exist; nothing else is searched;
//  2. the checkout's cache, .cache/onnxruntime/<version>/linux-<arch>/,
//     in the working directory or the nearest parent that has it;
//  3. the user's cache folder ([UserCachePath]);
//  4. each folder of $LD_LIBRARY_PATH, then [systemLibDirs], for
//     libonnxruntime.so.<version> or libonnxruntime.so.1.
//
// The error names every place searched and the command that fixes it.
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
	var searched []string
	if p, ok := findup.File(CachePath()); ok {
		return p, nil
	}
	searched = append(searched, CachePath()+" in the working directory and its parents")
	user, err := UserCachePath()
	if err == nil {
		if isFile(user) {
			return user, nil
		}
		searched = append(searched, user)
	}
	dirs := append(filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")), systemLibDirs()...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, name := range systemLibNames {
			if p := filepath.Join(d, name); isFile(p) {
				return p, nil
			}
		}
	}
	searched = append(searched, "$LD_LIBRARY_PATH and the system library folders")
	return "", fmt.Errorf("the ONNX Runtime %s shared library was not found (searched %s); "+
		"install it where this backend looks with `%s` "+
		"(it fetches the onnxruntime-node@%s npm package with npm, checks its sha256 and puts %s in %s; "+
		"in a triton-go checkout, scripts/fetch-onnxruntime.sh, which make deps runs, puts it in %s instead), "+
		"or set %s to the library's path, or pass it with onnxruntime.WithLibraryPath",
		RuntimeVersion, strings.Join(searched, ", "), FetchCommand(), RuntimeVersion, ortdist.LibName,
		userCacheOr(user), CachePath(), LibraryEnv)
}

func userCacheOr(p string) string {
	if p == "" {
		return "the user's cache folder"
	}
	return filepath.Dir(p)
}

// isFile reports whether p is a regular file (or a link to one).
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
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
		return fmt.Errorf("ONNX Runtime at %s is version %s; this backend needs %s (%s installs it)", lib, v, RuntimeVersion, FetchCommand())
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
