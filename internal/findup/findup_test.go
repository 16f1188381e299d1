package findup

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFile(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(filepath.Join(root, ".cache", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, ".cache", "lib", "x.so")
	if err := os.WriteFile(want, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(deep)
	if got, ok := File(filepath.Join(".cache", "lib", "x.so")); !ok || got != want {
		t.Errorf("File = %q, %v; want %q", got, ok, want)
	}
	if got, ok := File(filepath.Join(".cache", "lib")); ok { // a folder is not a file
		t.Errorf("File(folder) = %q, true", got)
	}
	if got, ok := File("nosuch"); ok {
		t.Errorf("File(nosuch) = %q, true", got)
	}
}
