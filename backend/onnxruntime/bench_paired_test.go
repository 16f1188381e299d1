package onnxruntime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// pairedSlice is how long each contender runs in one round of
// BenchmarkSileroBatchingPaired.
const pairedSlice = 500 * time.Millisecond

// BenchmarkSileroBatchingPaired measures the ratios of issue #4's Silero
// targets in one process, round by round: each op is a round in which the
// server (dynamic batching, preferred sizes 16 and 32), the naive pattern
// and the limit of BenchmarkSileroBatching at its best batch size (B=64)
// and at the server's (B=32) each run for pairedSlice,
// in an order that rotates from round to round. Each round gives its own
// ratios, so noise that lasts longer than a round (other tenants of the
// machine, frequency changes) touches both sides of a ratio alike; the
// metrics are the medians over rounds, and each ratio's lowest round.
//
//	go test -run '^$' -bench SileroBatchingPaired -benchtime 24x ./backend/onnxruntime/
func BenchmarkSileroBatchingPaired(b *testing.B) {
	orig := testenv.Model(b, sileroModel)
	variant := testenv.Model(b, sileroBatchedModel)
	inputs, states := sileroClientData(b)
	srv := serveReal(b,
		realEntry{name: "p16", file: variant, config: sileroBatchedConfig("p16", sileroClients, sileroServerConfigs[2].db, 2)},
		realEntry{name: "p32", file: variant, config: sileroBatchedConfig("p32", sileroClients, sileroServerConfigs[3].db, 2)})

	server := func(model string) func() float64 {
		reqs := make([]*triton.InferRequest, sileroClients)
		for g := range reqs {
			reqs[g] = &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{
				tensorOf(b, "input", tensor.Shape{1, int64(len(inputs[g]))}, inputs[g]),
				tensorOf(b, "state", tensor.Shape{1, 2, 128}, states[g]),
			}}
		}
		return func() float64 {
			return clients(b, sileroClients, func(g int) error {
				_, err := srv.Infer(context.Background(), reqs[g])
				return err
			})
		}
	}

	naiveSession := ortSession(b, orig, []string{"input", "state", "sr"}, []string{"output", "stateN"}, 1)
	naiveIO := naiveIOs(b, inputs, states)
	var mu sync.Mutex
	naive := func() float64 {
		return clients(b, sileroClients, func(g int) error {
			mu.Lock()
			defer mu.Unlock()
			return naiveSession.Run(naiveIO[g].ins, naiveIO[g].outs)
		})
	}

	// limit(B) runs pre-formed batches of B chunks on 2 sessions, one
	// goroutine each.
	limit := func(B int) func() float64 {
		sessions, ios := limitIOs(b, variant, 2, B, inputs, states)
		return func() float64 {
			return float64(B) * clients(b, len(sessions), func(w int) error {
				return sessions[w].Run(ios[w].ins, ios[w].outs)
			})
		}
	}

	contenders := []struct {
		name string
		run  func() float64
	}{
		{"server/preferred=16", server("p16")}, {"server/preferred=32", server("p32")},
		{"naive", naive}, {"limit/B=64", limit(64)}, {"limit/B=32", limit(32)},
	}
	rates := make([][]float64, len(contenders))
	for _, c := range contenders {
		c.run() // warm up: ONNX Runtime's first runs at a shape, the batcher's scratch
	}
	b.ResetTimer()
	for r := range b.N {
		for k := range contenders {
			i := (r + k) % len(contenders)
			rates[i] = append(rates[i], contenders[i].run())
		}
	}
	b.StopTimer()

	ratio := func(x, y int) (median, lowest float64) {
		rs := make([]float64, b.N)
		for r := range rs {
			rs[r] = rates[x][r] / rates[y][r]
		}
		slices.Sort(rs)
		return rs[len(rs)/2], rs[0]
	}
	for i, c := range contenders {
		b.ReportMetric(median(rates[i]), c.name+"-req/s")
	}
	for _, x := range []int{0, 1} {
		for _, y := range []int{2, 3, 4} {
			m, low := ratio(x, y)
			b.ReportMetric(m, fmt.Sprintf("%s÷%s", contenders[x].name, contenders[y].name))
			b.ReportMetric(low, fmt.Sprintf("%s÷%s-lowest", contenders[x].name, contenders[y].name))
		}
	}
}

// clients runs n goroutines, goroutine g calling call(g) again and again
// for pairedSlice, and returns the calls completed per second, counting
// the time the last calls take to finish.
func clients(b *testing.B, n int, call func(g int) error) float64 {
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(pairedSlice)
	for g := range n {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := call(g); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// median is the middle of xs (the upper middle for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
