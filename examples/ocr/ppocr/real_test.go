package ppocr_test

// The pipeline on the real PP-OCR models, served by a triton.Server: the
// models are fetched by scripts/fetch-models.sh (make deps) into
// .cache/models/ppocr, the ONNX Runtime library by
// scripts/fetch-onnxruntime.sh. Without them the tests skip, except under
// CI=true, where they fail.

import (
	"context"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
)

// modelsDir returns .cache/models/ppocr, skipping the test (failing it
// under CI=true) when a model or the ONNX Runtime library is missing.
func modelsDir(t testing.TB) string {
	t.Helper()
	for _, f := range []string{"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx", ppocr.KeysFile} {
		testenv.Model(t, "ppocr/"+f)
	}
	return filepath.Join(testenv.RepoRoot(t), ".cache", "models", "ppocr")
}

// serve writes the pipeline's repository into a temporary folder, applies
// edits to it, and serves it; the server is closed when the test ends.
// Models that fail to load are left unavailable and reported by the tests
// that use them (see ready).
func serve(t testing.TB, edits ...func(dir string)) *triton.Server {
	t.Helper()
	dir := t.TempDir()
	if err := ppocr.WriteRepository(dir, modelsDir(t)); err != nil {
		t.Fatal(err)
	}
	for _, edit := range edits {
		edit(dir)
	}
	opts := []triton.Option{
		triton.WithModelRepository(dir),
		triton.WithBackend("onnxruntime", onnxruntime.New()),
		triton.WithExitOnError(false),
	}
	for name, b := range ppocr.Backends() {
		opts = append(opts, triton.WithBackend(name, b))
	}
	start := time.Now()
	srv, err := triton.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Logf("repository loaded in %v", time.Since(start).Round(time.Millisecond))
	return srv
}

// ready fails the test unless model is ready, giving the reason.
func ready(t testing.TB, srv *triton.Server, model string) {
	t.Helper()
	if srv.ModelReady(context.Background(), model, 0) {
		return
	}
	for _, st := range srv.Index(context.Background()) {
		if st.Name == model {
			t.Fatalf("model %s is %s: %s", model, st.State, st.Reason)
		}
	}
	t.Fatalf("model %s is not in the repository", model)
}

// The test page: three lines, the last pasted upside down.
var pageLines = []ppocr.PageLine{
	{Text: "Hello World 123", At: image.Pt(40, 40)},
	{Text: "triton go 2024", At: image.Pt(120, 160)},
	{Text: "Upside Down 42", At: image.Pt(60, 280), UpsideDown: true},
}

func page(t testing.TB) image.Image {
	t.Helper()
	img, err := ppocr.RenderPage(800, 400, pageLines...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// checkLines compares what was read with the page's lines, in order, and
// checks that each box covers where its line was drawn.
func checkLines(t *testing.T, lines []ppocr.Line) {
	t.Helper()
	var texts []string
	for _, l := range lines {
		t.Logf("%q conf %.3f box %v", l.Text, l.Conf, l.Box)
		texts = append(texts, l.Text)
	}
	want := make([]string, len(pageLines))
	for i, l := range pageLines {
		want[i] = l.Text
	}
	if !slices.Equal(texts, want) {
		t.Fatalf("read %q, want %q", texts, want)
	}
	for i, l := range lines {
		if l.Conf < 0.9 {
			t.Errorf("line %d %q read with confidence %.3f, want > 0.9", i, l.Text, l.Conf)
		}
		if at := pageLines[i].At.Add(image.Pt(20, 20)); !at.In(l.Box) {
			t.Errorf("line %d: box %v does not cover %v, inside the rendered line", i, l.Box, at)
		}
	}
}

// TestPipeline reads the page three ways: through the Go BLS model, by
// calling the steps one by one, and through the ensemble.
func TestPipeline(t *testing.T) {
	srv := serve(t)
	img := page(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, model string
		read        func() ([]ppocr.Line, error)
	}{
		{"bls", "ppocr_bls", func() ([]ppocr.Line, error) { return ppocr.Recognize(ctx, srv, "ppocr_bls", img) }},
		{"steps", "ppocr_decode", func() ([]ppocr.Line, error) { return ppocr.RunSteps(ctx, srv, img) }},
		{"ensemble", "ppocr_ensemble", func() ([]ppocr.Line, error) { return ppocr.Recognize(ctx, srv, "ppocr_ensemble", img) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ready(t, srv, c.model)
			start := time.Now()
			lines, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("read in %v", time.Since(start).Round(time.Millisecond))
			checkLines(t, lines)
		})
	}
}

// TestBlankPage: a page without text gives no lines, and ppocr_bls does
// not call the classifier or the recogniser for it.
func TestBlankPage(t *testing.T) {
	srv := serve(t)
	blank, err := ppocr.RenderPage(320, 160)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ready(t, srv, "ppocr_bls")
	before := inferences(t, srv, ppocr.ClsModel) + inferences(t, srv, ppocr.RecModel)
	lines, err := ppocr.Recognize(ctx, srv, "ppocr_bls", blank)
	if err != nil || len(lines) != 0 {
		t.Fatalf("ppocr_bls: %v, %v; want no lines", lines, err)
	}
	if after := inferences(t, srv, ppocr.ClsModel) + inferences(t, srv, ppocr.RecModel); after != before {
		t.Errorf("ppocr_bls called the classifier or the recogniser for a blank page (%d inferences, then %d)", before, after)
	}
	if lines, err := ppocr.RunSteps(ctx, srv, blank); err != nil || len(lines) != 0 {
		t.Errorf("RunSteps: %v, %v; want no lines", lines, err)
	}
	// An ensemble cannot skip steps: the classifier gets a batch of 0 lines,
	// which a batching model rejects (as Triton does).
	ready(t, srv, "ppocr_ensemble")
	if lines, err := ppocr.Recognize(ctx, srv, "ppocr_ensemble", blank); err == nil || !strings.Contains(err.Error(), "batch size 0") {
		t.Errorf("ppocr_ensemble: %v, %v; want the classifier to reject a batch of 0 lines", lines, err)
	}
}

// inferences counts the rows model has run.
func inferences(t *testing.T, srv *triton.Server, model string) uint64 {
	t.Helper()
	stats, err := srv.Stats(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, s := range stats {
		n += s.InferenceCount
	}
	return n
}

// TestBLSChunks serves the classifier and the recogniser with
// max_batch_size 2, so that ppocr_bls sends the page's three lines in two
// chunks to each (concurrently) and must put the lines back in box order.
func TestBLSChunks(t *testing.T) {
	srv := serve(t, func(dir string) {
		for _, model := range []string{ppocr.ClsModel, ppocr.RecModel} {
			p := filepath.Join(dir, model, "config.pbtxt")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "max_batch_size: 64", "max_batch_size: 2", 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	ready(t, srv, "ppocr_bls")
	for _, model := range []string{ppocr.ClsModel, ppocr.RecModel} {
		if cfg, err := srv.ModelConfig(model, 0); err != nil || cfg.GetMaxBatchSize() != 2 {
			t.Fatalf("%s: max_batch_size %d (%v), want 2", model, cfg.GetMaxBatchSize(), err)
		}
	}
	lines, err := ppocr.Recognize(context.Background(), srv, "ppocr_bls", page(t))
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, lines)
	for _, model := range []string{ppocr.ClsModel, ppocr.RecModel} {
		stats, err := srv.Stats(model, 0)
		if err != nil {
			t.Fatal(err)
		}
		var rows, runs uint64
		for _, s := range stats {
			rows, runs = rows+s.InferenceCount, runs+s.ExecutionCount
		}
		if rows != 3 || runs < 2 {
			t.Errorf("%s ran %d rows in %d executions, want 3 rows in at least 2", model, rows, runs)
		}
	}
}
