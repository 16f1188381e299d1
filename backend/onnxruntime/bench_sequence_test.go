package onnxruntime_test

// Sequence batching with a real model (issue #5): many Silero VAD streams,
// each a sequence whose state the server keeps, against the same streams
// processed one at a time. Results and commands are in docs/performance.md.

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/internal/testenv"
)

// The load of BenchmarkSileroSequences: 64 streams of 93 chunks (2.98 s
// of audio each), stream g being the recording delayed by g·131 samples.
const (
	seqBenchStreams = 64
	seqBenchChunks  = 93
)

// chunkLatencies gathers per-chunk latencies from many goroutines.
type chunkLatencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *chunkLatencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds chunks/s (chunks processed in the timed part ÷ its wall
// time), rt-streams (how many real-time 16 kHz streams that throughput
// keeps up with: chunks/s × 32 ms), p50-µs and p99-µs of the chunks'
// latencies.
func (l *chunkLatencies) report(b *testing.B, chunks int) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	pct := func(p int) float64 {
		return float64(l.all[min(len(l.all)*p/100, len(l.all)-1)]) / float64(time.Microsecond)
	}
	rate := float64(chunks) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "chunks/s")
	b.ReportMetric(rate*sileroChunk/16000, "rt-streams")
	b.ReportMetric(pct(50), "p50-µs")
	b.ReportMetric(pct(99), "p99-µs")
	b.ReportMetric(0, "ns/op") // an op is 5,952 chunks; chunks/s says it better
}

// BenchmarkSileroSequences: the original Silero VAD v6 served as a
// sequence model (sileroSequenceConfig: max_batch_size 64, implicit state
// batched on its axis 1, oldest strategy with preferred_batch_size 16, 2
// CPU instances of one thread each). An op is the whole load: 64 streams
// × 93 chunks, each chunk one request.
//
//   - server/64-streams: 64 goroutines, one stream each, all at once
//     (max_queue_delay_microseconds 1000).
//   - server/one-at-a-time: one goroutine, the 64 streams one after the
//     other (START … END, then the next), through the same model;
//     server/one-at-a-time/delay=0 through the same configuration with
//     max_queue_delay_microseconds 0, so that a lone chunk does not wait
//     for others to batch with.
//   - direct/one-at-a-time: no server: onnxruntime_go on the original
//     model, one session (one intra-op and one inter-op thread), batch 1,
//     tensors built once and the state copied from stateN to state by hand,
//     the 64 streams one after the other.
//   - direct/batches-of-16: the limit: onnxruntime_go alone, 2 goroutines
//     with a session each (one thread), each running its 32 streams as two
//     pre-formed batches of 16 ([16, 576], state [2, 16, 128]) chunk by
//     chunk. Latencies are those of whole batches.
func BenchmarkSileroSequences(b *testing.B) {
	model := testenv.Model(b, sileroModel)
	wav, _, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		b.Fatal(err)
	}
	streams := sileroStreams(wav, seqBenchStreams, seqBenchChunks)
	const total = seqBenchStreams * seqBenchChunks
	// First: the server's model load creates the ONNX Runtime environment.
	srv := serveReal(b,
		realEntry{name: "silero_seq", file: model, config: sileroSequenceConfig("silero_seq", 2, 1000)},
		realEntry{name: "silero_seq_d0", file: model, config: sileroSequenceConfig("silero_seq_d0", 2, 0)})
	ctx := context.Background()
	stream := func(model string, g int, lat *[]time.Duration) error {
		_, err := sileroSequence(ctx, srv, model, uint64(g+1), "", streams[g], func(_ int, d time.Duration) {
			if lat != nil {
				*lat = append(*lat, d)
			}
		})
		return err
	}
	for _, m := range []string{"silero_seq", "silero_seq_d0"} {
		if err := stream(m, 0, nil); err != nil { // warm-up
			b.Fatal(err)
		}
	}

	// counts returns a model's inferences and executions so far.
	counts := func(b *testing.B, model string) (inferences, executions uint64) {
		st, err := srv.Stats(model, 1)
		if err != nil {
			b.Fatal(err)
		}
		return st[0].InferenceCount, st[0].ExecutionCount
	}
	// reportBatch adds the mean batch size since counts gave i0, e0.
	reportBatch := func(b *testing.B, model string, i0, e0 uint64) {
		i, e := counts(b, model)
		if e > e0 {
			b.ReportMetric(float64(i-i0)/float64(e-e0), "chunks/batch")
		}
	}

	b.Run("server/64-streams", func(b *testing.B) {
		var lat chunkLatencies
		i0, e0 := counts(b, "silero_seq")
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			errs := make([]error, seqBenchStreams)
			for g := range seqBenchStreams {
				wg.Go(func() {
					ds := make([]time.Duration, 0, seqBenchChunks)
					errs[g] = stream("silero_seq", g, &ds)
					lat.add(ds)
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		lat.report(b, total*b.N)
		reportBatch(b, "silero_seq", i0, e0)
	})

	oneAtATime := func(model string) func(b *testing.B) {
		return func(b *testing.B) {
			ds := make([]time.Duration, 0, total)
			i0, e0 := counts(b, model)
			b.ResetTimer()
			for range b.N {
				for g := range seqBenchStreams {
					if err := stream(model, g, &ds); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			lat := chunkLatencies{all: ds}
			lat.report(b, total*b.N)
			reportBatch(b, model, i0, e0)
		}
	}
	b.Run("server/one-at-a-time", oneAtATime("silero_seq"))
	b.Run("server/one-at-a-time/delay=0", oneAtATime("silero_seq_d0"))

	// direct runs streams chunk by chunk on its own session, as batches of
	// len(group) rows, and records each run's latency.
	type direct struct {
		s                    *ort.DynamicAdvancedSession
		input, state, stateN *ort.Tensor[float32]
		ins, outs            []ort.Value
		rows                 int
	}
	newDirect := func(b *testing.B, rows int) *direct {
		d := &direct{s: ortSession(b, model, []string{"input", "state", "sr"}, []string{"output", "stateN"}, 1), rows: rows}
		sr, err := ort.NewScalar(int64(16000))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sr.Destroy() })
		d.input, d.state = f32(b, nil, int64(rows), sileroContext+sileroChunk), f32(b, nil, 2, int64(rows), 128)
		d.stateN = f32(b, nil, 2, int64(rows), 128)
		d.ins, d.outs = []ort.Value{d.input, d.state, sr}, []ort.Value{f32(b, nil, int64(rows), 1), d.stateN}
		return d
	}
	const row = sileroContext + sileroChunk
	runDirect := func(d *direct, group [][]float32, ds *[]time.Duration) error {
		in, st := d.input.GetData(), d.state.GetData()
		clear(in)
		clear(st)
		for c := range seqBenchChunks {
			for r, samples := range group {
				x := in[r*row : (r+1)*row]
				copy(x, x[sileroChunk:]) // the previous chunk's last 64 samples
				copy(x[sileroContext:], samples[c*sileroChunk:(c+1)*sileroChunk])
			}
			t0 := time.Now()
			err := d.s.Run(d.ins, d.outs)
			copy(st, d.stateN.GetData())
			*ds = append(*ds, time.Since(t0))
			if err != nil {
				return err
			}
		}
		return nil
	}

	b.Run("direct/one-at-a-time", func(b *testing.B) {
		d := newDirect(b, 1)
		ds := make([]time.Duration, 0, total)
		if err := runDirect(d, streams[:1], &ds); err != nil { // warm-up
			b.Fatal(err)
		}
		ds = ds[:0]
		b.ResetTimer()
		for range b.N {
			for g := range seqBenchStreams {
				if err := runDirect(d, streams[g:g+1], &ds); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		lat := chunkLatencies{all: ds}
		lat.report(b, total*b.N)
	})

	b.Run("direct/batches-of-16", func(b *testing.B) {
		const workers, rows = 2, 16
		ds := make([][]time.Duration, workers)
		ws := make([]*direct, workers)
		for w := range ws {
			ws[w] = newDirect(b, rows)
			if err := runDirect(ws[w], streams[:rows], &ds[w]); err != nil { // warm-up
				b.Fatal(err)
			}
			ds[w] = ds[w][:0]
		}
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			errs := make([]error, workers)
			for w := range workers {
				wg.Go(func() {
					for g := w * seqBenchStreams / workers; g < (w+1)*seqBenchStreams/workers && errs[w] == nil; g += rows {
						errs[w] = runDirect(ws[w], streams[g:g+rows], &ds[w])
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		lat := chunkLatencies{all: slices.Concat(ds...)}
		lat.report(b, total*b.N)
	})
}
