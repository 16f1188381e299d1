package cloudrepo

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.uber.org/zap"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"
)

// Concurrency limits of one Sync: models handled at once, and files of one
// model downloaded at once.
const (
	modelsAtOnce = 4
	filesAtOnce  = 4
)

// entry is one object of a model as listed: a file, or a folder (Path ends
// in "/") from a folder marker or an empty folder.
type entry struct {
	// Path is relative to the model folder, slash-separated.
	Path    string    `json:"path"`
	Size    int64     `json:"size,omitempty"`
	MD5     []byte    `json:"md5,omitempty"`
	ModTime time.Time `json:"mtime,omitzero"`
}

func (e entry) isDir() bool { return strings.HasSuffix(e.Path, "/") }

// sameObject reports whether a and b describe the same content: folders
// by path alone (stores report no stable size or time for them), files by
// path, size, modification time and MD5.
func sameObject(a, b entry) bool {
	if a.Path != b.Path {
		return false
	}
	if a.isDir() {
		return true
	}
	return a.Size == b.Size && a.ModTime.Equal(b.ModTime) && bytes.Equal(a.MD5, b.MD5)
}

// sameEntries compares two path-sorted entry lists.
func sameEntries(a, b []entry) bool {
	return slices.EqualFunc(a, b, sameObject)
}

func countFiles(entries []entry) int64 {
	var n int64
	for _, e := range entries {
		if !e.isDir() {
			n++
		}
	}
	return n
}

// listing is one LIST of the whole repository folder, grouped by model.
type listing struct {
	// gen orders listings: a higher one started later.
	gen int64
	// models holds every model found, with its entries sorted by path
	// (empty for a model that is only a folder marker).
	models map[string][]entry
	// bad holds, per model, the keys refused (escaping the folder, a file
	// that is also a folder); such a model is not synced.
	bad map[string]error
	// errs are refused keys that name no model ("../x").
	errs []error
}

// list lists every object below the repository folder once; the sizes,
// times and MD5s come with the listing, no request per object.
func (r *Repository) list(ctx context.Context) (*listing, error) {
	ls := &listing{gen: r.listGen.Add(1), models: map[string][]entry{}, bad: map[string]error{}}
	prefix := r.loc.keyPrefix()
	it := r.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, describe(err, "list", r.loc.bucket)
		}
		model, e, err := splitKey(strings.TrimPrefix(obj.Key, prefix))
		if err != nil {
			err = fmt.Errorf("object key %q refused: %w", obj.Key, err)
			if model == "" {
				ls.errs = append(ls.errs, err)
				continue
			}
			ls.bad[model] = errors.Join(ls.bad[model], err)
		}
		if model == "" {
			continue // the folder's own marker, or a file beside the models
		}
		if strings.HasPrefix(model, ".") {
			continue // hidden: not a model (and never our .snapshots)
		}
		entries, seen := ls.models[model]
		if !seen {
			entries = []entry{}
		}
		if err == nil && e.Path != "" {
			if !e.isDir() {
				e.Size, e.ModTime, e.MD5 = obj.Size, obj.ModTime, obj.MD5
			}
			entries = append(entries, e)
		}
		ls.models[model] = entries
	}
	for model, entries := range ls.models {
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.Path, b.Path) })
		if err := fileFolderClash(entries); err != nil {
			ls.bad[model] = errors.Join(ls.bad[model], err)
		}
	}
	return ls, nil
}

// splitKey splits a key relative to the repository folder into the model
// name and the entry within the model. model is "" for the folder's own
// marker and for files beside the models (Triton ignores both), and for a
// refused key whose first segment is itself refused. A key with an empty,
// "." or ".." segment is refused: it would escape the folder or name a
// path ambiguously.
func splitKey(rel string) (model string, e entry, err error) {
	isDir := strings.HasSuffix(rel, "/")
	trimmed := strings.TrimSuffix(rel, "/")
	if trimmed == "" {
		return "", entry{}, nil
	}
	segs := strings.Split(trimmed, "/")
	for i, s := range segs {
		var why string
		switch {
		case s == "":
			why = "an empty path segment (a leading or doubled slash) would make the path absolute or ambiguous"
		case s == "." || s == "..":
			why = fmt.Sprintf("a %q path segment would escape the model folder", s)
		case strings.ContainsRune(s, 0):
			why = "a NUL byte cannot be in a file name"
		}
		if why != "" {
			if i > 0 {
				model = segs[0]
			}
			return model, entry{}, errors.New(why)
		}
	}
	if len(segs) == 1 && !isDir {
		return "", entry{}, nil
	}
	p := strings.Join(segs[1:], "/")
	if isDir && p != "" {
		p += "/"
	}
	return segs[0], entry{Path: p}, nil
}

// fileFolderClash reports a path that is both a file and a folder (keys
// "m/1" and "m/1/x"), which a local folder cannot hold.
func fileFolderClash(entries []entry) error {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(strings.TrimSuffix(e.Path, "/")); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, e := range entries {
		if !e.isDir() && dirs[e.Path] {
			return fmt.Errorf("%q is both a file and a folder", e.Path)
		}
	}
	return nil
}

// Sync brings the named models (all of the repository's models when none
// are named) up to date in Dir, with one LIST of the repository folder.
//
// For each model whose objects differ from its current copy, a new
// snapshot is built beside the current one: unchanged files are hard-linked
// (or copied) from the current snapshot, the others downloaded and checked
// (byte count against the listed size, MD5 where the store lists one),
// each file's modification time set to the object's. The model's link in
// Dir is then swapped to the new snapshot with one rename(2), so a reader
// of Dir sees the old version or the new one, never a mix or a partial
// download. A model whose objects did not change is left alone (nothing
// downloaded). A model that left the bucket loses its link.
//
// A model whose copy cannot be completed keeps its previous copy; the
// error names the repository URL, the model, the object's URL and the
// cause. Errors of several models are joined. A named model that is not in
// the repository is not an error: it has no entry in Dir afterwards (its
// link is removed if it had one). Cancelling ctx (or Close) stops the
// downloads and leaves the previous copies.
func (r *Repository) Sync(ctx context.Context, models ...string) error {
	ctx, done, err := r.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	for _, name := range models {
		if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
			return r.errorf("%q is not a model name", name)
		}
	}
	ls, err := r.list(ctx)
	if err != nil {
		return r.errorf("%w", err)
	}
	r.stats.syncs.Add(1)
	r.mu.Lock()
	if ls.gen > r.modelsGen {
		r.modelsGen = ls.gen
		r.models = slices.Sorted(maps.Keys(ls.models))
	}
	explicit := len(models) > 0
	targets := slices.Compact(slices.Sorted(slices.Values(models)))
	if !explicit {
		// Every listed model, and every model with a copy (to unlink the
		// ones that left, and delete their last snapshot a Sync later).
		set := map[string]bool{}
		for name := range ls.models {
			set[name] = true
		}
		for name, st := range r.state {
			if st.copies.Load() {
				set[name] = true
			}
		}
		targets = slices.Sorted(maps.Keys(set))
	}
	r.mu.Unlock()

	errs := make([]error, len(targets))
	sem := make(chan struct{}, modelsAtOnce)
	var wg sync.WaitGroup
	for i, name := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := r.syncModel(ctx, ls, name); err != nil {
				errs[i] = r.errorf("model %q: %w", name, err)
			}
		})
	}
	wg.Wait()
	if !explicit {
		for _, err := range ls.errs {
			errs = append(errs, r.errorf("%w", err))
		}
	}
	return errors.Join(errs...)
}

// syncModel brings one model up to date from ls.
func (r *Repository) syncModel(ctx context.Context, ls *listing, name string) error {
	st := r.modelState(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	if ls.gen < st.gen {
		return nil // a Sync that listed later has been here
	}
	entries, present := ls.models[name]
	if err := ls.bad[name]; err != nil {
		r.stats.failures.Add(1)
		return err
	}
	if !present {
		// Not an error, named or not: the server finds no such model
		// afterwards and says so in its own terms.
		st.gen = ls.gen
		return r.unlinkLocked(name, st)
	}
	if st.cur != 0 && st.manifest != nil && sameEntries(st.manifest, entries) {
		st.gen = ls.gen
		r.stats.reused.Add(countFiles(entries))
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	n := st.next
	st.next++
	res, err := r.build(ctx, name, n, st, entries)
	if err == nil {
		err = r.writeManifest(name, n, entries)
	}
	if err == nil {
		err = r.swapLink(name, n)
	}
	if err != nil {
		r.removeSnapshot(name, n)
		r.stats.failures.Add(1)
		return err
	}
	old := st.prev
	st.setLocked(n, st.cur)
	st.manifest, st.gen = entries, ls.gen
	if old != 0 {
		r.removeSnapshot(name, old)
	}
	r.stats.snapshots.Add(1)
	r.log.Info("published model snapshot", zap.String("model", name), zap.Int("snapshot", n),
		zap.Int64("downloaded_files", res.files), zap.Int64("downloaded_bytes", res.bytes),
		zap.Int64("reused_files", res.reused))
	return nil
}

// buildResult counts one snapshot's work, for the log.
type buildResult struct{ files, bytes, reused int64 }

// build fills snapshot n of a model with entries, reusing the files of the
// current snapshot that match.
func (r *Repository) build(ctx context.Context, name string, n int, st *modelState, entries []entry) (buildResult, error) {
	dir := r.snapshotPath(name, n)
	if err := os.RemoveAll(dir); err != nil { // a leftover of a crashed run
		return buildResult{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return buildResult{}, err
	}
	for _, e := range entries {
		folder := path.Dir(e.Path)
		if e.isDir() {
			folder = e.Path
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(folder)), 0o755); err != nil {
			return buildResult{}, err
		}
	}
	current := map[string]entry{}
	for _, e := range st.manifest {
		current[e.Path] = e
	}
	curDir := r.snapshotPath(name, st.cur)

	var res buildResult
	var files, size atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(filesAtOnce)
	for _, e := range entries {
		if e.isDir() {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(e.Path))
		if old, ok := current[e.Path]; ok && st.cur != 0 && sameObject(old, e) &&
			reuseFile(filepath.Join(curDir, filepath.FromSlash(e.Path)), dst, e) {
			res.reused++
			continue
		}
		g.Go(func() error {
			written, err := r.download(gctx, name, e, dst)
			if err != nil {
				return err
			}
			files.Add(1)
			size.Add(written)
			return nil
		})
	}
	err := g.Wait()
	res.files, res.bytes = files.Load(), size.Load()
	r.stats.downloads.Add(res.files)
	r.stats.downloadedBytes.Add(res.bytes)
	r.stats.reused.Add(res.reused)
	return res, err
}

// reuseFile puts the current copy src of an unchanged object at dst: a
// hard link, else a copy. It returns false (download instead) when src
// does not look like the object any more or neither works.
func reuseFile(src, dst string, e entry) bool {
	info, err := os.Lstat(src)
	if err != nil || !info.Mode().IsRegular() || info.Size() != e.Size {
		return false
	}
	if os.Link(src, dst) == nil {
		return true
	}
	if err := copyFile(src, dst); err != nil {
		os.Remove(dst)
		return false
	}
	if !e.ModTime.IsZero() {
		if err := os.Chtimes(dst, e.ModTime, e.ModTime); err != nil {
			os.Remove(dst)
			return false
		}
	}
	return true
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// copyBuffers holds the buffers downloads copy through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// download copies one object of a model to dst (a new file in a snapshot
// no reader sees yet) and checks it: the byte count against the listed
// size, the MD5 against the listed one when there is one. It returns the
// bytes written.
func (r *Repository) download(ctx context.Context, name string, e entry, dst string) (int64, error) {
	key := r.loc.keyPrefix() + name + "/" + e.Path
	url := r.loc.objectURL(name + "/" + e.Path)
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", url, err)
	}
	rd, err := r.bucket.NewReader(ctx, key, nil)
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("download %s: %w", url, describe(err, "read", r.loc.bucket))
	}
	h := md5.New()
	buf := copyBuffers.Get().(*[]byte)
	// Not io.Copy: it would call blob.Reader.WriteTo, which allocates a new
	// 1 MiB buffer for every object, however small.
	n, err := io.CopyBuffer(io.MultiWriter(f, h), struct{ io.Reader }{rd}, *buf)
	copyBuffers.Put(buf)
	rd.Close()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("download %s: after %d of %d bytes: %w", url, n, e.Size, err)
	case n != e.Size:
		return 0, fmt.Errorf("download %s: got %d bytes, the listing says %d (the object changed since, or the transfer was cut)", url, n, e.Size)
	}
	if sum := h.Sum(nil); len(e.MD5) > 0 && !bytes.Equal(sum, e.MD5) && !r.md5NotComparable(ctx, key) {
		return 0, fmt.Errorf("download %s: MD5 %x differs from the store's %x (the object changed since, or the bytes were damaged)", url, sum, e.MD5)
	}
	if !e.ModTime.IsZero() {
		if err := os.Chtimes(dst, e.ModTime, e.ModTime); err != nil {
			return 0, fmt.Errorf("download %s: %w", url, err)
		}
	}
	return n, nil
}

// md5NotComparable reports whether an S3 object's ETag is known not to be
// the MD5 of its bytes although it looks like one: objects encrypted with
// SSE-KMS or SSE-C. It costs one HEAD, made only after a mismatch.
func (r *Repository) md5NotComparable(ctx context.Context, key string) bool {
	if r.loc.scheme != schemeS3 {
		return false
	}
	attrs, err := r.bucket.Attributes(ctx, key)
	if err != nil {
		return false
	}
	var head s3.HeadObjectOutput
	if !attrs.As(&head) {
		return false
	}
	switch head.ServerSideEncryption {
	case s3types.ServerSideEncryptionAwsKms, s3types.ServerSideEncryptionAwsKmsDsse:
		return true
	}
	return head.SSECustomerAlgorithm != nil
}
