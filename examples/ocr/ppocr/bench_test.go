package ppocr_test

import (
	"context"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/examples/ocr/ppocr"
)

// recorder is a Caller that keeps every request made through it.
type recorder struct {
	backend.Caller
	mu   sync.Mutex
	reqs []*backend.InferRequest
}

func (r *recorder) Infer(ctx context.Context, req *backend.InferRequest) (*backend.InferResponse, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Caller.Infer(ctx, req)
}

// ocrCallers is the number of concurrent callers of the c16 benchmarks.
const ocrCallers = 16

// BenchmarkPipeline reads the test page (three lines, one upside down)
// through the pipeline in its three forms, in one run:
//
//   - by-hand: ppocr.RunSteps, the seven models called one after another
//     with srv.Infer (the baseline);
//   - ensemble: one srv.Infer on ppocr_ensemble, the same seven steps run
//     by the ensemble scheduler;
//   - bls: one srv.Infer on ppocr_bls, the Go model calling det, cls and
//     rec itself;
//
// each from 1 caller (latency) and 16 (throughput), and then every step
// alone from 16 callers with the inputs it gets in the pipeline, to find
// the slowest step's throughput.
//
//	go test -run '^$' -bench Pipeline -benchtime 20x -count 3 ./examples/ocr/ppocr
func BenchmarkPipeline(b *testing.B) {
	srv := serve(b)
	img := page(b)
	ctx := context.Background()
	for _, m := range []string{"ppocr_ensemble", "ppocr_bls"} {
		ready(b, srv, m)
	}
	forms := []struct {
		name string
		read func() ([]ppocr.Line, error)
	}{
		{"by-hand", func() ([]ppocr.Line, error) { return ppocr.RunSteps(ctx, srv, img) }},
		{"ensemble", func() ([]ppocr.Line, error) { return ppocr.Recognize(ctx, srv, "ppocr_ensemble", img) }},
		{"bls", func() ([]ppocr.Line, error) { return ppocr.Recognize(ctx, srv, "ppocr_bls", img) }},
	}
	for _, callers := range []int{1, ocrCallers} {
		for _, f := range forms {
			b.Run(f.name+"/c"+itoa(callers), func(b *testing.B) {
				parallel(b, callers, func() error {
					lines, err := f.read()
					if err == nil && len(lines) != len(pageLines) {
						b.Errorf("read %d lines, want %d", len(lines), len(pageLines))
					}
					return err
				})
			})
		}
	}

	rec := &recorder{Caller: srv}
	if _, err := ppocr.RunSteps(ctx, rec, img); err != nil {
		b.Fatal(err)
	}
	for _, req := range rec.reqs {
		b.Run("step/"+req.Model+"/c"+itoa(ocrCallers), func(b *testing.B) {
			parallel(b, ocrCallers, func() error {
				_, err := srv.Infer(ctx, req)
				return err
			})
		})
	}
}

// parallel runs f b.N times in all from callers goroutines and reports
// pages (or requests) per second.
func parallel(b *testing.B, callers int, f func() error) {
	b.Helper()
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next <= b.N
	}
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			for take() {
				if err := f(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func itoa(n int) string {
	if n == 1 {
		return "1"
	}
	return "16"
}

var _ backend.Caller = (*triton.Server)(nil)
