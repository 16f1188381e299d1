package triton_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
)

// recorder is an Observer that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []triton.RequestStats
}

func (r *recorder) ObserveRequest(s triton.RequestStats) {
	r.mu.Lock()
	r.recs = append(r.recs, s)
	r.mu.Unlock()
}

// slowLoad is a backend whose Load takes d, on the clock of the synctest
// bubble it runs in, before loading with Backend.
type slowLoad struct {
	backend.Backend
	d time.Duration
}

func (s slowLoad) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	time.Sleep(s.d)
	return s.Backend.Load(ctx, spec)
}

// TestStatsAfterKnownWork runs in a synctest bubble, so that the durations
// are those of the bubble's clock, which moves only when the test sleeps:
// they are known exactly.
func TestStatsAfterKnownWork(t *testing.T) { synctest.Test(t, testStatsAfterKnownWork) }

func testStatsAfterKnownWork(t *testing.T) {
	const ms = time.Millisecond
	g := newGated(true)
	rec := &recorder{}
	srv := newServer(t, batchingModel(1, `dynamic_batching { } metric_tags { key: "team" value: "vision" }`),
		triton.WithBackend("gated", slowLoad{g, 3 * ms}), triton.WithObserver(rec))
	first := occupy(t, srv, g)
	// Ten requests of one row queue behind the running one: with
	// max_batch_size 8 they run as a batch of 8 and a batch of 2. Timeline:
	// 0 first runs, the ten queue; 10ms first ends, the 8 run; 15ms the 8
	// end, the 2 run; 20ms the 2 end.
	var chans []chan result
	for i := range 10 {
		chans = append(chans, goInfer(srv, context.Background(), rowsRequest(t, "q", 1, 2, int32(i))))
	}
	waitQueued(t, srv, "m", 10)
	st, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Pending != 10 || st[0].Queued != 10 {
		t.Errorf("while queued: pending %d, queued %d, want 10 and 10", st[0].Pending, st[0].Queued)
	}
	time.Sleep(10 * ms)
	g.release <- struct{}{}
	<-first
	for _, size := range []int{8, 2} {
		<-g.started
		time.Sleep(5 * ms)
		if b := g.recorded(); len(b[len(b)-1]) != size {
			t.Fatalf("batches %v, want a batch of %d last", b, size)
		}
		g.release <- struct{}{}
	}
	for _, ch := range chans {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	// One failure of each kind: invalid request (OTHER), backend error (BACKEND).
	_, err = srv.Infer(context.Background(), rowsRequest(t, "bad", 9, 2, 0))
	wantError(t, err, triton.InvalidArgument)
	g.gated = false
	g.release <- struct{}{}
	if _, err := srv.Infer(context.Background(), rowsRequest(t, "panic", 1, 2, 0)); err == nil {
		t.Fatal("the panicking request succeeded")
	}

	stats, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := stats[0]
	if s.Name != "m" || s.Version != 1 {
		t.Fatalf("stats for %s v%d", s.Name, s.Version)
	}
	if s.Success.Count != 11 || s.InferenceCount != 11 || s.ExecutionCount != 4 {
		t.Errorf("success %d, inferences %d, executions %d; want 11, 11 and 4 (1 + 8 + 2 + the panic)", s.Success.Count, s.InferenceCount, s.ExecutionCount)
	}
	if s.Fail.Count != 2 || s.Failures.Other != 1 || s.Failures.Backend != 1 || s.Failures.Rejected != 0 || s.Failures.Canceled != 0 {
		t.Errorf("failures %+v (total %d)", s.Failures, s.Fail.Count)
	}
	// first: no queue, 10ms compute; the 8: 10ms queue, 5ms compute; the
	// 2: 15ms queue, 5ms compute.
	if want := (triton.StatDuration{Count: 11, Total: 8*10*ms + 2*15*ms}); s.Queue != want {
		t.Errorf("queue %+v, want %+v", s.Queue, want)
	}
	if want := (triton.StatDuration{Count: 11, Total: 10*ms + 8*5*ms + 2*5*ms}); s.ComputeInfer != want {
		t.Errorf("compute %+v, want %+v", s.ComputeInfer, want)
	}
	if want := (triton.StatDuration{Count: 11, Total: 10*ms + 8*15*ms + 2*20*ms}); s.Success != want {
		t.Errorf("success %+v, want %+v", s.Success, want)
	}
	if s.ComputeInput != (triton.StatDuration{Count: 11}) || s.ComputeOutput != (triton.StatDuration{Count: 11}) {
		t.Errorf("compute input %+v, output %+v; the backend marks no stages", s.ComputeInput, s.ComputeOutput)
	}
	want := map[int64]struct {
		runs  uint64
		infer time.Duration
	}{1: {2, 10 * ms}, 2: {1, 5 * ms}, 8: {1, 5 * ms}} // size 1: first and the panic
	for _, b := range s.Batches {
		w := want[b.BatchSize]
		if w.runs != b.ComputeInfer.Count || w.infer != b.ComputeInfer.Total {
			t.Errorf("batch size %d ran %d times in %v, want %d in %v", b.BatchSize, b.ComputeInfer.Count, b.ComputeInfer.Total, w.runs, w.infer)
		}
		delete(want, b.BatchSize)
	}
	if len(want) != 0 {
		t.Errorf("batch sizes missing: %v (got %+v)", want, s.Batches)
	}
	if s.LastInference.IsZero() || time.Since(s.LastInference) != 0 || s.LoadTime != 3*ms {
		t.Errorf("last inference %v (%v ago), load time %v, want now and 3ms", s.LastInference, time.Since(s.LastInference), s.LoadTime)
	}
	if s.Pending != 0 || s.MetricTags["team"] != "vision" {
		t.Errorf("pending %d, tags %v", s.Pending, s.MetricTags)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 13 {
		t.Fatalf("%d observer records, want 13", len(rec.recs))
	}
	var backendFail, executed8 int
	for _, r := range rec.recs {
		if r.Reason == triton.FailureBackend && r.Err != nil {
			backendFail++
		}
		if r.ExecutedBatchSize == 8 && r.Queue == 10*ms && r.ComputeInfer == 5*ms && r.Request == 15*ms {
			executed8++
		}
	}
	if backendFail != 1 || executed8 != 8 {
		t.Errorf("observer: %d backend failures, %d requests seen in the batch of 8", backendFail, executed8)
	}
}

func TestStatsRejectedAndCanceled(t *testing.T) { synctest.Test(t, testStatsRejectedAndCanceled) }

func testStatsRejectedAndCanceled(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { default_queue_policy { max_queue_size: 1 } }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	ctx, cancel := context.WithCancel(context.Background())
	queued := goInfer(srv, ctx, rowsRequest(t, "queued", 1, 2, 0))
	waitQueued(t, srv, "m", 1)
	_, err := srv.Infer(context.Background(), rowsRequest(t, "full", 1, 2, 0))
	wantError(t, err, triton.Unavailable, "Exceeds maximum queue size")
	cancel()
	if r := <-queued; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("queued request: %v", r.err)
	}
	g.release <- struct{}{}
	<-first
	st, _ := srv.Stats("m", 1)
	if f := st[0].Failures; f.Rejected != 1 || f.Canceled != 1 || st[0].Success.Count != 1 {
		t.Errorf("failures %+v, successes %d", f, st[0].Success.Count)
	}
}

func TestStatsErrors(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	_, err := srv.Stats("nope", 0)
	wantError(t, err, triton.InvalidArgument, "requested model 'nope' is not available")
	_, err = srv.Stats("simple", 5)
	wantError(t, err, triton.InvalidArgument, "requested model version is not available for model 'simple'")
	all, err := srv.Stats("", 0)
	if err != nil || len(all) != 1 || all[0].Name != "simple" {
		t.Fatalf("all stats: %v %v", all, err)
	}
	if triton.FailureRejected.String() != "REJECTED" || triton.NoFailure.String() != "" {
		t.Error("failure reason names")
	}
}

// TestBackendMarksSplitCompute runs in a synctest bubble: the backend's
// sleeps are its compute stages, on the bubble's clock, so the stage
// durations are exact.
func TestBackendMarksSplitCompute(t *testing.T) { synctest.Test(t, testBackendMarksSplitCompute) }

func testBackendMarksSplitCompute(t *testing.T) {
	marking := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		time.Sleep(2 * time.Millisecond)
		b.MarkInputsDone()
		time.Sleep(4 * time.Millisecond)
		b.MarkInferDone()
		time.Sleep(2 * time.Millisecond)
		return mirror(ctx, b)
	})
	srv := newServer(t, map[string]string{"m/config.pbtxt": oneInput("marking", 1, ""), "m/1/x": ""}, triton.WithBackend("marking", marking))
	if _, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1)); err != nil {
		t.Fatal(err)
	}
	st, _ := srv.Stats("m", 0)
	s := st[0]
	if s.ComputeInput.Total != 2*time.Millisecond || s.ComputeInfer.Total != 4*time.Millisecond || s.ComputeOutput.Total != 2*time.Millisecond {
		t.Errorf("input %v, infer %v, output %v; want 2, 4 and 2 ms", s.ComputeInput.Total, s.ComputeInfer.Total, s.ComputeOutput.Total)
	}
	if s.Success.Total != 8*time.Millisecond || s.Queue.Total != 0 {
		t.Errorf("request %v, queue %v; want 8ms and none", s.Success.Total, s.Queue.Total)
	}
}
