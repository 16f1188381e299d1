//go:build linux

package batcher

import (
	"os"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"
)

// TestNudgeArms: at arms the timerfd for the duration asked.
func TestNudgeArms(t *testing.T) {
	n := newNudge()
	if n == nil {
		t.Fatal("no timerfd")
	}
	defer n.close()
	n.at(time.Hour)
	var cur unix.ItimerSpec
	if err := unix.TimerfdGettime(n.fd, &cur); err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(cur.Value.Nano()); left <= 59*time.Minute || left > time.Hour || cur.Interval.Nano() != 0 {
		t.Errorf("armed for %v every %v, want just under an hour, once", left, time.Duration(cur.Interval.Nano()))
	}
}

// TestNudgeClosedWithBatcher: each batcher that waited out a delay (and so
// made its nudge) closes the nudge's descriptor when it closes.
func TestNudgeClosedWithBatcher(t *testing.T) {
	openFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(ents)
	}
	before := openFDs()
	synctest.Test(t, func(t *testing.T) {
		for i := range 20 {
			h := newHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: time.Hour})
			h.idle <- 0
			h.add(i, 1, 0, 0, 0)
			synctest.Wait() // the scheduler waits for the delay: its nudge is armed
			h.d.Close()
		}
	})
	if after := openFDs(); after >= before+10 {
		t.Errorf("%d descriptors open after 20 batchers came and went, %d before", after, before)
	}
}
