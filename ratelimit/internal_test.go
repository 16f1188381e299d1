package ratelimit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// TestCancelRaces drives the two races Acquire resolves after its context
// ends: the grant or Close arriving after ctx.Done was chosen. Both events
// are made under the lock, after cancel, so the waiter's select has
// already taken the ctx case when they land.
func TestCancelRaces(t *testing.T) {
	tests := []struct {
		name    string
		event   func(l *Limiter, holder *Client)
		wantErr error
	}{{
		name: "granted after cancel gives the grant back",
		event: func(l *Limiter, holder *Client) {
			l.releaseLocked(holder)
			l.dispatchLocked()
		},
		wantErr: context.Canceled,
	}, {
		name:    "closed after cancel",
		event:   func(l *Limiter, _ *Client) { l.closeLocked() },
		wantErr: ErrClosed,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _ := New(Config{})
				defer l.Close()
				holder, _ := l.Register(Instance{Resources: []Resource{{Name: "R", Count: 1}}})
				w, _ := l.Register(Instance{Priority: 3, Resources: []Resource{{Name: "R", Count: 1}}})
				if err := holder.Acquire(t.Context()); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- w.Acquire(ctx) }()
				synctest.Wait()

				l.mu.Lock()
				passBefore := w.pass
				cancel()
				tt.event(l, holder)
				l.mu.Unlock()

				if err := <-done; !errors.Is(err, tt.wantErr) {
					t.Fatalf("Acquire = %v, want %v", err, tt.wantErr)
				}
				l.mu.Lock()
				defer l.mu.Unlock()
				if w.state != idle || w.pass != passBefore || len(w.wake) != 0 {
					t.Errorf("client left in state %d, pass %d (was %d), %d pending wakes", w.state, w.pass, passBefore, len(w.wake))
				}
				want := uint32(0)
				if holder.state == holding {
					want = 1
				}
				if got := w.needs[0].p.inUse; got != want || l.holding != int(want) {
					t.Errorf("pool in use %d, %d holding; want %d (the holder's only)", got, l.holding, want)
				}
			})
		})
	}
}

// TestWaitersCapacity checks that Register leaves room for every client to
// wait, so that enqueueing never allocates.
func TestWaitersCapacity(t *testing.T) {
	l, _ := New(Config{})
	var cs []*Client
	for i := range 33 {
		c, err := l.Register(Instance{Resources: []Resource{{Name: "R", Count: uint32(i%3 + 1)}}})
		if err != nil {
			t.Fatal(err)
		}
		if cap(l.waiters) < len(l.clients) {
			t.Fatalf("waiters capacity %d < %d clients", cap(l.waiters), len(l.clients))
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		c.Unregister()
	}
	if len(l.pools) != 0 || len(l.clients) != 0 {
		t.Fatalf("pools %v, clients %d left after unregistering all", l.pools, len(l.clients))
	}
}

func TestBefore(t *testing.T) {
	tests := []struct {
		a, b uint64
		want bool
	}{
		{1, 2, true},
		{2, 1, false},
		{5, 5, false},
		{^uint64(0), 0, true}, // wrapped: max is just before 0
		{0, ^uint64(0), false},
	}
	for _, tt := range tests {
		if got := before(tt.a, tt.b); got != tt.want {
			t.Errorf("before(%d, %d) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
