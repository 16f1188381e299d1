package cloudrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"gocloud.dev/blob"
)

// ErrClosed is returned by [Repository.Sync] after [Repository.Close].
var ErrClosed = errors.New("cloudrepo: repository closed")

// mountDirEnv maps a scheme to the variable naming the folder Triton makes
// its local copies in.
var mountDirEnv = map[string]string{
	schemeS3:    "TRITON_AWS_MOUNT_DIRECTORY",
	schemeGCS:   "TRITON_GCS_MOUNT_DIRECTORY",
	schemeAzure: "TRITON_AZURE_MOUNT_DIRECTORY",
}

// Options configure [Open]. The zero value is ready to use.
type Options struct {
	// CacheDir is the local folder that holds the copies ([Repository.Dir]).
	//
	// "" makes a fresh folder with os.MkdirTemp under the folder named by
	// TRITON_AWS_MOUNT_DIRECTORY, TRITON_GCS_MOUNT_DIRECTORY or
	// TRITON_AZURE_MOUNT_DIRECTORY (by the URL's scheme), else under
	// os.TempDir(), as Triton does; Close removes it.
	//
	// A folder given here is created when missing and kept by Close, and
	// the copies in it are reused by the next Open: a model whose objects
	// still match is not downloaded again. Two open Repositories must not
	// share one.
	CacheDir string
	// Logger receives lifecycle events: open, each published snapshot,
	// each model that left the bucket. nil means zap.NewNop().
	Logger *zap.Logger
}

// Stats counts what a [Repository] did since Open. Counters only grow.
type Stats struct {
	// Syncs is the number of Sync calls that listed the repository.
	Syncs int64
	// Downloads is the number of files downloaded completely (and checked),
	// DownloadedBytes their total size.
	Downloads, DownloadedBytes int64
	// Reused is the number of files not downloaded because the current
	// copy matched the listing: the files of an unchanged model, and the
	// unchanged files linked into a new snapshot.
	Reused int64
	// Snapshots is the number of snapshots published (links swapped).
	Snapshots int64
	// Removed is the number of models whose link was removed because they
	// left the bucket.
	Removed int64
	// Failures is the number of model syncs that failed, leaving the
	// previous copy in place.
	Failures int64
}

// Repository mirrors a model repository in object storage into a local
// folder. Create it with [Open]; it implements the server's Mirror
// interface (Dir, Sync, Models).
//
// All methods are safe for concurrent use. Sync calls for different
// models run in parallel; calls for the same model are serialised, and a
// call holding an older listing than the one a model was last synced
// from leaves that model alone.
type Repository struct {
	loc        location
	cred       credential
	bucket     *blob.Bucket
	transports *transports
	dir        string
	ownDir     bool
	lock       *os.File // held (flock) while open: see makeCacheDir
	log        *zap.Logger

	// life ends at Close; every Sync's context is cancelled with it.
	life     context.Context
	kill     context.CancelFunc
	inflight sync.WaitGroup

	listGen atomic.Int64
	stats   struct {
		syncs, downloads, downloadedBytes, reused, snapshots, removed, failures atomic.Int64
	}

	mu sync.Mutex
	// mu protects the following.
	closed    bool
	models    []string // the newest listing's model names, sorted
	modelsGen int64    // that listing's generation
	state     map[string]*modelState
}

// Mirror is the method set the server needs, written out here so that
// this package does not import the server's.
var _ interface {
	Dir() string
	Sync(ctx context.Context, models ...string) error
	Models() []string
} = (*Repository)(nil)

// Open connects to the repository at url (s3://, gs:// or as://, in any
// of the forms Triton accepts; see the package documentation) and
// prepares the local folder. It checks that the bucket answers, as
// Triton's HeadBucket check does, by listing the repository folder: a
// missing bucket, credentials the store refuses, a repository path that
// names a file or nothing at all are errors naming the URL (never a
// secret). Open downloads nothing; call Sync.
//
// Credentials come from TRITON_CLOUD_CREDENTIAL_PATH when it is set, else
// from the provider's environment variables (see the package
// documentation).
func Open(ctx context.Context, url string, opts Options) (*Repository, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	loc, err := parseLocation(url)
	if err != nil {
		return nil, err
	}
	cred, err := lookupCredential(loc, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("cloudrepo: %s: %w", loc.display, err)
	}
	ts := &transports{}
	bucket, err := openBucket(ctx, loc, cred, ts, log)
	if err != nil {
		return nil, cred.scrub(fmt.Errorf("cloudrepo: %s: %w", loc.display, err))
	}
	r := &Repository{
		loc:        loc,
		cred:       cred,
		bucket:     bucket,
		transports: ts,
		log:        log.With(zap.String("repository", loc.display)),
		state:      map[string]*modelState{},
	}
	if err := r.check(ctx); err != nil {
		r.closeBucket()
		return nil, r.errorf("%w", err)
	}
	if r.dir, r.ownDir, r.lock, err = makeCacheDir(loc.scheme, opts.CacheDir, r.log); err != nil {
		r.closeBucket()
		return nil, r.errorf("%w", err)
	}
	if err := r.recover(); err != nil {
		r.closeBucket()
		if r.ownDir {
			os.RemoveAll(r.dir)
		}
		r.lock.Close()
		return nil, r.errorf("%w", err)
	}
	r.life, r.kill = context.WithCancel(context.Background())
	r.log.Info("opened cloud model repository",
		zap.String("dir", r.dir), zap.String("credentials", cred.source))
	return r, nil
}

// check lists the top of the repository folder: the call fails for a
// missing bucket or refused credentials, and the folders it finds are the
// models [Repository.Models] lists until the first Sync (the server's
// index shows them before any is copied). An empty listing is an error,
// naming a file when the path is one.
func (r *Repository) check(ctx context.Context) error {
	prefix := r.loc.keyPrefix()
	it := r.bucket.List(&blob.ListOptions{Prefix: prefix, Delimiter: "/"})
	var (
		models []string
		any    bool
	)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return describe(err, "list", r.loc.bucket)
		}
		any = true
		name := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/")
		if obj.IsDir && name != "" && !strings.HasPrefix(name, ".") {
			models = append(models, name)
		}
	}
	slices.Sort(models)
	r.models = models
	if any || prefix == "" {
		return nil
	}
	isFile, err := r.bucket.Exists(ctx, r.loc.prefix)
	if err != nil {
		return describe(err, "stat", r.loc.bucket)
	}
	if isFile {
		return errors.New("the repository path names a file, not a folder")
	}
	return fmt.Errorf("no objects below the repository path: %w", fs.ErrNotExist)
}

// makeCacheDir returns the absolute cache folder, whether it was made here
// (and so is removed by Close), and its lock file, which this process
// holds an flock on until Close: a folder given in dir that another
// process holds is refused, and folders made under the mount folder by
// processes that died are removed ([sweepStale]).
func makeCacheDir(scheme, dir string, log *zap.Logger) (string, bool, *os.File, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", false, nil, err
		}
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", false, nil, fmt.Errorf("cache folder: %w", err)
		}
		lock, err := lockCacheDir(abs, true)
		if err != nil {
			return "", false, nil, fmt.Errorf("cache folder %s: in use by another process, or not writable: %w", abs, err)
		}
		return abs, false, lock, nil
	}
	base := os.Getenv(mountDirEnv[scheme])
	if base == "" {
		base = os.TempDir()
	}
	sweepStale(base, log)
	made, err := os.MkdirTemp(base, tempPattern)
	if err != nil {
		return "", false, nil, fmt.Errorf("cache folder (set %s to a writable folder): %w", mountDirEnv[scheme], err)
	}
	abs, err := filepath.Abs(made)
	if err == nil {
		var lock *os.File
		if lock, err = lockCacheDir(abs, true); err == nil {
			return abs, true, lock, nil
		}
	}
	os.RemoveAll(made)
	return "", false, nil, fmt.Errorf("cache folder: %w", err)
}

// Dir returns the local folder holding the copies: one entry per model,
// a symbolic link to the model's current snapshot. Serve it as a model
// repository; hidden entries (.snapshots, temporary links) are the
// mirror's own and are skipped by repository scans.
func (r *Repository) Dir() string { return r.dir }

// String returns the repository's URL, with anything that may be secret
// (an Azure SAS query, user information) replaced.
func (r *Repository) String() string { return r.loc.display }

// Models returns the names of the models the newest listing of the
// repository found (by Open, then by each Sync), sorted.
// Names starting with a dot are not models. The slice is the caller's.
func (r *Repository) Models() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.models)
}

// Stats returns the counters.
func (r *Repository) Stats() Stats {
	s := &r.stats
	return Stats{
		Syncs:           s.syncs.Load(),
		Downloads:       s.downloads.Load(),
		DownloadedBytes: s.downloadedBytes.Load(),
		Reused:          s.reused.Load(),
		Snapshots:       s.snapshots.Load(),
		Removed:         s.removed.Load(),
		Failures:        s.failures.Load(),
	}
}

// Close cancels running Syncs and waits for them, closes the connection to
// the store and, when Open made the cache folder, removes it. A folder
// given in Options.CacheDir is kept for the next Open. Close is idempotent;
// Sync after Close returns ErrClosed.
func (r *Repository) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.kill()
	r.inflight.Wait()
	err := r.closeBucket()
	if r.ownDir {
		err = errors.Join(err, os.RemoveAll(r.dir))
	}
	err = errors.Join(err, r.lock.Close())
	if err != nil {
		return r.errorf("close: %w", err)
	}
	return nil
}

func (r *Repository) closeBucket() error {
	err := r.bucket.Close()
	r.transports.closeIdle()
	return err
}

// begin admits a Sync: it fails after Close, and returns a context that
// Close cancels and the function that ends the Sync.
func (r *Repository) begin(ctx context.Context) (context.Context, func(), error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, ErrClosed
	}
	r.inflight.Add(1)
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.life, cancel)
	return ctx, func() {
		stop()
		cancel()
		r.inflight.Done()
	}, nil
}

// errorf formats an error about this repository: prefixed with the
// package and the URL, secrets removed.
func (r *Repository) errorf(format string, args ...any) error {
	return r.cred.scrub(fmt.Errorf("cloudrepo: %s: "+format, append([]any{r.loc.display}, args...)...))
}
