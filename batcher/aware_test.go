package batcher

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// awareHarness is a harness of one instance whose deadline-aware batcher
// has learned that a batch costs 2 ms plus 1 ms a row, exactly.
func awareHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	cfg.DeadlineAware = true
	h := newHarness(t, cfg)
	h.idle = make(chan int, 1) // one instance
	d, err := NewDynamic(cfg, h.d.env, h.idle)
	if err != nil {
		t.Fatal(err)
	}
	h.d.Close()
	h.d = d
	t.Cleanup(d.Close)
	for i := range warmBatches + MinSamples {
		rows := int64(1 + i%4)
		d.Observe(0, rows, cost(rows))
	}
	return h
}

func cost(rows int64) time.Duration { return 2*time.Millisecond + time.Duration(rows)*time.Millisecond }

// addDue queues item id of one row due after from now; it returns
// Enqueue's error.
func (h *harness) addDue(id int, due time.Duration) error {
	return h.d.Enqueue(new(Node[*item]), &item{id: id, rows: 1, due: time.Now().Add(due)}, 0, 0)
}

// TestAwareAdmission: behind a batch of one row predicted to end at 3 ms,
// a request is refused exactly when playing the queue forward ends its
// batch after its deadline, with an error that says why.
func TestAwareAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := awareHarness(t, Config{MaxBatchSize: 4})
		h.add(1, 1, 0, 0, 0)
		h.free(0) // batch [1] runs, predicted until 3 ms
		h.want([]int{1})
		if err := h.addDue(2, 6*time.Millisecond); err != nil {
			t.Fatalf("2, due at 6 ms, would end at 3 + 3 ms: refused: %v", err)
		}
		err := h.addDue(3, 6*time.Millisecond) // batch [2 3] would end at 3 + 4 ms
		var r *Refused
		if !errors.As(err, &r) || !errors.Is(err, ErrWouldMiss) {
			t.Fatalf("3, due at 6 ms, would end at 7 ms: got %v, want a refusal", err)
		}
		want := Refused{Stage: AtAdmission, Finish: 7 * time.Millisecond, Deadline: 6 * time.Millisecond, Ahead: 1, Batch: 4 * time.Millisecond, Rows: 2}
		if *r != want {
			t.Errorf("refusal %+v, want %+v", *r, want)
		}
		if r.RetryAfter() != 3*time.Millisecond {
			t.Errorf("RetryAfter %v, want the 3 ms the queue ahead takes", r.RetryAfter())
		}
		if err := h.addDue(4, 7*time.Millisecond); err != nil {
			t.Fatalf("4, due at 7 ms, would end at 7 ms: refused: %v", err)
		}
		if err := h.d.Enqueue(new(Node[*item]), &item{id: 5, rows: 1}, 0, 0); err != nil {
			t.Fatalf("5 has no deadline: refused: %v", err)
		}
		if n := h.d.Len(); n != 3 {
			t.Errorf("%d queued, want 3 (2, 4, 5)", n)
		}
	})
}

// TestAwareFormation: when the instance comes back late, a request that
// would push the batch past a member's deadline does not join it, and one
// that can no longer make its deadline in any batch is dropped unrun.
func TestAwareFormation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := awareHarness(t, Config{MaxBatchSize: 4})
		h.add(1, 1, 0, 0, 0)
		h.free(0) // predicted to end at 3 ms; it will take 6 ms
		for _, a := range []struct {
			id  int
			due time.Duration
		}{{2, 10 * time.Millisecond}, {3, 20 * time.Millisecond}, {4, 9500 * time.Microsecond}} {
			if err := h.addDue(a.id, a.due); err != nil {
				t.Fatalf("%d refused at admission: %v", a.id, err)
			}
		}
		time.Sleep(6 * time.Millisecond)
		h.free(0)
		// At 6 ms: [2 3] ends at 10 ms, in time for both; with 4 it would
		// end at 11 ms, after 2's and 4's deadlines, so 4 waits.
		h.want([]int{1}, []int{2, 3})
		if n := h.dropCount(); n != 0 {
			t.Fatalf("%d dropped at 6 ms, want none", n)
		}
		time.Sleep(4 * time.Millisecond)
		h.free(0)
		// At 10 ms, 4 alone would end at 13 ms, after its 9.5 ms.
		var r *Refused
		if err := h.dropErr(4); !errors.As(err, &r) || r.Stage != AtBatch {
			t.Fatalf("4 at 10 ms: dropped with %v, want a refusal at batch formation", err)
		}
		h.want([]int{1}, []int{2, 3})
	})
}

// TestAwareDelay: a batch waits for more requests only as long as its
// members' deadlines leave room for its execution.
func TestAwareDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := awareHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: 100 * time.Millisecond})
		h.free(0)
		if err := h.addDue(1, 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6999 * time.Microsecond)
		synctest.Wait()
		h.want()
		time.Sleep(time.Microsecond) // 7 ms: 10 ms less the 3 ms batch
		synctest.Wait()
		h.want([]int{1})
	})
}

// TestAwareLearnsFirst: before the estimate has MinSamples batches past
// the warm-up, the schedule is FIFO: nothing is refused.
func TestAwareLearnsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 4, DeadlineAware: true})
		for range warmBatches + MinSamples - 1 {
			h.d.Observe(0, 1, time.Second)
		}
		for id := 1; id <= 8; id++ {
			if err := h.addDue(id, time.Millisecond); err != nil {
				t.Fatalf("%d refused with no estimate yet: %v", id, err)
			}
		}
		h.d.Observe(0, 1, time.Second)
		if err := h.addDue(9, time.Millisecond); !errors.Is(err, ErrWouldMiss) {
			t.Fatalf("9 with a 1 s estimate and 1 ms left: %v, want a refusal", err)
		}
	})
}
