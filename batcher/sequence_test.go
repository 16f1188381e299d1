package batcher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// seqHarness runs a Sequence over int keys whose state is an int, and
// records every Ended call.
type seqHarness struct {
	t *testing.T
	s *Sequence[int, int]

	mu    sync.Mutex
	ended []string // "key reason"
	// hold, when set, makes Ended wait for it (told on began first).
	hold  chan struct{}
	began chan string
}

func newSeqHarness(t *testing.T, cfg SequenceConfig) *seqHarness {
	h := &seqHarness{t: t}
	s, err := NewSequence[int, int](cfg, SequenceEnv[int]{Ended: func(k int, r EndReason) {
		e := fmt.Sprintf("%d %s", k, [...]string{"end", "idle", "closed"}[r])
		h.mu.Lock()
		hold, began := h.hold, h.began
		h.mu.Unlock()
		if began != nil {
			began <- e
		}
		if hold != nil {
			<-hold
		}
		h.mu.Lock()
		h.ended = append(h.ended, e)
		h.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	t.Cleanup(s.Close)
	return h
}

func (h *seqHarness) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ended)
}

// admit admits a request and fails the test on an error.
func (h *seqHarness) admit(key int, start bool) *Turn[int, int] {
	h.t.Helper()
	t, err := h.s.Admit(context.Background(), key, start)
	if err != nil {
		h.t.Fatalf("admit %d: %v", key, err)
	}
	return t
}

// run runs one request through its turn at once: wait, add x to the
// state, done. It returns the new state.
func (h *seqHarness) run(key int, start, end bool, x int) int {
	h.t.Helper()
	t := h.admit(key, start)
	st, err := t.Wait(context.Background(), start)
	if err != nil {
		h.t.Fatalf("wait %d: %v", key, err)
	}
	t.SetState(st + x)
	t.Done(end)
	return st + x
}

// waiting is a request waiting for its turn on a goroutine of its own.
type waiting struct {
	turn  *Turn[int, int]
	state chan int
	err   chan error
}

// goWait admits a request (in the caller's order) and waits for its turn
// on a new goroutine; when the turn comes it sends the state on w.state
// and leaves finishing to the test.
func (h *seqHarness) goWait(ctx context.Context, key int, start bool) *waiting {
	h.t.Helper()
	w := &waiting{turn: h.admit(key, start), state: make(chan int, 1), err: make(chan error, 1)}
	go func() {
		st, err := w.turn.Wait(ctx, start)
		if err != nil {
			w.err <- err
			return
		}
		w.state <- st
	}()
	return w
}

// blocked reports whether w is still waiting, once every goroutine has
// settled.
func (w *waiting) blocked() bool {
	synctest.Wait()
	return len(w.state) == 0 && len(w.err) == 0
}

func TestSequenceConfig(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      SequenceConfig
		capacity int64
		batching Config
		batches  bool
	}{
		{"direct, no batching", SequenceConfig{Instances: 2}, 2, Config{}, false},
		{"direct", SequenceConfig{MaxBatchSize: 8, Instances: 2, MaxQueueDelay: time.Millisecond}, 16,
			Config{MaxBatchSize: 8, MaxQueueDelay: time.Millisecond}, true},
		{"oldest", SequenceConfig{MaxBatchSize: 8, Instances: 3, Oldest: true, MaxCandidateSequences: 5, PreferredSizes: []int64{2, 4}, MaxQueueDelay: 7},
			15, Config{MaxBatchSize: 8, PreferredSizes: []int64{2, 4}, MaxQueueDelay: 7}, true},
		{"oldest, defaults", SequenceConfig{MaxBatchSize: 4, Oldest: true}, 1, Config{MaxBatchSize: 4}, true},
		{"direct ignores preferred sizes", SequenceConfig{MaxBatchSize: 4, PreferredSizes: []int64{2}}, 4, Config{MaxBatchSize: 4}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.cfg.Capacity(); got != c.capacity {
				t.Errorf("Capacity %d, want %d", got, c.capacity)
			}
			bc, ok := c.cfg.Batching()
			if ok != c.batches || bc.MaxBatchSize != c.batching.MaxBatchSize || bc.MaxQueueDelay != c.batching.MaxQueueDelay ||
				!slices.Equal(bc.PreferredSizes, c.batching.PreferredSizes) {
				t.Errorf("Batching %+v %v, want %+v %v", bc, ok, c.batching, c.batches)
			}
		})
	}
	for _, bad := range []SequenceConfig{
		{MaxBatchSize: -1},
		{MaxIdle: -1},
		{MaxBatchSize: 4, MaxQueueDelay: -1},
		{MaxBatchSize: 4, Oldest: true, PreferredSizes: []int64{5}},
	} {
		if _, err := NewSequence[int, int](bad, SequenceEnv[int]{}); err == nil {
			t.Errorf("NewSequence(%+v) accepted", bad)
		}
	}
}

func TestSequenceAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 2, Reject: true}) // room for 2
		ctx := context.Background()
		if _, err := h.s.Admit(ctx, 1, false); !errors.Is(err, ErrNotStarted) {
			t.Fatalf("a request without START: %v", err)
		}
		h.run(1, true, false, 1)
		h.run(2, true, false, 2)
		if _, err := h.s.Admit(ctx, 3, true); !errors.Is(err, ErrNoRoom) {
			t.Fatalf("a third START: %v", err)
		}
		if got := h.run(2, true, false, 5); got != 5 {
			t.Errorf("a restart of a live sequence (no room needed) starts from %d, want 0", got-5)
		}
		if got := h.run(1, false, true, 1); got != 2 {
			t.Errorf("sequence 1 ends with %d, want 2", got)
		}
		if got := h.s.Live(); got != 1 {
			t.Errorf("%d live sequences after an END, want 1", got)
		}
		h.run(3, true, false, 3)
		if _, err := h.s.Admit(ctx, 4, true); !errors.Is(err, ErrNoRoom) {
			t.Fatalf("a START beyond capacity again: %v", err)
		}
		if _, err := h.s.Admit(ctx, 1, false); !errors.Is(err, ErrNotStarted) {
			t.Fatalf("a request of an ended sequence: %v", err)
		}
		if got := h.events(); !slices.Equal(got, []string{"1 end"}) {
			t.Errorf("Ended %q", got)
		}
		h.s.Close()
		if _, err := h.s.Admit(ctx, 2, false); !errors.Is(err, ErrClosed) {
			t.Errorf("Admit after Close: %v", err)
		}
		if got := h.events(); !slices.Equal(got, []string{"1 end", "2 closed", "3 closed"}) && !slices.Equal(got, []string{"1 end", "3 closed", "2 closed"}) {
			t.Errorf("Ended %q after Close, want 2 and 3 closed", got)
		}
	})
}

// TestSequenceBacklog: beyond capacity a START waits, first come first
// served, until a sequence ends, its ctx ends or the scheduler aborts.
func TestSequenceBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{}) // one live sequence
		h.run(1, true, false, 1)

		type admitted struct {
			turn *Turn[int, int]
			err  error
		}
		goAdmit := func(ctx context.Context, key int) chan admitted {
			ch := make(chan admitted, 1)
			go func() {
				tn, err := h.s.Admit(ctx, key, true)
				ch <- admitted{tn, err}
			}()
			synctest.Wait() // in line for room, in call order
			return ch
		}
		second := goAdmit(context.Background(), 2)
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		begin := time.Now()
		third := goAdmit(dctx, 3)
		fourth := goAdmit(context.Background(), 4)
		if r := <-third; !errors.Is(r.err, context.DeadlineExceeded) || time.Since(begin) != 30*time.Millisecond {
			t.Fatalf("a START with a deadline: %v after %v", r.err, time.Since(begin))
		}
		synctest.Wait()
		if len(second) > 0 || len(fourth) > 0 {
			t.Fatal("a START got room while sequence 1 was live")
		}
		h.run(1, false, true, 0) // END: the room goes to the first in line
		r := <-second
		if r.err != nil {
			t.Fatal(r.err)
		}
		synctest.Wait()
		if len(fourth) > 0 {
			t.Fatal("two STARTs got one room")
		}
		if st, err := r.turn.Wait(context.Background(), true); err != nil || st != 0 {
			t.Fatalf("sequence 2 begins with %d, %v", st, err)
		}
		r.turn.Done(false)

		h.s.Abort()
		if r := <-fourth; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("a START waiting for room when the scheduler aborts: %v", r.err)
		}
		if _, err := h.s.Admit(context.Background(), 2, false); !errors.Is(err, ErrClosed) {
			t.Fatalf("Admit after Abort: %v", err)
		}
	})
}

// TestSequenceOrder: the requests of a sequence go through Wait one at a
// time, in admission order, each seeing the state the one before it left.
func TestSequenceOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 4})
		ctx := context.Background()
		ws := []*waiting{h.goWait(ctx, 7, true)}
		for range 5 {
			ws = append(ws, h.goWait(ctx, 7, false))
		}
		other := h.goWait(ctx, 8, true) // another sequence is not held up
		if st := <-other.state; st != 0 {
			t.Fatalf("sequence 8 begins with %d", st)
		}
		other.turn.Done(false)
		for i, w := range ws {
			for j, later := range ws[i+1:] {
				if !later.blocked() {
					t.Fatalf("request %d went through Wait before request %d was done", i+j+1, i)
				}
			}
			st := <-w.state
			want := 0
			for k := range i {
				want = want*10 + k + 1
			}
			if st != want {
				t.Errorf("request %d sees state %d, want %d", i, st, want)
			}
			w.turn.SetState(st*10 + i + 1)
			w.turn.Done(i == len(ws)-1)
		}
		if got := h.events(); !slices.Equal(got, []string{"7 end"}) {
			t.Errorf("Ended %q", got)
		}
	})
}

// TestSequenceCancel: a request cancelled while it waits leaves; the
// requests of its sequence admitted before the cancellation that have not
// begun are cancelled at their turn; later ones run on the state the last
// request that ran left. A request cancelled while it runs does the same.
func TestSequenceCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 4})
		bg := context.Background()
		first := h.goWait(bg, 5, true)
		<-first.state
		cctx, cancel := context.WithCancel(bg)
		second := h.goWait(cctx, 5, false)
		third := h.goWait(bg, 5, false)
		cancel()
		if err := <-second.err; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled waiter: %v", err)
		}
		if !third.blocked() {
			t.Fatal("a request went through Wait while the first one ran")
		}
		first.turn.SetState(1)
		first.turn.Done(false)
		if err := <-third.err; !errors.Is(err, ErrSequenceCancelled) {
			t.Fatalf("the request admitted before the cancellation: %v", err)
		}
		if got := h.run(5, false, false, 8); got != 9 {
			t.Errorf("a request admitted after the cancellation: state %d, want 9", got)
		}

		// Cancelled while running.
		running := h.goWait(bg, 5, false)
		<-running.state
		queued := h.goWait(bg, 5, false)
		running.turn.Cancel()
		running.turn.Done(false)
		if err := <-queued.err; !errors.Is(err, ErrSequenceCancelled) {
			t.Fatalf("the request queued behind a cancelled one: %v", err)
		}
		if got := h.run(5, false, true, 1); got != 10 {
			t.Errorf("after the cancellation: state %d, want 10", got)
		}
	})
}

// TestSequenceCancelAsTurnComes: a waiter whose ctx ends just as its turn
// comes gives the turn up either way, and the sequence goes on.
func TestSequenceCancelAsTurnComes(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			h := newSeqHarness(t, SequenceConfig{})
			bg := context.Background()
			first := h.goWait(bg, 1, true)
			<-first.state
			cctx, cancel := context.WithCancel(bg)
			second := h.goWait(cctx, 1, false)
			synctest.Wait()
			first.turn.SetState(3)
			first.turn.Done(false) // both ready for second's select at once
			cancel()
			select {
			case err := <-second.err:
				if !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
			case <-second.state:
				second.turn.Done(false)
			}
			if got := h.run(1, false, true, 1); got != 4 {
				t.Fatalf("state %d after the race, want 4", got)
			}
		})
	}
}

// TestSequenceIdle: a sequence without requests for MaxIdle is freed, to
// the microsecond, and Ended is told before a new START of its key begins.
func TestSequenceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 100 * time.Millisecond
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 4, MaxIdle: idle})
		h.run(1, true, false, 1)
		time.Sleep(idle / 2)
		h.run(2, true, false, 2)
		time.Sleep(idle/2 - time.Microsecond)
		synctest.Wait()
		if got := h.s.Live(); got != 2 {
			t.Fatalf("%d live sequences just before the first deadline, want 2", got)
		}
		time.Sleep(time.Microsecond)
		synctest.Wait()
		if got := h.events(); !slices.Equal(got, []string{"1 idle"}) {
			t.Fatalf("Ended %q at the first deadline", got)
		}
		if _, err := h.s.Admit(context.Background(), 1, false); !errors.Is(err, ErrNotStarted) {
			t.Errorf("a request of a freed sequence: %v", err)
		}
		h.run(2, false, false, 1) // busy again: its deadline moves
		time.Sleep(idle - time.Microsecond)
		synctest.Wait()
		if h.s.Live() != 1 {
			t.Fatal("sequence 2 freed before it was idle for MaxIdle")
		}

		// The sweep's Ended runs before a START of the same key admitted
		// meanwhile begins.
		h.mu.Lock()
		h.hold, h.began = make(chan struct{}), make(chan string, 1)
		h.mu.Unlock()
		time.Sleep(time.Microsecond)
		if e := <-h.began; e != "2 idle" {
			t.Fatalf("Ended(%s)", e)
		}
		restart := h.goWait(context.Background(), 2, true)
		if !restart.blocked() {
			t.Fatal("a new START began before Ended of the idle sequence returned")
		}
		close(h.hold)
		if st := <-restart.state; st != 0 {
			t.Errorf("the restart begins with %d", st)
		}
		restart.turn.Done(true)
		if got := h.events(); !slices.Equal(got, []string{"1 idle", "2 idle", "2 end"}) {
			t.Errorf("Ended %q", got)
		}
	})
}

// TestSequenceEndBeforeRestart: Ended of an END runs inside its Done,
// before a START of the same key admitted behind it begins.
func TestSequenceEndBeforeRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 2})
		end := h.goWait(context.Background(), 1, true)
		<-end.state
		restart := h.goWait(context.Background(), 1, true)
		h.mu.Lock()
		h.hold, h.began = make(chan struct{}), make(chan string, 1)
		h.mu.Unlock()
		done := make(chan struct{})
		go func() { end.turn.Done(true); close(done) }()
		<-h.began
		if !restart.blocked() || len(done) > 0 {
			t.Fatal("the restart began, or Done returned, before Ended did")
		}
		close(h.hold)
		<-done
		<-restart.state
		restart.turn.Done(false)
		if got := h.events(); !slices.Equal(got, []string{"1 end"}) {
			t.Errorf("Ended %q", got)
		}
	})
}

// TestSequenceNoIdle: MaxIdle 0 never frees a sequence, and runs no
// sweep.
func TestSequenceNoIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newSeqHarness(t, SequenceConfig{MaxBatchSize: 1})
		h.run(1, true, false, 1)
		time.Sleep(24 * time.Hour)
		if got := h.run(1, false, true, 1); got != 2 {
			t.Errorf("state %d after a day, want 2", got)
		}
	})
}

// TestSequenceEndedNotConcurrent: Ended is never called concurrently with
// itself, however many sequences end at once.
func TestSequenceEndedNotConcurrent(t *testing.T) {
	var inside, overlaps, calls atomic.Int32
	s, err := NewSequence[int, int](SequenceConfig{MaxBatchSize: 64, MaxIdle: time.Millisecond}, SequenceEnv[int]{Ended: func(int, EndReason) {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		calls.Add(1)
		for range 100 {
			runtime.Gosched()
		}
		inside.Add(-1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for k := range 64 {
		wg.Go(func() {
			for step := range 3 {
				tn, err := s.Admit(context.Background(), k, step == 0)
				if err == nil {
					_, err = tn.Wait(context.Background(), step == 0)
				}
				if err != nil {
					if errors.Is(err, ErrNotStarted) { // freed for idleness meanwhile
						return
					}
					t.Error(err)
					return
				}
				tn.Done(step == 2 && k%2 == 0)
			}
		})
	}
	wg.Wait()
	s.Close()
	if overlaps.Load() > 0 {
		t.Errorf("%d overlapping Ended calls", overlaps.Load())
	}
	if calls.Load() != 64 {
		t.Errorf("%d Ended calls for 64 sequences", calls.Load())
	}
}

// TestSequenceStress: concurrent senders on a few sequences, with
// cancellations; no two turns of a sequence overlap, every admitted
// request is answered, and the scheduler ends clean.
func TestSequenceStress(t *testing.T) {
	s, err := NewSequence[int, int](SequenceConfig{MaxBatchSize: 2, MaxIdle: 50 * time.Microsecond}, SequenceEnv[int]{})
	if err != nil {
		t.Fatal(err)
	}
	var running [4]atomic.Int32
	var ran, cancelled, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				key := r.IntN(len(running))
				start := r.IntN(4) == 0
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(8) == 0 {
					cancel()
				}
				tn, err := s.Admit(ctx, key, start)
				if err != nil {
					refused.Add(1)
					cancel()
					continue
				}
				if _, err := tn.Wait(ctx, start); err != nil {
					cancelled.Add(1)
					cancel()
					continue
				}
				if running[key].Add(1) != 1 {
					t.Errorf("two turns of sequence %d at once", key)
				}
				runtime.Gosched()
				running[key].Add(-1)
				ran.Add(1)
				tn.Done(r.IntN(6) == 0)
				cancel()
			}
		})
	}
	wg.Wait()
	s.Close()
	if ran.Load() == 0 || ran.Load()+cancelled.Load()+refused.Load() != 16*200 {
		t.Errorf("ran %d, cancelled %d, refused %d of %d", ran.Load(), cancelled.Load(), refused.Load(), 16*200)
	}
	if n := s.Live(); n != 0 {
		t.Errorf("%d sequences live after Close", n)
	}
}

// TestSequenceBatching: the ready requests of different sequences batch in
// a Dynamic configured by Batching, with the strategy's preferred sizes
// and delay: oldest with preferred size 2 sends pairs at once and a lone
// request after the delay; direct waits the delay for a full batch.
func TestSequenceBatching(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  SequenceConfig
		// keys send one ready request each, in this order; want are the
		// batches and when each was dispatched.
		keys  []int
		want  [][]int
		after []time.Duration
	}{
		{"oldest", SequenceConfig{MaxBatchSize: 4, Oldest: true, MaxCandidateSequences: 8, PreferredSizes: []int64{2}, MaxQueueDelay: time.Millisecond},
			[]int{1, 2, 3}, [][]int{{1, 2}, {3}}, []time.Duration{0, time.Millisecond}},
		{"direct", SequenceConfig{MaxBatchSize: 4, Instances: 2, MaxQueueDelay: time.Millisecond},
			[]int{1, 2, 3, 4, 5}, [][]int{{1, 2, 3, 4}, {5}}, []time.Duration{0, time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := NewSequence[int, int](c.cfg, SequenceEnv[int]{})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				bc, ok := c.cfg.Batching()
				if !ok {
					t.Fatal("no batching")
				}
				type ready struct {
					key  int
					turn *Turn[int, int]
					node Node[*int]
				}
				var mu sync.Mutex
				var batches [][]int
				var at []time.Duration
				begin := time.Now()
				idle := make(chan int, 1)
				d, err := NewDynamic(bc, Env[*int, int]{
					Size:       func(*int) int64 { return 1 },
					Compatible: func(_, _ *int) bool { return true },
					Expired:    func(*int) error { return nil },
					Drop:       func(*int, error) {},
					Dispatch: func(inst int, batch []*int) {
						keys := make([]int, len(batch))
						for i, k := range batch {
							keys[i] = *k
						}
						mu.Lock()
						batches, at = append(batches, keys), append(at, time.Since(begin))
						mu.Unlock()
						idle <- inst
					},
				}, idle)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				rs := make([]*ready, len(c.keys))
				for i, k := range c.keys {
					tn, err := s.Admit(context.Background(), k, true)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tn.Wait(context.Background(), true); err != nil {
						t.Fatal(err)
					}
					rs[i] = &ready{key: k, turn: tn}
				}
				for _, r := range rs {
					if err := d.Enqueue(&r.node, &r.key, 0, 0); err != nil {
						t.Fatal(err)
					}
				}
				idle <- 0
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				for _, r := range rs {
					r.turn.Done(true)
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.EqualFunc(batches, c.want, slices.Equal) || !slices.Equal(at, c.after) {
					t.Errorf("batches %v at %v, want %v at %v", batches, at, c.want, c.after)
				}
			})
		})
	}
}
