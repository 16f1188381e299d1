package batcher

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type item struct {
	id    int
	rows  int64
	shape int
	err   error     // what Expired reports
	due   time.Time // what Deadline reports
}

// harness runs a Dynamic over items, recording dispatched batches and
// dropped items. Instances come back only when the test says so (free).
type harness struct {
	t    *testing.T
	d    *Dynamic[*item, int]
	idle chan int

	mu      sync.Mutex
	batches [][]int
	insts   []int
	queued  [][]int // batches handed to Env.Queue, each ending with its instance
	dropped map[int]error
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, idle: make(chan int, 8), dropped: map[int]error{}}
	env := Env[*item, int]{
		Size:       func(it *item) int64 { return it.rows },
		Compatible: func(a, b *item) bool { return a.shape == b.shape },
		Expired:    func(it *item) error { return it.err },
		Deadline:   func(it *item) time.Time { return it.due },
		Drop: func(it *item, err error) {
			h.mu.Lock()
			h.dropped[it.id] = err
			h.mu.Unlock()
		},
		Dispatch: func(inst int, batch []*item) {
			ids := make([]int, len(batch))
			for i, it := range batch {
				ids[i] = it.id
			}
			h.mu.Lock()
			h.batches = append(h.batches, ids)
			h.insts = append(h.insts, inst)
			h.mu.Unlock()
		},
		Queue: func(inst int, batch []*item) {
			ids := make([]int, 0, len(batch)+1)
			for _, it := range batch {
				ids = append(ids, it.id)
			}
			h.mu.Lock()
			h.queued = append(h.queued, append(ids, inst))
			h.mu.Unlock()
		},
	}
	d, err := NewDynamic(cfg, env, h.idle)
	if err != nil {
		t.Fatal(err)
	}
	h.d = d
	t.Cleanup(d.Close)
	return h
}

func (h *harness) add(id int, rows int64, shape, prio int, timeout time.Duration) *Node[*item] {
	h.t.Helper()
	n := new(Node[*item])
	if err := h.d.Enqueue(n, &item{id: id, rows: rows, shape: shape}, prio, timeout); err != nil {
		h.t.Fatalf("enqueue %d: %v", id, err)
	}
	return n
}

// free makes instance inst available and lets the batcher react.
func (h *harness) free(inst int) {
	h.idle <- inst
	synctest.Wait()
}

func (h *harness) want(batches ...[]int) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.EqualFunc(h.batches, batches, slices.Equal) {
		h.t.Fatalf("batches %v, want %v", h.batches, batches)
	}
}

// drop returns how many items were dropped and the error an item was
// dropped with (nil if it was not).
func (h *harness) dropErr(id int) error { _, err := h.drop(id); return err }

func (h *harness) dropCount() int { n, _ := h.drop(-1); return n }

func (h *harness) drop(id int) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.dropped), h.dropped[id]
}

func TestFormation(t *testing.T) {
	type arrival struct {
		at          time.Duration // after the start
		id          int
		rows        int64
		shape, prio int
	}
	cases := []struct {
		name     string
		cfg      Config
		arrivals []arrival
		freeAt   []time.Duration // when an instance becomes free (each used once)
		want     [][]int
	}{
		{
			name:     "no delay takes everything up to the max",
			cfg:      Config{MaxBatchSize: 4},
			arrivals: []arrival{{0, 1, 1, 0, 0}, {0, 2, 1, 0, 0}, {0, 3, 1, 0, 0}, {0, 4, 1, 0, 0}, {0, 5, 1, 0, 0}, {0, 6, 1, 0, 0}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond},
			want:     [][]int{{1, 2, 3, 4}, {5, 6}},
		},
		{
			name:     "rows count toward the limit",
			cfg:      Config{MaxBatchSize: 4},
			arrivals: []arrival{{0, 1, 3, 0, 0}, {0, 2, 2, 0, 0}, {0, 3, 2, 0, 0}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond},
			want:     [][]int{{1}, {2, 3}},
		},
		{
			name:     "shapes must match",
			cfg:      Config{MaxBatchSize: 8},
			arrivals: []arrival{{0, 1, 1, 7, 0}, {0, 2, 1, 7, 0}, {0, 3, 1, 9, 0}, {0, 4, 1, 7, 0}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond},
			want:     [][]int{{1, 2}, {3}, {4}},
		},
		{
			name:     "the largest reachable preferred size goes at once",
			cfg:      Config{MaxBatchSize: 8, PreferredSizes: []int64{2, 4}, MaxQueueDelay: time.Second},
			arrivals: []arrival{{0, 1, 1, 0, 0}, {0, 2, 1, 0, 0}, {0, 3, 1, 0, 0}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond},
			// 3 rows reach preferred 2 but not 4: [1 2] now; [3] after the delay.
			want: [][]int{{1, 2}, {3}},
		},
		{
			name:     "batches stop at the largest preferred size",
			cfg:      Config{MaxBatchSize: 16, PreferredSizes: []int64{3}},
			arrivals: []arrival{{0, 1, 1, 0, 0}, {0, 2, 1, 0, 0}, {0, 3, 1, 0, 0}, {0, 4, 1, 0, 0}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond},
			want:     [][]int{{1, 2, 3}, {4}},
		},
		{
			name: "the delay lets a batch grow",
			cfg:  Config{MaxBatchSize: 8, MaxQueueDelay: 100 * time.Microsecond},
			// The instance is free from the start; 1 waits for company until 100µs.
			arrivals: []arrival{{0, 1, 1, 0, 0}, {50 * time.Microsecond, 2, 1, 0, 0}, {150 * time.Microsecond, 3, 1, 0, 0}},
			freeAt:   []time.Duration{0, 120 * time.Microsecond},
			want:     [][]int{{1, 2}, {3}},
		},
		{
			name:     "a full batch does not wait for the delay",
			cfg:      Config{MaxBatchSize: 2, MaxQueueDelay: time.Hour},
			arrivals: []arrival{{0, 1, 1, 0, 0}, {10 * time.Microsecond, 2, 1, 0, 0}},
			freeAt:   []time.Duration{0},
			want:     [][]int{{1, 2}},
		},
		{
			name:     "priority levels, level 1 first",
			cfg:      Config{MaxBatchSize: 3, PriorityLevels: 2, DefaultPriority: 2},
			arrivals: []arrival{{0, 1, 1, 0, 0}, {0, 2, 1, 0, 2}, {0, 3, 1, 0, 1}, {0, 4, 1, 0, 0}, {0, 5, 1, 0, 1}},
			freeAt:   []time.Duration{time.Millisecond, 2 * time.Millisecond},
			want:     [][]int{{3, 5, 1}, {2, 4}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.cfg)
				start := time.Now()
				events := map[time.Duration]bool{}
				for _, a := range tc.arrivals {
					events[a.at] = true
				}
				for _, f := range tc.freeAt {
					events[f] = true
				}
				times := slices.Sorted(func(yield func(time.Duration) bool) {
					for k := range events {
						if !yield(k) {
							return
						}
					}
				})
				for _, at := range times {
					time.Sleep(at - time.Since(start))
					for _, a := range tc.arrivals {
						if a.at == at {
							h.add(a.id, a.rows, a.shape, a.prio, 0)
						}
					}
					synctest.Wait()
					for i, f := range tc.freeAt {
						if f == at {
							h.free(i)
						}
					}
				}
				time.Sleep(2 * time.Second) // every delay has passed
				h.free(99)
				synctest.Wait()
				h.want(tc.want...)
			})
		})
	}
}

func TestDelayedTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 1, DefaultPolicy: QueuePolicy{TimeoutAction: Delay, DefaultTimeout: 50 * time.Microsecond}})
		h.add(1, 1, 0, 0, 0)
		time.Sleep(60 * time.Microsecond) // 1 times out: it goes behind the others
		h.add(2, 1, 0, 0, 0)
		h.add(3, 1, 0, 0, 0)
		synctest.Wait()
		h.free(0)
		h.free(0)
		h.free(0)
		h.want([]int{2}, []int{3}, []int{1})
		if h.dropCount() != 0 {
			t.Errorf("DELAY dropped %d", h.dropCount())
		}
	})
}

func TestRejectTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 4, DefaultPolicy: QueuePolicy{DefaultTimeout: 100 * time.Microsecond, AllowTimeoutOverride: true}})
		h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 30*time.Microsecond)  // shorter override
		h.add(3, 1, 0, 0, 500*time.Microsecond) // longer: ignored, 100µs
		time.Sleep(40 * time.Microsecond)
		synctest.Wait()
		if err := h.dropErr(2); !errors.Is(err, ErrTimeout) {
			t.Fatalf("2 not rejected promptly while no instance is free: %v", err)
		}
		if h.dropCount() != 1 {
			t.Fatalf("dropped %d", h.dropCount())
		}
		time.Sleep(70 * time.Microsecond)
		synctest.Wait()
		if !errors.Is(h.dropErr(1), ErrTimeout) || !errors.Is(h.dropErr(3), ErrTimeout) {
			t.Fatalf("dropped %d, want 1 and 3 too", h.dropCount())
		}
		if h.d.Len() != 0 {
			t.Errorf("%d still queued", h.d.Len())
		}
		h.free(0)
		h.want()
	})
}

func TestNoTimeoutWithoutDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 4, DefaultPolicy: QueuePolicy{AllowTimeoutOverride: true}})
		h.add(1, 1, 0, 0, time.Microsecond) // default 0: the request's timeout is ignored
		time.Sleep(time.Second)
		h.free(0)
		h.want([]int{1})
	})
}

func TestAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 4, PriorityLevels: 2, DefaultPriority: 1,
			Policies: map[int]QueuePolicy{2: {MaxQueueSize: 1}}})
		n := new(Node[*item])
		for _, tc := range []struct {
			prio    int
			timeout time.Duration
			want    error
		}{
			{3, 0, ErrPriority}, {-1, 0, ErrPriority}, {1, time.Second, ErrTimeoutOverride},
		} {
			if err := h.d.Enqueue(n, &item{id: 9, rows: 1}, tc.prio, tc.timeout); !errors.Is(err, tc.want) {
				t.Errorf("priority %d timeout %v: %v, want %v", tc.prio, tc.timeout, err, tc.want)
			}
			if n.Queued() {
				t.Fatal("a refused request was queued")
			}
		}
		h.add(1, 1, 0, 2, 0)
		if err := h.d.Enqueue(n, &item{id: 2, rows: 1}, 2, 0); !errors.Is(err, ErrQueueFull) {
			t.Errorf("second request at level 2: %v, want ErrQueueFull", err)
		}
		h.add(3, 1, 0, 1, 0) // level 1 has no bound
		h.free(0)
		h.want([]int{3, 1})
	})
}

func TestRemoveAndExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 8})
		n1 := h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 0)
		n3 := new(Node[*item])
		it3 := &item{id: 3, rows: 1}
		if err := h.d.Enqueue(n3, it3, 0, 0); err != nil {
			t.Fatal(err)
		}
		if !h.d.Remove(n1) || h.d.Remove(n1) {
			t.Fatal("Remove of a queued node must succeed once")
		}
		it3.err = errors.New("deadline passed")
		h.free(0)
		h.want([]int{2})
		if err := h.dropErr(3); err == nil || err.Error() != "deadline passed" {
			t.Errorf("expired item dropped with %v", err)
		}
		if h.dropErr(1) != nil {
			t.Error("a removed item was answered")
		}
		n := h.add(4, 1, 0, 0, 0)
		h.free(1)
		if h.d.Remove(n) {
			t.Error("Remove after dispatch succeeded")
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 8})
		h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 0)
		h.d.Close()
		if !errors.Is(h.dropErr(1), ErrClosed) || !errors.Is(h.dropErr(2), ErrClosed) {
			t.Errorf("dropped %d", h.dropCount())
		}
		if err := h.d.Enqueue(new(Node[*item]), &item{id: 3, rows: 1}, 0, 0); !errors.Is(err, ErrClosed) {
			t.Errorf("Enqueue after Close: %v", err)
		}
		h.d.Close()
	})
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no batching":        {MaxBatchSize: 0},
		"preferred too big":  {MaxBatchSize: 4, PreferredSizes: []int64{8}},
		"preferred zero":     {MaxBatchSize: 4, PreferredSizes: []int64{0}},
		"default level":      {MaxBatchSize: 4, PriorityLevels: 2, DefaultPriority: 3},
		"policy level":       {MaxBatchSize: 4, PriorityLevels: 2, DefaultPriority: 1, Policies: map[int]QueuePolicy{3: {}}},
		"negative delay":     {MaxBatchSize: 4, MaxQueueDelay: -1},
		"negative queue cap": {MaxBatchSize: 4, DefaultPolicy: QueuePolicy{MaxQueueSize: -1}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewDynamic(cfg, Env[int, int]{}, nil); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestStress runs many producers against a few instances, with removals
// and expiries, and checks that every item is answered exactly once and
// that every batch respects the limit and shapes.
func TestStress(t *testing.T) {
	const limit = 6
	t.Run("timeouts", func(t *testing.T) {
		// Every request has a queue-policy timeout; two shapes.
		stress(t, Config{MaxBatchSize: limit, MaxQueueDelay: 20 * time.Microsecond, DefaultPolicy: QueuePolicy{DefaultTimeout: time.Second}}, 2, false)
	})
	t.Run("growing", func(t *testing.T) {
		// No timeouts, one shape and arrivals spread out: batches waiting to
		// grow are extended without waking the scheduler (Dynamic.extends).
		stress(t, Config{MaxBatchSize: limit, PreferredSizes: []int64{5}, MaxQueueDelay: time.Millisecond}, 1, true)
	})
}

// stress has producers queue items of 1 to 3 rows in the given number of
// shapes, removing some, with pauses between arrivals if paced, and checks
// that each item is answered exactly once in batches within the limit.
func stress(t *testing.T, cfg Config, shapes int, paced bool) {
	const (
		producers = 16
		perProd   = 500
	)
	limit := cfg.MaxBatchSize
	var (
		d       *Dynamic[*item, int]
		mu      sync.Mutex
		seen    = map[int]string{}
		bad     atomic.Value
		idle    = make(chan int, 3)
		shapeOf = func(id int) int { return id % shapes }
	)
	note := func(id int, how string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := seen[id]; dup {
			bad.Store(fmt.Sprintf("item %d answered twice: %s then %s", id, prev, how))
		}
		seen[id] = how
	}
	env := Env[*item, int]{
		Size:       func(it *item) int64 { return it.rows },
		Compatible: func(a, b *item) bool { return a.shape == b.shape },
		Expired:    func(it *item) error { return it.err },
		Deadline:   func(it *item) time.Time { return it.due },
		Drop:       func(it *item, err error) { note(it.id, "dropped") },
		Dispatch: func(inst int, batch []*item) {
			var rows int64
			for _, it := range batch {
				rows += it.rows
				if it.shape != batch[0].shape {
					bad.Store("mixed shapes in a batch")
				}
				note(it.id, "dispatched")
			}
			if rows > limit {
				bad.Store(fmt.Sprintf("batch of %d rows", rows))
			}
			go func() { d.Release(inst) }() // the instance finishes later, maybe starting the next batch itself
		},
	}
	var err error
	d, err = NewDynamic(cfg, env, idle)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		idle <- i
	}
	var wg sync.WaitGroup
	var removed atomic.Int64
	for p := range producers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			for i := range perProd {
				id := p*perProd + i
				it := &item{id: id, rows: 1 + r.Int64N(3), shape: shapeOf(id)}
				if r.IntN(50) == 0 {
					it.err = errors.New("expired")
				}
				if paced {
					time.Sleep(time.Duration(r.IntN(20)) * time.Microsecond)
				}
				n := new(Node[*item])
				if err := d.Enqueue(n, it, 0, 0); err != nil {
					t.Error(err)
					return
				}
				if r.IntN(10) == 0 && d.Remove(n) {
					note(id, "removed")
					removed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == producers*perProd || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	d.Close()
	drainIdle(idle)
	if b := bad.Load(); b != nil {
		t.Fatal(b)
	}
	if len(seen) != producers*perProd {
		t.Fatalf("%d of %d items answered", len(seen), producers*perProd)
	}
	if removed.Load() == 0 {
		t.Error("the stress test removed nothing; it does not test Remove")
	}
}

// drainIdle waits for the instance hand-backs still in flight, so that no
// goroutine outlives the test.
func drainIdle(idle chan int) {
	for {
		select {
		case <-idle:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// TestRelease: an instance handed back while a batch is ready dispatches it
// on the releasing goroutine at once; with nothing ready it goes back to
// the scheduler.
func TestRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 2, MaxQueueDelay: time.Hour})
		h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 0)
		h.add(3, 1, 0, 0, 0)
		h.d.Release(7) // [1 2] is full: dispatched before Release returns
		h.want([]int{1, 2})
		h.d.Release(8) // [3] must wait for the delay: to the scheduler
		h.want([]int{1, 2})
		time.Sleep(time.Hour)
		synctest.Wait()
		h.want([]int{1, 2}, []int{3})
		h.mu.Lock()
		insts := slices.Clone(h.insts)
		h.mu.Unlock()
		if !slices.Equal(insts, []int{7, 8}) {
			t.Errorf("instances %v, want [7 8]", insts)
		}
	})
}

// TestGrowingBatch covers arrivals while the scheduler holds an instance
// and waits for its batch to grow: only arrivals that make the batch ready
// (a preferred size, the limit, an item that cannot join, one queued ahead
// of others) may dispatch it, and they must do so at once.
func TestGrowingBatch(t *testing.T) {
	const delay = time.Second
	// arrive queues an item and lets the scheduler react before the next.
	arrive := func(h *harness, id int, rows int64, shape, prio int, timeout time.Duration) *Node[*item] {
		n := h.add(id, rows, shape, prio, timeout)
		synctest.Wait()
		return n
	}
	passes := func(h *harness) int {
		h.d.mu.Lock()
		defer h.d.mu.Unlock()
		return h.d.passes
	}
	t.Run("one pass per arrival that matters", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, Config{MaxBatchSize: 64, PreferredSizes: []int64{32}, MaxQueueDelay: delay})
			h.free(0)
			before := passes(h)
			for id := 1; id <= 32; id++ {
				time.Sleep(time.Microsecond)
				h.add(id, 1, 0, 0, 0)
				synctest.Wait()
			}
			ids := make([]int, 32)
			for i := range ids {
				ids[i] = i + 1
			}
			h.want(ids)
			// The first arrival wakes the scheduler (the queue was empty), the
			// 32nd makes the batch ready; the 30 between only grow it.
			if n := passes(h) - before; n != 2 {
				t.Errorf("%d batch formations for 32 arrivals, want 2", n)
			}
		})
	})
	cases := []struct {
		name  string
		cfg   Config
		steps func(h *harness) // runs with instance 0 held by the scheduler
		want  [][]int          // dispatched at once, before the delay passes
	}{
		{
			name: "an item that cannot join ends the batch",
			cfg:  Config{MaxBatchSize: 8, PreferredSizes: []int64{4}, MaxQueueDelay: delay},
			steps: func(h *harness) {
				arrive(h, 1, 1, 0, 0, 0)
				arrive(h, 2, 1, 0, 0, 0)
				arrive(h, 3, 1, 9, 0, 0)
			},
			want: [][]int{{1, 2}},
		},
		{
			name: "an item over the limit ends the batch",
			cfg:  Config{MaxBatchSize: 4, MaxQueueDelay: delay},
			steps: func(h *harness) {
				arrive(h, 1, 2, 0, 0, 0)
				arrive(h, 2, 3, 0, 0, 0)
			},
			want: [][]int{{1}},
		},
		{
			name: "an item reaching the limit",
			cfg:  Config{MaxBatchSize: 4, MaxQueueDelay: delay},
			steps: func(h *harness) {
				arrive(h, 1, 1, 0, 0, 0)
				arrive(h, 2, 3, 0, 0, 0)
			},
			want: [][]int{{1, 2}},
		},
		{
			name: "a higher priority item goes ahead and completes a preferred size",
			cfg:  Config{MaxBatchSize: 8, PreferredSizes: []int64{3}, MaxQueueDelay: delay, PriorityLevels: 2, DefaultPriority: 2},
			steps: func(h *harness) {
				arrive(h, 1, 1, 0, 0, 0)
				arrive(h, 2, 1, 0, 0, 0)
				arrive(h, 3, 1, 0, 1, 0)
			},
			want: [][]int{{3, 1, 2}},
		},
		{
			name: "a higher priority item makes a preferred prefix",
			cfg:  Config{MaxBatchSize: 8, PreferredSizes: []int64{2, 8}, MaxQueueDelay: delay, PriorityLevels: 2, DefaultPriority: 2},
			steps: func(h *harness) {
				arrive(h, 1, 3, 0, 0, 0)
				arrive(h, 2, 2, 0, 1, 0) // first in line: 2 rows alone (5 in all)
			},
			want: [][]int{{2}},
		},
		{
			name: "a removal before an arrival that completes a preferred size",
			cfg:  Config{MaxBatchSize: 8, PreferredSizes: []int64{3, 6}, MaxQueueDelay: delay},
			steps: func(h *harness) {
				n1 := arrive(h, 1, 1, 0, 0, 0)
				arrive(h, 2, 1, 0, 0, 0)
				h.d.Remove(n1)
				arrive(h, 3, 2, 0, 0, 0) // 2 and 3 make 3 rows (4 had 1 stayed)
			},
			want: [][]int{{2, 3}},
		},
		{
			name: "nothing ready waits for the delay",
			cfg:  Config{MaxBatchSize: 8, PreferredSizes: []int64{4}, MaxQueueDelay: delay},
			steps: func(h *harness) {
				arrive(h, 1, 1, 0, 0, 0)
				arrive(h, 2, 2, 0, 0, 0)
			},
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tc.cfg)
				h.free(0)
				time.Sleep(time.Microsecond)
				tc.steps(h)
				synctest.Wait()
				h.want(tc.want...)
			})
		})
	}
}

// TestEnqueueDispatches covers the fast path of a request that finds an
// instance free and no delay to wait out: its batch is formed and
// dispatched on the enqueuing goroutine, before Enqueue returns; with a
// delay, or with every instance busy, the scheduler does it as before.
func TestEnqueueDispatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delay  time.Duration
		idle   bool
		inline bool
	}{
		{"free instance, no delay", 0, true, true},
		{"free instance, a delay", time.Millisecond, true, false},
		{"no free instance", 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var got [][]int
				var inline []bool
				idle := make(chan int, 1)
				dispatched := make(chan struct{}, 1)
				env := Env[*item, int]{
					Size:       func(it *item) int64 { return it.rows },
					Compatible: func(a, b *item) bool { return true },
					Expired:    func(it *item) error { return nil },
					Drop:       func(it *item, err error) { t.Errorf("item %d dropped: %v", it.id, err) },
					Dispatch: func(inst int, batch []*item) {
						buf := make([]byte, 8<<10)
						stack := string(buf[:runtime.Stack(buf, false)])
						mu.Lock()
						defer mu.Unlock()
						got = append(got, []int{batch[0].id})
						inline = append(inline, strings.Contains(stack, ").Enqueue("))
						dispatched <- struct{}{}
					},
				}
				d, err := NewDynamic(Config{MaxBatchSize: 4, MaxQueueDelay: tc.delay}, env, idle)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if tc.idle {
					idle <- 0
				}
				synctest.Wait() // the scheduler waits for work
				if err := d.Enqueue(new(Node[*item]), &item{id: 1, rows: 1}, 0, 0); err != nil {
					t.Fatal(err)
				}
				if !tc.idle {
					synctest.Wait()
					idle <- 0
				}
				<-dispatched // after the delay, on the fake clock
				mu.Lock()
				defer mu.Unlock()
				if len(got) != 1 || got[0][0] != 1 {
					t.Fatalf("batches %v, want [[1]]", got)
				}
				if inline[0] != tc.inline {
					t.Errorf("dispatched on the enqueuing goroutine: %v, want %v", inline[0], tc.inline)
				}
			})
		})
	}
}

// TestStarvedScheduler: while every instance is busy, requests queue
// without waking the scheduler, unless one brings the closest queue-policy
// deadline, which it must then arm; the instance coming back takes them
// all in one batch.
func TestStarvedScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 64, MaxQueueDelay: time.Millisecond,
			DefaultPolicy: QueuePolicy{DefaultTimeout: time.Hour, AllowTimeoutOverride: true}})
		rounds := func() int {
			h.d.mu.Lock()
			defer h.d.mu.Unlock()
			return h.d.rounds
		}
		h.add(1, 1, 0, 0, 0)
		synctest.Wait()
		before := rounds()
		for id := 2; id <= 20; id++ {
			h.add(id, 1, 0, 0, 0) // the policy's hour, later than request 1's
			synctest.Wait()
		}
		if n := rounds() - before; n != 0 {
			t.Errorf("the scheduler woke %d times for 19 requests queued behind busy instances, want 0", n)
		}
		h.add(21, 1, 0, 0, time.Second) // the closest deadline now
		synctest.Wait()
		if n := rounds() - before; n != 1 {
			t.Errorf("the scheduler woke %d times for a request with the closest deadline, want 1", n)
		}
		h.free(0)
		time.Sleep(time.Millisecond) // the queue delay; request 1 waited no time on the fake clock
		synctest.Wait()
		h.want([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21})
	})
}
