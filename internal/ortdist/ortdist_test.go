package ortdist

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkoutLibrary is the library scripts/fetch-onnxruntime.sh keeps in
// this checkout, or "" when it is missing.
func checkoutLibrary(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, CheckoutPath())
			if _, err := os.Stat(p); err != nil {
				return ""
			}
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// TestInstall runs Install with the real npm, offline (from npm's cache,
// which make deps filled when it fetched the library): the library it
// installs is the one the checkout's script installed, byte for byte, and
// each step says what it did with sizes.
func TestInstall(t *testing.T) {
	want := checkoutLibrary(t)
	if want == "" {
		t.Skip("no ONNX Runtime library in this checkout to compare with: run make deps")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	// Offline: the test must not depend on the network. A cache without
	// the package cannot show anything; skip then.
	t.Setenv("npm_config_offline", "true")
	probe := exec.Command("npm", "pack", "--dry-run", "--silent", Package)
	probe.Dir = t.TempDir()
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("%s is not in npm's cache (%v: %s)", Package, err, bytes.TrimSpace(out))
	}

	lib := filepath.Join(t.TempDir(), "a", "b", LibName)
	var progress bytes.Buffer
	if err := Install(context.Background(), lib, &progress); err != nil {
		t.Fatalf("Install: %v\n%s", err, progress.String())
	}
	got, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, ref) {
		t.Errorf("installed %d bytes that differ from the checkout's %d", len(got), len(ref))
	}
	for _, line := range []string{
		"fetching " + Package + " with npm pack (85.8 MB)\n",
		"fetched 85.8 MB in ",
		"; checking its sha256\n",
		fmt.Sprintf("sha256 ok; installed %s (%.1f MB)\n", lib, mb(int64(len(ref)))),
	} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(lib)); len(entries) != 1 {
		t.Errorf("the library's folder holds %d files, want only the library (no temporary left)", len(entries))
	}
}

// TestInstallWithoutNPM: without npm the error says what to install.
func TestInstallWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Install(context.Background(), filepath.Join(t.TempDir(), LibName), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "needs npm") || !strings.Contains(err.Error(), "apt-get install npm") {
		t.Errorf("Install without npm: %v", err)
	}
}

// TestExtractRefusesMissingMember: a tarball without the library fails
// with an error naming it, and leaves nothing behind.
func TestExtractRefusesMissingMember(t *testing.T) {
	dir := t.TempDir()
	tgz := filepath.Join(dir, "p.tgz")
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "package"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "package", "README.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-czf", tgz, "-C", src, "package").CombinedOutput(); err != nil {
		t.Skipf("tar: %v %s", err, out)
	}
	dest := filepath.Join(dir, "out", LibName)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := extract(tgz, member(), dest); err == nil || !strings.Contains(err.Error(), member()) {
		t.Errorf("extract: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 0 {
		t.Errorf("extract left %d files behind", len(entries))
	}
}
