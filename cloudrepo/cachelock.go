package cloudrepo

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"
)

// tempPattern names the cache folders Open makes under the mount folder;
// lockName is the file in each that its process holds an flock on for as
// long as the Repository is open.
const (
	tempPattern = "triton-repo-"
	lockName    = ".lock"
)

// lockCacheDir takes an exclusive flock on dir's lock file, made if
// create is set, and returns the open file: the lock lasts until the file
// is closed or the process ends, however it ends.
func lockCacheDir(dir string, create bool) (*os.File, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepStale removes the cache folders under base that an earlier process
// made and left behind: a server killed (OOM, SIGKILL) before its Close
// would otherwise leave a whole copy of its models in the mount folder at
// every restart, until the volume fills. A folder counts as left behind
// when its lock file is there and no process holds its lock; a folder
// without one (another process between making it and locking it) is left
// alone.
func sweepStale(base string, log *zap.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(base, tempPattern+"*"))
	for _, dir := range dirs {
		f, err := lockCacheDir(dir, false)
		if err != nil {
			continue // held by a live process, no lock file, or not ours to read
		}
		err = os.RemoveAll(dir)
		f.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Warn("removing a cache folder left by an earlier process", zap.String("dir", dir), zap.Error(err))
			continue
		}
		log.Info("removed a cache folder left by an earlier process", zap.String("dir", dir))
	}
}
