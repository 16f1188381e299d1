package torchrun

// Live is live, for the tests' leak check.
func Live() int { return live() }
