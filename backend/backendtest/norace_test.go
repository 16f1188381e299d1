//go:build !race

package backendtest_test

// raceEnabled tells whether the race detector is on: a fault that is a
// data race by nature (writing to shared inputs) is then not run.
const raceEnabled = false
