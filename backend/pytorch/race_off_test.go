//go:build !race

package pytorch_test

// raceAllowance is 0 without the race detector (race_on_test.go).
const raceAllowance = 0
