package triton_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// countingAddSub is addSub counting its executions, optionally blocking
// until released and failing on request.
type countingAddSub struct {
	runs    atomic.Int32
	release chan struct{}
	fail    atomic.Bool
}

func (c *countingAddSub) fn() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		c.runs.Add(1)
		if c.release != nil {
			<-c.release
		}
		if c.fail.Load() {
			return fmt.Errorf("flaky backend")
		}
		return addSub(ctx, b)
	}
}

func cachedRepo(extra string) map[string]string {
	return simpleRepo("simple/config.pbtxt", simpleConfig+"response_cache { enable: true }\n"+extra)
}

func TestResponseCache(t *testing.T) {
	c := &countingAddSub{}
	srv := newServer(t, cachedRepo(""), triton.WithBackend("gofunc", c.fn()), triton.WithResponseCache(1<<20))
	ctx := context.Background()
	req := simpleRequest(t, 2)
	req.Outputs = []string{"OUTPUT1"}
	first, err := srv.Infer(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if names := outputNames(first); !slices.Equal(names, []string{"OUTPUT1"}) {
		t.Fatalf("first answer %v", names)
	}
	// The same inputs asking for the other output: answered from the cache,
	// which holds every output.
	req2 := simpleRequest(t, 2)
	req2.Outputs = []string{"OUTPUT0"}
	second, err := srv.Infer(ctx, req2)
	if err != nil {
		t.Fatal(err)
	}
	sum := outputInt32(t, second, "OUTPUT0")
	if c.runs.Load() != 1 || sum[5] != 6 {
		t.Fatalf("%d executions, OUTPUT0[5] = %d; want 1 and 6", c.runs.Load(), sum[5])
	}
	// A caller may change its answer; the cache's copy stays.
	sum[5] = -1
	third, _ := srv.Infer(ctx, simpleRequest(t, 2))
	if got := outputInt32(t, third, "OUTPUT0")[5]; got != 6 || len(third.Outputs) != 2 {
		t.Fatalf("after a caller changed its answer: %d, %d outputs", got, len(third.Outputs))
	}
	// Other inputs miss.
	other := simpleRequest(t, 2)
	other.Inputs[1] = int32s(t, "INPUT1", tensor.Shape{2, 16}, seq(32, func(int) int32 { return 5 })...)
	if _, err := srv.Infer(ctx, other); err != nil {
		t.Fatal(err)
	}
	if c.runs.Load() != 2 {
		t.Fatalf("%d executions after a different request, want 2", c.runs.Load())
	}
	st, _ := srv.Stats("simple", 0)
	s := st[0]
	if s.CacheHit.Count != 2 || s.CacheMiss.Count != 2 || s.Success.Count != 4 || s.ExecutionCount != 2 || s.InferenceCount != 4 || !s.ResponseCache {
		t.Errorf("stats: hits %d misses %d successes %d executions %d inferences %d cache %v",
			s.CacheHit.Count, s.CacheMiss.Count, s.Success.Count, s.ExecutionCount, s.InferenceCount, s.ResponseCache)
	}
}

// TestResponseCacheParameters: the response parameters a model sets are
// part of the cached response, on the miss that ran the model and on the
// hits after it.
func TestResponseCacheParameters(t *testing.T) {
	c := &countingAddSub{}
	withParams := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			r.SetParameter("generated_by", "addsub")
			r.SetParameter("run", int64(c.runs.Load()+1))
		}
		return c.fn()(ctx, b)
	})
	srv := newServer(t, cachedRepo(""), triton.WithBackend("gofunc", withParams), triton.WithResponseCache(1<<20))
	want := map[string]any{"generated_by": "addsub", "run": int64(1)}
	for i := range 3 {
		resp, err := srv.Infer(context.Background(), simpleRequest(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(resp.Parameters, want) {
			t.Errorf("request %d: parameters %v, want %v (those of the one execution)", i, resp.Parameters, want)
		}
		resp.Parameters["run"] = int64(-1) // the caller's own copy
	}
	if c.runs.Load() != 1 {
		t.Errorf("%d executions, want 1", c.runs.Load())
	}
}

func TestResponseCacheSingleFlightAndFailures(t *testing.T) {
	synctest.Test(t, testResponseCacheSingleFlightAndFailures)
}

func testResponseCacheSingleFlightAndFailures(t *testing.T) {
	c := &countingAddSub{release: make(chan struct{})}
	srv := newServer(t, cachedRepo(""), triton.WithBackend("gofunc", c.fn()), triton.WithResponseCache(1<<20))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			resp, err := srv.Infer(context.Background(), simpleRequest(t, 1))
			if err == nil && outputInt32(t, resp, "OUTPUT0")[3] != 4 {
				err = fmt.Errorf("wrong answer")
			}
			errs <- err
		})
	}
	synctest.Wait() // one request runs, the other 15 wait for its answer
	if n := c.runs.Load(); n != 1 {
		t.Fatalf("16 identical concurrent requests are running %d times, want once", n)
	}
	close(c.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := c.runs.Load(); n != 1 {
		t.Fatalf("16 identical concurrent requests ran %d times, want once", n)
	}

	// A failure is not cached: the next identical request runs again.
	c.fail.Store(true)
	other := simpleRequest(t, 3)
	_, err := srv.Infer(context.Background(), other)
	wantError(t, err, triton.Internal, "flaky backend")
	c.fail.Store(false)
	if _, err := srv.Infer(context.Background(), simpleRequest(t, 3)); err != nil {
		t.Fatal(err)
	}
	if n := c.runs.Load(); n != 3 {
		t.Errorf("%d runs; the failed request must not have been cached", n)
	}
}

func TestResponseCacheOffOrReloaded(t *testing.T) {
	// Without a server cache the model's setting does nothing.
	c := &countingAddSub{}
	srv := newServer(t, cachedRepo(""), triton.WithBackend("gofunc", c.fn()))
	for range 2 {
		if _, err := srv.Infer(context.Background(), simpleRequest(t, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if c.runs.Load() != 2 {
		t.Errorf("%d runs without a cache, want 2", c.runs.Load())
	}

	// A reload drops the model's cached answers.
	repo := newDiskRepo(t)
	repo.write("simple/config.pbtxt", simpleConfig+"response_cache { enable: true }")
	repo.write("simple/1/x", "")
	c2 := &countingAddSub{}
	srv2, err := triton.NewFromDir(repo.dir, explicit(triton.WithBackend("gofunc", c2.fn()), triton.WithStartupModels("simple"), triton.WithResponseCache(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	infer := func() {
		if _, err := srv2.Infer(context.Background(), simpleRequest(t, 1)); err != nil {
			t.Fatal(err)
		}
	}
	infer()
	infer()
	repo.write("simple/config.pbtxt", simpleConfig+"response_cache { enable: true }\nparameters { key: \"x\" value: { string_value: \"1\" } }")
	if err := srv2.Load(context.Background(), "simple", nil); err != nil {
		t.Fatal(err)
	}
	infer()
	if c2.runs.Load() != 2 {
		t.Errorf("%d runs; want 2 (one before the reload, one after)", c2.runs.Load())
	}
	_, err = triton.New(triton.WithRepository(mapFS(cachedRepo(""))), triton.WithResponseCache(0))
	wantError(t, err, triton.InvalidArgument, "WithResponseCache")
}
