//go:build cgo && (linux || darwin) && (race || asan || msan)

package ortrun_test

// Race and sanitizer instrumentation changes allocation counts.
func init() { instrumented = true }
