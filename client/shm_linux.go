//go:build linux

package client

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// SharedMemory is a POSIX shared-memory object that this process created
// and mapped: the client side of the system shared-memory extension (what
// tritonclient.utils.shared_memory's create_shared_memory_region is to
// Triton's Python clients). Write input tensors into [SharedMemory.Bytes],
// register a range of it with the server under a region name
// ([SystemSharedMemory]), name the region in requests ([InputInRegion],
// [OutputInRegion]), and read the outputs the server wrote from Bytes once
// the response has arrived. Linux only (objects live in /dev/shm);
// elsewhere [CreateSharedMemory] fails with errors.ErrUnsupported.
//
// The server reads and writes the memory while a request that names it
// runs: do not touch a request's ranges until its response has arrived.
// Methods are safe for concurrent use; Bytes must not be used after Close.
type SharedMemory struct {
	key  string
	data []byte

	mu     sync.Mutex
	closed bool // protected by mu
}

// CreateSharedMemory creates the POSIX shared-memory object key (as
// shm_open names it: "/name", one leading slash and no other), of size
// bytes, zeroed, readable and writable by this user only, and maps it. It
// fails if the object exists already. Close it to unmap and remove it.
func CreateSharedMemory(key string, size int) (*SharedMemory, error) {
	name, ok := strings.CutPrefix(key, "/")
	if !ok || name == "" || strings.Contains(name, "/") || name == "." || name == ".." || strings.ContainsRune(name, 0) {
		return nil, fmt.Errorf("client: shared-memory key %q: want \"/name\", one leading slash and no other", key)
	}
	if size <= 0 {
		return nil, fmt.Errorf("client: shared-memory object %q: size %d must be positive", key, size)
	}
	path := "/dev/shm/" + name
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("client: creating shared-memory object %q: %w", key, err)
	}
	defer f.Close() // the mapping keeps the object
	if err := f.Truncate(int64(size)); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("client: sizing shared-memory object %q: %w", key, err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("client: mapping shared-memory object %q: %w", key, &os.PathError{Op: "mmap", Path: path, Err: err})
	}
	return &SharedMemory{key: key, data: data}, nil
}

// Key returns the object's key, to register it with the server.
func (m *SharedMemory) Key() string { return m.key }

// Bytes returns the mapped memory (its length is the object's size). It
// aliases the shared memory: the server's writes show in it.
func (m *SharedMemory) Bytes() []byte { return m.data }

// Close unmaps the memory and removes the object's name; a server that
// still has it registered keeps its own mapping until it unregisters it.
// Close is idempotent.
func (m *SharedMemory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	err := syscall.Munmap(m.data)
	if rerr := os.Remove("/dev/shm/" + m.key[1:]); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}
