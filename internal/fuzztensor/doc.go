// Package fuzztensor turns a fuzzer's bytes into request tensors for the
// backends' fuzz tests: any datatype and shape, and optionally data of the
// size the shape needs, so that inputs get past the server's checks and
// reach the framework.
package fuzztensor
