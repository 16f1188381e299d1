package findup

import (
	"os"
	"path/filepath"
)

// File returns rel joined to the working directory or to the nearest
// parent where it names a regular file (or a link to one); false when
// none does.
func File(rel string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, rel)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
