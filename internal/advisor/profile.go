package advisor

import (
	"slices"
	"time"
)

// Profile is where the search starts: the batch sizes of the latency
// curve, the queue delays tried, and the delay the curve is measured
// with. The three profiles and the rules that choose one are ours (see
// the package documentation); NVIDIA's field guide has a table of the
// same kind that we did not have at hand.
type Profile struct {
	// Name is "real-time", "online" or "offline".
	Name string
	// Batches are the batch sizes of the curve, ascending, each > 1.
	Batches []int
	// Delays are the max_queue_delay_microseconds values tried,
	// ascending; Delay, one of them, is the curve's.
	Delays []time.Duration
	Delay  time.Duration
	// Why says how the profile was chosen.
	Why string
}

// The profiles, from the tightest budget to none.
var (
	realTime = Profile{
		Name:    "real-time",
		Batches: []int{2, 4, 8},
		Delays:  []time.Duration{0, 50 * time.Microsecond, 100 * time.Microsecond},
		Delay:   100 * time.Microsecond,
	}
	online = Profile{
		Name:    "online",
		Batches: []int{2, 4, 8, 16, 32},
		Delays:  []time.Duration{500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond},
		Delay:   time.Millisecond,
	}
	offline = Profile{
		Name:    "offline",
		Batches: []int{2, 4, 8, 16, 32, 64, 128},
		Delays:  []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond},
		Delay:   10 * time.Millisecond,
	}
	profiles = []Profile{realTime, online, offline}
)

// Budget limits of the profiles: below realTimeBelow the budget is
// real-time, below offlineFrom online, else (or without a budget)
// offline.
const (
	realTimeBelow = 10 * time.Millisecond
	offlineFrom   = 200 * time.Millisecond
)

// ChooseProfile picks the profile for a budget, given alone, the model's
// latency (in the budget's statistic) at concurrency 1 with its own
// configuration. The budget picks the profile; a model that alone takes
// more than a quarter of the budget leaves little room for queueing, so
// the profile moves one step toward real-time. Delays over a quarter of
// the budget are dropped (0 stays when none is left).
func ChooseProfile(b Budget, alone time.Duration) Profile {
	i := 2
	why := "no latency budget: throughput first"
	switch {
	case b.Limit == 0:
	case b.Limit < realTimeBelow:
		i, why = 0, "budget under "+formatDuration(realTimeBelow)
	case b.Limit < offlineFrom:
		i, why = 1, "budget from "+formatDuration(realTimeBelow)+" to "+formatDuration(offlineFrom)
	default:
		why = "budget of " + formatDuration(offlineFrom) + " or more"
	}
	if b.Limit > 0 && i > 0 && alone > b.Limit/4 {
		i--
		why += "; one step down, as the model alone takes " + formatMS(alone) + " ms, over a quarter of the budget"
	}
	p := profiles[i]
	p.Batches = slices.Clone(p.Batches)
	p.Delays = slices.Clone(p.Delays)
	p.Why = why
	if b.Limit > 0 {
		p.Delays = slices.DeleteFunc(p.Delays, func(d time.Duration) bool { return d > b.Limit/4 })
		if len(p.Delays) == 0 {
			p.Delays = []time.Duration{0}
		}
		if !slices.Contains(p.Delays, p.Delay) {
			p.Delay = p.Delays[len(p.Delays)-1]
		}
	}
	return p
}
