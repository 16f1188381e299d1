package python

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// isPacked reports whether an EXECUTION_ENV_PATH names a packed
// environment (conda-pack's .tar.gz) rather than a folder.
func isPacked(path string) bool {
	return strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz")
}

// envs are the packed execution environments the backend's models have
// unpacked: each version of a file (its path, modification time and size)
// once, in a folder of its own under the temporary folder, shared by the
// models that name it and removed when the last of them closes. Triton
// also unpacks each file once, again when it changes.
type envs struct {
	mu sync.Mutex
	// mu protects m.
	m map[envKey]*unpacked
}

type envKey struct {
	path string // canonical
	mod  time.Time
	size int64
}

// unpacked is one environment, unpacked or being unpacked.
type unpacked struct {
	done   chan struct{}      // closed once dir and err are set
	cancel context.CancelFunc // stops the unpacking once no model waits for it
	// e.mu protects the following.
	dir  string
	err  error
	refs int // models holding it or waiting for it
}

// acquire returns the folder of the environment packed in the file at path,
// unpacking it unless a model already has, and the function that gives it
// back. The unpacking runs on a goroutine of its own, so that a load that
// gives up (ctx) does not fail the others waiting for the same file; it
// stops when the last of them gives up.
func (e *envs) acquire(ctx context.Context, path string, log *zap.Logger) (string, func(), error) {
	canon, err := filepath.EvalSymlinks(path)
	if err == nil {
		canon, err = filepath.Abs(canon)
	}
	if err != nil {
		return "", nil, fmt.Errorf("Failed to get the canonical path for %s.: %w", path, err)
	}
	fi, err := os.Stat(canon)
	if err != nil {
		return "", nil, err
	}
	key := envKey{path: canon, mod: fi.ModTime(), size: fi.Size()}
	e.mu.Lock()
	u, found := e.m[key]
	if !found {
		if e.m == nil {
			e.m = map[envKey]*unpacked{}
		}
		uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		u = &unpacked{done: make(chan struct{}), cancel: cancel}
		e.m[key] = u
		go e.extract(uctx, u, canon, log)
	}
	u.refs++
	e.mu.Unlock()
	release := func() { e.release(key, u) }
	select {
	case <-u.done:
	case <-ctx.Done():
		release()
		return "", nil, ctx.Err()
	}
	if u.err != nil {
		release()
		return "", nil, u.err
	}
	return u.dir, release, nil
}

// extract unpacks u's file; when every model gave up meanwhile, it removes
// what it unpacked.
func (e *envs) extract(ctx context.Context, u *unpacked, path string, log *zap.Logger) {
	log.Info("Extracting Python execution env " + path)
	began := time.Now()
	dir, err := unpackTemp(ctx, path)
	if err == nil {
		log.Info("Extracted Python execution env "+path, zap.String("dir", dir), zap.Duration("took", time.Since(began)))
	}
	e.mu.Lock()
	u.dir, u.err = dir, err
	orphan := u.refs == 0
	e.mu.Unlock()
	close(u.done)
	if orphan && dir != "" {
		_ = os.RemoveAll(dir)
	}
}

// release gives back a model's hold on u; after the last one it stops the
// unpacking, if it still runs, and removes the folder, if there is one
// (else extract does, when it ends).
func (e *envs) release(key envKey, u *unpacked) {
	e.mu.Lock()
	u.refs--
	last, dir := u.refs == 0, u.dir
	if last && e.m[key] == u {
		delete(e.m, key)
	}
	e.mu.Unlock()
	if last {
		u.cancel()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// unpackTemp unpacks the gzipped tar file at path into a new temporary
// folder, removed again when that fails.
func unpackTemp(ctx context.Context, path string) (string, error) {
	dir, err := os.MkdirTemp("", "python_env_")
	if err != nil {
		return "", fmt.Errorf("Failed to create temporary directory for Python environments.: %w", err)
	}
	if err := unpack(ctx, path, dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("unpacking the Python execution env %s: %w", path, err)
	}
	return dir, nil
}

// unpack writes the folders, files and links of the gzipped tar file at
// path into dir, through an os.Root: no entry (a name with "..", a link
// leading out) can write outside dir. Modes and modification times are
// kept (Python checks the times of its cached bytecode against them).
func unpack(ctx context.Context, path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("not a gzipped tar file: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q lies outside the environment", h.Name)
		}
		if unpackHook != nil {
			unpackHook()
		}
		if err := writeEntry(root, name, h, tr); err != nil {
			return fmt.Errorf("entry %q: %w", h.Name, err)
		}
	}
}

// unpackHook, when set (tests), runs before each entry is written.
var unpackHook func()

// writeEntry writes one entry of a tar file below root.
func writeEntry(root *os.Root, name string, h *tar.Header, r io.Reader) error {
	mode := h.FileInfo().Mode().Perm()
	if h.Typeflag == tar.TypeDir {
		if err := root.MkdirAll(name, 0o755); err != nil {
			return err
		}
		return root.Chmod(name, mode|0o700) // its entries still to come need to be written
	}
	if parent := filepath.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	if fi, err := root.Lstat(name); err == nil && !fi.IsDir() { // a later entry of the same name wins
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeReg:
		w, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, r); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		return root.Chtimes(name, h.ModTime, h.ModTime)
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, name)
	case tar.TypeLink:
		target := filepath.Clean(filepath.FromSlash(h.Linkname))
		if !filepath.IsLocal(target) {
			return fmt.Errorf("a hard link to %q, outside the environment", h.Linkname)
		}
		return root.Link(target, name)
	default:
		return fmt.Errorf("type %q is not a folder, file or link: %w", h.Typeflag, fs.ErrInvalid)
	}
}
