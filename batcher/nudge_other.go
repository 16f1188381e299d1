//go:build !linux

package batcher

import "time"

// nudge is a no-op where there is no timerfd: the scheduler's timers keep
// the runtime's own precision.
type nudge struct{}

func newNudge() *nudge              { return nil }
func (n *nudge) at(d time.Duration) {}
func (n *nudge) close()             {}
