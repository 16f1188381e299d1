// Package reverse is the Go backend that cmd/tritonserver compiles in for
// the example repository's text_reverse model, shared with the tests that
// serve the same model in-process: each string of TEXT comes back reversed,
// byte for byte, as REVERSED.
package reverse
