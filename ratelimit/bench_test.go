package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton/ratelimit"
)

// TestAcquireReleaseAllocs is the allocation budget of the hot path: an
// uncontended Acquire and Release allocate nothing.
func TestAcquireReleaseAllocs(t *testing.T) {
	l := newLimiter(t)
	defer l.Close()
	c := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 2), global("G", 1)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := testing.AllocsPerRun(1000, func() {
		if err := c.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		c.Release()
	}); n != 0 {
		t.Fatalf("Acquire+Release allocates %v times, want 0", n)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("uncontended", func(b *testing.B) {
		l, _ := ratelimit.New(ratelimit.Config{})
		defer l.Close()
		c, _ := l.Register(ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Acquire(ctx); err != nil {
				b.Fatal(err)
			}
			c.Release()
		}
	})
	// contended: 8 goroutines, each with its own client, share 4 copies of
	// R (plus a global resource), so about half of them wait at any time.
	for _, prios := range []string{"equal", "mixed"} {
		b.Run(fmt.Sprintf("contended-8/%s-priority", prios), func(b *testing.B) {
			const goroutines = 8
			l, _ := ratelimit.New(ratelimit.Config{Limits: []ratelimit.Limit{{Name: "R", Count: 4, Device: -1}}})
			defer l.Close()
			var clients []*ratelimit.Client
			for i := range goroutines {
				p := uint32(1)
				if prios == "mixed" {
					p = uint32(1 + i%3)
				}
				c, _ := l.Register(ratelimit.Instance{Priority: p, Resources: []ratelimit.Resource{res("R", 1), global("G", 1)}})
				clients = append(clients, c)
			}
			ctx := context.Background()
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := c.Acquire(ctx); err != nil {
							b.Error(err)
							return
						}
						c.Release()
					}
				})
			}
			wg.Wait()
		})
	}
}
