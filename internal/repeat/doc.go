// Package repeat is a decoupled Go backend with the semantics of Triton's
// repeat_int32 example model: one response per element of its input,
// each after its delay, then the final flag. cmd/tritonserver serves the
// example repository's repeat_int32 with it, and the tests of the
// streaming paths use it (through internal/testmodels).
package repeat
