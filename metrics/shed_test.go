package metrics_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
)

// TestCollectorShedAndEstimate runs in a synctest bubble, where a batch of
// the sleeper takes exactly 3 ms: after the warm-up and enough batches
// for an estimate, a request with 1 ms left is refused at admission,
// counted as REJECTED and as refused_admission, and the estimate is
// exported (3 ms fixed: every batch had one row).
func TestCollectorShedAndEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, model("m", "sleeper", 8, 1, `dynamic_batching { }
parameters { key: "deadline_aware_batching" value: { string_value: "true" } }`),
			triton.WithBackend("sleeper", sleeper(3*time.Millisecond)))
		c := metrics.NewCollector(srv, metrics.Config{})
		defer c.Close()
		for range 10 { // 2 warm-up batches, then 8 for the estimate
			if _, err := srv.Infer(context.Background(), request(t, "m", "warm")); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err := srv.Infer(ctx, request(t, "m", "late"))
		if triton.CodeOf(err) != triton.Unavailable || !strings.Contains(err.Error(), "cannot finish before its deadline") {
			t.Fatalf("a request with 1 ms left for a 3 ms model: %v, want Unavailable and the reason", err)
		}
		if wait, ok := triton.RetryAfter(err); !ok || wait != 0 {
			t.Errorf("RetryAfter = %v, %v; want 0 (nothing queued ahead), true", wait, ok)
		}
		err = testutil.CollectAndCompare(c, strings.NewReader(`
# HELP tritongo_inference_shed_total Number of inference requests that ended without an answer because of time, by reason (refused_admission, refused_batch: the deadline-aware schedule refused them; deadline_queued, cancelled_queued, deadline_executing, cancelled_executing: their context ended while queued or executing)
# TYPE tritongo_inference_shed_total counter
tritongo_inference_shed_total{model="m",reason="refused_admission",version="1"} 1
# HELP tritongo_batch_execution_estimate_seconds The dynamic batcher's estimate of a batch's execution time, per instance group: a batch of n rows is predicted to take fixed + n*per_row + margin seconds (term)
# TYPE tritongo_batch_execution_estimate_seconds gauge
tritongo_batch_execution_estimate_seconds{group="0",model="m",term="fixed",version="1"} 0.003
tritongo_batch_execution_estimate_seconds{group="0",model="m",term="margin",version="1"} 0
tritongo_batch_execution_estimate_seconds{group="0",model="m",term="per_row",version="1"} 0
`), "tritongo_inference_shed_total", "tritongo_batch_execution_estimate_seconds")
		if err != nil {
			t.Error(err)
		}
		if v := value(t, gather(t, c), "nv_inference_request_failure", "model=m", "reason=REJECTED"); v != 1 {
			t.Errorf("REJECTED failures %v, want 1", v)
		}
	})
}
