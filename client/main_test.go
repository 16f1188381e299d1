package client_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine of the clients, of the servers the tests start and of
// the tritonserver processes' readers must have stopped when the tests
// end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
