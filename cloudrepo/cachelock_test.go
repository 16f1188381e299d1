package cloudrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/cloudrepo"
)

// TestStaleCacheSwept: a cache folder that a dead process left under the
// mount folder (its lock file there, no one holding it) is removed by the
// next Open; a live repository's folder and a folder without a lock file
// are left alone; a cache folder given in Options that another open
// repository holds is refused.
func TestStaleCacheSwept(t *testing.T) {
	f := newFixture(t)
	base := t.TempDir()
	t.Setenv("TRITON_AWS_MOUNT_DIRECTORY", base)
	url := f.srv.URL(bucket, "repo")

	live := open(t, url, cloudrepo.Options{})
	mustSync(t, live)
	dead := filepath.Join(base, "triton-repo-dead")
	f.writeAt(t, filepath.Join(dead, ".lock"), nil)
	f.writeAt(t, filepath.Join(dead, "simple", "1", "model.onnx"), []byte("left behind"))
	unlocked := filepath.Join(base, "triton-repo-unlocked")
	f.writeAt(t, filepath.Join(unlocked, "x"), nil)

	next := open(t, url, cloudrepo.Options{})
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead process's cache folder is still there: %v", err)
	}
	for _, dir := range []string{live.Dir(), unlocked, next.Dir()} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(live.Dir(), "simple", "1", "model.onnx")); err != nil {
		t.Errorf("the live repository lost its copy: %v", err)
	}

	shared := t.TempDir()
	open(t, url, cloudrepo.Options{CacheDir: shared})
	_, err := cloudrepo.Open(context.Background(), url, cloudrepo.Options{CacheDir: shared})
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), shared) {
		t.Errorf("a second Open of a cache folder in use: %v", err)
	}
}

// writeAt writes data at an absolute path, making its folders.
func (f *fixture) writeAt(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
