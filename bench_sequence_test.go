package triton_test

import (
	"context"
	"sync/atomic"
	"testing"

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
