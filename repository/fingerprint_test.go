package repository_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/triton-go/triton/repository"
)

// TestFingerprintSpecialFiles: a model folder with a pipe, a link to
// /dev/zero and a link to a model file kept elsewhere is fingerprinted
// without reading the pipe or the device (which would block, or never
// end) or the linked file's megabytes, and a change of the linked file
// changes the fingerprint.
func TestFingerprintSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m")
	if err := os.MkdirAll(filepath.Join(m, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(dir, "weights.bin") // outside the folder, linked in
	for path, data := range map[string][]byte{filepath.Join(m, "config.pbtxt"): []byte(`backend: "x"`), weights: make([]byte, 8<<20)} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(weights, filepath.Join(m, "1", "model.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(m, "1", "zero")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(m, "1", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	md := repository.ModelDir{Name: "m", FS: os.DirFS(m), Dir: m}
	first, err := repository.Fingerprint(md)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := repository.Fingerprint(md); err != nil || again != first {
		t.Fatalf("fingerprint %x then %x (%v), want the same", first, again, err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(weights, later, later); err != nil {
		t.Fatal(err)
	}
	if changed, err := repository.Fingerprint(md); err != nil || changed == first {
		t.Errorf("fingerprint %x after the linked file changed (%v), want another than %x", changed, err, first)
	}
}

// TestConfigFileSpecial: a config.pbtxt that is a pipe or a link to a
// device is refused, not read (a pipe blocked the load, /dev/zero read
// without end).
func TestConfigFileSpecial(t *testing.T) {
	dir := t.TempDir()
	pipe, zero := filepath.Join(dir, "pipe"), filepath.Join(dir, "zero")
	for _, m := range []string{pipe, zero} {
		if err := os.MkdirAll(m, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(pipe, "config.pbtxt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zero, "config.pbtxt")); err != nil {
		t.Fatal(err)
	}
	models, err := repository.Scan([]repository.Root{repository.DirRoot(dir)}, zap.NewNop()) // model folders as the server gets them (fs.Sub)
	if err != nil || len(models) != 2 {
		t.Fatalf("Scan: %d models, %v", len(models), err)
	}
	for _, md := range models {
		m, kind := filepath.Join(dir, md.Name), map[string]string{"pipe": "a named pipe", "zero": "a device"}[md.Name]
		_, found, err := repository.ReadConfig(md)
		if want := kind + ", not a regular file"; err == nil || !found || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), filepath.Join(m, "config.pbtxt")) {
			t.Errorf("%s: found %v, error %v; want one naming the file and %q", md.Name, found, err, want)
		}
	}
}
