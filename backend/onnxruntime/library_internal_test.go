package onnxruntime

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// realLibrary returns the ONNX Runtime library the tests run with
// ($ONNXRUNTIME_LIB or the checkout's cache), skipping the test (failing it
// under CI=true) when there is none.
func realLibrary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(LibraryEnv); p != "" && isFile(p) {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if p := filepath.Join(dir, CachePath()); isFile(p) {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	msg := "no ONNX Runtime library: run make deps (scripts/fetch-onnxruntime.sh)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// link makes path a symbolic link to target, creating its folder.
func link(t *testing.T, target, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFindLibraryOrder puts the real library (linked) in every place the
// backend searches and removes them one by one, highest first: each time
// the next place in the documented order is the one found.
func TestFindLibraryOrder(t *testing.T) {
	real := realLibrary(t)
	root := t.TempDir()
	explicit := link(t, real, filepath.Join(root, "explicit", "libonnxruntime.so.1"))
	fromEnv := link(t, real, filepath.Join(root, "env", "libonnxruntime.so.1"))
	checkout := filepath.Join(root, "checkout")
	inCheckout := link(t, real, filepath.Join(checkout, CachePath()))
	work := filepath.Join(checkout, "cmd", "deep")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(root, "xdg")
	inUserCache := link(t, real, filepath.Join(xdg, "triton-go", "onnxruntime", RuntimeVersion, "linux-"+map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH], "libonnxruntime.so.1"))
	ldDir := filepath.Join(root, "ld")
	inLDPath := link(t, real, filepath.Join(ldDir, "libonnxruntime.so."+RuntimeVersion))

	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv("LD_LIBRARY_PATH", filepath.Join(root, "missing")+string(filepath.ListSeparator)+ldDir)
	t.Setenv(LibraryEnv, fromEnv)
	t.Chdir(work)

	if p, err := UserCachePath(); err != nil || p != inUserCache {
		t.Fatalf("UserCachePath() = %q, %v; want %q", p, err, inUserCache)
	}
	steps := []struct {
		want   string
		remove func()
	}{
		{explicit, func() { explicit = "" }},
		{fromEnv, func() { t.Setenv(LibraryEnv, "") }},
		{filepath.Join(checkout, CachePath()), func() { os.Remove(inCheckout) }},
		{inUserCache, func() { os.Remove(inUserCache) }},
		{inLDPath, func() { os.Remove(inLDPath) }},
	}
	for _, s := range steps {
		got, err := findLibrary(explicit)
		if err != nil || got != s.want {
			t.Fatalf("findLibrary = %q, %v; want %q", got, err, s.want)
		}
		s.remove()
	}
	for _, d := range systemLibDirs() {
		for _, name := range systemLibNames {
			if isFile(filepath.Join(d, name)) {
				t.Skipf("this machine has an ONNX Runtime in %s; the not-found case cannot be seen", d)
			}
		}
	}
	_, err := findLibrary("")
	if err == nil {
		t.Fatal("found a library after every place was emptied")
	}
	for _, p := range []string{
		"ONNX Runtime " + RuntimeVersion + " shared library was not found",
		"install it where this backend looks with `" + FetchCommand() + "`",
		"go run github.com/triton-go/triton/cmd/fetch-onnxruntime@",
		"onnxruntime-node@" + RuntimeVersion,
		filepath.Dir(inUserCache),
		CachePath() + " in the working directory and its parents",
		"$LD_LIBRARY_PATH",
		"scripts/fetch-onnxruntime.sh",
		LibraryEnv, "WithLibraryPath",
	} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the error does not mention %q:\n%v", p, err)
		}
	}
}

// TestFindLibraryExplicitMissing: a path given as an option or in
// $ONNXRUNTIME_LIB must exist; the search does not go on past it.
func TestFindLibraryExplicitMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(LibraryEnv, filepath.Join(dir, "env.so"))
	if _, err := findLibrary(filepath.Join(dir, "nope.so")); err == nil || !strings.Contains(err.Error(), "nope.so") {
		t.Errorf("explicit: %v", err)
	}
	if _, err := findLibrary(""); err == nil || !strings.Contains(err.Error(), "env.so") {
		t.Errorf("env: %v", err)
	}
}

// TestFetchCommand: the command runs cmd/fetch-onnxruntime of this
// module at a version go run can fetch: a release, or @latest for a build
// whose version is unknown or local (a test binary of a checkout).
func TestFetchCommand(t *testing.T) {
	cmd := FetchCommand()
	version, ok := strings.CutPrefix(cmd, "go run github.com/triton-go/triton/cmd/fetch-onnxruntime@")
	if !ok || version != "latest" && (!strings.HasPrefix(version, "v") || strings.Contains(version, "+")) {
		t.Errorf("FetchCommand() = %q", cmd)
	}
}
