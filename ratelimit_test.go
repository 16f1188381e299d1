package triton_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/ratelimit"
)

// TestRateLimiter runs two models whose instances each need the one unit of
// resource R: with the rate limiter on, they never execute at the same
// time; with it off, or with two units, they do. Each case runs in a
// synctest bubble: an execution's 5ms sleep lasts until every other
// goroutine waits, so whatever may run beside it does.
func TestRateLimiter(t *testing.T) {
	cfg := `backend: "overlap"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 1 } ] priority: 1 } } ]`
	files := map[string]string{"a/config.pbtxt": cfg, "a/1/x": "", "b/config.pbtxt": cfg, "b/1/x": ""}
	for _, tc := range []struct {
		name        string
		opts        []triton.Option
		wantOverlap bool
	}{
		{"off", nil, true},
		{"on", []triton.Option{triton.WithRateLimiter(ratelimit.Config{})}, false},
		{"two units", []triton.Option{triton.WithRateLimiter(ratelimit.Config{Limits: []ratelimit.Limit{{Name: "r", Count: 2, Device: -1}}})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var running, most atomic.Int32
				overlap := backend.Func(func(ctx context.Context, b *backend.Batch) error {
					n := running.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(5 * time.Millisecond)
					running.Add(-1)
					return mirror(ctx, b)
				})
				srv := newServer(t, files, append(tc.opts, triton.WithBackend("overlap", overlap))...)
				var wg sync.WaitGroup
				for i := range 8 {
					model := []string{"a", "b"}[i%2]
					wg.Go(func() {
						if _, err := srv.Infer(context.Background(), oneInputRequest(t, model, "", 1)); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				want := int32(1) // one at a time
				if tc.wantOverlap {
					want = 2 // both models' instances at once
				}
				if got := most.Load(); got != want {
					t.Errorf("most executions at once: %d, want %d", got, want)
				}
			})
		})
	}
}

func TestRateLimiterConfigErrors(t *testing.T) {
	files := map[string]string{
		"a/config.pbtxt": `backend: "gofunc"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 4 } ] } } ]`,
		"a/1/x": "",
	}
	_, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("gofunc", mirror),
		triton.WithRateLimiter(ratelimit.Config{Limits: []ratelimit.Limit{{Name: "R", Count: 2, Device: -1}}}))
	wantError(t, err, triton.InvalidArgument, `model "a"`, "rate_limiter")
	_, err = triton.New(triton.WithRepository(mapFS(files)),
		triton.WithRateLimiter(ratelimit.Config{Limits: []ratelimit.Limit{{Name: "", Count: 2, Device: -1}}}))
	wantError(t, err, triton.InvalidArgument, "WithRateLimiter")
}
