package python

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"
)

// tarOf returns a tar stream of entries (name, type, link target, data).
func tarOf(t testing.TB, entries ...tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		data := []byte("data of " + h.Name)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(data))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzUnpack unpacks arbitrary tar streams: whatever the entries (names
// with "..", absolute names, links leading out and files written through
// them, hard links, odd types), unpack returns (an error or not) without
// writing anything outside its folder.
func FuzzUnpack(f *testing.F) {
	f.Add(tarOf(f, tar.Header{Name: "./bin/", Typeflag: tar.TypeDir, Mode: 0o755}, tar.Header{Name: "./bin/activate", Typeflag: tar.TypeReg},
		tar.Header{Name: "bin/python3", Typeflag: tar.TypeSymlink, Linkname: "/usr/bin/python3"}))
	f.Add(tarOf(f, tar.Header{Name: "../escape", Typeflag: tar.TypeReg}))
	f.Add(tarOf(f, tar.Header{Name: "/abs", Typeflag: tar.TypeReg}))
	f.Add(tarOf(f, tar.Header{Name: "up", Typeflag: tar.TypeSymlink, Linkname: ".."}, tar.Header{Name: "up/outside/x", Typeflag: tar.TypeReg}))
	f.Add(tarOf(f, tar.Header{Name: "a", Typeflag: tar.TypeReg}, tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"},
		tar.Header{Name: "c", Typeflag: tar.TypeLink, Linkname: "../outside/x"}, tar.Header{Name: "a", Typeflag: tar.TypeSymlink, Linkname: "b"}))
	f.Add(tarOf(f, tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}))
	f.Fuzz(func(t *testing.T, stream []byte) {
		base := t.TempDir()
		dir, outside := filepath.Join(base, "env"), filepath.Join(base, "outside")
		for _, d := range []string{dir, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		_ = unpack(t.Context(), gzipFile(t, base, stream), dir)
		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 3 { // env, outside, env.tar.gz
			t.Errorf("unpack wrote beside its folder: %v", entries)
		}
		if in, _ := os.ReadDir(outside); len(in) != 0 {
			t.Errorf("unpack wrote outside its folder: %v", in)
		}
		_ = os.RemoveAll(dir) // its modes may forbid the test's cleanup
	})
}

// packedFile writes a gzipped tar of entries to a file in dir.
func packedFile(t *testing.T, dir string, entries ...tar.Header) string {
	t.Helper()
	return gzipFile(t, dir, tarOf(t, entries...))
}

// gzipFile writes stream, gzipped, to dir/env.tar.gz.
func gzipFile(t *testing.T, dir string, stream []byte) string {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "env.tar.gz")
	if err := os.WriteFile(p, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUnpackSharedLoadGivesUp: a load that gives up while the environment
// it shares with another is being unpacked does not fail the other, which
// gets the folder; when every load gives up, the unpacking stops and
// leaves nothing.
func TestUnpackSharedLoadGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		packed := packedFile(t, t.TempDir(), tar.Header{Name: "bin/activate", Typeflag: tar.TypeReg}, tar.Header{Name: "lib/x", Typeflag: tar.TypeReg})
		proceed := make(chan struct{})
		unpackHook = func() { <-proceed }
		defer func() { unpackHook = nil }()
		var e envs
		log := zap.NewNop()

		ctxA, cancelA := context.WithCancel(t.Context())
		errA := make(chan error, 1)
		go func() {
			_, _, err := e.acquire(ctxA, packed, log)
			errA <- err
		}()
		synctest.Wait() // A waits; the unpacking holds at its first entry
		type result struct {
			dir     string
			release func()
			err     error
		}
		resB := make(chan result, 1)
		go func() {
			dir, release, err := e.acquire(t.Context(), packed, log)
			resB <- result{dir, release, err}
		}()
		synctest.Wait() // B waits too
		cancelA()
		if err := <-errA; !errors.Is(err, context.Canceled) {
			t.Fatalf("A: %v, want context.Canceled", err)
		}
		close(proceed)
		b := <-resB
		if b.err != nil {
			t.Fatalf("B failed with A: %v", b.err)
		}
		if _, err := os.Stat(filepath.Join(b.dir, "lib", "x")); err != nil {
			t.Fatalf("B's folder: %v", err)
		}
		b.release()
		if _, err := os.Stat(b.dir); !os.IsNotExist(err) {
			t.Errorf("the folder after the last release: %v", err)
		}

		proceed = make(chan struct{})
		ctxC, cancelC := context.WithCancel(t.Context())
		errC := make(chan error, 1)
		go func() {
			_, _, err := e.acquire(ctxC, packed, log)
			errC <- err
		}()
		synctest.Wait()
		cancelC()
		if err := <-errC; !errors.Is(err, context.Canceled) {
			t.Fatalf("C: %v, want context.Canceled", err)
		}
		close(proceed) // the unpacking goes on to its next entry, sees it was stopped, and cleans up
		synctest.Wait()
		if left, _ := filepath.Glob(filepath.Join(tmp, "python_env_*")); len(left) != 0 {
			t.Errorf("left after every load gave up: %v", left)
		}
	})
}
