package triton_test

import (
	"context"
	"errors"
	"sync"
	"testing"
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

func TestStatsAfterKnownWork(t *testing.T) {
	g := newGated(true)
	rec := &recorder{}
	srv := newServer(t, batchingModel(1, `dynamic_batching { } metric_tags { key: "team" value: "vision" }`),
		triton.WithBackend("gated", g), triton.WithObserver(rec))
	first := occupy(t, srv, g)
	// Ten requests of one row queue behind the running one: with
	// max_batch_size 8 they run as a batch of 8 and a batch of 2.
	var chans []chan result
	for i := range 10 {
		chans = append(chans, goInfer(srv, context.Background(), rowsRequest(t, "q", 1, 2, int32(i))))
	}
	settle()
	st, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Pending != 10 || st[0].Queued != 10 {
		t.Errorf("while queued: pending %d, queued %d, want 10 and 10", st[0].Pending, st[0].Queued)
	}
	for range 3 {
		g.release <- struct{}{}
	}
	<-first
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
	if s.Queue.Count != 11 || s.Queue.Total <= 0 {
		t.Errorf("queue %+v: the queued requests waited", s.Queue)
	}
	if s.ComputeInfer.Count != 11 || s.ComputeInfer.Total <= 0 || s.Success.Total < s.Queue.Total {
		t.Errorf("compute %+v, success %+v", s.ComputeInfer, s.Success)
	}
	want := map[int64]uint64{1: 2, 2: 1, 8: 1}
	for _, b := range s.Batches {
		if want[b.BatchSize] != b.ComputeInfer.Count {
			t.Errorf("batch size %d ran %d times, want %d", b.BatchSize, b.ComputeInfer.Count, want[b.BatchSize])
		}
		delete(want, b.BatchSize)
	}
	if len(want) != 0 {
		t.Errorf("batch sizes missing: %v (got %+v)", want, s.Batches)
	}
	if s.LastInference.IsZero() || time.Since(s.LastInference) > time.Minute || s.LoadTime <= 0 {
		t.Errorf("last inference %v, load time %v", s.LastInference, s.LoadTime)
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
		if r.ExecutedBatchSize == 8 && r.Queue > 0 && r.Request >= r.Queue {
			executed8++
		}
	}
	if backendFail != 1 || executed8 != 8 {
		t.Errorf("observer: %d backend failures, %d requests seen in the batch of 8", backendFail, executed8)
	}
}

func TestStatsRejectedAndCanceled(t *testing.T) {
	g := newGated(true)
	srv := newServer(t, batchingModel(1, `dynamic_batching { default_queue_policy { max_queue_size: 1 } }`), triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	ctx, cancel := context.WithCancel(context.Background())
	queued := goInfer(srv, ctx, rowsRequest(t, "queued", 1, 2, 0))
	settle()
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

func TestBackendMarksSplitCompute(t *testing.T) {
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
	if s.ComputeInput.Total < 2*time.Millisecond || s.ComputeInfer.Total < 4*time.Millisecond || s.ComputeOutput.Total < 2*time.Millisecond {
		t.Errorf("input %v, infer %v, output %v; want at least 2, 4 and 2 ms", s.ComputeInput.Total, s.ComputeInfer.Total, s.ComputeOutput.Total)
	}
	if s.ComputeInfer.Total > s.Success.Total {
		t.Errorf("infer %v longer than the request %v", s.ComputeInfer.Total, s.Success.Total)
	}
}
