package triton_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/ratelimit"
)

// queuing is a backend whose instances take batches queued behind the one
// they run (backend.Queuer), as the PyTorch backend's do: Execute hands the
// batch to the instance's worker goroutine, which runs batches one at a
// time in the order they arrive, each when the test releases it, taking
// 1 ms (bubble time) each. A batch with a request "panic" panics in
// Execute once it has run.
type queuing struct {
	release chan struct{}

	mu        sync.Mutex
	executes  [][]string // in the order Execute was called
	ran       [][]string // in the order the worker ran them
	queues    int        // Queue calls
	instances int        // instances made
	closed    int
	inFlight  int
	maxFlight int
}

func newQueuing() *queuing { return &queuing{release: make(chan struct{}, 100)} }

func (q *queuing) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return q, nil }
func (q *queuing) Close() error                                                    { return nil }

func (q *queuing) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	q.mu.Lock()
	q.instances++
	q.mu.Unlock()
	i := &queuingInstance{q: q, jobs: make(chan queuingJob, 8), done: make(chan struct{})}
	go i.work()
	return i, nil
}

type queuingInstance struct {
	q    *queuing
	jobs chan queuingJob
	done chan struct{}
	once sync.Once
}

type queuingJob struct {
	b   *backend.Batch
	ran chan [2]time.Time // when the worker ran it
}

func (i *queuingInstance) Queue() bool {
	i.q.mu.Lock()
	i.q.queues++
	i.q.mu.Unlock()
	return true
}

func (i *queuingInstance) work() {
	defer close(i.done)
	for j := range i.jobs {
		<-i.q.release
		start := time.Now()
		time.Sleep(time.Millisecond)
		i.q.mu.Lock()
		i.q.ran = append(i.q.ran, ids(j.b))
		i.q.mu.Unlock()
		j.ran <- [2]time.Time{start, time.Now()}
	}
}

func ids(b *backend.Batch) []string {
	var s []string
	for _, r := range b.Requests {
		s = append(s, r.ID)
	}
	return s
}

func (i *queuingInstance) Execute(ctx context.Context, b *backend.Batch) error {
	q := i.q
	q.mu.Lock()
	q.executes = append(q.executes, ids(b))
	q.inFlight++
	q.maxFlight = max(q.maxFlight, q.inFlight)
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.inFlight--
		q.mu.Unlock()
	}()
	in, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	b.MarkInputsDone()
	j := queuingJob{b: b, ran: make(chan [2]time.Time, 1)}
	i.jobs <- j
	ran := <-j.ran
	b.MarkInfer(ran[0], ran[1])
	if slices.Contains(ids(b), "panic") {
		panic("batch with a panicking request")
	}
	out := in
	out.Name = "OUTPUT0"
	out.Data = slices.Clone(in.Data)
	return b.SetOutput(out)
}

func (i *queuingInstance) Close() error {
	i.once.Do(func() {
		close(i.jobs)
		<-i.done
		i.q.mu.Lock()
		i.q.closed++
		i.q.mu.Unlock()
	})
	return nil
}

func (q *queuing) state() (executes, ran [][]string, maxFlight int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.executes), slices.Clone(q.ran), q.maxFlight
}

// queuingModel is model m on backend "queuing": one instance, batches of
// two rows, the given extra settings.
func queuingModel(extra string) map[string]string {
	return map[string]string{
		"m/config.pbtxt": `backend: "queuing" max_batch_size: 2
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
` + extra,
		"m/1/x": "",
	}
}

// holdFirst makes a lone request wait for a second (bubble time stands
// still while the test sends them), so that the first batch is full too.
const holdFirst = `dynamic_batching { max_queue_delay_microseconds: 1000000 }`

// sendAll sends one request of one row per id, each in the batcher's
// queue or on its way to the backend before the next is sent.
func sendAll(t *testing.T, srv *triton.Server, ids ...string) map[*triton.InferRequest]chan result {
	t.Helper()
	chans := map[*triton.InferRequest]chan result{}
	for i, id := range ids {
		req := rowsRequest(t, id, 1, 2, int32(10*i))
		chans[req] = goInfer(srv, context.Background(), req)
		synctest.Wait()
	}
	return chans
}

// answeredAll checks that every request of batch was answered with its
// own rows.
func answeredAll(t *testing.T, batch map[*triton.InferRequest]chan result) {
	t.Helper()
	for req, ch := range batch {
		r := <-ch
		if r.err != nil {
			t.Fatalf("%s: %v", req.ID, r.err)
		}
		if err := checkRows(t, req, r.resp); err != nil {
			t.Error(err)
		}
	}
}

// TestQueuedBatches: behind the batch an instance runs, up to two full
// batches queue in the backend (Triton's payload queue, twice the
// instances), a third waits in the batcher until one ends; each batch runs
// in turn, every request gets its own rows, and the time a batch waited
// behind another is queue time, not compute time.
func TestQueuedBatches(t *testing.T) { synctest.Test(t, testQueuedBatches) }

func testQueuedBatches(t *testing.T) {
	q := newQueuing()
	srv := newServer(t, queuingModel(holdFirst), triton.WithBackend("queuing", q))
	reqs := sendAll(t, srv, "a", "b", "c", "d", "e", "f", "g", "h")
	executes, ran, _ := q.state()
	want := [][]string{{"a", "b"}, {"c", "d"}, {"e", "f"}}
	if !slices.EqualFunc(executes, want, slices.Equal) || len(ran) != 0 {
		t.Fatalf("before any batch ran: Execute called for %v (ran %v), want %v", executes, ran, want)
	}
	waitQueued(t, srv, "m", 2) // [g h] waits for room behind the instance
	q.release <- struct{}{}    // [a b] runs and ends: [g h] queues
	time.Sleep(time.Millisecond)
	synctest.Wait()
	if executes, _, _ := q.state(); len(executes) != 4 {
		t.Fatalf("after the first batch: Execute called for %v, want [g h] too", executes)
	}
	waitQueued(t, srv, "m", 0)
	for range 3 {
		q.release <- struct{}{}
	}
	answeredAll(t, reqs)
	_, ran, maxFlight := q.state()
	want = append(want, []string{"g", "h"})
	if !slices.EqualFunc(ran, want, slices.Equal) {
		t.Errorf("batches ran %v, want %v", ran, want)
	}
	if maxFlight != 3 {
		t.Errorf("%d Execute calls in progress at most, want 3", maxFlight)
	}
	if q.queues != 1 {
		t.Errorf("Queue called %d times, want once", q.queues)
	}
	st, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := st[0]
	if s.ExecutionCount != 4 || s.InferenceCount != 8 {
		t.Errorf("%d executions of %d requests, want 4 of 8", s.ExecutionCount, s.InferenceCount)
	}
	// Each batch computes 1 ms. [c d] waited 1 ms behind [a b], [e f] 2 ms
	// behind both; [g h] waited 1 ms in the batcher until [a b] ended, then
	// 2 ms behind [c d] and [e f]: 0 + 1 + 2 + 3 ms for each of two rows.
	if got, want := s.ComputeInfer.Total, 8*time.Millisecond; got != want {
		t.Errorf("compute_infer %v for 8 requests, want %v (1 ms a batch: the wait behind another batch is not compute)", got, want)
	}
	if got, want := s.Queue.Total, 2*(time.Millisecond+2*time.Millisecond+3*time.Millisecond); got != want {
		t.Errorf("queue %v, want %v (the waits behind other batches)", got, want)
	}
}

// TestQueuedBatchesNotFull: a batch that is not full does not queue behind
// the running one, even after its delay: it waits for the instance, and
// may grow meanwhile.
func TestQueuedBatchesNotFull(t *testing.T) { synctest.Test(t, testQueuedBatchesNotFull) }

func testQueuedBatchesNotFull(t *testing.T) {
	q := newQueuing()
	srv := newServer(t, queuingModel(`dynamic_batching { max_queue_delay_microseconds: 100 }`), triton.WithBackend("queuing", q))
	first := sendAll(t, srv, "a", "b")
	late := sendAll(t, srv, "c")
	time.Sleep(time.Millisecond) // past the delay
	synctest.Wait()
	waitQueued(t, srv, "m", 1)
	more := sendAll(t, srv, "d") // [c d] is full now: it queues
	waitQueued(t, srv, "m", 0)
	for range 2 {
		q.release <- struct{}{}
	}
	answeredAll(t, first)
	answeredAll(t, late)
	answeredAll(t, more)
	if _, ran, _ := q.state(); !slices.EqualFunc(ran, [][]string{{"a", "b"}, {"c", "d"}}, slices.Equal) {
		t.Errorf("batches %v, want [a b] [c d]", ran)
	}
}

// TestQueuedBatchesOff: an instance is asked to queue only under dynamic
// batching, and not for a sequence model (a request reads the state the
// one before it leaves) or a rate-limited instance (granted resources per
// execution).
func TestQueuedBatchesOff(t *testing.T) {
	for name, tc := range map[string]struct {
		extra string
		opts  []triton.Option
		want  int
	}{
		"dynamic": {extra: `dynamic_batching { }`, want: 1},
		"none":    {},
		"sequence": {extra: `sequence_batching { max_sequence_idle_microseconds: 1000000
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }`},
		"rate limited": {
			extra: `dynamic_batching { }`,
			opts:  []triton.Option{triton.WithRateLimiter(ratelimit.Config{})},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q := newQueuing()
			files := queuingModel(tc.extra)
			if name == "rate limited" {
				files["m/config.pbtxt"] = strings.Replace(files["m/config.pbtxt"], "kind: KIND_CPU", `kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 1 } ] }`, 1)
			}
			newServer(t, files, append(tc.opts, triton.WithBackend("queuing", q))...)
			if q.queues != tc.want {
				t.Errorf("Queue called %d times, want %d", q.queues, tc.want)
			}
		})
	}
}

// TestQueuedBatchesPanic: a panic in a batch that ran while another was
// queued behind it fails its own requests; the queued batch still runs on
// the instance, which is recreated (and asked to queue again) once it has
// ended, before it takes the next batch.
func TestQueuedBatchesPanic(t *testing.T) { synctest.Test(t, testQueuedBatchesPanic) }

func testQueuedBatchesPanic(t *testing.T) {
	q := newQueuing()
	srv := newServer(t, queuingModel(holdFirst), triton.WithBackend("queuing", q))
	bad := sendAll(t, srv, "panic", "x")
	good := sendAll(t, srv, "c", "d")
	q.release <- struct{}{}
	for _, ch := range bad {
		r := <-ch
		wantError(t, r.err, triton.Internal, "backend panic")
	}
	synctest.Wait()
	q.mu.Lock()
	instances := q.instances
	q.mu.Unlock()
	if instances != 1 {
		t.Errorf("%d instances while the queued batch runs, want 1 (recreated only after it)", instances)
	}
	q.release <- struct{}{}
	answeredAll(t, good)
	synctest.Wait()
	q.mu.Lock()
	instances, closed, queues := q.instances, q.closed, q.queues
	q.mu.Unlock()
	if instances != 2 || closed != 1 || queues != 2 {
		t.Errorf("after the panic: %d instances made, %d closed, %d Queue calls; want 2, 1, 2", instances, closed, queues)
	}
	after := sendAll(t, srv, "e", "f")
	q.release <- struct{}{}
	answeredAll(t, after)
}

// TestQueuedBatchesClose: closing the server with batches queued on an
// instance answers every request and ends the instance's goroutine (the
// test's leak check).
func TestQueuedBatchesClose(t *testing.T) { synctest.Test(t, testQueuedBatchesClose) }

func testQueuedBatchesClose(t *testing.T) {
	q := newQueuing()
	srv, err := triton.New(triton.WithRepository(mapFS(queuingModel(holdFirst))), triton.WithBackend("queuing", q))
	if err != nil {
		t.Fatal(err)
	}
	reqs := sendAll(t, srv, "a", "b", "c", "d", "e", "f", "g")
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	for range 3 {
		q.release <- struct{}{}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for req, ch := range reqs {
		r := <-ch
		if req.ID == "g" {
			wantError(t, r.err, triton.Unavailable)
			continue
		}
		if r.err != nil {
			t.Errorf("%s: %v", req.ID, r.err)
		}
	}
	if q.closed != 1 {
		t.Errorf("%d instances closed, want 1", q.closed)
	}
}
