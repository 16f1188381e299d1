//go:build !unix

package perf

import "time"

// nanosleep is time.Sleep where nanosleep(2) is not available.
func nanosleep(d time.Duration) { time.Sleep(d) }
