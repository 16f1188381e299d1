package repoagent

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/triton-go/triton/repository"
)

// ErrMismatch is wrapped by the error of [Checksum] for a file whose
// digest is not the one the configuration gives.
var ErrMismatch = errors.New("checksum mismatch")

// Checksum is Triton's checksum agent. Each parameter's key is
// "<algorithm>:<file>", the file relative to the model folder
// ("MD5:1/model.onnx"), and its value the file's digest in hex; MD5 is the
// algorithm Triton's agent has (the name in any case). A file whose digest
// differs fails the load with Triton's text ("Mismatched MD5 hash for file
// 1/model.onnx, expect: ..., got: ..."), as does a file that cannot be
// read, a key without ':' and another algorithm. Files are hashed as they
// are read, never held whole in memory, and hashing stops when the load's
// context ends.
type Checksum struct{}

// Load checks every file params names, in the order of their keys.
func (Checksum) Load(ctx context.Context, m Model, params map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(params)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		algo, file, ok := strings.Cut(key, ":")
		if !ok {
			return fmt.Errorf("failed to parse key: %s", key)
		}
		if !strings.EqualFold(algo, "md5") {
			return fmt.Errorf("Unsupported checksum algorithm: %s: %w", algo, errors.ErrUnsupported)
		}
		if !fs.ValidPath(file) {
			return fmt.Errorf("failed to open text file for read %s: not a path inside the model folder", file)
		}
		// A named pipe or device would never end (or never open).
		if fi, err := m.stat(file); err != nil {
			return fmt.Errorf("failed to open text file for read %s: %w", file, err)
		} else if !fi.Mode().IsRegular() {
			return fmt.Errorf("failed to open text file for read %s: %s, not a regular file", file, repository.FileKind(fi.Mode()))
		}
		got, err := md5File(ctx, m.FS, file)
		if err != nil {
			return fmt.Errorf("failed to open text file for read %s: %w", file, err)
		}
		if want := params[key]; !strings.EqualFold(got, strings.TrimSpace(want)) {
			return fmt.Errorf("Mismatched MD5 hash for file %s, expect: %s, got: %s: %w", file, want, got, ErrMismatch)
		}
	}
	return nil
}

// md5File hashes a file, stopping when ctx ends (a model file may be
// gigabytes).
func md5File(ctx context.Context, fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader reads r until ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
