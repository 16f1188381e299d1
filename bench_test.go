package triton_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// noop answers INPUT0 with itself as OUTPUT0: no work, no allocation, so
// what is measured is the server's own overhead.
var noop = backend.Func(func(_ context.Context, b *backend.Batch) error {
	r := b.Requests[0]
	out := r.Inputs[0]
	out.Name = "OUTPUT0"
	r.SetOutput(out)
	return nil
})

const noopConfig = `backend: "noop"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`

func noopServer(tb testing.TB) (*triton.Server, *triton.InferRequest) {
	srv := newServer(tb, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/x": ""}, triton.WithBackend("noop", noop))
	in, err := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	if err != nil {
		tb.Fatal(err)
	}
	return srv, &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
}

// BenchmarkInferNoop measures Infer end to end on a no-op Go backend without
// batching: validation, taking a free instance, Execute, output checks.
// Run: go test -run '^$' -bench InferNoop -benchmem .
func BenchmarkInferNoop(b *testing.B) {
	srv, req := noopServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInferNoopParallel is BenchmarkInferNoop from GOMAXPROCS
// goroutines at once, each with its own request.
func BenchmarkInferNoopParallel(b *testing.B) {
	srv, _ := noopServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
		req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
		for pb.Next() {
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkModelInferNoop is BenchmarkInferNoop through a Model handle,
// which skips the lookup of the model by name.
func BenchmarkModelInferNoop(b *testing.B) {
	srv, req := noopServer(b)
	m := srv.Model("noop")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModelHandlePaired compares Model.Infer with Server.Infer on the
// no-op model in rounds that alternate which goes first, 20,000 requests
// each per round, and reports the medians of the rounds' own figures
// (handle/server below 1 means the handle is faster). Pairing inside one
// round keeps the VM's drift out of the ratio.
// Run: go test -run '^$' -bench ModelHandlePaired -benchtime 40x .
func BenchmarkModelHandlePaired(b *testing.B) {
	srv, req := noopServer(b)
	server, handle, ratio := pairedRounds(b, req, srv.Infer, srv.Model("noop").Infer)
	b.ReportMetric(server, "server-ns/req")
	b.ReportMetric(handle, "handle-ns/req")
	b.ReportMetric(ratio, "handle/server")
}

// pairedRounds times base and other on req, 20,000 requests each per
// round, in rounds that alternate which goes first (pairing inside one
// round keeps the VM's drift out of the ratio), and returns the medians
// of the rounds' ns per request and of their ratios other/base.
func pairedRounds(b *testing.B, req *triton.InferRequest, base, other func(context.Context, *triton.InferRequest) (*triton.InferResponse, error)) (baseNS, otherNS, ratio float64) {
	ctx := context.Background()
	const n = 20000
	timeIt := func(infer func(context.Context, *triton.InferRequest) (*triton.InferResponse, error)) float64 {
		start := time.Now()
		for range n {
			if _, err := infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / n
	}
	var xs, ys, rs []float64
	round := 0
	for b.Loop() {
		var x, y float64
		if round%2 == 0 {
			x, y = timeIt(base), timeIt(other)
		} else {
			y, x = timeIt(other), timeIt(base)
		}
		round++
		xs, ys, rs = append(xs, x), append(ys, y), append(rs, y/x)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	return median(xs), median(ys), median(rs)
}

// BenchmarkLifecyclePaired compares Infer on the no-op model served
// without lifecycle bookkeeping (ControlNone) and with it (ControlExplicit
// and a memory budget: each request's end recorded for the eviction
// order), in rounds that alternate which goes first, 20,000 requests each
// per round; it reports the medians (tracked/plain above 1 is the cost).
// Run: go test -run '^$' -bench LifecyclePaired -benchtime 40x .
func BenchmarkLifecyclePaired(b *testing.B) {
	plain, req := noopServer(b)
	tracked := newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/x": ""}, triton.WithBackend("noop", noop),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("noop"), triton.WithMemoryBudget(1<<30))
	p, t, ratio := pairedRounds(b, req, plain.Infer, tracked.Infer)
	b.ReportMetric(p, "plain-ns/req")
	b.ReportMetric(t, "tracked-ns/req")
	b.ReportMetric(ratio, "tracked/plain")
}

// TestInferAllocationBudget keeps the request path's allocations in check,
// through Server.Infer and through a Model handle: a regression fails
// here, not only on a dashboard.
func TestInferAllocationBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation budget needs a warm pool")
	}
	srv, req := noopServer(t)
	m := srv.Model("noop")
	ctx := context.Background()
	for name, infer := range map[string]func(context.Context, *triton.InferRequest) (*triton.InferResponse, error){
		"Server.Infer": srv.Infer, "Model.Infer": m.Infer,
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := infer(ctx, req); err != nil {
				t.Fatal(err)
			}
		})
		const budget = 4
		if allocs > budget {
			t.Errorf("%s allocates %.1f times per call, budget %d", name, allocs, budget)
		}
	}
}

// BenchmarkBaselineExecute calls the no-op backend directly, without the
// server: the floor BenchmarkInferNoop is compared with.
func BenchmarkBaselineExecute(b *testing.B) {
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	r := &backend.Request{Inputs: []tensor.Tensor{in}, BatchSize: 1}
	batch := backend.NewBatch(true, r)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		if err := noop.Execute(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineHandoff is the floor of the design the server dropped
// (a worker goroutine per instance): hand a pointer to a waiting goroutine
// on a channel and wait for its answer. Infer now runs Execute on the
// caller's goroutine and costs less than this hand-off alone.
func BenchmarkBaselineHandoff(b *testing.B) {
	type job struct{ done chan struct{} }
	queue := make(chan *job, 1024)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for j := range queue {
			j.done <- struct{}{}
		}
	}()
	j := &job{done: make(chan struct{}, 1)}
	b.ReportAllocs()
	for b.Loop() {
		queue <- j
		<-j.done
	}
	close(queue)
	<-stopped
}

// noopBatch answers every request of a batch with its own input, without
// copying: a batching model's no-op.
var noopBatch = backend.Func(func(_ context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		out := r.Inputs[0]
		out.Name = "OUTPUT0"
		r.SetOutput(out)
	}
	return nil
})

// BenchmarkBatcherOverhead measures the server's cost per request with 64
// goroutines calling Infer at once on a no-op backend with 2 instances:
// without a batcher (each request runs alone), with dynamic batching
// (requests coalesce into batches of up to 64), and with a preferred batch
// size of 32 and a delay, where every batch waits for its requests to
// arrive one by one. ns/op is wall time per request across all goroutines.
// Run: go test -run '^$' -bench BatcherOverhead -benchmem .
func BenchmarkBatcherOverhead(b *testing.B) {
	for _, bc := range []struct{ name, extra string }{
		{"direct", ""},
		{"dynamic", "dynamic_batching { }"},
		{"preferred=32", "dynamic_batching { preferred_batch_size: [ 32 ] max_queue_delay_microseconds: 1000 }"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := `backend: "noop" max_batch_size: 64
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
` + bc.extra
			srv := newServer(b, map[string]string{"noop/config.pbtxt": cfg, "noop/1/x": ""}, triton.WithBackend("noop", noopBatch))
			ctx := context.Background()
			b.SetParallelism(64 / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
				req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
				for pb.Next() {
					if _, err := srv.Infer(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkBatcherOneCaller is the other end of BenchmarkBatcherOverhead:
// one goroutine calling Infer on the no-op backend with one instance and
// dynamic_batching { }, so every request finds the instance free and its
// batch is formed on its own goroutine (no trip through the scheduler).
// Run: go test -run '^$' -bench BatcherOneCaller -benchmem .
func BenchmarkBatcherOneCaller(b *testing.B) {
	cfg := `backend: "noop" max_batch_size: 64
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { }
`
	srv := newServer(b, map[string]string{"noop/config.pbtxt": cfg, "noop/1/x": ""}, triton.WithBackend("noop", noopBatch))
	ctx := context.Background()
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueueDelay measures how long a lone request waits out
// max_queue_delay_microseconds: 100, one caller on the no-op backend,
// against the same model with no delay in the same run (requests
// alternating). The metric overshoot-ns is the median of the paired
// differences minus the configured 100 µs: the time the delay takes beyond
// what was asked (the runtime's idle sleep is whole milliseconds without
// the scheduler's nudge, see batcher/nudge_linux.go).
// Run: go test -run '^$' -bench QueueDelay -benchtime 2000x .
func BenchmarkQueueDelay(b *testing.B) {
	const delay = 100 * time.Microsecond
	model := func(us int64) string {
		return fmt.Sprintf(`backend: "noop" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: %d }`, us)
	}
	srv := newServer(b, map[string]string{
		"delayed/config.pbtxt": model(delay.Microseconds()), "delayed/1/x": "",
		"prompt/config.pbtxt": model(0), "prompt/1/x": "",
	}, triton.WithBackend("noop", noopBatch))
	ctx := context.Background()
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	delayed := &triton.InferRequest{Model: "delayed", Inputs: []tensor.Tensor{in}}
	prompt := &triton.InferRequest{Model: "prompt", Inputs: []tensor.Tensor{in}}
	timed := func(req *triton.InferRequest) time.Duration {
		start := time.Now()
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var diffs []float64
	var waited time.Duration
	for b.Loop() {
		d, p := timed(delayed), timed(prompt)
		waited += d
		diffs = append(diffs, float64(d-p-delay))
	}
	slices.Sort(diffs)
	b.ReportMetric(diffs[len(diffs)/2], "overshoot-ns")
	b.ReportMetric(float64(waited)/float64(len(diffs)), "delayed-ns/req")
}

// BenchmarkResponseCache compares a cache hit with a miss on the same model
// (the no-op backend, response_cache on): hit answers from memory, miss
// runs the model (each iteration sends new inputs) and stores the answer.
// Run: go test -run '^$' -bench ResponseCache -benchmem .
func BenchmarkResponseCache(b *testing.B) {
	cfg := noopConfig + "\nresponse_cache { enable: true }"
	srv := newServer(b, map[string]string{"noop/config.pbtxt": cfg, "noop/1/x": ""}, triton.WithBackend("noop", noop), triton.WithResponseCache(64<<20))
	ctx := context.Background()
	vals := make([]float32, 16)
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, vals)
	req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
	b.Run("hit", func(b *testing.B) {
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		i := float32(0)
		for b.Loop() {
			i++
			vals[0] = i // new inputs every time
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnsembleOverhead measures what the ensemble scheduler adds to a
// chain of three no-op steps, against the same three requests made one
// after another by hand. The difference is the scheduler's cost per request.
// Run: go test -run '^$' -bench EnsembleOverhead -benchmem .
func BenchmarkEnsembleOverhead(b *testing.B) {
	srv := newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/x": "", "chain/config.pbtxt": chainConfig("noop", "noop", "noop"), "chain/1/x": ""},
		triton.WithBackend("noop", noop))
	in, _ := tensor.From("IN", tensor.Shape{1, 16}, make([]float32, 16))
	ctx := context.Background()
	b.Run("ensemble", func(b *testing.B) {
		req := &triton.InferRequest{Model: "chain", Inputs: []tensor.Tensor{in}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x := in
			for range 3 {
				x.Name = "INPUT0"
				resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{x}})
				if err != nil {
					b.Fatal(err)
				}
				x = resp.Outputs[0]
			}
		}
	})
}

// BenchmarkEnsemblePipelining: three steps, each a model with one
// instance that holds it for 1 ms without using the CPU (as a GPU or a
// remote service would), under 16 callers. Each step alone can do at most
// about 1000 requests/s; the ensemble reaches that only if it keeps all
// three steps busy at once, each on a different request. Compare
// ensemble/c16 with step-alone/c16 (req/s).
// Run: go test -run '^$' -bench EnsemblePipelining -count 3 .
func BenchmarkEnsemblePipelining(b *testing.B) {
	hold := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		time.Sleep(time.Millisecond)
		return noop(ctx, b)
	})
	step := strings.Replace(strings.Replace(noopConfig, "count: 2", "count: 1", 1), `"noop"`, `"hold"`, 1)
	srv := newServer(b, map[string]string{
		"s1/config.pbtxt": step, "s1/1/x": "", "s2/config.pbtxt": step, "s2/1/x": "", "s3/config.pbtxt": step, "s3/1/x": "",
		"chain/config.pbtxt": chainConfig("s1", "s2", "s3"), "chain/1/x": "",
	}, triton.WithBackend("hold", hold))
	ctx := context.Background()
	for _, c := range []struct{ name, model, input string }{
		{"step-alone/c16", "s2", "INPUT0"},
		{"ensemble/c16", "chain", "IN"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(16 / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				in, _ := tensor.From(c.input, tensor.Shape{1, 16}, make([]float32, 16))
				req := &triton.InferRequest{Model: c.model, Inputs: []tensor.Tensor{in}}
				for pb.Next() {
					if _, err := srv.Infer(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// chainConfig is an ensemble of three steps in a row on models with
// noopConfig's tensors: IN → m1 → m2 → m3 → OUT.
func chainConfig(m1, m2, m3 string) string {
	return fmt.Sprintf(`platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "%s" input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "T1" } },
  { model_name: "%s" input_map { key: "INPUT0" value: "T1" } output_map { key: "OUTPUT0" value: "T2" } },
  { model_name: "%s" input_map { key: "INPUT0" value: "T2" } output_map { key: "OUTPUT0" value: "OUT" } }
] }`, m1, m2, m3)
}

// BenchmarkInferStream measures InferStream on a decoupled no-op backend
// that sends 64 responses per request (each INPUT0 as OUTPUT0), and
// reports the cost per response.
// Run: go test -run '^$' -bench InferStream -benchmem .
func BenchmarkInferStream(b *testing.B) {
	const responses = 64
	stream := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		out := r.Inputs[0]
		out.Name = "OUTPUT0"
		outs := []tensor.Tensor{out}
		for range responses {
			if err := send(backend.Response{Outputs: outs}); err != nil {
				return err
			}
		}
		return nil
	})
	cfg := strings.Replace(noopConfig, `backend: "noop"`, "backend: \"stream\"\nmodel_transaction_policy { decoupled: true }", 1)
	srv := newServer(b, map[string]string{"s/config.pbtxt": cfg, "s/1/x": ""}, triton.WithBackend("stream", stream))
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	req := &triton.InferRequest{Model: "s", Inputs: []tensor.Tensor{in}}
	ctx := context.Background()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, err := range srv.InferStream(ctx, req) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	if n != b.N*responses {
		b.Fatalf("%d responses, want %d", n, b.N*responses)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/response")
}
