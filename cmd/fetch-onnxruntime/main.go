// Command fetch-onnxruntime installs the ONNX Runtime shared library that
// triton-go's onnxruntime backend runs with, where the backend finds it
// without a checkout of triton-go: the user's cache folder,
// os.UserCacheDir()/triton-go/onnxruntime/<version>/linux-<arch>/libonnxruntime.so.1
// ($XDG_CACHE_HOME or ~/.cache). It fetches the onnxruntime-node npm
// package of the backend's ONNX Runtime version with npm (which must be
// installed), checks its pinned sha256 and extracts the library for this
// machine. A binary installed with `go install` names this command, with
// its own version, when it finds no library:
//
//	go run github.com/triton-go/triton/cmd/fetch-onnxruntime@latest
//
// With -lib it writes the library to another path, with -checkout DIR to
// DIR/.cache/onnxruntime/... (scripts/fetch-onnxruntime.sh fills a
// checkout's cache so). It does nothing when the file is already there. It prints the library's path on stdout and its progress
// on stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/triton-go/triton/internal/ortdist"
)

func main() {
	lib := flag.String("lib", "", "where to put the library (default: the user's cache folder, where the backend looks)")
	checkout := flag.String("checkout", "", "put the library in this triton-go checkout's .cache instead (scripts/fetch-onnxruntime.sh)")
	flag.Parse()
	if *checkout != "" {
		*lib = filepath.Join(*checkout, ortdist.CheckoutPath())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *lib, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetch-onnxruntime:", err)
		os.Exit(1)
	}
}

// run installs the library at lib (the user cache's path when empty),
// printing its path on stdout and the progress on stderr.
func run(ctx context.Context, lib string, stdout, stderr io.Writer) error {
	if lib == "" {
		p, err := ortdist.UserCachePath()
		if err != nil {
			return fmt.Errorf("no user cache folder (%v); pass -lib", err)
		}
		lib = p
	}
	if fi, err := os.Stat(lib); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		fmt.Fprintf(stderr, "fetch-onnxruntime: ONNX Runtime %s is already at %s\n", ortdist.Version, lib)
		fmt.Fprintln(stdout, lib)
		return nil
	}
	if err := ortdist.Install(ctx, lib, stderr); err != nil {
		return err
	}
	fmt.Fprintln(stdout, lib)
	return nil
}
