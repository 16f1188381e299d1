//go:build linux

package sysshm_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/sysshm"
)

const dir = "/dev/shm"

// needShm skips the test where POSIX shared memory has no /dev/shm.
func needShm(t *testing.T) {
	t.Helper()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("skipping: %s is not a directory (%v); POSIX shared memory is unavailable here", dir, err)
	}
}

// newObject creates a shared-memory object of size bytes filled with
// pattern, removed when the test ends, and returns its key and file.
func newObject(t *testing.T, size int) (string, *os.File) {
	t.Helper()
	needShm(t)
	f, err := os.CreateTemp(dir, "sysshm-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		os.Remove(f.Name())
	})
	if _, err := f.Write(pattern(0, size)); err != nil {
		t.Fatal(err)
	}
	return "/" + filepath.Base(f.Name()), f
}

// pattern returns the bytes a fresh object holds at [off, off+n).
func pattern(off, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((off+i)*7 + (off+i)/251)
	}
	return b
}

// newRegistry returns a registry closed when the test ends.
func newRegistry(t *testing.T) *sysshm.Registry {
	t.Helper()
	r := sysshm.NewRegistry()
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// mustUse calls Use and releases at the end of the test.
func mustUse(t *testing.T, r *sysshm.Registry, name string, off, n uint64) []byte {
	t.Helper()
	data, release, err := r.Use(name, off, n)
	if err != nil {
		t.Fatalf("Use(%q, %d, %d): %v", name, off, n, err)
	}
	t.Cleanup(release)
	return data
}

// mapped reports whether the object at path is mapped into this process.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("skipping mapping check: %v", err)
	}
	for line := range strings.Lines(string(maps)) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), " (deleted)")
		if strings.HasSuffix(line, " "+path) {
			return true
		}
	}
	return false
}

func path(key string) string { return dir + key }

// wantErr checks err against a sentinel (nil: no sentinel may match) and a
// message fragment.
func wantErr(t *testing.T, err, sentinel error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v containing %q", sentinel, msg)
	}
	for _, s := range []error{sysshm.ErrNotFound, sysshm.ErrAlreadyExists, sysshm.ErrInvalid} {
		if got, want := errors.Is(err, s), s == sentinel; got != want {
			t.Errorf("errors.Is(%q, %v) = %v, want %v", err, s, got, want)
		}
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("err = %q, want it to contain %q", err, msg)
	}
}

func readAt(t *testing.T, f *os.File, off, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
	return b
}

func equal(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
