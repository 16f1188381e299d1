//go:build race

package pytorch_test

// raceAllowance is what TestLoadEvictCycles adds to its allowance under
// the race detector, whose own memory (the state it keeps for the
// goroutines every load starts) grows by some 11 MiB from the 100th cycle
// to the 1000th, and by about 1 MiB a 1000 cycles after that.
const raceAllowance = 16 << 20
