package triton_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
)

// copyMirror is a Mirror over a local folder (the "remote" repository):
// Sync copies model folders into dir, all at once per model. It records
// what each Sync asked for, and fails a model named in fail.
type copyMirror struct {
	src, dir string

	mu     sync.Mutex
	calls  [][]string
	fail   map[string]bool
	copied map[string]string // model -> signature of the source copied
}

func newCopyMirror(t *testing.T, src string) *copyMirror {
	return &copyMirror{src: src, dir: t.TempDir(), fail: map[string]bool{}, copied: map[string]string{}}
}

func (m *copyMirror) Dir() string { return m.dir }

func (m *copyMirror) Models() []string {
	entries, _ := os.ReadDir(m.src)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func (m *copyMirror) Sync(_ context.Context, models ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, slices.Clone(models))
	if len(models) == 0 {
		models = m.Models()
	}
	var errs []error
	for _, name := range models {
		if m.fail[name] {
			errs = append(errs, fmt.Errorf("model %s: copy from remote://%s cut", name, name))
			continue
		}
		sig, err := signature(filepath.Join(m.src, name))
		if err != nil {
			continue // not in the repository
		}
		if m.copied[name] == sig {
			continue // unchanged: copied already
		}
		m.copied[name] = sig
		tmp := filepath.Join(m.dir, "."+name)
		if err := os.CopyFS(tmp, os.DirFS(filepath.Join(m.src, name))); err != nil {
			return err
		}
		_ = os.RemoveAll(filepath.Join(m.dir, name))
		if err := os.Rename(tmp, filepath.Join(m.dir, name)); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// signature lists the files under dir with their sizes and times.
func signature(dir string) (string, error) {
	var sig strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&sig, "%s %d %d\n", p, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return sig.String(), err
}

func (m *copyMirror) synced() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

func (m *copyMirror) setFail(model string, fail bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[model] = fail
}

// TestMirrorExplicit: in explicit mode a mirrored repository copies only
// what is loaded; the index lists the models not copied yet; a load whose
// copy fails is Unavailable and leaves the version that serves serving.
func TestMirrorExplicit(t *testing.T) {
	remote := newDiskRepo(t)
	for _, name := range []string{"a", "b"} {
		remote.write(name+"/config.pbtxt", oneInput("counting", 1, ""))
		remote.write(name+"/1/x", "")
	}
	m := newCopyMirror(t, remote.dir)
	c := &counting{}
	srv, err := triton.New(triton.WithMirror(m), triton.WithBackend("counting", c),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if got := m.synced(); len(got) != 1 || !slices.Equal(got[0], []string{"a"}) {
		t.Fatalf("syncs at start %q, want only the startup model a", got)
	}
	servesVersion(t, srv, "a", 1)
	if got := state(srv, "b"); !slices.Equal(got, []string{"0:"}) {
		t.Errorf("index row of b, not copied yet: %v", got)
	}
	ctx := context.Background()
	if err := srv.Load(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "b", 1)
	if got := m.synced(); !slices.Equal(got[len(got)-1], []string{"b"}) {
		t.Errorf("the load of b synced %q", got[len(got)-1])
	}

	remote.write("a/2/x", "")
	m.setFail("a", true)
	err = srv.Load(ctx, "a", nil)
	wantError(t, err, triton.Unavailable, "failed to load 'a'", "remote://a cut")
	servesVersion(t, srv, "a", 1)
	m.setFail("a", false)
	if err := srv.Load(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "a", 2)
}

// TestMirrorStart: a copy failing at start ends it with exit-on-error,
// and leaves the model out without it.
func TestMirrorStart(t *testing.T) {
	remote := newDiskRepo(t)
	for _, name := range []string{"a", "b"} {
		remote.write(name+"/config.pbtxt", oneInput("counting", 1, ""))
		remote.write(name+"/1/x", "")
	}
	m := newCopyMirror(t, remote.dir)
	m.setFail("b", true)
	_, err := triton.New(triton.WithMirror(m), triton.WithBackend("counting", &counting{}))
	wantError(t, err, triton.Unavailable, "remote://b cut")

	m = newCopyMirror(t, remote.dir)
	m.setFail("b", true)
	srv, err := triton.New(triton.WithMirror(m), triton.WithBackend("counting", &counting{}), triton.WithExitOnError(false))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	servesVersion(t, srv, "a", 1)
	if srv.ModelReady(context.Background(), "b", 0) {
		t.Error("b is ready though its copy failed")
	}
}

// TestMirrorPoll runs in a synctest bubble: each poll syncs the mirror
// first; a copy that fails keeps the loaded version serving, and the next
// poll that copies it reloads.
func TestMirrorPoll(t *testing.T) { synctest.Test(t, testMirrorPoll) }

func testMirrorPoll(t *testing.T) {
	const poll = 10 * time.Millisecond
	remote := newDiskRepo(t)
	remote.write("m/config.pbtxt", oneInput("counting", 1, ""))
	remote.write("m/1/x", "")
	m := newCopyMirror(t, remote.dir)
	srv, err := triton.New(triton.WithMirror(m), triton.WithBackend("counting", &counting{}),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlPoll, PollInterval: poll}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	servesVersion(t, srv, "m", 1)
	time.Sleep(poll / 2)

	m.setFail("m", true)
	remote.write("m/2/x", "")
	time.Sleep(3 * poll)
	servesVersion(t, srv, "m", 1)
	m.setFail("m", false)
	time.Sleep(2 * poll) // copied at the first poll, settled at the second
	servesVersion(t, srv, "m", 2)
	if n := len(m.synced()); n < 6 {
		t.Errorf("%d syncs, want one at start and one per poll", n)
	}
}
