package onnxruntime_test

import (
	"context"
	"fmt"
	"image"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// spinningVariants are the session settings BenchmarkSpinningPaired
// compares, all with one instance: its intra-op pool as the backend sizes
// it by default (the machine's cores) with its threads spinning, as ONNX
// Runtime does by default, and not spinning, the backend's default (see
// defaultConfigEntries in options.go); and one intra-op thread, no pool.
var spinningVariants = []struct{ name, config string }{
	{"spin", `parameters { key: "session.intra_op.allow_spinning" value: { string_value: "1" } }`},
	{"nospin", ``},
	{"intra1", `parameters { key: "intra_op_thread_count" value: { string_value: "1" } }`},
}

// BenchmarkSpinningPaired serves PP-OCR's direction classifier (one line,
// about 1.2 ms in ONNX Runtime) and Silero VAD v6 (one chunk, about 0.2 ms)
// with each of spinningVariants, and measures requests per second from 1
// and 2 callers in rounds (an op) that run every variant for 400 ms in an
// order that rotates from round to round. It reports the medians over
// rounds of each variant's req/s and of its ratio to "spin" in the same
// round, with the ratio's lowest and highest round:
//
//	go test -run '^$' -bench SpinningPaired -benchtime 8x ./backend/onnxruntime/
func BenchmarkSpinningPaired(b *testing.B) {
	cls, sil := testenv.Model(b, clsModel), testenv.Model(b, sileroModel)
	var entries []realEntry
	for _, v := range spinningVariants {
		group := "instance_group [ { count: 1 kind: KIND_CPU } ]\n"
		entries = append(entries,
			realEntry{name: "cls_" + v.name, file: cls, config: strings.Replace(clsConfig, `"cls"`, `"cls_`+v.name+`"`, 1) + group + v.config},
			realEntry{name: "sil_" + v.name, file: sil, config: strings.Replace(sileroConfig, `"silero_config"`, `"sil_`+v.name+`"`, 1) + group + v.config})
	}
	srv := serveReal(b, entries...)

	img, err := ppocr.RenderLine("Hello World 123", 48)
	if err != nil {
		b.Fatal(err)
	}
	line := tensorOf(b, "x", tensor.Shape{1, 3, 48, ppocr.ClsWidth}, ppocr.ClsBatch([]image.Image{img}))
	samples, _, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		b.Fatal(err)
	}
	chunk := []tensor.Tensor{
		tensorOf(b, "input", tensor.Shape{1, sileroContext + sileroChunk}, samples[40*sileroChunk-sileroContext:41*sileroChunk]),
		tensorOf(b, "state", tensor.Shape{2, 1, 128}, make([]float32, sileroState)),
		tensorOf(b, "sr", tensor.Shape{1}, []int64{16000}),
	}
	inputs := map[string][]tensor.Tensor{"cls": {line}, "sil": chunk}

	rate := func(model string, callers int) float64 {
		req := &triton.InferRequest{Model: model, Inputs: inputs[model[:3]]}
		var n atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		stop := start.Add(400 * time.Millisecond)
		for range callers {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if _, err := srv.Infer(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(n.Load()) / time.Since(start).Seconds()
	}

	metrics := map[string][]float64{}
	round := 0
	for b.Loop() {
		for _, m := range []string{"cls", "sil"} {
			for _, c := range []int{1, 2} {
				got := make([]float64, len(spinningVariants))
				for k := range spinningVariants {
					i := (k + round) % len(spinningVariants)
					got[i] = rate(m+"_"+spinningVariants[i].name, c)
				}
				for i, v := range spinningVariants {
					key := fmt.Sprintf("%s/c%d/%s", m, c, v.name)
					metrics[key+"-req/s"] = append(metrics[key+"-req/s"], got[i])
					if i > 0 {
						metrics[key+"÷spin"] = append(metrics[key+"÷spin"], got[i]/got[0])
					}
				}
			}
		}
		round++
	}
	for k, v := range metrics {
		s := slices.Sorted(slices.Values(v))
		b.ReportMetric(s[len(s)/2], k)
		if strings.HasSuffix(k, "÷spin") {
			b.ReportMetric(s[0], k+"-min")
			b.ReportMetric(s[len(s)-1], k+"-max")
		}
	}
	b.ReportMetric(0, "ns/op") // an op is a round
}

// TestSpinningVariants: the configurations BenchmarkSpinningPaired compares
// load and classify an upright line as upright.
func TestSpinningVariants(t *testing.T) {
	cls := testenv.Model(t, clsModel)
	img, err := ppocr.RenderLine("Hello World 123", 48)
	if err != nil {
		t.Fatal(err)
	}
	line := tensorOf(t, "x", tensor.Shape{1, 3, 48, ppocr.ClsWidth}, ppocr.ClsBatch([]image.Image{img}))
	for _, v := range spinningVariants {
		srv := serveReal(t, realEntry{name: "cls", file: cls, config: clsConfig + "instance_group [ { count: 1 kind: KIND_CPU } ]\n" + v.config})
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "cls", Inputs: []tensor.Tensor{line}})
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		out, _ := resp.Output(clsOutput)
		p, err := tensor.View[float32](out)
		if err != nil || len(p) != 2 || p[0] < 0.9 {
			t.Errorf("%s: upright line classified as %v (%v)", v.name, p, err)
		}
	}
}
