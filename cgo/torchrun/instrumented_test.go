//go:build race || asan || msan

package torchrun_test

// Race and sanitizer instrumentation changes allocation counts.
func init() { instrumented = true }
