//go:build race

package onnxruntime_test

// raceAllowance is what TestLoadEvictCycles adds to its allowance under
// the race detector, whose own memory (the state it keeps for the
// goroutines every load starts) grows by some 10 MiB over the first 1000
// cycles.
const raceAllowance = 16 << 20
