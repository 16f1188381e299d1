//go:build !linux || !cgo

package malloctrim

// Trim does nothing where glibc's malloc_trim is not there.
func Trim() bool { return false }
