package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/internal/ortdist"
)

// TestAlreadyInstalled: with the library in the user's cache folder, the
// command prints its path and does nothing else (no npm on PATH: it would
// fail if it tried to fetch).
func TestAlreadyInstalled(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	lib, err := ortdist.UserCachePath()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("library"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), "", &stdout, &stderr); err != nil {
		t.Fatalf("run: %v", err)
	}
	if stdout.String() != lib+"\n" {
		t.Errorf("stdout %q, want the library's path %q", stdout.String(), lib)
	}
	if !strings.Contains(stderr.String(), "already at "+lib) {
		t.Errorf("stderr %q does not say the library is there", stderr.String())
	}
}

// TestMissingNPM: a library to fetch without npm fails, naming npm, and
// prints no path.
func TestMissingNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), filepath.Join(t.TempDir(), ortdist.LibName), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "npm") || stdout.Len() != 0 {
		t.Errorf("run without npm: %v, stdout %q", err, stdout.String())
	}
}
