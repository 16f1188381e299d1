package ratelimit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton/ratelimit"
)

// TestStress runs 16 goroutines, each cycling through 8 clients of its own
// 1000 times, over overlapping per-device and global resources with fixed
// limits, and checks inside every critical section that no pool holds more
// than its limit.
func TestStress(t *testing.T) {
	const goroutines, clientsEach = 16, 8
	cycles := 1000
	if testing.Short() {
		cycles = 100
	}
	limits := map[string]uint32{"a": 3, "b": 2, "c": 4, "g": 3}
	var cfg ratelimit.Config
	for name, n := range limits {
		cfg.Limits = append(cfg.Limits, ratelimit.Limit{Name: strings.ToUpper(name), Count: n, Device: -1})
	}
	l, err := ratelimit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	// inUse counts, per pool, what the clients inside their critical
	// sections hold. Pools: "a@0", "a@1", …, "g" (global).
	inUse := map[string]*atomic.Int64{}
	for name := range limits {
		if name == "g" {
			inUse[name] = new(atomic.Int64)
			continue
		}
		for d := range 2 {
			inUse[fmt.Sprintf("%s@%d", name, d)] = new(atomic.Int64)
		}
	}
	type held struct {
		counter *atomic.Int64
		n       int64
		limit   int64
	}
	type client struct {
		c     *ratelimit.Client
		holds []held
	}
	rng := rand.New(rand.NewPCG(1, 2))
	clients := make([][]client, goroutines)
	for g := range goroutines {
		for range clientsEach {
			device := rng.IntN(2)
			inst := ratelimit.Instance{Device: device, Priority: uint32(rng.IntN(4))}
			var cl client
			for name, limit := range limits {
				if rng.IntN(2) == 0 {
					continue
				}
				n := uint32(1 + rng.IntN(int(min(limit, 2))))
				key := fmt.Sprintf("%s@%d", name, device)
				if name == "g" {
					key = "g"
				}
				inst.Resources = append(inst.Resources, ratelimit.Resource{Name: name, Count: n, Global: name == "g"})
				cl.holds = append(cl.holds, held{inUse[key], int64(n), int64(limit)})
			}
			cl.c = register(t, l, inst)
			clients[g] = append(clients[g], cl)
		}
	}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range cycles * clientsEach {
				cl := clients[g][i%clientsEach]
				if err := cl.c.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				for _, h := range cl.holds {
					if v := h.counter.Add(h.n); v > h.limit {
						t.Errorf("pool holds %d, limit %d", v, h.limit)
					}
				}
				runtime.Gosched() // let other holders overlap this one
				for _, h := range cl.holds {
					h.counter.Add(-h.n)
				}
				cl.c.Release()
			}
		})
	}
	wg.Wait()

	s := l.Snapshot()
	if s.Waiting != 0 || s.Holding != 0 || s.Clients != goroutines*clientsEach {
		t.Errorf("snapshot %+v", s)
	}
	for _, r := range s.Resources {
		if r.InUse != 0 || r.Available != limits[strings.ToLower(r.Name)] {
			t.Errorf("pool %+v after the run", r)
		}
	}
}
