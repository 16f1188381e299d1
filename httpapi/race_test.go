//go:build race

package httpapi

// raceEnabled tells whether the race detector is on: it drops pooled
// values at random, so allocation budgets do not hold under it.
const raceEnabled = true
