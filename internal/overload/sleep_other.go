//go:build !linux

package overload

import "time"

// PreciseSleep pauses the calling goroutine for at least d. On Linux it
// wakes within some tens of microseconds of d (see the Linux build); here
// it is time.Sleep.
func PreciseSleep(d time.Duration) { time.Sleep(d) }
