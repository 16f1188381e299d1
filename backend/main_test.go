package backend_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
