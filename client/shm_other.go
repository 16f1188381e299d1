//go:build !linux

package client

import (
	"errors"
	"fmt"
)

// SharedMemory is a POSIX shared-memory object that this process created
// and mapped. It is implemented on Linux only; see the Linux
// documentation.
type SharedMemory struct{}

// CreateSharedMemory fails with errors.ErrUnsupported: system shared
// memory is implemented on Linux only.
func CreateSharedMemory(key string, size int) (*SharedMemory, error) {
	return nil, fmt.Errorf("client: shared-memory object %q: %w (Linux only)", key, errors.ErrUnsupported)
}

// Key returns "".
func (m *SharedMemory) Key() string { return "" }

// Bytes returns nil.
func (m *SharedMemory) Bytes() []byte { return nil }

// Close does nothing.
func (m *SharedMemory) Close() error { return nil }
