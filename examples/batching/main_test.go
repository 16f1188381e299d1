package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBatching checks that concurrent callers are served in batches larger
// than one with dynamic batching, and one by one without.
func TestBatching(t *testing.T) {
	largest := func(out string) int {
		best := 0
		for _, m := range regexp.MustCompile(`batches of +(\d+)`).FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[1])
			best = max(best, n)
		}
		return best
	}
	var with, without bytes.Buffer
	if err := run(&with, "dynamic_batching { max_queue_delay_microseconds: 500 }", 16, 5); err != nil {
		t.Fatal(err)
	}
	if err := run(&without, "", 16, 5); err != nil {
		t.Fatal(err)
	}
	if n := largest(with.String()); n < 2 {
		t.Errorf("with dynamic batching the largest batch was %d:\n%s", n, with.String())
	}
	if n := largest(without.String()); n != 1 {
		t.Errorf("without batching the largest batch was %d:\n%s", n, without.String())
	}
}
