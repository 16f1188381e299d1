//go:build linux

package sysshm

import (
	"errors"
	"math"
	"os"
	"syscall"
)

// shmDir is where Linux keeps POSIX shared-memory objects: shm_open("/x")
// opens /dev/shm/x.
const shmDir = "/dev/shm"

// mapObject opens the object key names (already validated by checkKey: one
// path component under shmDir) and maps [offset, offset+byteSize) of it,
// read-write and shared. The mapping starts at the page holding offset; mem
// is the whole mapping (for unmapObject), data the requested bytes.
func mapObject(name, key string, offset, byteSize uint64) (mem, data []byte, err error) {
	path := shmDir + "/" + key[1:]
	openFailed := func(kind, cause error) error {
		return &shmError{kind: kind, msg: "Unable to open shared memory region: '" + key + "'", cause: cause}
	}
	// O_NOFOLLOW: a symbolic link, even one pointing inside /dev/shm, fails
	// with ELOOP, so no client can reach a file outside /dev/shm.
	// O_NONBLOCK: opening a FIFO or device node must not block; they are
	// refused after fstat. It has no effect on regular files.
	var fd int
	for {
		fd, err = syscall.Open(path, syscall.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		perr := &os.PathError{Op: "open", Path: path, Err: err}
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EISDIR) {
			// A symbolic link or a directory: the key names no shared-memory object.
			return nil, nil, openFailed(ErrInvalid, perr)
		}
		return nil, nil, openFailed(nil, perr)
	}
	defer syscall.Close(fd) // the mapping keeps the object alive

	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, &shmError{msg: "Invalid shared memory region: '" + key + "'", cause: &os.PathError{Op: "fstat", Path: path, Err: err}}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, nil, openFailed(ErrInvalid, errors.New("not a regular file"))
	}
	if err := checkObjectSize(name, key, offset, byteSize, st.Size); err != nil {
		return nil, nil, err
	}

	page := uint64(os.Getpagesize())
	start := offset &^ (page - 1)
	delta := offset - start
	length := delta + byteSize // ≤ st.Size: no overflow
	if length > math.MaxInt {
		return nil, nil, invalidf("failed to register shared memory region '%s': invalid args (byte size %d does not fit in this process's address space)", name, byteSize)
	}
	mem, err = syscall.Mmap(fd, int64(start), int(length), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, &shmError{msg: "failed to register shared memory region '" + name + "': unable to process address space", cause: &os.PathError{Op: "mmap", Path: path, Err: err}}
	}
	return mem, mem[delta:length:length], nil
}

// checkObjectSize is Register's bounds check once the object's size is
// known; offset+byteSize is known not to overflow.
func checkObjectSize(name, key string, offset, byteSize uint64, size int64) error {
	if size < 0 || offset+byteSize > uint64(size) {
		return invalidf("failed to register shared memory region '%s': invalid args (offset %d + byte size %d exceeds the %d bytes of '%s')",
			name, offset, byteSize, size, key)
	}
	return nil
}

// unmapObject unmaps a mapping mapObject returned.
func unmapObject(mem []byte) error {
	return syscall.Munmap(mem)
}
