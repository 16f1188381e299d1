package responsecache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
	"github.com/zeebo/xxh3"
)

// outcome is what one Do call returned.
type outcome struct {
	out []tensor.Tensor
	res responsecache.Result
	err error
}

// blockingModel is a fake model whose executions wait for release, so that
// a test can make callers pile up on a flight. It must be created inside
// the synctest bubble.
type blockingModel struct {
	calls   atomic.Int64
	release chan struct{}
	err     error // returned instead of an answer when set
}

func newBlockingModel() *blockingModel { return &blockingModel{release: make(chan struct{})} }

func (m *blockingModel) fn(c call) func() ([]tensor.Tensor, error) {
	return func() ([]tensor.Tensor, error) {
		m.calls.Add(1)
		<-m.release
		if m.err != nil {
			return nil, m.err
		}
		return answer(c), nil
	}
}

// start runs Do for c on a new goroutine and returns where its outcome
// will arrive.
func start(wg *sync.WaitGroup, ctx context.Context, cache *responsecache.Cache, c call, fn func() ([]tensor.Tensor, error)) <-chan outcome {
	ch := make(chan outcome, 1)
	wg.Go(func() {
		resp, res, err := cache.Do(ctx, c.model, c.version, c.inputs, outputsOnly(fn))
		ch <- outcome{resp.Outputs, res, err}
	})
	return ch
}

func TestSingleFlight(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := responsecache.New(1 << 20)
				if collide {
					responsecache.SetHash(c, func([]byte) xxh3.Uint128 { return xxh3.Uint128{} })
				}
				m := newBlockingModel()
				cl := simple("m", "same")
				const n = 8
				var wg sync.WaitGroup
				var chans []<-chan outcome
				for range n {
					chans = append(chans, start(&wg, context.Background(), c, cl, m.fn(cl)))
				}
				synctest.Wait() // the leader is in fn, the others wait on its flight
				if got := m.calls.Load(); got != 1 {
					t.Fatalf("model ran %d times, want 1", got)
				}
				close(m.release)
				wg.Wait()
				leaders, shared := 0, 0
				var outs [][]tensor.Tensor
				for _, ch := range chans {
					o := <-ch
					if o.err != nil {
						t.Fatal(o.err)
					}
					if !equalTensors(o.out, answer(cl)) {
						t.Errorf("outputs %v", o.out)
					}
					switch {
					case o.res.Hit:
						t.Error("a hit while the flight was in progress")
					case o.res.Shared:
						shared++
					default:
						leaders++
					}
					outs = append(outs, o.out)
				}
				if leaders != 1 || shared != n-1 {
					t.Errorf("%d leaders and %d shared, want 1 and %d", leaders, shared, n-1)
				}
				// Each caller owns its copy.
				outs[0][0].Data[0] ^= 0xff
				for i := 1; i < n; i++ {
					if !equalTensors(outs[i], answer(cl)) {
						t.Errorf("caller %d sees caller 0's modification", i)
					}
				}
				st := c.Stats()
				if st.Misses != 1 || st.Shared != n-1 || st.Hits != 0 || st.Entries != 1 {
					t.Errorf("stats %+v", st)
				}
				if responsecache.Flights(c) != 0 {
					t.Error("the flight is still in the table")
				}
			})
		})
	}
}

func TestDifferentKeysNotMerged(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := responsecache.New(1 << 20)
				if collide {
					responsecache.SetHash(c, func([]byte) xxh3.Uint128 { return xxh3.Uint128{} })
				}
				m := newBlockingModel()
				calls := []call{simple("m", "a"), simple("m", "b"), simple("n", "a")}
				var wg sync.WaitGroup
				var chans []<-chan outcome
				for _, cl := range calls {
					chans = append(chans, start(&wg, context.Background(), c, cl, m.fn(cl)))
				}
				synctest.Wait()
				if got := m.calls.Load(); got != int64(len(calls)) {
					t.Errorf("model ran %d times, want %d", got, len(calls))
				}
				if got := responsecache.Flights(c); got != len(calls) {
					t.Errorf("%d flights, want %d", got, len(calls))
				}
				close(m.release)
				wg.Wait()
				for i, ch := range chans {
					o := <-ch
					if o.err != nil || o.res.Shared || !equalTensors(o.out, answer(calls[i])) {
						t.Errorf("call %d: %+v", i, o)
					}
				}
				checkInvariants(t, c)
			})
		})
	}
}

func TestFailureIsNotStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := responsecache.New(1 << 20)
		m := newBlockingModel()
		m.err = errors.New("model failed")
		cl := simple("m", "x")
		const n = 4
		var wg sync.WaitGroup
		var chans []<-chan outcome
		for range n {
			chans = append(chans, start(&wg, context.Background(), c, cl, m.fn(cl)))
		}
		synctest.Wait()
		close(m.release)
		wg.Wait()
		for i, ch := range chans {
			if o := <-ch; !errors.Is(o.err, m.err) || o.out != nil || o.res.Hit {
				t.Errorf("caller %d: %+v, want the model's error", i, o)
			}
		}
		if m.calls.Load() != 1 || c.Len() != 0 || responsecache.Flights(c) != 0 {
			t.Errorf("model ran %d times; %d entries and %d flights left", m.calls.Load(), c.Len(), responsecache.Flights(c))
		}
		// The next call runs the model again, and its success is stored.
		var ok model
		out, res, err := cl.do(c, ok.fn(cl))
		if err != nil || res.Hit || res.Shared || ok.calls.Load() != 1 || !equalTensors(out, answer(cl)) {
			t.Errorf("retry: %v %+v %v", out, res, err)
		}
		if _, res, _ := cl.do(c, ok.fn(cl)); !res.Hit {
			t.Error("the successful retry was not stored")
		}
		if st := c.Stats(); st.Misses != 2 || st.Shared != 0 {
			t.Errorf("stats %+v: want 2 misses, nothing shared", st)
		}
	})
}

func TestWaiterContext(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		end  func(cancel context.CancelFunc)
		want error
	}{
		{"cancelled",
			func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func(cancel context.CancelFunc) { cancel() },
			context.Canceled},
		{"deadline",
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			func(context.CancelFunc) { time.Sleep(time.Second) },
			context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := responsecache.New(1 << 20)
				m := newBlockingModel()
				cl := simple("m", "x")
				var wg sync.WaitGroup
				leader := start(&wg, context.Background(), c, cl, m.fn(cl))
				synctest.Wait() // the leader is in fn
				ctx, cancel := tt.ctx()
				defer cancel()
				quitter := start(&wg, ctx, c, cl, m.fn(cl))
				stayer := start(&wg, context.Background(), c, cl, m.fn(cl))
				synctest.Wait()
				tt.end(cancel)
				synctest.Wait()
				select {
				case o := <-quitter:
					if !errors.Is(o.err, tt.want) || o.out != nil {
						t.Errorf("waiter: %+v, want %v", o, tt.want)
					}
				default:
					t.Fatal("the waiter did not leave when its context ended")
				}
				close(m.release) // the flight goes on for the others
				wg.Wait()
				for _, o := range []outcome{<-leader, <-stayer} {
					if o.err != nil || !equalTensors(o.out, answer(cl)) {
						t.Errorf("%+v", o)
					}
				}
				if m.calls.Load() != 1 || c.Len() != 1 || c.Stats().Shared != 1 {
					t.Errorf("model ran %d times; stats %+v", m.calls.Load(), c.Stats())
				}
			})
		})
	}
}

// TestLeaderContextError: the leader's own cancellation is not an answer
// for a waiter whose context is live; it runs the call itself.
func TestLeaderContextError(t *testing.T) {
	for _, leaderErr := range []error{context.Canceled, fmt.Errorf("request: %w", context.DeadlineExceeded)} {
		t.Run(leaderErr.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := responsecache.New(1 << 20)
				cl := simple("m", "x")
				first := newBlockingModel()
				first.err = leaderErr
				second := newBlockingModel()
				var wg sync.WaitGroup
				leader := start(&wg, context.Background(), c, cl, first.fn(cl))
				synctest.Wait()
				deadCtx, cancel := context.WithCancel(context.Background())
				dead := start(&wg, deadCtx, c, cl, second.fn(cl))
				live := start(&wg, context.Background(), c, cl, second.fn(cl))
				synctest.Wait()
				cancel() // dead's own context ends before the leader fails
				synctest.Wait()
				close(first.release)
				synctest.Wait()
				if o := <-leader; !errors.Is(o.err, leaderErr) {
					t.Errorf("leader: %+v", o)
				}
				if o := <-dead; !errors.Is(o.err, context.Canceled) {
					t.Errorf("waiter with a dead context: %+v", o)
				}
				if got := second.calls.Load(); got != 1 {
					t.Fatalf("the live waiter ran the model %d times, want 1", got)
				}
				close(second.release)
				wg.Wait()
				if o := <-live; o.err != nil || o.res.Shared || o.res.Hit || !equalTensors(o.out, answer(cl)) {
					t.Errorf("live waiter: %+v, want to lead and succeed", o)
				}
				if c.Len() != 1 {
					t.Errorf("%d entries, want 1", c.Len())
				}
			})
		})
	}
}

func TestLeaderPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := responsecache.New(1 << 20)
		cl := simple("m", "x")
		release := make(chan struct{})
		panicky := func() ([]tensor.Tensor, error) {
			<-release
			panic("boom")
		}
		recovered := make(chan any, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer func() { recovered <- recover() }()
			_, _, _ = cl.do(c, panicky)
		})
		synctest.Wait()
		var m model
		waiter := start(&wg, context.Background(), c, cl, m.fn(cl))
		synctest.Wait()
		close(release)
		wg.Wait()
		if r := <-recovered; r != "boom" {
			t.Errorf("leader recovered %v, want the panic", r)
		}
		if o := <-waiter; !errors.Is(o.err, responsecache.ErrAbandoned) {
			t.Errorf("waiter: %+v, want ErrAbandoned", o)
		}
		if c.Len() != 0 || responsecache.Flights(c) != 0 {
			t.Errorf("%d entries, %d flights left", c.Len(), responsecache.Flights(c))
		}
		if _, res, err := cl.do(c, m.fn(cl)); err != nil || res.Hit || m.calls.Load() != 1 {
			t.Errorf("next call: %+v %v, model ran %d times", res, err, m.calls.Load())
		}
	})
}

// TestTooLargeIsShared: a result too large to store still reaches the
// callers waiting on its flight.
func TestTooLargeIsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cl := simple("m", "x")
		c := responsecache.New(cl.entrySize() - 1)
		m := newBlockingModel()
		var wg sync.WaitGroup
		a := start(&wg, context.Background(), c, cl, m.fn(cl))
		synctest.Wait()
		b := start(&wg, context.Background(), c, cl, m.fn(cl))
		synctest.Wait()
		close(m.release)
		wg.Wait()
		oa, ob := <-a, <-b
		if oa.err != nil || ob.err != nil || !ob.res.Shared || !equalTensors(ob.out, answer(cl)) {
			t.Errorf("leader %+v, waiter %+v", oa, ob)
		}
		if st := c.Stats(); st.Entries != 0 || st.TooLarge != 1 || m.calls.Load() != 1 {
			t.Errorf("stats %+v, model ran %d times", st, m.calls.Load())
		}
	})
}

// TestPurgeInFlight: a flight started before Purge finishes for its
// waiters but is not stored, and later callers do not join it.
func TestPurgeInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := responsecache.New(1 << 20)
		cl := simple("m", "x")
		old := newBlockingModel()
		var wg sync.WaitGroup
		leader := start(&wg, context.Background(), c, cl, old.fn(cl))
		synctest.Wait()
		waiter := start(&wg, context.Background(), c, cl, old.fn(cl))
		synctest.Wait()
		if n := c.Purge("m"); n != 0 {
			t.Errorf("Purge removed %d entries, want 0", n)
		}
		newAnswer := []tensor.Tensor{raw("OUT", tensor.Uint8, tensor.Shape{3}, "new")}
		out, res, err := cl.do(c, func() ([]tensor.Tensor, error) { return newAnswer, nil })
		if err != nil || res.Shared || !equalTensors(out, newAnswer) {
			t.Errorf("call after Purge: %v %+v %v; want to run the new model", out, res, err)
		}
		close(old.release)
		wg.Wait()
		for _, o := range []outcome{<-leader, <-waiter} {
			if o.err != nil || !equalTensors(o.out, answer(cl)) {
				t.Errorf("old flight: %+v", o)
			}
		}
		out, res, _ = cl.do(c, func() ([]tensor.Tensor, error) { return nil, errors.New("not expected") })
		if !res.Hit || !equalTensors(out, newAnswer) {
			t.Errorf("after the old flight ended: %v %+v; want the new model's answer", out, res)
		}
		checkInvariants(t, c)
	})
}

// TestRecheckUnderLock makes callers find nothing in their first lookup and
// only then proceed: the second lookup, under the lock, must find the
// flight or the entry that appeared meanwhile.
func TestRecheckUnderLock(t *testing.T) {
	t.Run("concurrent misses join one flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := responsecache.New(1 << 20)
			const n = 4
			arrived, all := 0, make(chan struct{})
			var mu sync.Mutex
			responsecache.SetBeforeRecheck(c, func() {
				mu.Lock()
				arrived++
				if arrived == n {
					close(all)
				}
				mu.Unlock()
				<-all
			})
			m := newBlockingModel()
			cl := simple("m", "x")
			var wg sync.WaitGroup
			var chans []<-chan outcome
			for range n {
				chans = append(chans, start(&wg, context.Background(), c, cl, m.fn(cl)))
			}
			synctest.Wait()
			if got := m.calls.Load(); got != 1 {
				t.Errorf("model ran %d times, want 1", got)
			}
			close(m.release)
			wg.Wait()
			shared := 0
			for _, ch := range chans {
				if o := <-ch; o.res.Shared {
					shared++
				}
			}
			if shared != n-1 {
				t.Errorf("%d shared, want %d", shared, n-1)
			}
		})
	})
	t.Run("a miss finds the entry stored meanwhile", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := responsecache.New(1 << 20)
			gate := make(chan struct{})
			responsecache.SetBeforeRecheck(c, func() { <-gate })
			cl := simple("m", "x")
			var m model
			var wg sync.WaitGroup
			late := start(&wg, context.Background(), c, cl, m.fn(cl))
			synctest.Wait() // late has looked once and found nothing
			responsecache.SetBeforeRecheck(c, nil)
			first := start(&wg, context.Background(), c, cl, m.fn(cl))
			if o := <-first; o.err != nil || o.res.Hit {
				t.Fatalf("first: %+v", o)
			}
			close(gate)
			wg.Wait()
			if o := <-late; o.err != nil || !o.res.Hit || !equalTensors(o.out, answer(cl)) {
				t.Errorf("late: %+v, want a hit", o)
			}
			if m.calls.Load() != 1 {
				t.Errorf("model ran %d times, want 1", m.calls.Load())
			}
			checkInvariants(t, c)
		})
	})
}
