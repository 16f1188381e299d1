package onnxruntime_test

// Dynamic batching and instance groups with real models (issue #4).
//
// BenchmarkSileroBatching serves the batch-first Silero VAD v6 variant
// (scripts/make-silero-batched.py, made by scripts/fetch-models.sh) with
// dynamic batching to 64 goroutines that each send one chunk with its own
// state, against the naive way (the same 64 goroutines sharing one
// onnxruntime_go session under a mutex, batch 1) and against the limit
// (onnxruntime_go alone running pre-formed batches on both cores).
// BenchmarkOCRInstances serves PP-OCR's recogniser with one and with two
// instances to 4 goroutines. TestSileroBatchedVariant checks that the
// variant computes what the original model does. Results and commands are
// in docs/performance.md.

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// sileroBatchedModel is the batch-first variant, relative to .cache/models:
// input [batch, 576], state [batch, 2, 128] -> output [batch, 1],
// stateN [batch, 2, 128]; sr is fixed at 16000.
const sileroBatchedModel = "silero_vad_v6_batched.onnx"

// sileroBatchedConfig serves the variant with dynamic batching (db is the
// body of dynamic_batching { }), up to maxBatch requests a batch, on count
// CPU instances with one intra-op and one inter-op thread each.
func sileroBatchedConfig(name string, maxBatch int, db string, count int) string {
	return fmt.Sprintf(`
name: %q
backend: "onnxruntime"
max_batch_size: %d
input [
  { name: "input" data_type: TYPE_FP32 dims: [ 576 ] },
  { name: "state" data_type: TYPE_FP32 dims: [ 2, 128 ] }
]
output [
  { name: "output" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "stateN" data_type: TYPE_FP32 dims: [ 2, 128 ] }
]
dynamic_batching { %s }
instance_group [ { count: %d kind: KIND_CPU } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
`, name, maxBatch, db, count)
}

// ortSession opens file with onnxruntime_go; threads > 0 sets the intra-op
// and inter-op thread counts, 0 keeps ONNX Runtime's defaults. The ONNX
// Runtime environment must already exist (a server has loaded a model).
func ortSession(t testing.TB, file string, inputs, outputs []string, threads int) *ort.DynamicAdvancedSession {
	t.Helper()
	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	if threads > 0 {
		if err := opts.SetIntraOpNumThreads(threads); err != nil {
			t.Fatal(err)
		}
		if err := opts.SetInterOpNumThreads(threads); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ort.NewDynamicAdvancedSession(file, inputs, outputs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Destroy(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// f32 wraps data as an onnxruntime_go tensor, or makes an empty one of the
// shape when data is nil.
func f32(t testing.TB, data []float32, shape ...int64) *ort.Tensor[float32] {
	t.Helper()
	var x *ort.Tensor[float32]
	var err error
	if data == nil {
		x, err = ort.NewEmptyTensor[float32](ort.NewShape(shape...))
	} else {
		x, err = ort.NewTensor(ort.NewShape(shape...), data)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.Destroy(); err != nil {
			t.Error(err)
		}
	})
	return x
}

// sileroRun runs one Silero session once on new tensors and returns copies
// of its two outputs. batch is the number of rows; batchFirst says whether
// the session is the variant (state [batch, 2, 128], no sr) or the original
// (state [2, batch, 128], sr). Used by the test, not timed.
func sileroRun(s *ort.DynamicAdvancedSession, batchFirst bool, batch int64, input, state []float32) (probs, next []float32, err error) {
	stateShape := ort.NewShape(2, batch, 128)
	if batchFirst {
		stateShape = ort.NewShape(batch, 2, 128)
	}
	var vals []ort.Value
	defer func() {
		for _, v := range vals {
			err = errors.Join(err, v.Destroy())
		}
	}()
	in, err := ort.NewTensor(ort.NewShape(batch, sileroContext+sileroChunk), input)
	if err != nil {
		return nil, nil, err
	}
	vals = append(vals, in)
	st, err := ort.NewTensor(stateShape, state)
	if err != nil {
		return nil, nil, err
	}
	vals = append(vals, st)
	ins := []ort.Value{in, st}
	if !batchFirst {
		sr, err := ort.NewScalar(int64(16000))
		if err != nil {
			return nil, nil, err
		}
		vals = append(vals, sr)
		ins = append(ins, sr)
	}
	out, err := ort.NewEmptyTensor[float32](ort.NewShape(batch, 1))
	if err != nil {
		return nil, nil, err
	}
	vals = append(vals, out)
	nx, err := ort.NewEmptyTensor[float32](stateShape)
	if err != nil {
		return nil, nil, err
	}
	vals = append(vals, nx)
	if err := s.Run(ins, []ort.Value{out, nx}); err != nil {
		return nil, nil, err
	}
	return slices.Clone(out.GetData()), slices.Clone(nx.GetData()), nil
}

// sileroTrace is one stream's probabilities and states, chunk by chunk.
type sileroTrace struct{ probs, states [][]float32 }

// traceStep wraps step to record what it returns.
func (tr *sileroTrace) traceStep(step sileroStep) sileroStep {
	return func(input, state []float32) (float32, []float32, error) {
		p, next, err := step(input, state)
		if err == nil {
			tr.probs = append(tr.probs, []float32{p})
			tr.states = append(tr.states, slices.Clone(next))
		}
		return p, next, err
	}
}

// maxDiff is the largest absolute difference between two traces' values;
// it fails t when their lengths differ.
func maxDiff(t *testing.T, a, b [][]float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d chunks against %d", len(a), len(b))
	}
	var d float64
	for i := range a {
		if len(a[i]) != len(b[i]) {
			t.Fatalf("chunk %d: %d values against %d", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// sileroStreams makes n different 16 kHz streams of the given number of
// 512-sample chunks from the recording: stream i is it delayed by i·131
// samples of silence.
func sileroStreams(samples []float32, n, chunks int) [][]float32 {
	streams := make([][]float32, n)
	for i := range streams {
		s := make([]float32, chunks*sileroChunk)
		copy(s[min(i*131, len(s)):], samples)
		streams[i] = s
	}
	return streams
}

// TestSileroBatchedVariant checks the batch-first variant against the
// original Silero VAD v6: batch-1 runs over the recording give the same
// probabilities and states, a batch of B different streams gives what B
// separate runs of the original give, and so do B streams sent
// concurrently, one chunk a request, to a server that batches them.
func TestSileroBatchedVariant(t *testing.T) {
	const tol = 1e-5
	orig := testenv.Model(t, sileroModel)
	variant := testenv.Model(t, sileroBatchedModel)
	samples, _, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		t.Fatal(err)
	}
	// The server comes first: its model load creates the ONNX Runtime
	// environment the direct sessions need.
	srv := serveReal(t,
		realEntry{name: "silero_batched", file: variant, config: sileroBatchedConfig("silero_batched", 16, "max_queue_delay_microseconds: 2000", 2)},
		realEntry{name: "silero_batched_auto", file: variant})
	cfg, err := srv.ModelConfig("silero_batched_auto", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() == 0 || cfg.GetDynamicBatching() == nil {
		t.Errorf("auto-complete of the variant: max_batch_size %d, dynamic batching %v; want it batchable",
			cfg.GetMaxBatchSize(), cfg.GetDynamicBatching() != nil)
	}
	so := ortSession(t, orig, []string{"input", "state", "sr"}, []string{"output", "stateN"}, 1)
	sv := ortSession(t, variant, []string{"input", "state"}, []string{"output", "stateN"}, 1)
	step := func(s *ort.DynamicAdvancedSession, batchFirst bool) sileroStep {
		return func(input, state []float32) (float32, []float32, error) {
			p, next, err := sileroRun(s, batchFirst, 1, input, state)
			if err != nil {
				return 0, nil, err
			}
			return p[0], next, nil
		}
	}

	// The original, batch 1, one stream after the other: the reference.
	const streams, chunks = 16, 60
	ins := sileroStreams(samples, streams, chunks)
	want := make([]sileroTrace, streams)
	for i, s := range ins {
		if _, err := sileroProbs(s, want[i].traceStep(step(so, false))); err != nil {
			t.Fatal(err)
		}
	}
	// Exact agreement below means something only if the streams differ
	// from each other and hold speech.
	var peak float32
	for _, p := range want[0].probs {
		peak = max(peak, p[0])
	}
	if d := maxDiff(t, want[0].probs, want[streams-1].probs); d < 0.01 || peak < 0.9 {
		t.Fatalf("reference streams: first and last differ by %.3g, peak probability %.3f; want different streams with speech", d, peak)
	}

	t.Run("batch 1 equals the original", func(t *testing.T) {
		var a, b sileroTrace
		if _, err := sileroProbs(samples, a.traceStep(step(so, false))); err != nil {
			t.Fatal(err)
		}
		if _, err := sileroProbs(samples, b.traceStep(step(sv, true))); err != nil {
			t.Fatal(err)
		}
		dp, ds := maxDiff(t, a.probs, b.probs), maxDiff(t, a.states, b.states)
		t.Logf("%d chunks of speech_16k.wav: max |Δ| probability %.3g, state %.3g", len(a.probs), dp, ds)
		if dp > tol || ds > tol {
			t.Errorf("variant differs from the original by up to %.3g (probability) and %.3g (state); want < %g", dp, ds, tol)
		}
	})

	t.Run(fmt.Sprintf("a batch of %d streams equals %d runs", streams, streams), func(t *testing.T) {
		got := make([]sileroTrace, streams)
		const row = sileroContext + sileroChunk
		input := make([]float32, streams*row)
		state := make([]float32, streams*2*128)
		for c := range chunks {
			for i, s := range ins {
				r := input[i*row : (i+1)*row]
				copy(r, r[sileroChunk:]) // the previous chunk's last 64 samples
				copy(r[sileroContext:], s[c*sileroChunk:(c+1)*sileroChunk])
			}
			probs, next, err := sileroRun(sv, true, streams, input, state)
			if err != nil {
				t.Fatal(err)
			}
			copy(state, next)
			for i := range got {
				got[i].probs = append(got[i].probs, probs[i:i+1])
				got[i].states = append(got[i].states, next[i*256:(i+1)*256])
			}
		}
		var dp, ds float64
		for i := range got {
			dp = max(dp, maxDiff(t, want[i].probs, got[i].probs))
			ds = max(ds, maxDiff(t, want[i].states, got[i].states))
		}
		t.Logf("%d streams × %d chunks in batches of %d: max |Δ| probability %.3g, state %.3g", streams, chunks, streams, dp, ds)
		if dp > tol || ds > tol {
			t.Errorf("batched rows differ from separate runs by up to %.3g (probability) and %.3g (state); want < %g", dp, ds, tol)
		}
	})

	t.Run("through the server, concurrently", func(t *testing.T) {
		got := make([]sileroTrace, streams)
		errs := make([]error, streams)
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				_, errs[i] = sileroProbs(ins[i], got[i].traceStep(func(input, state []float32) (float32, []float32, error) {
					in, err := tensor.From("input", tensor.Shape{1, sileroContext + sileroChunk}, input)
					if err != nil {
						return 0, nil, err
					}
					st, err := tensor.From("state", tensor.Shape{1, 2, 128}, state)
					if err != nil {
						return 0, nil, err
					}
					resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "silero_batched", Inputs: []tensor.Tensor{in, st}})
					if err != nil {
						return 0, nil, err
					}
					var p, next []float32
					for _, o := range resp.Outputs {
						v, err := tensor.View[float32](o)
						if err != nil {
							return 0, nil, err
						}
						switch o.Name {
						case "output":
							p = v
						case "stateN":
							next = v
						}
					}
					if len(p) != 1 || len(next) != 256 {
						return 0, nil, fmt.Errorf("outputs of %d and %d values, want 1 and 256", len(p), len(next))
					}
					return p[0], next, nil
				}))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var dp, ds float64
		for i := range got {
			dp = max(dp, maxDiff(t, want[i].probs, got[i].probs))
			ds = max(ds, maxDiff(t, want[i].states, got[i].states))
		}
		t.Logf("%d concurrent streams × %d chunks through dynamic batching: max |Δ| probability %.3g, state %.3g", streams, chunks, dp, ds)
		if dp > tol || ds > tol {
			t.Errorf("served rows differ from separate runs by up to %.3g (probability) and %.3g (state); want < %g", dp, ds, tol)
		}
	})
}

// latencies gathers per-request durations from many goroutines.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds req/s (reqs requests in the timed part), p50-µs and p99-µs.
func (l *latencies) report(b *testing.B, reqs int) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	pct := func(p int) float64 {
		return float64(l.all[min(len(l.all)*p/100, len(l.all)-1)]) / float64(time.Microsecond)
	}
	b.ReportMetric(float64(reqs)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
}

// parallelism sets b's RunParallel to about n goroutines: GOMAXPROCS × p,
// exactly n when GOMAXPROCS divides it (it does on the 2-core machine).
func parallelism(b *testing.B, n int) {
	b.SetParallelism(max((n+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0), 1))
}

// Silero load: 64 clients, each with its own chunk and state.
const sileroClients = 64

// sileroServerConfigs are the dynamic_batching settings the server side of
// BenchmarkSileroBatching is measured with (docs/performance.md says why
// each): the queue delay alone, and a preferred batch size of a quarter
// of the clients, so that two batches run while two more fill.
var sileroServerConfigs = []struct{ name, db string }{
	{"delay=0us", "max_queue_delay_microseconds: 0"},
	{"delay=500us", "max_queue_delay_microseconds: 500"},
	{"preferred=16", "preferred_batch_size: [ 16 ] max_queue_delay_microseconds: 500"},
	{"preferred=32", "preferred_batch_size: [ 32 ] max_queue_delay_microseconds: 1000"},
}

// BenchmarkSileroBatching: 64 goroutines, each sending one Silero chunk
// ([1, 576] with its own state [1, 2, 128]) at a time.
//
//   - server/…: srv.Infer on the batch-first variant with
//     max_batch_size 64, dynamic batching as in sileroServerConfigs, two
//     instances, one thread each.
//   - naive: the original model in one onnxruntime_go session shared under
//     a mutex, batch 1, inputs and outputs built once per goroutine, one
//     intra-op and one inter-op thread; naive-ort-threads is the same with
//     ONNX Runtime's default thread counts.
//   - limit/B=…: onnxruntime_go alone on the variant, 2 goroutines with a
//     session each (one thread), each running pre-formed batches of B
//     chunks back to back: an op is one batch, req/s counts B per op, and
//     the latencies are those of whole batches.
func BenchmarkSileroBatching(b *testing.B) {
	orig := testenv.Model(b, sileroModel)
	variant := testenv.Model(b, sileroBatchedModel)
	inputs, states := sileroClientData(b)
	var entries []realEntry
	for i, sc := range sileroServerConfigs {
		name := fmt.Sprintf("silero_batched_%d", i)
		entries = append(entries, realEntry{name: name, file: variant, config: sileroBatchedConfig(name, sileroClients, sc.db, 2)})
	}
	// First: the server's model load creates the ONNX Runtime environment.
	srv := serveReal(b, entries...)
	const row = sileroContext + sileroChunk

	for i, sc := range sileroServerConfigs {
		model := fmt.Sprintf("silero_batched_%d", i)
		b.Run("server/"+sc.name, func(b *testing.B) {
			reqs := make([]*triton.InferRequest, sileroClients)
			for g := range reqs {
				reqs[g] = &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{
					tensorOf(b, "input", tensor.Shape{1, row}, inputs[g]),
					tensorOf(b, "state", tensor.Shape{1, 2, 128}, states[g]),
				}}
			}
			resp, err := srv.Infer(context.Background(), reqs[0])
			if err != nil {
				b.Fatal(err)
			}
			if p := floats(b, outputsOf(resp), "output", tensor.Shape{1, 1}); p[0] < 0 || p[0] > 1 {
				b.Fatalf("speech probability %v", p)
			}
			var next atomic.Int64
			var lat latencies
			parallelism(b, sileroClients)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := reqs[int(next.Add(1)-1)%sileroClients]
				ctx := context.Background()
				ds := make([]time.Duration, 0, 256)
				for pb.Next() {
					t0 := time.Now()
					_, err := srv.Infer(ctx, req)
					ds = append(ds, time.Since(t0))
					if err != nil {
						b.Error(err)
						break
					}
				}
				lat.add(ds)
			})
			b.StopTimer()
			lat.report(b, b.N)
		})
	}

	naive := func(b *testing.B, threads int) {
		s := ortSession(b, orig, []string{"input", "state", "sr"}, []string{"output", "stateN"}, threads)
		ios := naiveIOs(b, inputs, states)
		if err := s.Run(ios[0].ins, ios[0].outs); err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		var next atomic.Int64
		var lat latencies
		parallelism(b, sileroClients)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			x := ios[int(next.Add(1)-1)%sileroClients]
			ds := make([]time.Duration, 0, 256)
			for pb.Next() {
				t0 := time.Now()
				mu.Lock()
				err := s.Run(x.ins, x.outs)
				mu.Unlock()
				ds = append(ds, time.Since(t0))
				if err != nil {
					b.Error(err)
					break
				}
			}
			lat.add(ds)
		})
		b.StopTimer()
		lat.report(b, b.N)
	}
	b.Run("naive", func(b *testing.B) { naive(b, 1) })
	b.Run("naive-ort-threads", func(b *testing.B) { naive(b, 0) })

	b.Run("limit", func(b *testing.B) {
		for _, B := range []int{8, 16, 32, 64} {
			b.Run(fmt.Sprintf("B=%d", B), func(b *testing.B) {
				const workers = 2
				sessions, ios := limitIOs(b, variant, workers, B, inputs, states)
				for w := range workers {
					if err := sessions[w].Run(ios[w].ins, ios[w].outs); err != nil {
						b.Fatal(err)
					}
				}
				var done atomic.Int64
				var lat latencies
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				for w := range workers {
					wg.Go(func() {
						ds := make([]time.Duration, 0, 256)
						for done.Add(1) <= int64(b.N) {
							t0 := time.Now()
							err := sessions[w].Run(ios[w].ins, ios[w].outs)
							ds = append(ds, time.Since(t0))
							if err != nil {
								b.Error(err)
								break
							}
						}
						lat.add(ds)
					})
				}
				wg.Wait()
				b.StopTimer()
				lat.report(b, B*b.N)
			})
		}
	})
}

// sileroClientData is what the Silero benchmarks' clients send: client g
// sends speech chunk 16 + g mod 61 with 64 samples of context, and a state
// of its own (the chunk's samples, scaled down: any values do, the model's
// cost does not depend on them).
func sileroClientData(b testing.TB) (inputs, states [][]float32) {
	samples, _, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		b.Fatal(err)
	}
	inputs = make([][]float32, sileroClients)
	states = make([][]float32, sileroClients)
	for g := range inputs {
		c := 16 + g%61
		inputs[g] = samples[c*sileroChunk-sileroContext : (c+1)*sileroChunk]
		states[g] = make([]float32, 256)
		for k := range states[g] {
			states[g][k] = samples[c*sileroChunk+k] / 4
		}
	}
	return inputs, states
}

// sileroIO is the tensors of one onnxruntime_go Run of a Silero model.
type sileroIO struct{ ins, outs []ort.Value }

// naiveIOs makes each client's batch-1 tensors for the original model
// (state [2, 1, 128] and the sr scalar).
func naiveIOs(b testing.TB, inputs, states [][]float32) []sileroIO {
	ios := make([]sileroIO, len(inputs))
	for g := range ios {
		sr, err := ort.NewScalar(int64(16000))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sr.Destroy() })
		ios[g] = sileroIO{
			ins:  []ort.Value{f32(b, inputs[g], 1, int64(len(inputs[g]))), f32(b, states[g], 2, 1, 128), sr},
			outs: []ort.Value{f32(b, nil, 1, 1), f32(b, nil, 2, 1, 128)},
		}
	}
	return ios
}

// limitIOs opens a session (one thread) on the batch-first variant for each
// of workers goroutines, with a pre-formed batch of B clients' chunks each.
func limitIOs(b testing.TB, variant string, workers, B int, inputs, states [][]float32) ([]*ort.DynamicAdvancedSession, []sileroIO) {
	sessions := make([]*ort.DynamicAdvancedSession, workers)
	ios := make([]sileroIO, workers)
	for w := range workers {
		sessions[w] = ortSession(b, variant, []string{"input", "state"}, []string{"output", "stateN"}, 1)
		var in, st []float32
		for k := range B {
			g := (w*B + k) % len(inputs)
			in = append(in, inputs[g]...)
			st = append(st, states[g]...)
		}
		ios[w] = sileroIO{
			ins:  []ort.Value{f32(b, in, int64(B), int64(len(inputs[0]))), f32(b, st, int64(B), 2, 128)},
			outs: []ort.Value{f32(b, nil, int64(B), 1), f32(b, nil, int64(B), 2, 128)},
		}
	}
	return sessions, ios
}

// outputsOf indexes a response's outputs by name.
func outputsOf(resp *triton.InferResponse) map[string]tensor.Tensor {
	outs := map[string]tensor.Tensor{}
	for _, o := range resp.Outputs {
		outs[o.Name] = o
	}
	return outs
}

// recInstancesConfig serves PP-OCR's recogniser with count CPU instances,
// one thread each, and no dynamic batching.
func recInstancesConfig(name string, count int) string {
	return fmt.Sprintf(`
name: %q
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 48, -1 ] } ]
output [ { name: %q data_type: TYPE_FP32 dims: [ -1, 6625 ] } ]
instance_group [ { count: %d kind: KIND_CPU } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
`, name, recOutput, count)
}

// ocrClients is the number of goroutines BenchmarkOCRInstances drives.
const ocrClients = 4

// BenchmarkOCRInstances: PP-OCRv4's recogniser on one rendered line
// ([1, 3, 48, 320]) from 4 goroutines, served with instance_group count 1
// and count 2 (one intra-op thread each, no dynamic batching).
func BenchmarkOCRInstances(b *testing.B) {
	file := testenv.Model(b, recModel)
	srv := serveReal(b,
		realEntry{name: "rec_count1", file: file, config: recInstancesConfig("rec_count1", 1)},
		realEntry{name: "rec_count2", file: file, config: recInstancesConfig("rec_count2", 2)})
	img, err := ppocr.RenderLine("Hello World 123", ppocr.Height)
	if err != nil {
		b.Fatal(err)
	}
	data, W, _ := ppocr.RecBatch([]image.Image{img})
	for _, count := range []int{1, 2} {
		b.Run(fmt.Sprintf("count%d", count), func(b *testing.B) {
			req := &triton.InferRequest{
				Model:  fmt.Sprintf("rec_count%d", count),
				Inputs: []tensor.Tensor{tensorOf(b, "x", tensor.Shape{1, 3, ppocr.Height, int64(W)}, data)},
			}
			resp, err := srv.Infer(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			floats(b, outputsOf(resp), recOutput, tensor.Shape{1, int64(recSteps(W)), 6625})
			var lat latencies
			parallelism(b, ocrClients)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				ds := make([]time.Duration, 0, 64)
				for pb.Next() {
					t0 := time.Now()
					_, err := srv.Infer(ctx, req)
					ds = append(ds, time.Since(t0))
					if err != nil {
						b.Error(err)
						break
					}
				}
				lat.add(ds)
			})
			b.StopTimer()
			lat.report(b, b.N)
		})
	}
}
