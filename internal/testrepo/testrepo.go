package testrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/triton-go/triton"
)

// Repo is a model repository under construction in a temporary folder.
type Repo struct {
	TB  testing.TB
	Dir string
}

// New returns an empty repository in tb's temporary folder.
func New(tb testing.TB) *Repo { return &Repo{TB: tb, Dir: tb.TempDir()} }

// Write writes the file at rel (slash-separated, below the repository),
// creating its folders.
func (r *Repo) Write(rel string, data []byte) {
	r.TB.Helper()
	p := filepath.Join(r.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.TB.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		r.TB.Fatal(err)
	}
}

// Serve starts a server on the repository, closed when the test ends.
func (r *Repo) Serve(opts ...triton.Option) *triton.Server {
	r.TB.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.Dir)}, opts...)...)
	if err != nil {
		r.TB.Fatalf("New: %v", err)
	}
	r.TB.Cleanup(func() {
		if err := srv.Close(); err != nil {
			r.TB.Errorf("Close: %v", err)
		}
	})
	return srv
}

// Load starts a server on the repository and returns the error of loading
// its models (the server is closed at once when it starts).
func (r *Repo) Load(opts ...triton.Option) error {
	r.TB.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.Dir)}, opts...)...)
	if err == nil {
		err = srv.Close()
	}
	return err
}
