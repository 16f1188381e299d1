//go:build !linux

package sysshm

import "errors"

// mapObject fails: system shared memory is implemented for Linux only
// (Triton does not support it on Windows either).
func mapObject(name, key string, offset, byteSize uint64) (mem, data []byte, err error) {
	return nil, nil, &shmError{
		msg:   "failed to register shared memory region '" + name + "': system shared memory is supported on linux only",
		cause: errors.ErrUnsupported,
	}
}

// unmapObject has nothing to unmap: mapObject never succeeds here.
func unmapObject(mem []byte) error { return nil }
