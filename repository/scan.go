package repository

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Root is one model repository: a folder whose subfolders are models.
//
// FS is what Scan reads. Dir is the local path of the same folder when the
// repository is on disk; it is used only to report paths (in errors and in
// [ModelDir.Dir]) and is "" for a repository that lives only in an fs.FS
// (embedded files, fstest.MapFS, an archive). A Root with a nil FS and a
// non-empty Dir is read through os.DirFS(Dir).
type Root struct {
	FS  fs.FS
	Dir string
}

// DirRoot returns the Root for the repository folder at path on the local
// disk. Symbolic links below it are followed.
func DirRoot(path string) Root {
	return Root{FS: os.DirFS(path), Dir: path}
}

// FSRoot returns the Root for a repository that lives in fsys, with the
// model folders at its top level.
func FSRoot(fsys fs.FS) Root {
	return Root{FS: fsys}
}

// fsys returns the file system to read, falling back to Dir.
func (r Root) fsys() fs.FS {
	if r.FS == nil && r.Dir != "" {
		return os.DirFS(r.Dir)
	}
	return r.FS
}

// label names the root in messages: its Dir, or its position in the list
// given to Scan for a pure fs.FS.
func (r Root) label(i int) string {
	if r.Dir != "" {
		return r.Dir
	}
	return fmt.Sprintf("repository root %d (fs.FS)", i)
}

// ModelDir is one model folder found by [Scan].
//
// The zero value is not useful; values come from Scan. ModelDir holds no
// open files and is safe to copy and to share between goroutines; its
// Versions slice must not be modified.
type ModelDir struct {
	// Name is the folder name, which is the model's name.
	Name string
	// Root is the repository the folder was found in.
	Root Root
	// FS is rooted at the model folder: config.pbtxt, labels, version
	// folders ("1/model.onnx"), warmup/ and initial_state/ files.
	FS fs.FS
	// Dir is the local path of the model folder, "" if the repository is
	// not on disk.
	Dir string
	// Versions lists the version folders, ascending. Only folders named by
	// a positive decimal integer without leading zeros count, as in Triton.
	Versions []int64
}

// ConfigPath returns the path of the model's config.pbtxt, for messages: a
// local path when the repository is on disk, "<model>/config.pbtxt" otherwise.
func (md ModelDir) ConfigPath() string { return md.Path(ConfigFile) }

// Path returns the path of file, relative to the model folder, for
// messages: a local path when the repository is on disk,
// "<model>/<file>" otherwise.
func (md ModelDir) Path(file string) string {
	if md.Dir != "" {
		return filepath.Join(md.Dir, filepath.FromSlash(file))
	}
	return path.Join(md.Name, file)
}

// Stat returns the FileInfo of file (a slash path in md), links followed,
// without opening it: on disk with os.Stat, else with fs.Stat. (fs.Stat on
// an fs.Sub opens the file, and opening a named pipe blocks.)
func (md ModelDir) Stat(file string) (fs.FileInfo, error) {
	if md.Dir != "" {
		return os.Stat(md.Path(file))
	}
	return fs.Stat(md.FS, file)
}

// Scan lists the models of one or more repositories, sorted by name.
//
// Every folder at the top of a repository is a model folder; entries whose
// name starts with '.' and plain files are skipped. Inside a model folder,
// subfolders named by a positive decimal integer without leading zeros
// ("1", "42") are version folders; other subfolders ("0", "01", "-1",
// "abc", "configs", "warmup") are not versions and are skipped, with a log
// line naming them (Info for names that look like a mistyped version,
// Debug for the rest). A model folder without any version folder is still
// listed: whether that is an error depends on the version policy, which is
// the loader's call.
//
// A model name that appears in two repositories is an error naming both.
// Errors reading a folder are returned wrapped with its path; the result is
// nil whenever the error is not. log may be nil.
//
// Scan reads the repositories once and keeps nothing open; it is safe to
// call concurrently.
func Scan(roots []Root, log *zap.Logger) ([]ModelDir, error) {
	if log == nil {
		log = zap.NewNop()
	}
	var (
		models []ModelDir
		where  = map[string]int{} // model name -> index of its root
		errs   []error
	)
	for i, root := range roots {
		fsys := root.fsys()
		if fsys == nil {
			return nil, fmt.Errorf("repository: %s has neither FS nor Dir", root.label(i))
		}
		root.FS = fsys
		entries, err := fs.ReadDir(fsys, ".")
		if err != nil {
			return nil, fmt.Errorf("repository: read %s: %w", root.label(i), err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				log.Debug("skipping hidden entry in model repository",
					zap.String("repository", root.label(i)), zap.String("entry", name))
				continue
			}
			isDir, err := entryIsDir(fsys, name, e)
			if err != nil {
				return nil, fmt.Errorf("repository: %s: %w", joinLabel(root, i, name), err)
			}
			if !isDir {
				log.Debug("skipping file in model repository",
					zap.String("repository", root.label(i)), zap.String("entry", name))
				continue
			}
			if j, dup := where[name]; dup {
				errs = append(errs, fmt.Errorf("repository: model %q found in two repositories: %s and %s",
					name, roots[j].label(j), root.label(i)))
				continue
			}
			where[name] = i
			md, err := scanModel(root, i, name, log)
			if err != nil {
				return nil, err
			}
			models = append(models, md)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(models, func(a, b ModelDir) int { return strings.Compare(a.Name, b.Name) })
	return models, nil
}

// scanModel reads one model folder and collects its version folders.
func scanModel(root Root, i int, name string, log *zap.Logger) (ModelDir, error) {
	sub, err := fs.Sub(root.FS, name)
	if err != nil {
		return ModelDir{}, fmt.Errorf("repository: %s: %w", joinLabel(root, i, name), err)
	}
	md := ModelDir{Name: name, Root: root, FS: sub}
	if root.Dir != "" {
		md.Dir = filepath.Join(root.Dir, name)
	}
	entries, err := fs.ReadDir(root.FS, name)
	if err != nil {
		return ModelDir{}, fmt.Errorf("repository: read model folder %s: %w", joinLabel(root, i, name), err)
	}
	for _, e := range entries {
		isDir, err := entryIsDir(root.FS, path.Join(name, e.Name()), e)
		if err != nil {
			return ModelDir{}, fmt.Errorf("repository: %s: %w", joinLabel(root, i, path.Join(name, e.Name())), err)
		}
		if !isDir {
			continue
		}
		v, ok := parseVersion(e.Name())
		if !ok {
			level := log.Debug
			if looksNumeric(e.Name()) {
				level = log.Info
			}
			level("ignoring folder that is not a version (versions are positive integers without leading zeros)",
				zap.String("model", name), zap.String("folder", e.Name()),
				zap.String("repository", root.label(i)))
			continue
		}
		md.Versions = append(md.Versions, v)
	}
	slices.Sort(md.Versions)
	log.Debug("found model", zap.String("model", name),
		zap.String("repository", root.label(i)), zap.Int64s("versions", md.Versions))
	return md, nil
}

// entryIsDir reports whether a directory entry is a folder, following a
// symbolic link (Kubernetes volumes and hand-made repositories use them).
// A dangling link is not a folder.
func entryIsDir(fsys fs.FS, name string, e fs.DirEntry) (bool, error) {
	if e.IsDir() {
		return true, nil
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false, nil
	}
	fi, err := fs.Stat(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

func joinLabel(root Root, i int, name string) string {
	if root.Dir != "" {
		return filepath.Join(root.Dir, filepath.FromSlash(name))
	}
	return fmt.Sprintf("%s in %s", name, root.label(i))
}

// parseVersion parses a version folder name the way Triton does: a
// positive decimal integer, no sign, no leading zero, fitting in int64.
func parseVersion(name string) (int64, bool) {
	if name == "" || name[0] < '1' || name[0] > '9' {
		return 0, false
	}
	for _, c := range []byte(name) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// looksNumeric reports whether name is an optionally signed run of digits:
// a folder the user probably meant as a version ("0", "01", "-1").
func looksNumeric(name string) bool {
	name = strings.TrimLeft(name, "+-")
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Lookup finds the model folder called name in the repositories, as Scan
// would list it. name must be a plain folder name: no path separators, not
// "." or "..", not hidden; anything else is an error, so that a model name
// coming from a client can never reach outside the repositories. A name
// found in no repository is an error wrapping fs.ErrNotExist; found in two,
// an error naming both.
func Lookup(roots []Root, name string, log *zap.Logger) (ModelDir, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := CheckModelName(name); err != nil {
		return ModelDir{}, err
	}
	var (
		found ModelDir
		where = -1
	)
	for i, root := range roots {
		fsys := root.fsys()
		if fsys == nil {
			return ModelDir{}, fmt.Errorf("repository: %s has neither FS nor Dir", root.label(i))
		}
		root.FS = fsys
		fi, err := fs.Stat(fsys, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ModelDir{}, fmt.Errorf("repository: %s: %w", joinLabel(root, i, name), err)
		}
		if !fi.IsDir() {
			continue
		}
		if where >= 0 {
			return ModelDir{}, fmt.Errorf("repository: model %q found in two repositories: %s and %s",
				name, roots[where].label(where), root.label(i))
		}
		md, err := scanModel(root, i, name, log)
		if err != nil {
			return ModelDir{}, err
		}
		found, where = md, i
	}
	if where < 0 {
		return ModelDir{}, fmt.Errorf("repository: no model folder %q in the model repository: %w", name, fs.ErrNotExist)
	}
	return found, nil
}

// CheckModelName reports whether name can be a model folder: a non-empty
// single path element, without separators, not "." or "..", not hidden.
func CheckModelName(name string) error {
	switch {
	case name == "":
		return errors.New("repository: empty model name")
	case name == "." || name == ".." || strings.HasPrefix(name, "."),
		strings.ContainsAny(name, `/\`), strings.ContainsRune(name, 0):
		return fmt.Errorf("repository: %q is not a model name: a model name is one folder name, without path separators, not hidden and not \"..\"", name)
	}
	return nil
}
