package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/triton-go/triton/ratelimit"
)

// res is shorthand for a per-device resource.
func res(name string, count uint32) ratelimit.Resource {
	return ratelimit.Resource{Name: name, Count: count}
}

// global is shorthand for a global resource.
func global(name string, count uint32) ratelimit.Resource {
	return ratelimit.Resource{Name: name, Count: count, Global: true}
}

func newLimiter(t *testing.T, limits ...ratelimit.Limit) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(ratelimit.Config{Limits: limits})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func register(t *testing.T, l *ratelimit.Limiter, inst ratelimit.Instance) *ratelimit.Client {
	t.Helper()
	c, err := l.Register(inst)
	if err != nil {
		t.Fatalf("Register(%+v): %v", inst, err)
	}
	return c
}

// pending is an Acquire running in its own goroutine.
type pending struct {
	done chan error
}

// acquireAsync starts c.Acquire(ctx) in a goroutine. Inside a synctest
// bubble, call synctest.Wait before asking whether it finished.
func acquireAsync(ctx context.Context, c *ratelimit.Client) *pending {
	p := &pending{done: make(chan error, 1)}
	go func() { p.done <- c.Acquire(ctx) }()
	return p
}

// result returns Acquire's error and true if it has returned.
func (p *pending) result() (error, bool) {
	select {
	case err := <-p.done:
		return err, true
	default:
		return nil, false
	}
}

func mustGranted(t *testing.T, p *pending) {
	t.Helper()
	err, ok := p.result()
	if !ok {
		t.Fatal("Acquire still waiting, want granted")
	}
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
}

func mustWaiting(t *testing.T, p *pending) {
	t.Helper()
	if err, ok := p.result(); ok {
		t.Fatalf("Acquire returned %v, want it waiting", err)
	}
}

// stat returns the pool (name, device) of a snapshot; device -1 for global.
func stat(t *testing.T, l *ratelimit.Limiter, name string, device int) ratelimit.ResourceStats {
	t.Helper()
	for _, r := range l.Snapshot().Resources {
		if strings.EqualFold(r.Name, name) && r.Device == device {
			return r
		}
	}
	t.Fatalf("no pool %q on device %d in %+v", name, device, l.Snapshot().Resources)
	return ratelimit.ResourceStats{}
}

func TestAvailableCounts(t *testing.T) {
	type pool struct {
		name    string
		device  int // -1: global
		avail   uint32
		limited bool
	}
	tests := []struct {
		name   string
		limits []ratelimit.Limit
		insts  []ratelimit.Instance
		want   []pool
	}{{
		name: "default is the largest ask",
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{res("R", 2)}},
			{Device: 0, Resources: []ratelimit.Resource{res("R", 3)}},
		},
		want: []pool{{"R", 0, 3, false}},
	}, {
		name: "per-device pools are separate",
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{res("R", 2)}},
			{Device: 1, Resources: []ratelimit.Resource{res("R", 3)}},
		},
		want: []pool{{"R", 0, 2, false}, {"R", 1, 3, false}},
	}, {
		name: "a global pool spans devices",
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{global("G", 2)}},
			{Device: 1, Resources: []ratelimit.Resource{global("G", 3)}},
		},
		want: []pool{{"G", -1, 3, false}},
	}, {
		name: "names are case-insensitive",
		insts: []ratelimit.Instance{
			{Resources: []ratelimit.Resource{res("r1", 2)}},
			{Resources: []ratelimit.Resource{res("R1", 3)}},
		},
		want: []pool{{"r1", 0, 3, false}},
	}, {
		name:   "a limit for every device",
		limits: []ratelimit.Limit{{Name: "R", Count: 8, Device: -1}},
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{res("R", 2)}},
			{Device: 1, Resources: []ratelimit.Resource{res("R", 1)}},
		},
		want: []pool{{"R", 0, 8, true}, {"R", 1, 8, true}},
	}, {
		name:   "a device-specific limit applies to its device only",
		limits: []ratelimit.Limit{{Name: "R", Count: 5, Device: 1}},
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{res("R", 2)}},
			{Device: 1, Resources: []ratelimit.Resource{res("R", 1)}},
		},
		want: []pool{{"R", 0, 2, false}, {"R", 1, 5, true}},
	}, {
		name: "device-specific and every-device limits: the larger applies",
		limits: []ratelimit.Limit{
			{Name: "R", Count: 5, Device: -1},
			{Name: "R", Count: 10, Device: 1},
			{Name: "R", Count: 3, Device: 2},
		},
		insts: []ratelimit.Instance{
			{Device: 0, Resources: []ratelimit.Resource{res("R", 1)}},
			{Device: 1, Resources: []ratelimit.Resource{res("R", 1)}},
			{Device: 2, Resources: []ratelimit.Resource{res("R", 1)}},
		},
		want: []pool{{"R", 0, 5, true}, {"R", 1, 10, true}, {"R", 2, 5, true}},
	}, {
		name:   "limit names are case-insensitive",
		limits: []ratelimit.Limit{{Name: "gpu_mem", Count: 6, Device: -1}},
		insts:  []ratelimit.Instance{{Resources: []ratelimit.Resource{res("GPU_MEM", 2)}}},
		want:   []pool{{"GPU_MEM", 0, 6, true}},
	}, {
		name:   "a global resource ignores the limit's device",
		limits: []ratelimit.Limit{{Name: "G", Count: 4, Device: 3}},
		insts:  []ratelimit.Instance{{Device: 0, Resources: []ratelimit.Resource{global("G", 1)}}},
		want:   []pool{{"G", -1, 4, true}},
	}, {
		name:   "resources without a limit keep their default",
		limits: []ratelimit.Limit{{Name: "X", Count: 1, Device: -1}},
		insts:  []ratelimit.Instance{{Resources: []ratelimit.Resource{res("R", 2), global("G", 7)}}},
		want:   []pool{{"G", -1, 7, false}, {"R", 0, 2, false}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, tt.limits...)
			for _, inst := range tt.insts {
				register(t, l, inst)
			}
			var got []pool
			for _, r := range l.Snapshot().Resources {
				if r.InUse != 0 || r.Global != (r.Device == -1) {
					t.Errorf("inconsistent stats %+v", r)
				}
				got = append(got, pool{r.Name, r.Device, r.Available, r.Limited})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("pools = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("pool %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		limits []ratelimit.Limit
		want   string
	}{
		{"empty name", []ratelimit.Limit{{Name: "", Count: 1}}, "empty resource name"},
		{"duplicate", []ratelimit.Limit{{Name: "R", Count: 1, Device: 0}, {Name: "r", Count: 2, Device: 0}}, `"r" is limited twice on device 0`},
		{"duplicate every-device", []ratelimit.Limit{{Name: "R", Count: 1, Device: -1}, {Name: "R", Count: 2, Device: -7}}, "limited twice for every device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ratelimit.New(ratelimit.Config{Limits: tt.limits})
			if !errors.Is(err, ratelimit.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
	if _, err := ratelimit.New(ratelimit.Config{Limits: []ratelimit.Limit{
		{Name: "R", Count: 1, Device: 0}, {Name: "R", Count: 1, Device: 1}, {Name: "R", Count: 1, Device: -1},
	}}); err != nil {
		t.Errorf("New with one limit per device: %v", err)
	}
}

func TestRegisterErrors(t *testing.T) {
	tests := []struct {
		name     string
		limits   []ratelimit.Limit
		existing []ratelimit.Instance
		inst     ratelimit.Instance
		want     []string // substrings of the error; nil means success
	}{{
		name:   "ask above a device limit",
		limits: []ratelimit.Limit{{Name: "R", Count: 2, Device: 0}},
		inst:   ratelimit.Instance{Name: "m_0", Device: 0, Resources: []ratelimit.Resource{res("r", 3)}},
		want:   []string{`instance "m_0" asks for 3 of resource "r"`, "limited to 2 on device 0", "could never run"},
	}, {
		name:   "a device limit does not bind other devices",
		limits: []ratelimit.Limit{{Name: "R", Count: 2, Device: 0}},
		inst:   ratelimit.Instance{Device: 1, Resources: []ratelimit.Resource{res("R", 3)}},
	}, {
		name:   "ask above an every-device limit",
		limits: []ratelimit.Limit{{Name: "R", Count: 2, Device: -1}},
		inst:   ratelimit.Instance{Device: 5, Resources: []ratelimit.Resource{res("R", 3)}},
		want:   []string{"an unnamed instance asks for 3", "limited to 2 on device 5"},
	}, {
		name:   "ask above a global limit",
		limits: []ratelimit.Limit{{Name: "G", Count: 1, Device: 2}},
		inst:   ratelimit.Instance{Name: "g", Resources: []ratelimit.Resource{global("G", 2)}},
		want:   []string{"limited to 1 process-wide"},
	}, {
		name:     "per-device after global",
		existing: []ratelimit.Instance{{Name: "a_0", Resources: []ratelimit.Resource{global("R1", 1)}}},
		inst:     ratelimit.Instance{Name: "b_0", Device: 1, Resources: []ratelimit.Resource{res("r1", 1)}},
		want:     []string{`resource "r1" is global for instance "a_0" but per-device for instance "b_0"`},
	}, {
		name:     "global after per-device",
		existing: []ratelimit.Instance{{Name: "a_0", Resources: []ratelimit.Resource{res("R1", 1)}}},
		inst:     ratelimit.Instance{Name: "b_0", Resources: []ratelimit.Resource{res("X", 1), global("R1", 1)}},
		want:     []string{`resource "R1" is global for instance "b_0" but per-device for instance "a_0"`},
	}, {
		name: "negative device",
		inst: ratelimit.Instance{Name: "n", Device: -1},
		want: []string{`instance "n": negative device -1`},
	}, {
		name: "empty resource name",
		inst: ratelimit.Instance{Resources: []ratelimit.Resource{res("", 1)}},
		want: []string{"resource with an empty name"},
	}, {
		name: "resource listed twice",
		inst: ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1), global("r", 1)}},
		want: []string{`resource "r" is listed twice`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, tt.limits...)
			for _, inst := range tt.existing {
				register(t, l, inst)
			}
			before := l.Snapshot()
			c, err := l.Register(tt.inst)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				c.Unregister()
				return
			}
			if !errors.Is(err, ratelimit.ErrInvalid) {
				t.Fatalf("Register: %v, want ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if after := l.Snapshot(); after.Clients != before.Clients || len(after.Resources) != len(before.Resources) {
				t.Errorf("failed Register left state behind: %+v, was %+v", after, before)
			}
		})
	}
}

func TestDefaultsWaitForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		small := register(t, l, ratelimit.Instance{Name: "small", Resources: []ratelimit.Resource{res("R", 2)}})
		big := register(t, l, ratelimit.Instance{Name: "big", Resources: []ratelimit.Resource{res("R", 3)}})
		if got := stat(t, l, "R", 0); got.Available != 3 {
			t.Fatalf("available = %d, want 3", got.Available)
		}
		if err := big.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		p := acquireAsync(t.Context(), small)
		synctest.Wait()
		mustWaiting(t, p)
		if s := l.Snapshot(); s.Waiting != 1 || s.Holding != 1 || s.Resources[0].InUse != 3 {
			t.Fatalf("snapshot %+v", s)
		}
		big.Release()
		synctest.Wait()
		mustGranted(t, p)
		if got := stat(t, l, "R", 0); got.InUse != 2 {
			t.Fatalf("in use = %d, want 2", got.InUse)
		}
		small.Release()
	})
}

func TestDevicesAndGlobal(t *testing.T) {
	tests := []struct {
		name     string
		r        ratelimit.Resource
		devices  [2]int
		wantWait bool
	}{
		{"per-device on different devices", res("R", 1), [2]int{0, 1}, false},
		{"per-device on the same device", res("R", 1), [2]int{1, 1}, true},
		{"global on different devices", global("R", 1), [2]int{0, 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(t)
				defer l.Close()
				a := register(t, l, ratelimit.Instance{Device: tt.devices[0], Resources: []ratelimit.Resource{tt.r}})
				b := register(t, l, ratelimit.Instance{Device: tt.devices[1], Resources: []ratelimit.Resource{tt.r}})
				if err := a.Acquire(t.Context()); err != nil {
					t.Fatal(err)
				}
				p := acquireAsync(t.Context(), b)
				synctest.Wait()
				if tt.wantWait {
					mustWaiting(t, p)
					a.Release()
					synctest.Wait()
					mustGranted(t, p)
				} else {
					mustGranted(t, p)
					a.Release()
				}
				b.Release()
			})
		})
	}
}

func TestLimitsBind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Defaults would give 2 copies; the limit gives 4, so two fit.
		l := newLimiter(t, ratelimit.Limit{Name: "r", Count: 4, Device: -1})
		defer l.Close()
		var cs []*ratelimit.Client
		for range 3 {
			cs = append(cs, register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 2)}}))
		}
		mustNil(t, cs[0].Acquire(t.Context()))
		mustNil(t, cs[1].Acquire(t.Context()))
		p := acquireAsync(t.Context(), cs[2])
		synctest.Wait()
		mustWaiting(t, p)
		cs[0].Release()
		synctest.Wait()
		mustGranted(t, p)
		cs[1].Release()
		cs[2].Release()
	})
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAllOrNothing checks that a client needing several resources is
// granted only when all fit, and never holds part of them meanwhile.
func TestAllOrNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		ab := register(t, l, ratelimit.Instance{Name: "ab", Resources: []ratelimit.Resource{res("A", 1), global("B", 1)}})
		b := register(t, l, ratelimit.Instance{Name: "b", Device: 3, Resources: []ratelimit.Resource{global("B", 1)}})
		a := register(t, l, ratelimit.Instance{Name: "a", Resources: []ratelimit.Resource{res("A", 1)}})

		mustNil(t, b.Acquire(t.Context()))
		p := acquireAsync(t.Context(), ab)
		synctest.Wait()
		mustWaiting(t, p)
		if got := stat(t, l, "A", 0); got.InUse != 0 {
			t.Fatalf("A in use = %d while ab waits for B: partial grant", got.InUse)
		}
		// A is free, so a client needing only A runs (work conservation).
		mustNil(t, a.Acquire(t.Context()))
		b.Release()
		synctest.Wait()
		mustWaiting(t, p) // B is free now, A is not
		if got := stat(t, l, "B", -1); got.InUse != 0 {
			t.Fatalf("B in use = %d while ab waits for A: partial grant", got.InUse)
		}
		a.Release()
		synctest.Wait()
		mustGranted(t, p)
		ab.Release()
	})
}

// TestNoDeadlockAcrossOrders runs two clients that declare the same two
// resources in opposite orders, which deadlocks any limiter that takes
// them one at a time.
func TestNoDeadlockAcrossOrders(t *testing.T) {
	l := newLimiter(t)
	defer l.Close()
	c1 := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("A", 1), res("B", 1)}})
	c2 := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("B", 1), res("A", 1)}})
	var wg sync.WaitGroup
	for _, c := range []*ratelimit.Client{c1, c2} {
		wg.Go(func() {
			for range 2000 {
				if err := c.Acquire(context.Background()); err != nil {
					t.Error(err)
					return
				}
				c.Release()
			}
		})
	}
	wg.Wait()
}

func TestCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		holder := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		w := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		mustNil(t, holder.Acquire(t.Context()))
		before := l.Snapshot()

		ctx, cancel := context.WithCancel(t.Context())
		p := acquireAsync(ctx, w)
		synctest.Wait()
		mustWaiting(t, p)
		cancel()
		synctest.Wait()
		err, ok := p.result()
		if !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v (returned %v), want context.Canceled", err, ok)
		}
		if after := l.Snapshot(); after.Waiting != 0 || after.Holding != 1 || after.Resources[0] != before.Resources[0] {
			t.Fatalf("state after cancel %+v, want %+v", after, before)
		}

		// A deadline behaves the same, and the client is reusable.
		dctx, dcancel := context.WithTimeout(t.Context(), 10)
		defer dcancel()
		if err := w.Acquire(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
		}
		holder.Release()
		mustNil(t, w.Acquire(t.Context()))
		w.Release()
	})
}

func TestAcquireIgnoresCtxWhenFree(t *testing.T) {
	l := newLimiter(t)
	defer l.Close()
	c := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mustNil(t, c.Acquire(ctx))
	c.Release()
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		holder := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		mustNil(t, holder.Acquire(t.Context()))
		var ps []*pending
		for range 3 {
			c := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
			ps = append(ps, acquireAsync(t.Context(), c))
		}
		synctest.Wait()
		for _, p := range ps {
			mustWaiting(t, p)
		}
		l.Close()
		l.Close() // idempotent
		synctest.Wait()
		for i, p := range ps {
			if err, ok := p.result(); !ok || !errors.Is(err, ratelimit.ErrClosed) {
				t.Errorf("waiter %d: Acquire = %v (returned %v), want ErrClosed", i, err, ok)
			}
		}
		if err := holder.Acquire(t.Context()); !errors.Is(err, ratelimit.ErrClosed) {
			t.Errorf("Acquire after Close = %v, want ErrClosed", err)
		}
		if _, err := l.Register(ratelimit.Instance{}); !errors.Is(err, ratelimit.ErrClosed) {
			t.Errorf("Register after Close = %v, want ErrClosed", err)
		}
		holder.Release() // a grant held at Close is still released normally
		if s := l.Snapshot(); s.Waiting != 0 || s.Holding != 0 || s.Resources[0].InUse != 0 {
			t.Errorf("snapshot after Close %+v", s)
		}
	})
}

func TestAcquireTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		a := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		b := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})

		mustNil(t, a.Acquire(t.Context()))
		if err := a.Acquire(t.Context()); err == nil || errors.Is(err, ratelimit.ErrClosed) {
			t.Fatalf("second Acquire while holding = %v, want a usage error", err)
		}
		p := acquireAsync(t.Context(), b)
		synctest.Wait()
		mustWaiting(t, p)
		if err := b.Acquire(t.Context()); err == nil {
			t.Fatal("second Acquire while waiting succeeded")
		}
		a.Release()
		synctest.Wait()
		mustGranted(t, p)
		b.Release()
		if s := l.Snapshot(); s.Holding != 0 || s.Resources[0].InUse != 0 {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

func TestReleaseWithoutGrantPanics(t *testing.T) {
	l := newLimiter(t)
	c := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
	mustNil(t, c.Acquire(context.Background()))
	c.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("second Release did not panic")
		}
	}()
	c.Release()
}

func TestUnregister(t *testing.T) {
	t.Run("recomputes defaults", func(t *testing.T) {
		l := newLimiter(t)
		big := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 3)}})
		small := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 2), global("G", 1)}})
		if got := stat(t, l, "R", 0).Available; got != 3 {
			t.Fatalf("available = %d, want 3", got)
		}
		big.Unregister()
		big.Unregister() // idempotent
		if got := stat(t, l, "R", 0).Available; got != 2 {
			t.Fatalf("available after Unregister = %d, want 2", got)
		}
		if err := big.Acquire(context.Background()); !errors.Is(err, ratelimit.ErrClosed) {
			t.Fatalf("Acquire after Unregister = %v, want ErrClosed", err)
		}
		small.Unregister()
		if s := l.Snapshot(); s.Clients != 0 || len(s.Resources) != 0 {
			t.Fatalf("snapshot after all unregistered %+v", s)
		}
		// With the per-device R gone, R may now be declared global.
		register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{global("R", 1)}})
	})
	t.Run("keeps limits", func(t *testing.T) {
		l := newLimiter(t, ratelimit.Limit{Name: "R", Count: 5, Device: -1})
		a := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 3)}})
		register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		a.Unregister()
		if got := stat(t, l, "R", 0); got.Available != 5 || !got.Limited {
			t.Fatalf("stats %+v, want the limit of 5", got)
		}
	})
	t.Run("wakes its waiting Acquire", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			defer l.Close()
			holder := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
			w := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
			mustNil(t, holder.Acquire(t.Context()))
			p := acquireAsync(t.Context(), w)
			synctest.Wait()
			w.Unregister()
			synctest.Wait()
			if err, ok := p.result(); !ok || !errors.Is(err, ratelimit.ErrClosed) {
				t.Fatalf("Acquire = %v (returned %v), want ErrClosed", err, ok)
			}
			holder.Release()
		})
	})
	t.Run("while holding keeps the resources until Release", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLimiter(t)
			defer l.Close()
			a := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 2)}})
			mustNil(t, a.Acquire(t.Context()))
			a.Unregister()
			if got := stat(t, l, "R", 0); got.InUse != 2 || got.Available != 0 {
				t.Fatalf("stats %+v, want 2 in use of 0", got)
			}
			b := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
			p := acquireAsync(t.Context(), b)
			synctest.Wait()
			mustWaiting(t, p) // 2 in use of 1
			a.Release()
			synctest.Wait()
			mustGranted(t, p)
			b.Release()
			b.Unregister()
			if s := l.Snapshot(); len(s.Resources) != 0 || s.Holding != 0 {
				t.Fatalf("snapshot %+v, want empty", s)
			}
		})
	})
}

// TestRegisterRaisesDefaults checks that a waiter is granted when a new
// instance raises a default count.
func TestRegisterRaisesDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t)
		defer l.Close()
		a := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		b := register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 1)}})
		mustNil(t, a.Acquire(t.Context()))
		p := acquireAsync(t.Context(), b)
		synctest.Wait()
		mustWaiting(t, p)
		register(t, l, ratelimit.Instance{Resources: []ratelimit.Resource{res("R", 2)}})
		synctest.Wait()
		mustGranted(t, p)
		a.Release()
		b.Release()
	})
}
