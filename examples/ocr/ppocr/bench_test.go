package ppocr_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/tensor"
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

// stepRequests are the requests the pipeline makes of its seven steps for
// img, as ppocr.RunSteps makes them.
func stepRequests(tb testing.TB, srv *triton.Server, img image.Image) []*backend.InferRequest {
	tb.Helper()
	rec := &recorder{Caller: srv}
	if _, err := ppocr.RunSteps(context.Background(), rec, img); err != nil {
		tb.Fatal(err)
	}
	return rec.reqs
}

// ocrCallers is the number of concurrent callers of BenchmarkThroughput.
const ocrCallers = 16

// BenchmarkPipeline reads the test page (three lines, one upside down)
// from one caller through the pipeline in its three forms, for the
// latency of a page:
//
//   - by-hand: ppocr.RunSteps, the seven models called one after another
//     with srv.Infer (the baseline);
//
//   - ensemble: one srv.Infer on ppocr_ensemble, the same seven steps run
//     by the ensemble scheduler;
//
//   - bls: one srv.Infer on ppocr_bls, the Go model calling det, cls and
//     rec itself.
//
//     go test -run '^$' -bench 'Pipeline$' -benchtime 20x -count 5 ./examples/ocr/ppocr
func BenchmarkPipeline(b *testing.B) {
	srv := serve(b)
	img := page(b)
	for _, f := range pipelineForms(srv, img) {
		b.Run(f.name, func(b *testing.B) {
			parallel(b, 1, func() error { return f.read(context.Background()) })
		})
	}
}

// pipelineForm is one way of reading a page: read reads it once and
// checks the number of lines.
type pipelineForm struct {
	name string
	read func(ctx context.Context) error
}

// pipelineForms are the forms of BenchmarkPipeline, and the ensembles of
// ensembleVariants where srv serves them.
func pipelineForms(srv *triton.Server, img image.Image) []pipelineForm {
	check := func(lines []ppocr.Line, err error) error {
		if err == nil && len(lines) != len(pageLines) {
			err = fmt.Errorf("read %d lines, want %d", len(lines), len(pageLines))
		}
		return err
	}
	forms := []pipelineForm{
		{"by-hand", func(ctx context.Context) error { return check(ppocr.RunSteps(ctx, srv, img)) }},
		{"ensemble", func(ctx context.Context) error { return check(ppocr.Recognize(ctx, srv, "ppocr_ensemble", img)) }},
		{"bls", func(ctx context.Context) error { return check(ppocr.Recognize(ctx, srv, "ppocr_bls", img)) }},
	}
	for _, v := range ensembleVariants {
		if srv.ModelReady(context.Background(), v.model, 0) {
			forms = append(forms, pipelineForm{v.form, func(ctx context.Context) error {
				return check(ppocr.Recognize(ctx, srv, v.model, img))
			}})
		}
	}
	return forms
}

// ensembleVariants are ppocr_ensemble with its limit on the pages in the
// pipeline (the parameter max_inflight_ensemble_requests, 2) replaced:
// by Triton's per-step limit at the same value, or by nothing.
var ensembleVariants = []struct{ form, model, limit string }{
	{"ensemble-per-step", "ppocr_ensemble_per_step", "ensemble_scheduling {\n  max_inflight_requests: 2"},
	{"ensemble-unlimited", "ppocr_ensemble_unlimited", "ensemble_scheduling {"},
}

// withEnsembleVariants is an edit for serve that adds the models of
// ensembleVariants.
func withEnsembleVariants(tb testing.TB) func(dir string) {
	return func(dir string) {
		config, err := os.ReadFile(filepath.Join(dir, "ppocr_ensemble", "config.pbtxt"))
		if err != nil {
			tb.Fatal(err)
		}
		const limit = `parameters { key: "max_inflight_ensemble_requests" value { string_value: "2" } }` + "\nensemble_scheduling {"
		if !strings.Contains(string(config), limit) {
			tb.Fatalf("ppocr_ensemble's config no longer has %q, which withEnsembleVariants replaces", limit)
		}
		for _, v := range ensembleVariants {
			c := strings.Replace(string(config), `name: "ppocr_ensemble"`, `name: "`+v.model+`"`, 1)
			c = strings.Replace(c, limit, v.limit, 1)
			if err := os.MkdirAll(filepath.Join(dir, v.model, "1"), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, v.model, "config.pbtxt"), []byte(c), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkThroughput reads pages from 16 callers through every form of
// the pipeline (BenchmarkPipeline's and ensembleVariants'), then runs
// every step alone from 16 callers with the inputs it gets in the
// pipeline, in interleaved rounds (one per b.N; the forms' order
// rotates). The bound is the pages
// a second of a pipeline whose steps share the machine's cores,
// 1/Σ(1/step's requests a second). Per round it takes each form's ratios
// to the bound and to bls; it reports their medians and ranges, each
// form's and step's median rate, and each form's median CPU time a page
// (the whole process's, user and system):
//
//	go test -run '^$' -bench Throughput -benchtime 5x -timeout 30m ./examples/ocr/ppocr
func BenchmarkThroughput(b *testing.B) {
	srv := serve(b, withEnsembleVariants(b))
	img := page(b)
	for _, m := range []string{"ppocr_ensemble", "ppocr_bls", ensembleVariants[0].model, ensembleVariants[1].model} {
		ready(b, srv, m)
	}
	forms := pipelineForms(srv, img)
	steps := stepRequests(b, srv, img)
	ctx := context.Background()
	const pages = 48
	rate, ratio := map[string][]float64{}, map[string][]float64{}
	round := 0
	for b.Loop() {
		got := map[string]float64{}
		for k := range forms {
			f := forms[(k+round)%len(forms)]
			cpu := processCPU()
			got[f.name] = closedRate(b, ocrCallers, pages, func() error { return f.read(ctx) })
			rate[f.name+"-cpu-ms/page"] = append(rate[f.name+"-cpu-ms/page"], (processCPU()-cpu).Seconds()*1000/pages)
		}
		perPage := 0.0 // seconds of the cores a page costs: Σ 1/step rate
		for _, req := range steps {
			n := 4 * ocrCallers
			if req.Model == ppocr.DetModel || req.Model == ppocr.RecModel {
				n = ocrCallers // the slow ones
			}
			r := closedRate(b, ocrCallers, n, func() error { _, err := srv.Infer(ctx, req); return err })
			rate["step/"+req.Model] = append(rate["step/"+req.Model], r)
			perPage += 1 / r
		}
		got["bound"] = 1 / perPage
		for name, r := range got {
			rate[name] = append(rate[name], r)
			if name != "bound" {
				ratio[name+"÷bound"] = append(ratio[name+"÷bound"], r/got["bound"])
			}
			if name != "bound" && name != "bls" {
				ratio[name+"÷bls"] = append(ratio[name+"÷bls"], r/got["bls"])
			}
		}
		round++
	}
	for name, rs := range rate {
		if !strings.HasSuffix(name, "/page") {
			name += "-req/s"
		}
		b.ReportMetric(median(rs), name)
	}
	for name, rs := range ratio {
		b.ReportMetric(median(rs), name)
		b.ReportMetric(slices.Min(rs), name+"-min")
		b.ReportMetric(slices.Max(rs), name+"-max")
	}
	b.ReportMetric(0, "ns/op") // an op is a round; its time is meaningless
}

// BenchmarkBatchCost runs ppocr_det and ppocr_rec from one caller on
// batches of 1 to 16 copies of the test page's input (up to 4 for
// ppocr_det, its max_batch_size), in interleaved rounds (one per b.N),
// and reports the median milliseconds a page costs at each batch size
// and the median and range of the rounds' ratios to a batch of one: what
// a step's batcher gains or loses on this machine by putting many pages
// in one batch.
//
//	go test -run '^$' -bench BatchCost -benchtime 5x ./examples/ocr/ppocr
func BenchmarkBatchCost(b *testing.B) {
	srv := serve(b)
	ctx := context.Background()
	for _, req := range stepRequests(b, srv, page(b)) {
		sizes := map[string][]int{ppocr.DetModel: {1, 2, 4}, ppocr.RecModel: {1, 2, 4, 8, 16}}[req.Model]
		if sizes == nil {
			continue
		}
		b.Run(req.Model, func(b *testing.B) {
			reqs := make([]*backend.InferRequest, len(sizes))
			for i, k := range sizes {
				reqs[i] = repeatPages(b, req, k)
			}
			ms, ratio := make([][]float64, len(sizes)), make([][]float64, len(sizes))
			for b.Loop() {
				for i, k := range sizes {
					const runs = 3
					start := time.Now()
					for range runs {
						if _, err := srv.Infer(ctx, reqs[i]); err != nil {
							b.Fatal(err)
						}
					}
					ms[i] = append(ms[i], float64(time.Since(start).Microseconds())/1000/float64(runs*k))
					ratio[i] = append(ratio[i], ms[i][len(ms[i])-1]/ms[0][len(ms[0])-1])
				}
			}
			for i, k := range sizes {
				b.ReportMetric(median(ms[i]), fmt.Sprintf("batch%d-ms/page", k))
				if i > 0 {
					b.ReportMetric(median(ratio[i]), fmt.Sprintf("batch%d-ratio", k))
					b.ReportMetric(slices.Min(ratio[i]), fmt.Sprintf("batch%d-ratio-min", k))
					b.ReportMetric(slices.Max(ratio[i]), fmt.Sprintf("batch%d-ratio-max", k))
				}
			}
			b.ReportMetric(0, "ns/op") // an op is a round
		})
	}
}

// repeatPages is req with its one input repeated k times along the batch
// axis: k pages in one request.
func repeatPages(tb testing.TB, req *backend.InferRequest, k int) *backend.InferRequest {
	tb.Helper()
	x := req.Inputs[0]
	shape := x.Shape.Clone()
	shape[0] *= int64(k)
	t, err := tensor.New(x.Name, x.DataType, shape, bytes.Repeat(x.Data, k))
	if err != nil {
		tb.Fatal(err)
	}
	r := *req
	r.Inputs = []tensor.Tensor{t}
	return &r
}

// parallel runs f b.N times in all from callers goroutines and reports
// pages (or requests) per second.
func parallel(b *testing.B, callers int, f func() error) {
	b.Helper()
	b.ResetTimer()
	closedRate(b, callers, b.N, f)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// closedRate calls f n times in all from callers goroutines, each calling
// again as soon as its call returns, and returns the calls a second. A
// failed call fails b and stops its goroutine.
func closedRate(b *testing.B, callers, n int, f func() error) float64 {
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
		return next <= n
	}
	start := time.Now()
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
	return float64(n) / time.Since(start).Seconds()
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		panic(err) // RUSAGE_SELF with a valid pointer cannot fail
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// median is the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

var _ backend.Caller = (*triton.Server)(nil)
