package pytorch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// benchBatch is the batch size of the batching comparison: the server's
// dynamic batcher forms batches of it (preferred_batch_size) from 64
// callers, torchrun runs batches of it formed beforehand.
const benchBatch = 8

// benchBatches are the batch sizes BenchmarkCNNPaired compares batching
// at: benchBatch, and 32, where a batch's fixed cost (the hand-off between
// two executions) is spread over four times as many images.
var benchBatches = []int{benchBatch, 32}

// batchingModel names the model that batches n images at a time.
func batchingModel(n int) string { return fmt.Sprintf("cnn_batching%d", n) }

// benchSetup serves cnn.pt without dynamic batching (cnn), with it and no
// delay (cnn_dynamic), and once for
// each of benchBatches (batchingModel), each on one CPU instance, and
// loads the same file once more through torchrun for the direct calls.
func benchSetup(b *testing.B) (*triton.Server, *torchrun.Module, tensor.Tensor) {
	r := newRepo(b)
	r.model("cnn", "cnn.pt", `backend: "pytorch"
max_batch_size: 8
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]`)
	r.model("cnn_dynamic", "cnn.pt", `backend: "pytorch"
max_batch_size: 8
dynamic_batching { }
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]`)
	for _, n := range benchBatches {
		r.model(batchingModel(n), "cnn.pt", fmt.Sprintf(`backend: "pytorch"
max_batch_size: %d
dynamic_batching { preferred_batch_size: [ %d ] max_queue_delay_microseconds: 100 }
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]`, n, n))
	}
	srv := r.Serve()
	image := seq(784, func(i int) float32 { return float32(i%31) / 31 })
	in := must(tensor.From("INPUT__0", tensor.Shape{1, 1, 28, 28}, image))

	if err := torchrun.Open(filepath.Join(testenv.RepoRoot(b), pytorch.CachePath())); err != nil {
		b.Fatal(err)
	}
	mod, err := torchrun.Load(filepath.Join(r.Dir, "cnn", "1", "model.pt"), torchrun.Options{InferenceMode: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mod.Close() })
	return srv, mod, in
}

// BenchmarkCNN compares srv.Infer on cnn.pt with calling the same
// TorchScript module directly through torchrun, the limit:
//
//   - batch1: one image per call, one caller; server overhead per request
//     is server/batch1 minus torchrun/batch1.
//   - batched: 64 callers of one image each under dynamic batching
//     (batches of benchBatch on one instance), against torchrun running
//     pre-formed batches of benchBatch images from one goroutine; both
//     report ns/image.
func BenchmarkCNN(b *testing.B) {
	srv, mod, in := benchSetup(b)
	ctx := context.Background()

	b.Run("server/batch1", func(b *testing.B) {
		b.ReportAllocs()
		req := &triton.InferRequest{Model: "cnn", Inputs: []tensor.Tensor{in}}
		for b.Loop() {
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("torchrun/batch1", func(b *testing.B) {
		b.ReportAllocs()
		args := []torchrun.Value{{DataType: tensor.FP32, Shape: []int64{1, 1, 28, 28}, Data: in.Data}}
		for b.Loop() {
			if _, err := mod.Forward(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("server/dynamic%d_64callers", benchBatch), func(b *testing.B) {
		b.ReportAllocs()
		before := stats(b, srv, batchingModel(benchBatch))
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 goroutines in all
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			req := &triton.InferRequest{Model: batchingModel(benchBatch), Inputs: []tensor.Tensor{in}}
			for pb.Next() {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		after := stats(b, srv, batchingModel(benchBatch))
		if execs := after.ExecutionCount - before.ExecutionCount; execs > 0 {
			b.ReportMetric(float64(after.InferenceCount-before.InferenceCount)/float64(execs), "images/batch")
		}
	})
	b.Run(fmt.Sprintf("torchrun/preformed%d", benchBatch), func(b *testing.B) {
		b.ReportAllocs()
		data := make([]byte, 0, benchBatch*len(in.Data))
		for range benchBatch {
			data = append(data, in.Data...)
		}
		args := []torchrun.Value{{DataType: tensor.FP32, Shape: []int64{benchBatch, 1, 28, 28}, Data: data}}
		n := 0
		for b.Loop() {
			// One op is one image, as for the server: a batch every
			// benchBatch ops.
			if n%benchBatch == 0 {
				if _, err := mod.Forward(ctx, args); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
	})
}

func stats(b *testing.B, srv *triton.Server, model string) triton.ModelStats {
	b.Helper()
	st, err := srv.Stats(model, 0)
	if err != nil || len(st) != 1 {
		b.Fatalf("Stats: %v %v", st, err)
	}
	return st[0]
}

// BenchmarkCNNPaired measures the same two comparisons as BenchmarkCNN
// side by side, so that noise from other tenants of a busy machine touches
// both sides of each comparison alike: batch1 alternates one srv.Infer and
// one direct Forward per op (the order swapped every op) and reports the
// mean of each and the median per-op difference (overhead-ns/req), and
// batch1dynamic the same on a model that batches;
// batched8 and batched32 run, per op, a round of 256 batches' worth of
// images through the server from 64 callers (batches of 8 or 32) and the
// same images as pre-formed batches of that size through torchrun, in
// alternating order, and report each side's ns/image and the median ratio,
// with the server's forward against torchrun's and the instance's time
// without a forward running; batched8-sparecpu and batched32-sparecpu run
// them again with GOMAXPROCS one lower, leaving the instance's forward
// thread a CPU that no Go thread competes for.
//
//	go test -run '^$' -bench CNNPaired -benchtime 8x ./backend/pytorch/
func BenchmarkCNNPaired(b *testing.B) {
	srv, mod, in := benchSetup(b)
	b.Run("batch1", func(b *testing.B) { loneRequests(b, srv, mod, in, "cnn") })
	// A lone request to a model that batches: the instance queues batches
	// (its forwards go through a worker thread), but one with nothing
	// ahead of it runs on the caller's thread, so the overhead is batch1's.
	b.Run("batch1dynamic", func(b *testing.B) { loneRequests(b, srv, mod, in, "cnn_dynamic") })
	for _, size := range benchBatches {
		b.Run(fmt.Sprintf("batched%d", size), func(b *testing.B) { batchedRounds(b, srv, mod, in, size) })
	}
	// The forward's thread is not one of Go's: at GOMAXPROCS equal to the
	// CPU count the callers' goroutines preempt it on a small machine.
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		for _, size := range benchBatches {
			b.Run(fmt.Sprintf("batched%d-sparecpu", size), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs - 1))
				batchedRounds(b, srv, mod, in, size)
			})
		}
	}
}

// loneRequests is BenchmarkCNNPaired's batch-1 comparison on model: one
// caller, server and direct calls alternating.
func loneRequests(b *testing.B, srv *triton.Server, mod *torchrun.Module, in tensor.Tensor, model string) {
	ctx := context.Background()
	req := &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}}
	args := []torchrun.Value{{DataType: tensor.FP32, Shape: []int64{1, 1, 28, 28}, Data: in.Data}}
	var server, direct time.Duration
	diffs := make([]float64, 0, b.N)
	n := 0
	for b.Loop() {
		var ds, dd time.Duration
		for k := range 2 {
			start := time.Now()
			if (n+k)%2 == 0 {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
				ds = time.Since(start)
			} else {
				if _, err := mod.Forward(ctx, args); err != nil {
					b.Fatal(err)
				}
				dd = time.Since(start)
			}
		}
		server, direct = server+ds, direct+dd
		diffs = append(diffs, float64(ds-dd))
		n++
	}
	b.ReportMetric(float64(server)/float64(n), "server-ns/req")
	b.ReportMetric(float64(direct)/float64(n), "torchrun-ns/req")
	b.ReportMetric(median(diffs), "overhead-ns/req")
}

// batchedRounds is BenchmarkCNNPaired's batched comparison at batches of
// size images.
func batchedRounds(b *testing.B, srv *triton.Server, mod *torchrun.Module, in tensor.Tensor, size int) {
	ctx := context.Background()
	// 256 batches a round, so that the round's start and end (partial
	// batches waiting out the queue delay) weigh the same at every size.
	const callers = 64
	images := 256 * size
	data := make([]byte, 0, size*len(in.Data))
	for range size {
		data = append(data, in.Data...)
	}
	args := []torchrun.Value{{DataType: tensor.FP32, Shape: []int64{int64(size), 1, 28, 28}, Data: data}}
	serverRound := func() time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for g := range callers {
			wg.Go(func() {
				req := &triton.InferRequest{Model: batchingModel(size), Inputs: []tensor.Tensor{in}}
				for range images / callers {
					if _, err := srv.Infer(ctx, req); err != nil {
						b.Errorf("caller %d: %v", g, err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	directRound := func() time.Duration {
		start := time.Now()
		for range images / size {
			if _, err := mod.Forward(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var server, direct time.Duration
	var ratios []float64
	n := 0
	before := stats(b, srv, batchingModel(size))
	for b.Loop() {
		var ds, dd time.Duration
		if n%2 == 0 {
			ds, dd = serverRound(), directRound()
		} else {
			dd, ds = directRound(), serverRound()
		}
		server, direct = server+ds, direct+dd
		ratios = append(ratios, float64(ds)/float64(dd))
		n++
	}
	b.ReportMetric(float64(server)/float64(n*images), "server-ns/image")
	b.ReportMetric(float64(direct)/float64(n*images), "torchrun-ns/image")
	b.ReportMetric(median(ratios), "server/torchrun")
	after := stats(b, srv, batchingModel(size))
	execs := after.ExecutionCount - before.ExecutionCount
	if execs == 0 {
		return
	}
	b.ReportMetric(float64(after.InferenceCount-before.InferenceCount)/float64(execs), "images/batch")
	// Where the gap lies: the server's forward of a full batch against
	// torchrun's (the same call, slower when the server's own work beside
	// it slows the core), and the instance's time without a forward
	// running, per execution (the hand-off from one batch to the next; the
	// forwards of one instance never overlap, while its batches' gathering
	// and answering may run beside the forward of another).
	busy := forwarding(after) - forwarding(before)
	if full, prev := batchStat(after, size), batchStat(before, size); full.Count > prev.Count {
		forward := (full.Total - prev.Total) / time.Duration(full.Count-prev.Count)
		b.ReportMetric(float64(forward)/(float64(direct)/float64(n*images/size)), "forward/torchrun")
	}
	b.ReportMetric(float64(server-busy)/float64(execs), "idle-ns/batch")
}

// forwarding is the total time st's executions spent in the model
// (compute_infer).
func forwarding(st triton.ModelStats) time.Duration {
	var d time.Duration
	for _, bs := range st.Batches {
		d += bs.ComputeInfer.Total
	}
	return d
}

// batchStat returns the ComputeInfer statistics of st's batches of size
// rows (zero if none ran).
func batchStat(st triton.ModelStats, size int) triton.StatDuration {
	for _, bs := range st.Batches {
		if bs.BatchSize == int64(size) {
			return bs.ComputeInfer
		}
	}
	return triton.StatDuration{}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
