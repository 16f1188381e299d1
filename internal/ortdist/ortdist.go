package ortdist

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Version is the ONNX Runtime release the backend is built against (the
// one github.com/yalue/onnxruntime_go v1.27.0 expects).
const Version = "1.24.1"

// The npm package the library comes from, its tarball's sha256 and size.
const (
	Package       = "onnxruntime-node@" + Version
	PackageSHA256 = "57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772"
	PackageSize   = 85811498 // bytes
)

// LibName is the library's file name, its soname.
const LibName = "libonnxruntime.so.1"

// Arch is the package's name for this machine's architecture ("x64",
// "arm64"), or "" where the package has no Linux build for it.
func Arch() string {
	return map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
}

// RelPath is where the library sits under a cache folder:
// onnxruntime/<Version>/linux-<arch>/libonnxruntime.so.1.
func RelPath() string {
	return filepath.Join("onnxruntime", Version, "linux-"+Arch(), LibName)
}

// CheckoutPath is the library's place in a triton-go checkout, relative to
// its root: .cache/<RelPath>.
func CheckoutPath() string { return filepath.Join(".cache", RelPath()) }

// UserCachePath is the library's place in the user's cache folder:
// os.UserCacheDir()/triton-go/<RelPath> ($XDG_CACHE_HOME or ~/.cache on
// Linux).
func UserCachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "triton-go", RelPath()), nil
}

// member is the library's path inside the package's tarball.
func member() string { return "package/bin/napi-v6/linux/" + Arch() + "/" + LibName }

// Install fetches Package with `npm pack` (npm's own registry settings,
// proxy and cache apply), checks the tarball's sha256 against
// PackageSHA256, and writes the library to lib, atomically: a reader never
// finds a half-written file. It says what it does on progress, one line a
// step with sizes, and every 15 seconds while npm downloads.
func Install(ctx context.Context, lib string, progress io.Writer) error {
	if Arch() == "" || runtime.GOOS != "linux" {
		return fmt.Errorf("%s has no ONNX Runtime build for %s/%s", Package, runtime.GOOS, runtime.GOARCH)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("fetching %s needs npm, which is not installed (on Debian or Ubuntu: sudo apt-get install npm)", Package)
	}
	tmp, err := os.MkdirTemp("", "ortdist")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	fmt.Fprintf(progress, "fetch-onnxruntime: fetching %s with npm pack (%.1f MB)\n", Package, mb(PackageSize))
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "pack", "--silent", Package)
	cmd.Dir = tmp
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	if err := runTicking(cmd, 15*time.Second, func(d time.Duration) {
		fmt.Fprintf(progress, "fetch-onnxruntime: still fetching %s (%s so far)\n", Package, d.Round(time.Second))
	}); err != nil {
		return fmt.Errorf("npm pack %s: %v: %s", Package, err, stderr.String())
	}
	tgz := filepath.Join(tmp, "onnxruntime-node-"+Version+".tgz")
	fi, err := os.Stat(tgz)
	if err != nil {
		return fmt.Errorf("npm pack %s made no %s: %w", Package, filepath.Base(tgz), err)
	}
	fmt.Fprintf(progress, "fetch-onnxruntime: fetched %.1f MB in %s; checking its sha256\n", mb(fi.Size()), time.Since(start).Round(100*time.Millisecond))
	if got, err := fileSHA256(tgz); err != nil {
		return err
	} else if got != PackageSHA256 {
		return fmt.Errorf("sha256 of %s is %s, want %s; refusing to use it", Package, got, PackageSHA256)
	}
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		return err
	}
	n, err := extract(tgz, member(), lib)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "fetch-onnxruntime: sha256 ok; installed %s (%.1f MB)\n", lib, mb(n))
	return nil
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// runTicking runs cmd, calling tick every period until it ends.
func runTicking(cmd *exec.Cmd, period time.Duration, tick func(time.Duration)) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTicker(period)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			tick(time.Since(start))
		}
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// extract copies the tarball's member name to dest through a temporary
// file beside it, renamed into place, and returns its size.
func extract(tgz, name, dest string) (int64, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%s has no %s", Package, name)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", tgz, err)
		}
		if h.Name != name || h.Typeflag != tar.TypeReg {
			continue
		}
		out, err := os.CreateTemp(filepath.Dir(dest), filepath.Base(dest)+".tmp*")
		if err != nil {
			return 0, err
		}
		n, err := io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(out.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(out.Name(), dest)
		}
		if err != nil {
			os.Remove(out.Name())
			return 0, err
		}
		return n, nil
	}
}

// limitedBuffer keeps the first 4 KiB written to it (npm's error output).
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
