package triton_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// gatedBackend mirrors INPUT0 to OUTPUT0 for the whole batch, records the
// requests of every batch, and blocks each execution until the test lets
// it go (when gated), so that requests pile up in the queue meanwhile.
type gatedBackend struct {
	gated   bool
	release chan struct{}
	started chan struct{}

	mu      sync.Mutex
	batches [][]string
}

func newGated(gated bool) *gatedBackend {
	return &gatedBackend{gated: gated, release: make(chan struct{}, 100), started: make(chan struct{}, 100)}
}

func (g *gatedBackend) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return g, nil
}
func (g *gatedBackend) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return g, nil
}
func (g *gatedBackend) Close() error { return nil }

func (g *gatedBackend) Execute(ctx context.Context, b *backend.Batch) error {
	var ids []string
	for _, r := range b.Requests {
		ids = append(ids, r.ID)
	}
	g.mu.Lock()
	g.batches = append(g.batches, ids)
	g.mu.Unlock()
	g.started <- struct{}{}
	if g.gated {
		<-g.release
	}
	in, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	if slices.Contains(ids, "panic") {
		panic("batch with a panicking request")
	}
	out := in
	out.Name = "OUTPUT0"
	out.Data = slices.Clone(in.Data) // a fresh batch output, split per request
	return b.SetOutput(out)
}

func (g *gatedBackend) recorded() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

// batchingModel is a batching model with one INT32 [-1] input, served by
// backend "gated", with dynamic_batching settings in extra.
func batchingModel(instances int, extra string) map[string]string {
	return map[string]string{
		"m/config.pbtxt": fmt.Sprintf(`backend: "gated" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: %d kind: KIND_CPU } ]
%s`, instances, extra),
		"m/1/x": "",
	}
}

func rowsRequest(t testing.TB, id string, rows, width int, base int32) *triton.InferRequest {
	vals := make([]int32, rows*width)
	for i := range vals {
		vals[i] = base + int32(i)
	}
	return &triton.InferRequest{Model: "m", ID: id, Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{int64(rows), int64(width)}, vals...)}}
}

// checkRows checks that a response holds exactly the request's own rows.
func checkRows(t testing.TB, req *triton.InferRequest, resp *triton.InferResponse) error {
	out, ok := resp.Output("OUTPUT0")
	if !ok {
		return fmt.Errorf("%s: no output", req.ID)
	}
	if !out.Shape.Equal(req.Inputs[0].Shape) || string(out.Data) != string(req.Inputs[0].Data) {
		return fmt.Errorf("%s: got %v %v, want its own rows %v", req.ID, out.Shape, out.Data, req.Inputs[0].Shape)
	}
	return nil
}

type result struct {
	resp *triton.InferResponse
	err  error
}

func goInfer(srv *triton.Server, ctx context.Context, req *triton.InferRequest) chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := srv.Infer(ctx, req)
		ch <- result{resp, err}
	}()
	return ch
}

// occupy sends a first request and waits until it runs, so that the only
// instance is busy and later requests queue.
func occupy(t *testing.T, srv *triton.Server, g *gatedBackend) chan result {
	first := goInfer(srv, context.Background(), rowsRequest(t, "first", 1, 2, 0))
	<-g.started
	return first
}

// waitQueued waits, inside a synctest bubble, until every goroutine of the
// bubble is blocked, then checks that model's dynamic batcher holds n
// requests: the requests sent so far have reached the queue and wait there.
func waitQueued(t *testing.T, srv *triton.Server, model string, n int) {
	t.Helper()
	synctest.Wait()
	st, err := srv.Stats(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Queued != n {
		t.Fatalf("model %s: %d requests queued, want %d", model, st[0].Queued, n)
	}
}

func TestDynamicBatchingCoalesces(t *testing.T) { synctest.Test(t, testDynamicBatchingCoalesces) }

func testDynamicBatchingCoalesces(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	// Rows: 3 + 2 + 3 = 8, the max; then 1 more waits for the next batch.
	reqs := []*triton.InferRequest{rowsRequest(t, "a", 3, 2, 100), rowsRequest(t, "b", 2, 2, 200), rowsRequest(t, "c", 3, 2, 300), rowsRequest(t, "d", 1, 2, 400)}
	var chans []chan result
	for i, r := range reqs {
		chans = append(chans, goInfer(srv, context.Background(), r))
		waitQueued(t, srv, "m", i+1) // arrival order a, b, c, d
	}
	for range 3 {
		g.release <- struct{}{}
	}
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	for i, ch := range chans {
		r := <-ch
		if r.err != nil {
			t.Fatalf("%s: %v", reqs[i].ID, r.err)
		}
		if err := checkRows(t, reqs[i], r.resp); err != nil {
			t.Error(err)
		}
	}
	want := [][]string{{"first"}, {"a", "b", "c"}, {"d"}}
	if got := g.recorded(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// TestDynamicBatchingBackToBack: when an instance finishes a batch and the
// next is ready, the next runs at once, and the finished batch's requests
// are answered while it runs: none of them waits for a batch it is not in
// (the requests that run the batches are not the ones whose answers wait).
func TestDynamicBatchingBackToBack(t *testing.T) { synctest.Test(t, testDynamicBatchingBackToBack) }

func testDynamicBatchingBackToBack(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	queue := func(ids ...string) map[*triton.InferRequest]chan result {
		t.Helper()
		chans := map[*triton.InferRequest]chan result{}
		for i, id := range ids {
			req := rowsRequest(t, id, 1, 2, int32(10*i))
			chans[req] = goInfer(srv, context.Background(), req)
			waitQueued(t, srv, "m", i+1)
		}
		return chans
	}
	ab := queue("a", "b")
	g.release <- struct{}{} // first ends; [a b] starts and blocks
	<-g.started
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	cd := queue("c", "d")
	g.release <- struct{}{} // [a b] ends; [c d] starts and blocks
	<-g.started
	answeredAll(t, ab)
	g.release <- struct{}{}
	answeredAll(t, cd)
	want := [][]string{{"first"}, {"a", "b"}, {"c", "d"}}
	if got := g.recorded(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	st, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].ExecutionCount != 3 || st[0].InferenceCount != 5 {
		t.Errorf("%d executions of %d requests, want 3 of 5", st[0].ExecutionCount, st[0].InferenceCount)
	}
}

func TestDynamicBatchingShapes(t *testing.T) { synctest.Test(t, testDynamicBatchingShapes) }

func testDynamicBatchingShapes(t *testing.T) {
	g := newGated(true)
	files := batchingModel(1, `dynamic_batching { }`)
	files["r/config.pbtxt"] = `backend: "gated" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { }`
	files["r/1/x"] = ""
	srv := newServer(t, files, triton.WithBackend("gated", g))

	first := occupy(t, srv, g)
	narrow, wide := rowsRequest(t, "narrow", 1, 2, 0), rowsRequest(t, "wide", 1, 3, 0)
	a := goInfer(srv, context.Background(), narrow)
	waitQueued(t, srv, "m", 1)
	b := goInfer(srv, context.Background(), wide)
	waitQueued(t, srv, "m", 2)
	for range 3 {
		g.release <- struct{}{}
	}
	<-first
	for _, ch := range []chan result{a, b} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	want := [][]string{{"first"}, {"narrow"}, {"wide"}}
	if got := g.recorded(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("different shapes: batches %v, want %v", got, want)
	}

	// A ragged input batches different shapes together, flattened; as in
	// Triton, a lone request's input is flattened too.
	var seen []tensor.Shape
	ragged := backend.Func(func(_ context.Context, b *backend.Batch) error {
		in, err := b.Input("INPUT0")
		if err != nil {
			return err
		}
		seen = append(seen, in.Shape.Clone())
		for _, r := range b.Requests {
			out := r.Inputs[0]
			out.Name = "OUTPUT0"
			r.SetOutput(out)
		}
		return nil
	})
	gate := make(chan struct{})
	started := make(chan struct{}, 10)
	blocking := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		started <- struct{}{}
		if b.Requests[0].ID == "first" {
			<-gate
		}
		return ragged(ctx, b)
	})
	srv2 := newServer(t, map[string]string{"r/config.pbtxt": files["r/config.pbtxt"], "r/1/x": ""}, triton.WithBackend("gated", blocking))
	rr := func(id string, width int) *triton.InferRequest {
		r := rowsRequest(t, id, 1, width, 0)
		r.Model = "r"
		return r
	}
	f := goInfer(srv2, context.Background(), rr("first", 1))
	<-started
	x := goInfer(srv2, context.Background(), rr("x", 2))
	waitQueued(t, srv2, "r", 1)
	y := goInfer(srv2, context.Background(), rr("y", 3))
	waitQueued(t, srv2, "r", 2)
	close(gate)
	for _, ch := range []chan result{f, x, y} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if want := []tensor.Shape{{1}, {5}}; !slices.EqualFunc(seen, want, tensor.Shape.Equal) {
		t.Errorf("ragged batch input shapes %v, want %v ([1, 1] alone, then 2 + 3 elements, flattened)", seen, want)
	}
}

// TestDynamicBatchingCancellation runs in a synctest bubble: the deadline
// of "late" passes on the bubble's clock, once everything else waits.
func TestDynamicBatchingCancellation(t *testing.T) { synctest.Test(t, testDynamicBatchingCancellation) }

func testDynamicBatchingCancellation(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)

	ctx, cancel := context.WithCancel(context.Background())
	cancelled := goInfer(srv, ctx, rowsRequest(t, "cancelled", 1, 2, 0))
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer dcancel()
	late := goInfer(srv, dctx, rowsRequest(t, "late", 1, 2, 0))
	kept := goInfer(srv, context.Background(), rowsRequest(t, "kept", 1, 2, 0))
	waitQueued(t, srv, "m", 3)
	start := time.Now()
	cancel()
	r := <-cancelled
	wantError(t, r.err, triton.Cancelled, `request "cancelled"`)
	r = <-late
	wantError(t, r.err, triton.DeadlineExceeded, `request "late"`)
	if waited := time.Since(start); waited != 30*time.Millisecond {
		t.Errorf("the late request left the queue after %v, want its deadline, 30ms", waited)
	}
	waitQueued(t, srv, "m", 1) // only kept is left
	g.release <- struct{}{}
	g.release <- struct{}{}
	<-first
	if r := <-kept; r.err != nil {
		t.Fatal(r.err)
	}
	for _, b := range g.recorded() {
		if slices.Contains(b, "cancelled") || slices.Contains(b, "late") {
			t.Errorf("a request that left the queue ran: %v", b)
		}
	}
}

// TestDynamicBatchingPolicies runs in a synctest bubble: queue-policy
// timeouts expire on the bubble's clock, exactly.
func TestDynamicBatchingPolicies(t *testing.T) { synctest.Test(t, testDynamicBatchingPolicies) }

func testDynamicBatchingPolicies(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching {
  priority_levels: 2
  default_priority_level: 2
  default_queue_policy { max_queue_size: 2 }
  priority_queue_policy { key: 1 value: { timeout_action: REJECT default_timeout_microseconds: 20000 allow_timeout_override: true } }
}`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)

	bad := rowsRequest(t, "bad", 1, 2, 0)
	bad.Priority = 3
	_, err := srv.Infer(context.Background(), bad)
	wantError(t, err, triton.InvalidArgument, "priority 3", "levels 1 to 2")
	override := rowsRequest(t, "override", 1, 2, 0)
	override.Timeout = time.Millisecond // level 2's policy forbids it
	_, err = srv.Infer(context.Background(), override)
	wantError(t, err, triton.InvalidArgument, "timeout")

	q1, q2 := goInfer(srv, context.Background(), rowsRequest(t, "q1", 1, 2, 0)), goInfer(srv, context.Background(), rowsRequest(t, "q2", 1, 2, 0))
	waitQueued(t, srv, "m", 2)
	_, err = srv.Infer(context.Background(), rowsRequest(t, "q3", 1, 2, 0))
	wantError(t, err, triton.Unavailable, "Exceeds maximum queue size", `request "q3"`)

	high := rowsRequest(t, "high", 1, 2, 0)
	high.Priority = 1
	high.Timeout = 5 * time.Millisecond // shorter than the level's 20ms: allowed
	start := time.Now()
	_, err = srv.Infer(context.Background(), high)
	wantError(t, err, triton.Unavailable, "Request timeout expired")
	if waited := time.Since(start); waited != 5*time.Millisecond {
		t.Errorf("rejected after %v; the override asked for 5ms", waited)
	}

	stats, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := stats[0]; st.Queued != 2 || st.Failures.Rejected != 2 || st.Failures.Other != 2 {
		t.Errorf("stats %+v, want 2 queued, 2 rejected (queue full, timeout), 2 other (bad priority, bad timeout)", st)
	}
	for range 3 {
		g.release <- struct{}{}
	}
	for _, ch := range []chan result{first, q1, q2} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
}

func TestDynamicBatchingPreserveOrdering(t *testing.T) {
	synctest.Test(t, testDynamicBatchingPreserveOrdering)
}

func testDynamicBatchingPreserveOrdering(t *testing.T) {
	// Three instances and batches of one. r0 and r2 are held back while r1
	// and r3 finish: an answer may not come back before every earlier
	// request's answer.
	hold := map[string]chan struct{}{"r0": make(chan struct{}), "r2": make(chan struct{})}
	var started atomic.Int32
	b := backend.Func(func(_ context.Context, bt *backend.Batch) error {
		started.Add(1)
		if ch := hold[bt.Requests[0].ID]; ch != nil {
			<-ch
		}
		for _, r := range bt.Requests {
			out := r.Inputs[0]
			out.Name = "OUTPUT0"
			r.SetOutput(out)
		}
		return nil
	})
	srv := newServer(t, batchingModel(3, `dynamic_batching { preserve_ordering: true preferred_batch_size: [ 1 ] }`), triton.WithBackend("gated", b))
	var (
		mu       sync.Mutex
		returned = map[string]bool{}
		wg       sync.WaitGroup
	)
	for i := range 4 {
		id := fmt.Sprintf("r%d", i)
		wg.Go(func() {
			if _, err := srv.Infer(context.Background(), rowsRequest(t, id, 1, 2, 0)); err != nil {
				t.Error(err)
			}
			mu.Lock()
			returned[id] = true
			mu.Unlock()
		})
		synctest.Wait() // arrival order r0..r3: each has run before the next is sent
		if n := started.Load(); n != int32(i+1) {
			t.Fatalf("%d executions started after sending r%d, want %d", n, i, i+1)
		}
	}
	check := func(want ...string) {
		t.Helper()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for id := range returned {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("returned %v, want %v", got, want)
		}
	}
	check() // r1 and r3 are done, but r0 is not
	close(hold["r0"])
	check("r0", "r1") // r3 waits for r2
	close(hold["r2"])
	wg.Wait()
	check("r0", "r1", "r2", "r3")
}

func TestDynamicBatchingPanicFailsTheBatch(t *testing.T) {
	synctest.Test(t, testDynamicBatchingPanicFailsTheBatch)
}

func testDynamicBatchingPanicFailsTheBatch(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	p := goInfer(srv, context.Background(), rowsRequest(t, "panic", 1, 2, 0))
	waitQueued(t, srv, "m", 1)
	other := goInfer(srv, context.Background(), rowsRequest(t, "other", 1, 2, 0))
	waitQueued(t, srv, "m", 2)
	g.release <- struct{}{}
	g.release <- struct{}{}
	<-first
	for _, ch := range []chan result{p, other} {
		r := <-ch
		wantError(t, r.err, triton.Internal, "backend panic")
	}
	if want := [][]string{{"first"}, {"panic", "other"}}; !slices.EqualFunc(g.recorded(), want, slices.Equal) {
		t.Errorf("batches %v, want %v", g.recorded(), want)
	}
	g.release <- struct{}{}
	if _, err := srv.Infer(context.Background(), rowsRequest(t, "after", 1, 2, 0)); err != nil {
		t.Fatalf("after the panic: %v", err)
	}
}

func TestDynamicBatchingCloseAnswersQueued(t *testing.T) {
	synctest.Test(t, testDynamicBatchingCloseAnswersQueued)
}

func testDynamicBatchingCloseAnswersQueued(t *testing.T) {
	g := newGated(true)
	srv, err := triton.New(triton.WithRepository(mapFS(batchingModel(1, `dynamic_batching { }`))), triton.WithBackend("gated", g))
	if err != nil {
		t.Fatal(err)
	}
	first := occupy(t, srv, g)
	queued := goInfer(srv, context.Background(), rowsRequest(t, "queued", 1, 2, 0))
	waitQueued(t, srv, "m", 1)
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	r := <-queued
	wantError(t, r.err, triton.Unavailable)
	synctest.Wait()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request was running", err)
	default:
	}
	g.release <- struct{}{}
	if r := <-first; r.err != nil {
		t.Errorf("the running request failed: %v", r.err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestDynamicBatchingStress sends requests of random batch sizes from many
// goroutines to two instances; every answer must hold its own rows, and
// every batch must respect max_batch_size.
func TestDynamicBatchingStress(t *testing.T) {
	var maxRows atomic.Int64
	b := backend.Func(func(_ context.Context, bt *backend.Batch) error {
		if n := bt.Size(); n > maxRows.Load() {
			maxRows.Store(n)
		}
		in, err := bt.Input("INPUT0")
		if err != nil {
			return err
		}
		out := in
		out.Name = "OUTPUT0"
		out.Data = slices.Clone(in.Data)
		return bt.SetOutput(out)
	})
	srv := newServer(t, batchingModel(2, `dynamic_batching { max_queue_delay_microseconds: 200 preferred_batch_size: [ 4, 8 ] }`), triton.WithBackend("gated", b))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range 50 {
				req := rowsRequest(t, fmt.Sprintf("g%d-%d", g, i), 1+r.IntN(4), 3, int32(g*1000+i*10))
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(20) == 0 {
					cancel()
				}
				resp, err := srv.Infer(ctx, req)
				cancel()
				if err != nil {
					if triton.CodeOf(err) != triton.Cancelled {
						errs <- err
					}
					continue
				}
				if err := checkRows(t, req, resp); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := maxRows.Load(); m > 8 || m < 2 {
		t.Errorf("largest batch %d rows; want batching (more than 1) within max_batch_size 8", m)
	}
}

func TestDynamicBatchingConfigErrors(t *testing.T) {
	for name, extra := range map[string]string{
		"preferred above max":   `dynamic_batching { preferred_batch_size: [ 16 ] }`,
		"default level":         `dynamic_batching { priority_levels: 2 default_priority_level: 3 }`,
		"policy level":          `dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 5 value: { } } }`,
		"ordering and priority": `dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 }`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := triton.New(triton.WithRepository(mapFS(batchingModel(1, extra))), triton.WithBackend("gated", newGated(false)))
			wantError(t, err, triton.InvalidArgument, "m/config.pbtxt", "dynamic_batching")
		})
	}
	files := batchingModel(1, `dynamic_batching { }`)
	files["m/config.pbtxt"] = strings.Replace(files["m/config.pbtxt"], "max_batch_size: 8", "max_batch_size: 0", 1)
	files["m/config.pbtxt"] = strings.ReplaceAll(files["m/config.pbtxt"], "dims: [ -1 ]", "dims: [ -1, -1 ]")
	_, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("gated", newGated(false)))
	wantError(t, err, triton.InvalidArgument, "dynamic batching needs max_batch_size > 0")
	if !errors.Is(err, err) {
		t.Fatal("unreachable")
	}
}
