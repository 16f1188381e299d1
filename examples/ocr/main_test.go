package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// needModels checks for the ONNX Runtime library and the PP-OCR models.
func needModels(t *testing.T) {
	t.Helper()
	for _, f := range []string{"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx", ppocr.KeysFile} {
		testenv.Model(t, "ppocr/"+f)
	}
}

func TestOCR(t *testing.T) {
	needModels(t)
	for _, via := range []string{"bls", "ensemble", "steps"} {
		t.Run(via, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(&out, "", "", via); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + out.String())
			for _, want := range []string{"3 lines in a 800×400 image via " + via, `"Hello World 123"`, `"triton go 2024"`, `"Upside Down 42"`} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %s", want)
				}
			}
		})
	}
}

// TestOCRImageFile reads a PNG file with the models named by -models.
func TestOCRImageFile(t *testing.T) {
	needModels(t)
	page, err := ppocr.RenderPage(500, 120, ppocr.PageLine{Text: "Read from a file", At: image.Pt(30, 30)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "page.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, page); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(&out, filepath.Join("..", "..", ".cache", "models", "ppocr"), path, "bls"); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), `1 lines in a 500×120 image`) || !strings.Contains(out.String(), `"Read from a file"`) {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestBadFlags(t *testing.T) {
	if err := run(&bytes.Buffer{}, "", "", "python"); err == nil || !strings.Contains(err.Error(), "-via") {
		t.Errorf("-via python: %v", err)
	}
	if err := run(&bytes.Buffer{}, "", filepath.Join(t.TempDir(), "missing.png"), "bls"); err == nil {
		t.Error("a missing image: no error")
	}
	if err := run(&bytes.Buffer{}, t.TempDir(), "", "bls"); err == nil || !strings.Contains(err.Error(), "fetch-models") {
		t.Errorf("an empty models folder: %v", err)
	}
}
