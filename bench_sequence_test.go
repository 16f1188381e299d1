package triton_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// BenchmarkSequenceOverhead measures the sequence path on a trivial
// stateful model (stateSum: SUM = ACC_OUT = ACC_IN + X): admission, the
// request's turn in its sequence, the control and state tensors added,
// the state kept for the next request, on top of an ordinary Infer. An op
// is one request; each goroutine runs its own sequence, START first.
// Run: go test -run '^$' -bench SequenceOverhead -benchmem .
func BenchmarkSequenceOverhead(b *testing.B) {
	for _, c := range []struct {
		name     string
		m        sumModel
		parallel bool
	}{
		{"no-batching", sumModel{}, false},
		{"batching", sumModel{mbs: 8}, false},
		{"batching/parallel", sumModel{mbs: 8, count: 2}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := newServer(b, c.m.repo(), triton.WithBackend("sum", stateSum(nil)))
			shape := tensor.Shape{1}
			if c.m.mbs > 0 {
				shape = row
			}
			var ids atomic.Uint64
			stream := func(next func() bool) {
				id := ids.Add(1)
				start := seqRequest(b, "m", id, true, false, shape, 1)
				req := seqRequest(b, "m", id, false, false, shape, 1)
				for first := true; next(); first = false {
					r := req
					if first {
						r = start
					}
					if _, err := srv.Infer(context.Background(), r); err != nil {
						b.Error(err)
						return
					}
				}
			}
			b.ReportAllocs()
			if c.parallel {
				b.RunParallel(func(pb *testing.PB) { stream(pb.Next) })
				return
			}
			stream(b.Loop)
		})
	}
}

// BenchmarkIterativeSequence compares a request that its model reschedules
// 16 times (iterative_sequence: one request, 16 executions) against a
// client driving the same 16 executions as a sequence of 16 requests,
// START to END, on the same model and server, alternating op by op. The
// model counts its executions in an implicit state and reschedules until
// the count reaches N (16 for the first, 1 for the client's requests): countConfig.
// Reported: ns per execution of each, and their ratio (median of the ops).
// Run: go test -run '^$' -bench IterativeSequence -benchmem .
func BenchmarkIterativeSequence(b *testing.B) {
	const iterations = 16
	srv := newServer(b, map[string]string{"count/config.pbtxt": countConfig, "count/1/m": ""}, triton.WithBackend("count", counter(nil)))
	ctx := context.Background()
	iterative := &triton.InferRequest{Model: "count", Inputs: []tensor.Tensor{int32s(b, "N", tensor.Shape{1}, iterations)}}
	one := []tensor.Tensor{int32s(b, "N", tensor.Shape{1}, 1)}
	var resched, client []float64
	var id uint64
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := srv.Infer(ctx, iterative); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		id++
		for i := range iterations {
			req := &triton.InferRequest{Model: "count", SequenceID: id, SequenceStart: i == 0, SequenceEnd: i == iterations-1, Inputs: one}
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		resched = append(resched, float64(t1.Sub(t0))/iterations)
		client = append(client, float64(t2.Sub(t1))/iterations)
	}
	ratios := make([]float64, len(resched))
	for i := range resched {
		ratios[i] = resched[i] / client[i]
	}
	b.ReportMetric(medianOf(resched), "rescheduled-ns/exec")
	b.ReportMetric(medianOf(client), "client-ns/exec")
	b.ReportMetric(medianOf(ratios), "ratio")
}

// medianOf returns the median of xs (which it sorts).
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
