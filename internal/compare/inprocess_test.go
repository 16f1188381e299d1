package compare

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// The in-process comparison (issue #22): srv.Infer on add_sub against one
// raw onnxruntime_go session behind a FIFO, which is what a minimal server
// that holds one session does with concurrent requests.

// inprocConfig is add_sub with nothing but its tensors: the
// instance_group and the ONNX Runtime threads are what a user who sets
// nothing gets.
func inprocConfig() string {
	c := addSubConfig(1)
	i := strings.Index(c, "instance_group")
	return c[:i]
}

// inprocFIFO is one raw session whose runs are serialised by a mutex: a
// caller waits for the runs ahead of it, then runs alone (rawAddSub per
// request). A sync.Mutex lets a caller that arrives while the session is
// free take it at once, which favours the baseline's throughput over a
// strict queue's.
type inprocFIFO struct {
	mu sync.Mutex
	s  *ort.DynamicAdvancedSession
}

func (f *inprocFIFO) addSub(in0, in1 []float32) (sum, diff []float32, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return rawAddSub(f.s, in0, in1)
}

// inprocCallers is the most goroutines a contender below is run from.
const inprocCallers = 64

// inprocFIFOContender is the baseline, with inputs for inprocCallers
// goroutines; every answer is checked.
func inprocFIFOContender(f *inprocFIFO) contender {
	ins := make([][2][]float32, inprocCallers)
	for g := range ins {
		a, b, _, _ := addSubInputs(g)
		ins[g] = [2][]float32{a, b}
	}
	return contender{"raw-fifo", func(c int, d time.Duration) load {
		return closedLoop(c, d, func(g int) error {
			sum, diff, err := f.addSub(ins[g][0], ins[g][1])
			if err != nil {
				return err
			}
			return checkAddSub(g, sum, diff)
		})
	}}
}

// inprocInfer sends req (request g) to srv and checks the answer.
func inprocInfer(ctx context.Context, srv *triton.Server, g int, req *triton.InferRequest) error {
	resp, err := srv.Infer(ctx, req)
	if err != nil {
		return err
	}
	o0, ok0 := resp.Output("OUTPUT0")
	o1, ok1 := resp.Output("OUTPUT1")
	if !ok0 || !ok1 {
		return fmt.Errorf("request %d: outputs missing from %v", g, resp.Outputs)
	}
	sum, err := tensor.View[float32](o0)
	if err != nil {
		return err
	}
	diff, err := tensor.View[float32](o1)
	if err != nil {
		return err
	}
	return checkAddSub(g, sum, diff)
}

// inprocServerContender is srv.Infer, each caller with its own request built
// once (as the baseline's inputs are); every answer is checked.
func inprocServerContender(tb testing.TB, srv *triton.Server) contender {
	reqs := make([]*triton.InferRequest, inprocCallers)
	for g := range reqs {
		reqs[g] = addSubRequest(tb, g)
	}
	ctx := context.Background()
	return contender{"server", func(c int, d time.Duration) load {
		return closedLoop(c, d, func(g int) error { return inprocInfer(ctx, srv, g, reqs[g]) })
	}}
}

// TestFIFOBaseline: the FIFO baseline answers every caller correctly when
// they call at once, and so does the server configured as the benchmarks
// run it.
func TestFIFOBaseline(t *testing.T) {
	srv := addSubServer(t, inprocConfig())
	f := &inprocFIFO{s: rawSession(t, 1)}
	const callers = 8
	var wg sync.WaitGroup
	errs := make([]error, 2*callers)
	for g := range callers {
		a, b, _, _ := addSubInputs(g)
		req := addSubRequest(t, g)
		wg.Go(func() {
			for range 3 {
				sum, diff, err := f.addSub(a, b)
				if err == nil {
					err = checkAddSub(g, sum, diff)
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		})
		wg.Go(func() {
			for range 3 {
				if err := inprocInfer(context.Background(), srv, g, req); err != nil {
					errs[callers+g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	cfg, err := srv.ModelConfig("add_sub", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.GetInstanceGroup()); n != 1 || cfg.GetInstanceGroup()[0].GetCount() != 2 {
		t.Errorf("add_sub with no instance_group got %v; the benchmarks below describe it as 2 CPU instances", cfg.GetInstanceGroup())
	}
}

// BenchmarkInProcess compares srv.Infer on add_sub, configured with nothing
// but its tensors, with one raw session behind a FIFO at 1, 16 and 64
// callers, in interleaved rounds of 300 ms per contender and concurrency
// (an op is a round):
//
//	go test -run '^$' -bench 'InProcess$' -benchtime 12x ./internal/compare/
func BenchmarkInProcess(b *testing.B) {
	srv := addSubServer(b, inprocConfig())
	f := &inprocFIFO{s: rawSession(b, 1)}
	paired(b, 300*time.Millisecond, []int{1, 16, 64}, inprocFIFOContender(f), inprocServerContender(b, srv))
}

// BenchmarkInProcessOverhead measures what srv.Infer costs a single caller
// beyond the raw session's own per-request work (rawAddSub): in each round
// (an op) both run alone for 300 ms, in alternating order, and the round's
// overhead is the difference of their mean latencies. It reports the
// median overhead and its range over the rounds, and both means' medians:
//
//	go test -run '^$' -bench InProcessOverhead -benchtime 20x ./internal/compare/
func BenchmarkInProcessOverhead(b *testing.B) {
	srv := addSubServer(b, inprocConfig())
	f := &inprocFIFO{s: rawSession(b, 1)}
	cs := []contender{inprocFIFOContender(f), inprocServerContender(b, srv)}
	const slice = 300 * time.Millisecond
	var raw, ours, over []float64
	round := 0
	for b.Loop() {
		var mean [2]float64 // µs per request
		for k := range cs {
			i := (k + round) % len(cs)
			l := cs[i].run(1, slice)
			if l.errs > 0 {
				b.Fatalf("%s: %d requests failed", cs[i].name, l.errs)
			}
			mean[i] = 1e6 / l.rps
		}
		raw, ours, over = append(raw, mean[0]), append(ours, mean[1]), append(over, mean[1]-mean[0])
		round++
	}
	b.ReportMetric(median(raw), "raw-µs/req")
	b.ReportMetric(median(ours), "server-µs/req")
	b.ReportMetric(median(over), "overhead-µs")
	b.ReportMetric(slices.Min(over), "overhead-µs-min")
	b.ReportMetric(slices.Max(over), "overhead-µs-max")
	b.ReportMetric(0, "ns/op") // an op is a round
}

// BenchmarkInProcessLoop runs one caller's requests back to back, for
// -count tables and for counting instructions with callgrind (the
// difference between two -benchtime counts is the cost of that many
// requests): the raw session per request as rawAddSub does it; srv.Infer
// with nothing configured; and srv.Infer with one instance, whose intra-op
// pool then has a thread per core, with its threads not spinning (the
// backend's default) and spinning (ONNX Runtime's):
//
//	go test -run '^$' -bench InProcessLoop -benchmem -count 6 ./internal/compare/
func BenchmarkInProcessLoop(b *testing.B) {
	one := addSubConfig(1)
	spinning := one + `parameters { key: "session.intra_op.allow_spinning" value: { string_value: "1" } }` + "\n"
	b.Run("raw", func(b *testing.B) {
		addSubServer(b, inprocConfig()) // the ONNX Runtime environment
		s := rawSession(b, 1)
		a, c, _, _ := addSubInputs(1)
		sum, diff, err := rawAddSub(s, a, c)
		if err == nil {
			err = checkAddSub(1, sum, diff)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := rawAddSub(s, a, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct{ name, config string }{
		{"server", inprocConfig()},
		{"server-1-instance", one},
		{"server-1-instance-spinning", spinning},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := addSubServer(b, tc.config)
			req := addSubRequest(b, 1)
			ctx := context.Background()
			if err := inprocInfer(ctx, srv, 1, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
