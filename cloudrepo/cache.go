package cloudrepo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// The cache folder's layout:
//
//	<dir>/<model>                     link to .snapshots/<model>/<n> (relative)
//	<dir>/.snapshots/<model>/<n>/     a snapshot: the model folder's files
//	<dir>/.snapshots/<model>/<n>.json its manifest: the listing it was built from
//	<dir>/.tmp-*                      links being swapped in
//
// Everything of ours but the links is hidden, so a repository scan of
// <dir> sees the models only.
const (
	snapshotsDir = ".snapshots"
	tmpPrefix    = ".tmp-"
)

// modelState is what the mirror knows of one model's copies.
type modelState struct {
	// copies is cur != 0 || prev != 0, readable without mu (which a
	// sync holds while it downloads).
	copies atomic.Bool

	mu sync.Mutex
	// mu protects the following; it is held for a whole model sync.
	gen      int64   // generation of the listing last applied
	cur      int     // snapshot the link points to; 0 = no link
	manifest []entry // cur's entries; nil = unknown (rebuild on next sync)
	prev     int     // snapshot kept until the next swap; 0 = none
	next     int     // number for the next snapshot
}

// setLocked records the current and previous snapshots. Called with
// st.mu held.
func (st *modelState) setLocked(cur, prev int) {
	st.cur, st.prev = cur, prev
	st.copies.Store(cur != 0 || prev != 0)
}

// modelState returns the state of a model, creating it.
func (r *Repository) modelState(name string) *modelState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state[name]
	if st == nil {
		st = &modelState{next: 1}
		r.state[name] = st
	}
	return st
}

func (r *Repository) snapshotPath(name string, n int) string {
	return filepath.Join(r.dir, snapshotsDir, name, strconv.Itoa(n))
}

func (r *Repository) manifestPath(name string, n int) string {
	return r.snapshotPath(name, n) + ".json"
}

// linkTarget is what a model's link holds for snapshot n.
func linkTarget(name string, n int) string {
	return filepath.Join(snapshotsDir, name, strconv.Itoa(n))
}

// manifest is the file saved beside a snapshot.
type manifest struct {
	Source  string  `json:"source"`
	Entries []entry `json:"entries"`
}

func (r *Repository) writeManifest(name string, n int, entries []entry) error {
	data, err := json.Marshal(manifest{Source: r.loc.objectURL(name), Entries: entries})
	if err != nil {
		return err
	}
	return os.WriteFile(r.manifestPath(name, n), data, 0o644)
}

// loadManifest reads snapshot n's manifest and checks the snapshot still
// holds its files: same size, and a modification time equal to the
// object's or at most two seconds older (file systems that keep coarser
// times truncate; a write since sets a later time). nil when either
// check fails, which makes the next sync build a fresh snapshot.
func (r *Repository) loadManifest(name string, n int) []entry {
	data, err := os.ReadFile(r.manifestPath(name, n))
	if err != nil {
		return nil
	}
	var m manifest
	if json.Unmarshal(data, &m) != nil || m.Entries == nil {
		return nil
	}
	dir := r.snapshotPath(name, n)
	for _, e := range m.Entries {
		if e.isDir() {
			continue
		}
		info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.Path)))
		if err != nil || !info.Mode().IsRegular() || info.Size() != e.Size {
			return nil
		}
		if lag := e.ModTime.Sub(info.ModTime()); !e.ModTime.IsZero() && (lag < 0 || lag >= 2*time.Second) {
			return nil
		}
	}
	return m.Entries
}

// swapLink points the model's link at snapshot n: a new link under a
// temporary name, renamed over the old one, which rename(2) does
// atomically. A model path that is not a link (a folder of the user's) is
// an error from rename.
func (r *Repository) swapLink(name string, n int) error {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	tmp := filepath.Join(r.dir, tmpPrefix+"link-"+hex.EncodeToString(b[:]))
	if err := os.Symlink(linkTarget(name, n), tmp); err != nil {
		return fmt.Errorf("publish the snapshot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("publish the snapshot: %w", err)
	}
	return nil
}

// removeSnapshot deletes snapshot n of a model and its manifest. A
// failure is logged, not returned: the new copy is in place either way,
// and the next Open removes what is left.
func (r *Repository) removeSnapshot(name string, n int) {
	err := errors.Join(os.RemoveAll(r.snapshotPath(name, n)), os.Remove(r.manifestPath(name, n)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("cannot remove an old snapshot", zap.String("model", name), zap.Int("snapshot", n), zap.Error(err))
	}
}

// unlinkLocked removes the link of a model that left the bucket; its
// snapshot is kept until the model's next sync, like a replaced one. A
// model path that is not our link is left alone. Called with st.mu held.
func (r *Repository) unlinkLocked(name string, st *modelState) error {
	if st.cur == 0 {
		if st.prev != 0 {
			r.removeSnapshot(name, st.prev)
			st.setLocked(0, 0)
		}
		return nil
	}
	link := filepath.Join(r.dir, name)
	if info, err := os.Lstat(link); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if err := os.Remove(link); err != nil {
			return fmt.Errorf("remove the link of a model that left the repository: %w", err)
		}
	}
	old := st.prev
	st.setLocked(0, st.cur)
	st.manifest = nil
	if old != 0 {
		r.removeSnapshot(name, old)
	}
	r.stats.removed.Add(1)
	r.log.Info("model left the repository; its link is removed", zap.String("model", name))
	return nil
}

// recover reads what a previous run left in the cache folder: each model's
// current snapshot (the one its link points to) is kept, with its manifest
// when the files still match it; every other snapshot (the previous ones,
// the partial ones of a crash), temporary link and dangling link of ours is
// removed.
func (r *Repository) recover() error {
	top, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("cache folder: %w", err)
	}
	for _, e := range top {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				return fmt.Errorf("cache folder: %w", err)
			}
		}
	}
	models, err := os.ReadDir(filepath.Join(r.dir, snapshotsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache folder: %w", err)
	}
	for _, m := range models {
		name := m.Name()
		if !m.IsDir() {
			if err := os.Remove(filepath.Join(r.dir, snapshotsDir, name)); err != nil {
				return fmt.Errorf("cache folder: %w", err)
			}
			continue
		}
		cur := r.linkedSnapshot(name)
		items, err := os.ReadDir(filepath.Join(r.dir, snapshotsDir, name))
		if err != nil {
			return fmt.Errorf("cache folder: %w", err)
		}
		st := &modelState{next: 1}
		for _, it := range items {
			n, err := strconv.Atoi(strings.TrimSuffix(it.Name(), ".json"))
			if err == nil && n > 0 {
				st.next = max(st.next, n+1)
			}
			if err == nil && n == cur {
				continue
			}
			if err := os.RemoveAll(filepath.Join(r.dir, snapshotsDir, name, it.Name())); err != nil {
				return fmt.Errorf("cache folder: %w", err)
			}
		}
		if cur == 0 {
			if err := os.Remove(filepath.Join(r.dir, snapshotsDir, name)); err != nil {
				return fmt.Errorf("cache folder: %w", err)
			}
			continue
		}
		st.setLocked(cur, 0)
		st.manifest = r.loadManifest(name, cur)
		r.state[name] = st
		r.log.Debug("reusing a snapshot from a previous run", zap.String("model", name),
			zap.Int("snapshot", cur), zap.Bool("manifest_matches", st.manifest != nil))
	}
	// Links of ours whose snapshot is gone.
	for _, e := range top {
		if e.Type()&fs.ModeSymlink == 0 || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, kept := r.state[e.Name()]; kept {
			continue
		}
		link := filepath.Join(r.dir, e.Name())
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, snapshotsDir+string(filepath.Separator)) {
			if err := os.Remove(link); err != nil {
				return fmt.Errorf("cache folder: %w", err)
			}
		}
	}
	return nil
}

// linkedSnapshot returns the snapshot the model's link points to, 0 when
// there is no such link of ours or its snapshot is missing.
func (r *Repository) linkedSnapshot(name string) int {
	target, err := os.Readlink(filepath.Join(r.dir, name))
	if err != nil {
		return 0
	}
	rest, ok := strings.CutPrefix(target, filepath.Join(snapshotsDir, name)+string(filepath.Separator))
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || linkTarget(name, n) != target {
		return 0
	}
	if info, err := os.Stat(r.snapshotPath(name, n)); err != nil || !info.IsDir() {
		return 0
	}
	return n
}
