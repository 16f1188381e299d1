package batcher

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestOrder: items are released in ticket order whatever order they are
// handed in, skipped tickets release nothing and hold nothing up.
func TestOrder(t *testing.T) {
	for _, c := range []struct {
		name  string
		order []uint64 // tickets in the order they are handed in
		skip  []uint64
		want  [][]uint64 // what each hand-in releases
	}{
		{"in order", []uint64{1, 2, 3}, nil, [][]uint64{{1}, {2}, {3}}},
		{"reversed", []uint64{3, 2, 1}, nil, [][]uint64{nil, nil, {1, 2, 3}}},
		{"mixed", []uint64{2, 1, 4, 5, 3}, nil, [][]uint64{nil, {1, 2}, nil, nil, {3, 4, 5}}},
		{"skips", []uint64{3, 2, 1, 5, 4}, []uint64{2, 4}, [][]uint64{nil, nil, {1, 3}, nil, {5}}},
		{"skip first", []uint64{2, 1}, []uint64{1}, [][]uint64{nil, {2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var released []uint64
			o := NewOrder(func(v uint64) { released = append(released, v) })
			for range c.order {
				o.Issue()
			}
			for i, ticket := range c.order {
				released = nil
				if slices.Contains(c.skip, ticket) {
					o.Skip(ticket)
				} else {
					o.Done(ticket, ticket)
				}
				if !slices.Equal(released, c.want[i]) {
					t.Errorf("handing in %d released %v, want %v", ticket, released, c.want[i])
				}
			}
			if n := o.Held(); n != 0 {
				t.Errorf("%d items still held", n)
			}
		})
	}
}

// TestOrderConcurrent: tickets handed in from many goroutines in random
// order come out exactly once each, in order.
func TestOrderConcurrent(t *testing.T) {
	const n = 2000
	var mu sync.Mutex
	var out []uint64
	o := NewOrder(func(v uint64) {
		mu.Lock() // release runs under the Order's lock; this one is for the race detector's view of out
		out = append(out, v)
		mu.Unlock()
	})
	tickets := make([]uint64, n)
	for i := range tickets {
		tickets[i] = o.Issue()
	}
	rand.Shuffle(n, func(i, j int) { tickets[i], tickets[j] = tickets[j], tickets[i] })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if tickets[i]%7 == 0 {
					o.Skip(tickets[i])
				} else {
					o.Done(tickets[i], tickets[i])
				}
			}
		})
	}
	wg.Wait()
	var want []uint64
	for v := uint64(1); v <= n; v++ {
		if v%7 != 0 {
			want = append(want, v)
		}
	}
	if !slices.Equal(out, want) {
		t.Errorf("released %d items out of order or not exactly once", len(out))
	}
}
