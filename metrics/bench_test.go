package metrics_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/tensor"
)

// noop answers INPUT0 with itself as OUTPUT0: what is measured is the
// framework's own overhead (as in the root package's BenchmarkInferNoop).
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

// metricsSetups are the configurations BenchmarkInferMetrics compares:
// nothing; the snapshot Collector; Latencies with summaries and stage
// histograms (the "latencies"); Latencies with the two histograms
// only (the cheap way to get distributions). Each registers what it has on
// a registry that is scraped every 100 ms in the background while the
// benchmark runs.
var metricsSetups = []string{"none", "collector", "latencies", "histograms"}

func metricsServer(b *testing.B, setup string) (*triton.Server, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts := []triton.Option{triton.WithBackend("noop", noop)}
	var l *metrics.Latencies
	switch setup {
	case "latencies":
		l = metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, StageHistograms: true})
	case "histograms":
		l = metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, FirstResponseHistogram: true})
	}
	if l != nil {
		reg.MustRegister(l)
		opts = append(opts, triton.WithObserver(l))
	}
	srv := newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/x": ""}, opts...)
	switch setup {
	case "collector":
		c := metrics.NewCollector(srv, metrics.Config{})
		b.Cleanup(func() { c.Close() })
		reg.MustRegister(c)
	case "latencies", "histograms":
		l.Attach(srv)
	}
	return srv, reg
}

// scrapeEvery gathers reg every interval until the returned stop is called.
func scrapeEvery(b *testing.B, reg *prometheus.Registry, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, err := reg.Gather(); err != nil {
					b.Error(err)
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func noopRequest(b *testing.B) *triton.InferRequest {
	in, err := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	if err != nil {
		b.Fatal(err)
	}
	return &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
}

// BenchmarkInferMetrics measures the no-op Infer with no metrics, with the
// Collector registered and with Latencies (summaries and stage histograms)
// installed, each scraped every 100 ms in the background. The issue's
// target: the collector costs under 3 % of throughput.
// Run: go test -run '^$' -bench InferMetrics -benchmem -count 6 ./metrics/
func BenchmarkInferMetrics(b *testing.B) {
	for _, setup := range metricsSetups {
		b.Run(setup, func(b *testing.B) {
			srv, reg := metricsServer(b, setup)
			req := noopRequest(b)
			ctx := context.Background()
			stop := scrapeEvery(b, reg, 100*time.Millisecond)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop()
		})
	}
}

// BenchmarkInferMetricsParallel is BenchmarkInferMetrics from GOMAXPROCS
// goroutines at once: the summaries' mutex shows here.
func BenchmarkInferMetricsParallel(b *testing.B) {
	for _, setup := range metricsSetups {
		b.Run(setup, func(b *testing.B) {
			srv, reg := metricsServer(b, setup)
			ctx := context.Background()
			stop := scrapeEvery(b, reg, 100*time.Millisecond)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := noopRequest(b)
				for pb.Next() {
					if _, err := srv.Infer(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			stop()
		})
	}
}

// BenchmarkScrape measures one scrape (Registry.Gather) of a Collector or
// of a Latencies (summaries and stage histograms on) over a server with 1
// or 100 models that have served a request each: the Collector's whole cost
// to the server, as it does nothing per request. At one scrape per 100 ms,
// a scrape of S µs costs S/1000 % of one core.
// Run: go test -run '^$' -bench Scrape -benchmem ./metrics/
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1, 100} {
		files := map[string]string{}
		for i := range n {
			name := fmt.Sprintf("noop%03d", i)
			files[name+"/config.pbtxt"] = noopConfig
			files[name+"/1/x"] = ""
		}
		for _, what := range []string{"collector", "latencies"} {
			b.Run(fmt.Sprintf("%s/models=%d", what, n), func(b *testing.B) {
				reg := prometheus.NewRegistry()
				l := metrics.NewLatencies(metrics.LatencyConfig{Summaries: true, StageHistograms: true})
				srv := newServer(b, files, triton.WithBackend("noop", noop), triton.WithObserver(l))
				l.Attach(srv)
				if what == "collector" {
					c := metrics.NewCollector(srv, metrics.Config{})
					defer c.Close()
					reg.MustRegister(c)
				} else {
					reg.MustRegister(l)
				}
				req := noopRequest(b)
				for i := range n {
					req.Model = fmt.Sprintf("noop%03d", i)
					if _, err := srv.Infer(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := reg.Gather(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkObserveRequest measures Latencies.ObserveRequest alone, the
// whole per-request cost of recording distributions, for a request with
// realistic stage durations (a few hundred µs, varying).
// Run: go test -run '^$' -bench ObserveRequest -benchmem ./metrics/
func BenchmarkObserveRequest(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  metrics.LatencyConfig
	}{
		{"stages", metrics.LatencyConfig{StageHistograms: true}},
		{"histograms", metrics.LatencyConfig{StageHistograms: true, FirstResponseHistogram: true}},
		{"summaries", metrics.LatencyConfig{Summaries: true}},
		{"all", metrics.LatencyConfig{Summaries: true, StageHistograms: true, FirstResponseHistogram: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := metrics.NewLatencies(bc.cfg)
			rs := triton.RequestStats{Model: "noop", Version: 1, BatchSize: 1, ExecutedBatchSize: 1}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				j := time.Duration(i%1000) * time.Microsecond
				rs.Queue, rs.ComputeInput, rs.ComputeInfer, rs.ComputeOutput = j/10, j/50, 200*time.Microsecond+j, j/50
				rs.Request = rs.Queue + rs.ComputeInput + rs.ComputeInfer + rs.ComputeOutput + 5*time.Microsecond
				l.ObserveRequest(rs)
			}
		})
	}
}
