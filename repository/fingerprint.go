package repository

import (
	"encoding/binary"
	"hash/fnv"
	"io/fs"
	"path"
)

// contentLimit is the size below which a file's contents, not only its
// size and modification time, go into a fingerprint: config.pbtxt, label
// files and other small files are hashed whole, big model files are not
// read on every poll.
const contentLimit = 64 << 10

// Fingerprint summarizes a model folder: every file's path, size and
// modification time, and the contents of the small ones (a link counts
// with its target and what it points to; only regular files are read). Two equal
// fingerprints taken some time apart mean the folder did not change in
// between (as far as sizes, times and small contents tell); a folder that is
// still being written shows a different fingerprint at every look, which is
// how polling waits for it to settle.
func Fingerprint(md ModelDir) (uint64, error) {
	h := fnv.New64a()
	var buf [8]byte
	num := func(n int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		h.Write(buf[:])
	}
	err := fs.WalkDir(md.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write([]byte{0})
		info, err := d.Info()
		if err != nil {
			return err
		}
		num(int64(info.Mode()))
		if d.IsDir() {
			return nil
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			// A link: where it points, and what is there (a linked model
			// file that changes changes the folder), read only as a file.
			if target, err := fs.ReadLink(md.FS, p); err == nil {
				h.Write([]byte(target))
			}
			if info, err = md.Stat(p); err != nil {
				return nil // dangling: the link alone
			}
		}
		if !info.Mode().IsRegular() {
			return nil // a pipe, a device, a socket: never read (a pipe would block, /dev/zero never ends)
		}
		num(info.Size())
		num(info.ModTime().UnixNano())
		if info.Size() <= contentLimit || path.Base(p) == ConfigFile {
			data, err := fs.ReadFile(md.FS, p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}
