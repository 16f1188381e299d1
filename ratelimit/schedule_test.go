package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton/ratelimit"
)

// TestPriorityShares runs instances of two priorities in a loop, each
// executing for 1ms of fake time, competing for one copy of R, and counts
// the grants each priority gets.
//
// Priority only shows when the limiter has a choice: a client that just
// released is not waiting, so with one instance per side the two simply
// alternate (in Triton too). With two instances per side the limiter
// always chooses among three waiters.
func TestPriorityShares(t *testing.T) {
	tests := []struct {
		name         string
		prioA, prioB uint32
		perSide      int
		lo, hi       float64 // bounds on grants(A) / grants(B)
	}{
		{"1 vs 2", 1, 2, 2, 1.7, 2.3},
		{"0 is 1", 0, 2, 2, 1.7, 2.3},
		{"1 vs 4", 1, 4, 2, 3.4, 4.6},
		{"3 vs 3", 3, 3, 2, 0.85, 1.15},
		{"one instance each alternates", 1, 2, 1, 0.95, 1.05},
	}
	const total = 300
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t, ratelimit.Limit{Name: "R", Count: 1, Device: -1})
				defer l.Close()
				var grants atomic.Int64
				var counts [2]atomic.Int64
				var wg sync.WaitGroup
				for side, prio := range []uint32{tt.prioA, tt.prioB} {
					for range tt.perSide {
						c := register(t, l, ratelimit.Instance{Priority: prio, Resources: []ratelimit.Resource{res("R", 1)}})
						wg.Go(func() {
							for {
								if err := c.Acquire(t.Context()); err != nil {
									t.Error(err)
									return
								}
								if grants.Add(1) > total {
									c.Release()
									return
								}
								counts[side].Add(1)
								time.Sleep(time.Millisecond)
								c.Release()
							}
						})
					}
				}
				wg.Wait()
				a, b := counts[0].Load(), counts[1].Load()
				ratio := float64(a) / float64(b)
				t.Logf("grants: %d vs %d, ratio %.2f", a, b, ratio)
				if a+b != total || ratio < tt.lo || ratio > tt.hi {
					t.Fatalf("grants %d:%d (ratio %.2f), want %d in ratio [%.2f, %.2f]", a, b, ratio, total, tt.lo, tt.hi)
				}
			})
		})
	}
}

// TestWorkConserving checks that a waiter that does not fit does not hold
// back a later one that does.
func TestWorkConserving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		big := register(t, l, ratelimit.Instance{Name: "big", Resources: []ratelimit.Resource{res("R", 3)}})
		s1 := register(t, l, ratelimit.Instance{Name: "s1", Resources: []ratelimit.Resource{res("R", 1)}})
		s2 := register(t, l, ratelimit.Instance{Name: "s2", Resources: []ratelimit.Resource{res("R", 1)}})
		mustNil(t, s1.Acquire(t.Context()))
		pb := acquireAsync(t.Context(), big)
		synctest.Wait()
		mustWaiting(t, pb)
		ps := acquireAsync(t.Context(), s2) // behind big, but fits
		synctest.Wait()
		mustGranted(t, ps)
		s1.Release()
		s2.Release()
		synctest.Wait()
		mustGranted(t, pb)
		big.Release()
	})
}

// TestStarvationBound keeps a pool of 3 partly busy with four small
// clients and checks that a client needing all 3 still gets in, after at
// most 8 skips plus one in-order grant per small client.
func TestStarvationBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, ratelimit.Limit{Name: "R", Count: 3, Device: -1})
		var stop atomic.Bool
		var smallGrants atomic.Int64
		var wg sync.WaitGroup
		for i := range 4 {
			c := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
			hold := time.Duration(1000+300*i) * time.Microsecond // staggered: R is never all free
			wg.Go(func() {
				for !stop.Load() {
					if c.Acquire(t.Context()) != nil {
						return
					}
					smallGrants.Add(1)
					time.Sleep(hold)
					c.Release()
				}
			})
		}
		time.Sleep(50 * time.Millisecond) // warm up: passes spread out
		big := register(t, l, ratelimit.Instance{Name: "big", Resources: []ratelimit.Resource{res("R", 3)}})
		start := smallGrants.Load()
		if err := big.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		skipped := smallGrants.Load() - start
		t.Logf("small grants while big waited: %d", skipped)
		if skipped > 8+4 {
			t.Errorf("big waited through %d small grants, want at most 12", skipped)
		}
		if got := stat(t, l, "R", 0); got.InUse != 3 {
			t.Errorf("in use = %d with big holding, want 3", got.InUse)
		}
		big.Release()
		stop.Store(true)
		l.Close()
		wg.Wait()
	})
}
