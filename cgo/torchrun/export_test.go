package torchrun

// Live is live, for the tests' leak check.
func Live() int { return live() }

// Workers is workers, for the tests' leak check.
func Workers() int { return workers() }
