package overload

import (
	"syscall"
	"time"
)

// coarse is the part of a wait left to time.Sleep: all but its last
// coarse span, which nanosleep(2) waits, so that a long wait costs one
// extra system call or two, not a blocked thread throughout.
const coarse = 2 * time.Millisecond

// PreciseSleep pauses the calling goroutine for at least d, as
// time.Sleep does, but wakes within some tens of microseconds of d: on
// Linux the last 2 ms of the wait block the goroutine's thread in
// nanosleep(2), where time.Sleep may wake up to a millisecond late when
// the process is otherwise idle. Elsewhere it is time.Sleep. Safe for
// concurrent use; each caller blocks a thread of its own while it waits,
// as a cgo call into an accelerator's runtime does, so it also serves to
// simulate one.
func PreciseSleep(d time.Duration) {
	end := time.Now().Add(d)
	if d > coarse {
		time.Sleep(d - coarse)
	}
	for {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(left))
		_ = syscall.Nanosleep(&ts, nil) // EINTR (the runtime's signals): the loop measures again
	}
}
