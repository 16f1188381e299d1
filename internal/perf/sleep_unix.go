//go:build unix

package perf

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d with nanosleep(2), as
// perf_analyzer's std::this_thread::sleep_for does: Go's timers wake a
// parked runtime up to a millisecond late (netpoll waits in whole
// milliseconds), nanosleep within tens of microseconds.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
