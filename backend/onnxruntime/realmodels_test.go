package onnxruntime_test

// Real models through the server: PP-OCR's recogniser and direction
// classifier on lines rendered with Go's own font, and Silero VAD v6 on
// testdata/speech_16k.wav. The models are fetched by scripts/fetch-models.sh
// (make deps) into .cache/models; testdata/REAL_MODELS.md has every fact the
// tests rely on.

import (
	"context"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// The real models, relative to .cache/models.
const (
	recModel    = "ppocr/ch_PP-OCRv4_rec_infer.onnx"
	clsModel    = "ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx"
	ocrKeys     = "ppocr/ppocr_keys_v1.txt"
	sileroModel = "silero_vad_v6.onnx"

	recOutput = "softmax_11.tmp_0"
	clsOutput = "softmax_0.tmp_0"
)

// realEntry is one model of a test repository: <name>/1/model.onnx links to
// file, and <name>/config.pbtxt holds config unless it is "".
type realEntry struct{ name, file, config string }

// serveReal lays out a model repository in a temporary folder and serves it
// with the onnxruntime backend; the server is closed when the test ends.
func serveReal(t testing.TB, models ...realEntry) *triton.Server {
	t.Helper()
	dir := t.TempDir()
	for _, m := range models {
		vdir := filepath.Join(dir, m.name, "1")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(m.file, filepath.Join(vdir, "model.onnx")); err != nil {
			t.Fatal(err)
		}
		if m.config != "" {
			if err := os.WriteFile(filepath.Join(dir, m.name, "config.pbtxt"), []byte(m.config), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, err := triton.New(triton.WithModelRepository(dir), triton.WithBackend("onnxruntime", onnxruntime.New()))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// run sends one request and returns its outputs by name.
func run(t testing.TB, srv *triton.Server, model string, inputs ...tensor.Tensor) map[string]tensor.Tensor {
	t.Helper()
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: inputs})
	if err != nil {
		t.Fatalf("Infer %s: %v", model, err)
	}
	outs := map[string]tensor.Tensor{}
	for _, o := range resp.Outputs {
		outs[o.Name] = o
	}
	return outs
}

// tensorOf wraps values (no copy) as the tensor name of the given shape.
func tensorOf[T tensor.Element](t testing.TB, name string, shape tensor.Shape, values []T) tensor.Tensor {
	t.Helper()
	x, err := tensor.From(name, shape, values)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// floats returns the output named name as float32s after checking its shape.
func floats(t testing.TB, outs map[string]tensor.Tensor, name string, shape tensor.Shape) []float32 {
	t.Helper()
	o, ok := outs[name]
	if !ok {
		t.Fatalf("no output %q", name)
	}
	if !o.Shape.Equal(shape) {
		t.Fatalf("output %s has shape %v, want %v", name, o.Shape, shape)
	}
	v, err := tensor.View[float32](o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func renderOrFatal(t testing.TB, text string) image.Image {
	t.Helper()
	img, err := ppocr.RenderLine(text, 48)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// recSteps is the recogniser's output length for input width W.
func recSteps(W int) int { return (W + 3) / 4 / 2 }

// TestOCRRecognizer serves PP-OCRv4's recogniser with no config.pbtxt, so
// that auto-complete must find its batch dimension and dynamic width, and
// reads rendered lines back exactly, one at a time and as a batch of two.
func TestOCRRecognizer(t *testing.T) {
	model := testenv.Model(t, recModel)
	keys, err := ppocr.ReadKeys(testenv.Model(t, ocrKeys))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6623 {
		t.Fatalf("%s has %d keys, want 6623", ocrKeys, len(keys))
	}
	classes := len(keys) + 2
	srv := serveReal(t, realEntry{name: "rec", file: model})

	cfg, err := srv.ModelConfig("rec", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() != 4 || cfg.GetDynamicBatching() == nil {
		t.Errorf("auto-complete: max_batch_size %d, dynamic batching %v; want 4 and on", cfg.GetMaxBatchSize(), cfg.GetDynamicBatching() != nil)
	}
	if in := cfg.GetInput(); len(in) != 1 || in[0].GetName() != "x" || in[0].GetDataType() != modelconfig.DataType_TYPE_FP32 ||
		!slices.Equal(in[0].GetDims(), []int64{3, 48, -1}) {
		t.Errorf("auto-complete: inputs %v, want x FP32 [3, 48, -1]", in)
	}
	if out := cfg.GetOutput(); len(out) != 1 || out[0].GetName() != recOutput || !slices.Equal(out[0].GetDims(), []int64{-1, int64(classes)}) {
		t.Errorf("auto-complete: outputs %v, want %s [-1, %d]", out, recOutput, classes)
	}

	// Lines verified to decode exactly; the last is wider than 320 (W=541),
	// so the dynamic width is exercised too.
	lines := []string{
		"Hello World 123",
		"triton go",
		"ONNX Runtime 1.24",
		"Price: $42.50",
		"2024-11-29",
		"Triton Inference Server in Go, 2025",
	}
	recognise := func(t *testing.T, texts []string, imgs []image.Image) {
		t.Helper()
		data, W, _ := ppocr.RecBatch(imgs)
		n, T := len(imgs), recSteps(W)
		x := tensorOf(t, "x", tensor.Shape{int64(n), 3, 48, int64(W)}, data)
		probs := floats(t, run(t, srv, "rec", x), recOutput, tensor.Shape{int64(n), int64(T), int64(classes)})
		for i, want := range texts {
			got, conf, err := ppocr.CTCDecode(probs[i*T*classes:(i+1)*T*classes], T, classes, keys)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("W=%d T=%d row %d: %q (confidence %.3f)", W, T, i, got, conf)
			if want == "" {
				continue
			}
			if got != want {
				t.Errorf("row %d of %d read as %q, want %q", i, n, got, want)
			}
			if conf < 0.9 {
				t.Errorf("row %d %q read with confidence %.3f, want > 0.9", i, got, conf)
			}
		}
	}
	for _, line := range lines {
		t.Run(line, func(t *testing.T) {
			recognise(t, []string{line}, []image.Image{renderOrFatal(t, line)})
		})
	}
	t.Run("batch of 2", func(t *testing.T) {
		a, b := renderOrFatal(t, lines[0]), renderOrFatal(t, lines[1])
		if _, W, _ := ppocr.RecBatch([]image.Image{a}); W != 320 {
			t.Fatalf("%q pads to W=%d, want 320 (both rows at the minimum width)", lines[0], W)
		}
		recognise(t, lines[:2], []image.Image{a, b})
	})
	t.Run("upside down is not read", func(t *testing.T) {
		data, W, _ := ppocr.RecBatch([]image.Image{ppocr.Rotate180(renderOrFatal(t, lines[0]))})
		T := recSteps(W)
		x := tensorOf(t, "x", tensor.Shape{1, 3, 48, int64(W)}, data)
		got, _, err := ppocr.CTCDecode(floats(t, run(t, srv, "rec", x), recOutput, tensor.Shape{1, int64(T), int64(classes)}), T, classes, keys)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rotated %q reads as %q", lines[0], got)
		if got == lines[0] {
			t.Errorf("the line rotated by 180° still reads as %q: the model is not reading the pixels", got)
		}
	})
}

const clsConfig = `
name: "cls"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 48, 192 ] } ]
output [ { name: "softmax_0.tmp_0" data_type: TYPE_FP32 dims: [ 2 ] } ]
`

// TestDirectionClassifier serves PP-OCR's direction classifier with an
// explicit config and tells upright lines (class 0) from lines turned by
// 180° (class 1), in one batched request and one request each; the batched
// rows must equal the separate answers.
func TestDirectionClassifier(t *testing.T) {
	srv := serveReal(t, realEntry{name: "cls", file: testenv.Model(t, clsModel), config: clsConfig})
	if cfg, err := srv.ModelConfig("cls", 0); err != nil || cfg.GetMaxBatchSize() != 8 {
		t.Fatalf("config %v, %v; want max_batch_size 8", cfg, err)
	}
	classify := func(t *testing.T, imgs ...image.Image) []float32 {
		t.Helper()
		x := tensorOf(t, "x", tensor.Shape{int64(len(imgs)), 3, 48, ppocr.ClsWidth}, ppocr.ClsBatch(imgs))
		return floats(t, run(t, srv, "cls", x), clsOutput, tensor.Shape{int64(len(imgs)), 2})
	}
	check := func(t *testing.T, what string, p []float32, class int) {
		t.Helper()
		if p[class] <= 0.9 || math.Abs(float64(p[0]+p[1])-1) > 1e-3 {
			t.Errorf("%s: probabilities %v, want class %d above 0.9 (a softmax)", what, p, class)
		}
	}
	for _, line := range []string{"Hello World 123", "ONNX Runtime 1.24", "triton go"} {
		t.Run(line, func(t *testing.T) {
			up := renderOrFatal(t, line)
			down := ppocr.Rotate180(up)
			batch := classify(t, up, down)
			t.Logf("batch of 2: upright %v, rotated %v", batch[0:2], batch[2:4])
			check(t, "upright, in a batch", batch[0:2], 0)
			check(t, "rotated, in a batch", batch[2:4], 1)
			for i, img := range []image.Image{up, down} {
				alone := classify(t, img)
				check(t, fmt.Sprintf("row %d alone", i), alone, i)
				for k := range 2 {
					if d := math.Abs(float64(alone[k] - batch[2*i+k])); d > 1e-4 {
						t.Errorf("row %d: alone %v, in the batch %v", i, alone, batch[2*i:2*i+2])
						break
					}
				}
			}
		})
	}
}

const sileroConfig = `
name: "silero_config"
backend: "onnxruntime"
max_batch_size: 0
input [
  { name: "input" data_type: TYPE_FP32 dims: [ 1, 576 ] },
  { name: "state" data_type: TYPE_FP32 dims: [ 2, 1, 128 ] },
  { name: "sr" data_type: TYPE_INT64 dims: [ 1 ] }
]
output [
  { name: "output" data_type: TYPE_FP32 dims: [ 1, 1 ] },
  { name: "stateN" data_type: TYPE_FP32 dims: [ 2, 1, 128 ] }
]
`

// sileroServerStep runs one Silero chunk through srv's model.
func sileroServerStep(t testing.TB, srv *triton.Server, model string) sileroStep {
	sr := tensorOf(t, "sr", tensor.Shape{1}, []int64{16000})
	return func(input, state []float32) (float32, []float32, error) {
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{
			tensorOf(t, "input", tensor.Shape{1, sileroContext + sileroChunk}, input),
			tensorOf(t, "state", tensor.Shape{2, 1, 128}, state),
			sr,
		}})
		if err != nil {
			return 0, nil, err
		}
		outs := map[string]tensor.Tensor{}
		for _, o := range resp.Outputs {
			outs[o.Name] = o
		}
		p := floats(t, outs, "output", tensor.Shape{1, 1})
		next := floats(t, outs, "stateN", tensor.Shape{2, 1, 128})
		return p[0], next, nil
	}
}

// TestSileroVAD serves Silero VAD v6 twice, once auto-completed (rank-0 sr
// as dims [1], no batching, as Triton's backend writes a scalar) and once with an explicit
// config, and runs testdata/speech_16k.wav through each in 512-sample chunks
// with 64 samples of context, carrying the state: silence scores low,
// speech high, and both models agree.
func TestSileroVAD(t *testing.T) {
	model := testenv.Model(t, sileroModel)
	samples, rate, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		t.Fatal(err)
	}
	if rate != 16000 || len(samples) != 47806 {
		t.Fatalf("speech_16k.wav: %d samples at %d Hz, want 47806 at 16000", len(samples), rate)
	}
	srv := serveReal(t,
		realEntry{name: "silero_auto", file: model},
		realEntry{name: "silero_config", file: model, config: sileroConfig})

	cfg, err := srv.ModelConfig("silero_auto", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() != 0 {
		t.Errorf("auto-complete: max_batch_size %d, want 0 (state's batch axis is 1)", cfg.GetMaxBatchSize())
	}
	inputs := map[string]*modelconfig.ModelInput{}
	for _, in := range cfg.GetInput() {
		inputs[in.GetName()] = in
	}
	if sr := inputs["sr"]; sr == nil || sr.GetDataType() != modelconfig.DataType_TYPE_INT64 || !slices.Equal(sr.GetDims(), []int64{1}) ||
		sr.GetReshape() != nil {
		t.Errorf("auto-complete: sr is %v, want INT64 dims [1] without reshape", sr)
	}
	if in := inputs["input"]; in == nil || !slices.Equal(in.GetDims(), []int64{-1, -1}) {
		t.Errorf("auto-complete: input is %v, want dims [-1, -1]", in)
	}
	if st := inputs["state"]; st == nil || !slices.Equal(st.GetDims(), []int64{2, -1, 128}) {
		t.Errorf("auto-complete: state is %v, want dims [2, -1, 128]", st)
	}

	results := map[string][]float32{}
	for _, name := range []string{"silero_auto", "silero_config"} {
		t.Run(name, func(t *testing.T) {
			probs, err := sileroProbs(samples, sileroServerStep(t, srv, name))
			if err != nil {
				t.Fatal(err)
			}
			results[name] = probs
			if len(probs) != 93 {
				t.Fatalf("%d chunks, want 93", len(probs))
			}
			var lead, trail float32
			for c := 0; c <= 14; c++ {
				lead = max(lead, probs[c])
				if probs[c] >= 0.1 {
					t.Errorf("leading silence chunk %d: speech probability %.3f, want < 0.1", c, probs[c])
				}
			}
			for c := 83; c <= 92; c++ {
				trail = max(trail, probs[c])
				if probs[c] >= 0.1 {
					t.Errorf("trailing silence chunk %d: speech probability %.3f, want < 0.1", c, probs[c])
				}
			}
			var sum float64
			var peak float32
			above := 0
			for c := 16; c <= 76; c++ {
				sum += float64(probs[c])
				peak = max(peak, probs[c])
				if probs[c] >= 0.5 {
					above++
				}
			}
			mean := sum / 61
			t.Logf("leading silence (0-14) max %.3f; speech (16-76) mean %.3f, max %.3f, %d of 61 >= 0.5; trailing (83-92) max %.3f",
				lead, mean, peak, above, trail)
			if mean <= 0.5 {
				t.Errorf("speech chunks 16-76: mean probability %.3f, want > 0.5", mean)
			}
			if peak <= 0.9 {
				t.Errorf("speech chunks 16-76: max probability %.3f, want > 0.9", peak)
			}
		})
	}
	if a, b := results["silero_auto"], results["silero_config"]; len(a) == len(b) {
		for c := range a {
			if d := math.Abs(float64(a[c] - b[c])); d > 1e-4 {
				t.Errorf("chunk %d: auto-completed model %.5f, configured model %.5f", c, a[c], b[c])
			}
		}
	}
}
