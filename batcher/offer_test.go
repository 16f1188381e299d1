package batcher

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// wantQueued checks the batches handed to Env.Queue so far, each written
// as its items followed by its instance.
func (h *harness) wantQueued(batches ...[]int) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.EqualFunc(h.queued, batches, slices.Equal) {
		h.t.Fatalf("queued batches %v, want %v", h.queued, batches)
	}
}

// TestOffer: a busy instance's offer takes the next full batch, on the
// goroutine whose request fills it, once; a batch that is not full stays
// for a free instance.
func TestOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 2})
		h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 0)
		h.free(0)
		h.want([]int{1, 2}) // instance 0 is busy now
		h.d.Offer(0)
		h.add(3, 1, 0, 0, 0)
		h.wantQueued() // one row: not full
		h.add(4, 1, 0, 0, 0)
		h.wantQueued([]int{3, 4, 0})
		h.add(5, 1, 0, 0, 0)
		h.add(6, 1, 0, 0, 0)
		h.wantQueued([]int{3, 4, 0}) // the offer was used
		if n := h.d.Withdraw(0); n != 0 {
			t.Errorf("Withdraw after the offer was used: %d, want 0", n)
		}
		h.d.Offer(0) // [5 6] is full and waiting: queued at once
		h.wantQueued([]int{3, 4, 0}, []int{5, 6, 0})
		h.d.Offer(0)
		h.d.Offer(0)
		if n := h.d.Withdraw(0); n != 2 {
			t.Errorf("Withdraw of two open offers: %d", n)
		}
		h.add(7, 1, 0, 0, 0)
		h.add(8, 1, 0, 0, 0)
		h.wantQueued([]int{3, 4, 0}, []int{5, 6, 0}) // withdrawn: nothing taken
		h.free(0)
		h.want([]int{1, 2}, []int{7, 8})
		if h.d.Len() != 0 {
			t.Errorf("%d left in the queue", h.d.Len())
		}
	})
}

// TestOfferOnlyFull: a batch that waited out its delay without filling up
// is not queued behind a busy instance (it could still grow), but goes to
// the next free instance; several offers take one full batch each, and a
// batch that a request of another shape ends counts as full once the
// queue holds a full batch's rows.
func TestOfferOnlyFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 4, MaxQueueDelay: 100 * time.Microsecond})
		h.free(0)
		for id := 1; id <= 4; id++ {
			h.add(id, 1, 0, 0, 0)
		}
		synctest.Wait()
		h.want([]int{1, 2, 3, 4})
		h.d.Offer(0)
		h.d.Offer(0)
		h.add(5, 3, 0, 0, 0)
		time.Sleep(time.Millisecond) // far past the delay
		synctest.Wait()
		h.wantQueued()
		h.add(6, 1, 0, 0, 0) // 3 + 1 rows: full
		h.wantQueued([]int{5, 6, 0})
		h.add(7, 1, 7, 0, 0)
		h.add(8, 1, 7, 0, 0)
		h.add(9, 2, 9, 0, 0) // [7 8] cannot grow: 9 has another shape
		h.wantQueued([]int{5, 6, 0}, []int{7, 8, 0})
		h.add(10, 1, 9, 0, 0)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		h.wantQueued([]int{5, 6, 0}, []int{7, 8, 0}) // both offers used
		h.free(0)
		h.want([]int{1, 2, 3, 4}, []int{9, 10})
	})
}

// TestOfferPrefersFreeInstance: while an instance is free, or held by the
// scheduler waiting for its batch to grow, a full batch goes to it, not
// behind a busy one.
func TestOfferPrefersFreeInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 2, MaxQueueDelay: time.Hour})
		h.free(0)
		h.add(1, 1, 0, 0, 0)
		h.add(2, 1, 0, 0, 0)
		synctest.Wait()
		h.d.Offer(0)
		h.free(1)
		h.add(3, 1, 0, 0, 0) // the scheduler holds instance 1 for [3]
		synctest.Wait()
		h.add(4, 1, 0, 0, 0)
		synctest.Wait()
		h.want([]int{1, 2}, []int{3, 4})
		h.wantQueued()
		if n := h.d.Withdraw(0); n != 1 {
			t.Errorf("Withdraw: %d open offers, want 1", n)
		}
	})
}

// TestOfferClosed: after Close an offer takes nothing and is withdrawn as
// open.
func TestOfferClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxBatchSize: 1})
		h.d.Close()
		h.d.Offer(3)
		if n := h.d.Withdraw(3); n != 1 {
			t.Errorf("Withdraw after Close: %d, want 1", n)
		}
		h.wantQueued()
	})
}
