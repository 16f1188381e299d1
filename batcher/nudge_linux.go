//go:build linux

package batcher

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// nudge makes a Go timer of the scheduler fire on time when the process is
// otherwise idle. With every P idle, the runtime sleeps in epoll_wait,
// whose timeout is whole milliseconds: a 100 µs queue delay then lasted
// about 1.1 ms. A timerfd armed for the same moment and registered with
// the runtime's poller (os.NewFile of a non-blocking descriptor; nothing
// ever reads it) ends that sleep at the moment itself, and the runtime
// then runs the timers that are due. The Go timer stays the one that
// counts, so synctest's fake clock works as before: a nudge in a bubble
// only wakes the poller for nothing.
type nudge struct {
	fd   int
	file *os.File // owns fd and keeps it registered with the poller
}

// newNudge returns a nudge, or nil where no timerfd can be made (the
// timers then keep the runtime's precision).
func newNudge() *nudge {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &nudge{fd: fd, file: os.NewFile(uintptr(fd), "batcher-nudge")}
}

// at arms the nudge for d from now (a Go timer was just armed for the
// same d, so it is due when the nudge fires). Only the scheduler goroutine
// calls it, and never after close.
func (n *nudge) at(d time.Duration) {
	if n == nil {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	_ = unix.TimerfdSettime(n.fd, 0, &spec, nil) // a failure only costs precision
}

func (n *nudge) close() {
	if n != nil {
		_ = n.file.Close()
	}
}
