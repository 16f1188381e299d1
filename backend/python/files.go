package python

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// stubSources are the stub and the triton_python_backend_utils module it
// gives models.
//
//go:embed stub/stub.py stub/triton_python_backend_utils.py
var stubSources embed.FS

// stubFiles writes the stub's files once into a folder named by their
// content under the user's cache folder (or the temporary folder), and
// returns it. Files of another build sit in other folders; nothing needs
// cleaning up.
var stubFiles = sync.OnceValues(func() (string, error) {
	h := sha256.New()
	names := []string{"stub.py", "triton_python_backend_utils.py"}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := stubSources.ReadFile("stub/" + n)
		if err != nil {
			return "", err
		}
		files[n] = b
		h.Write([]byte(n))
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil || os.MkdirAll(base, 0o755) != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "triton-go", "python-stub-"+hex.EncodeToString(h.Sum(nil))[:16])
	if complete(dir, files) {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("writing the Python stub: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".stub-*")
	if err != nil {
		return "", fmt.Errorf("writing the Python stub: %w", err)
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, n), b, 0o644); err != nil {
			_ = os.RemoveAll(tmp)
			return "", fmt.Errorf("writing the Python stub: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if !complete(dir, files) { // not another process that got there first
			return "", fmt.Errorf("writing the Python stub: %w", err)
		}
	}
	return dir, nil
})

// complete reports whether dir holds exactly these files' contents.
func complete(dir string, files map[string][]byte) bool {
	for n, b := range files {
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || string(got) != string(b) {
			return false
		}
	}
	return true
}
