// Command ocr reads the text of an image with PaddleOCR's PP-OCR models
// served by triton-go: it writes the pipeline's model repository (package
// ppocr) into a temporary folder, serves it with ONNX Runtime and the
// pipeline's Go backends, and prints each line read, top to bottom.
//
//	go run ./examples/ocr [-models .cache/models/ppocr] [-image page.png] [-via bls|ensemble|steps]
//
// Without -image it reads a page it renders itself. -via picks the Go BLS
// model (ppocr_bls, the default), the ensemble (ppocr_ensemble) or the
// steps called one by one (ppocr.RunSteps). The models come from
// scripts/fetch-models.sh (make deps), which puts them in
// .cache/models/ppocr; by default that folder is looked for from the
// working directory up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/jpeg" // -image may be a JPEG
	_ "image/png"  // or a PNG
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/examples/ocr/ppocr"
)

func main() {
	models := flag.String("models", "", "folder of the PP-OCR model files (default: .cache/models/ppocr, looked for from the working directory up)")
	imagePath := flag.String("image", "", "image to read, PNG or JPEG (default: a rendered sample page)")
	via := flag.String("via", "bls", "how to run the pipeline: bls, ensemble or steps")
	flag.Parse()
	if err := run(os.Stdout, *models, *imagePath, *via); err != nil {
		log.Fatal(err)
	}
}

// samplePage is what is read without -image: three lines, the last upside
// down.
var samplePage = []ppocr.PageLine{
	{Text: "Hello World 123", At: image.Pt(40, 40)},
	{Text: "triton go 2024", At: image.Pt(120, 160)},
	{Text: "Upside Down 42", At: image.Pt(60, 280), UpsideDown: true},
}

// run reads the image at imagePath (the sample page when "") via the
// pipeline named by via and writes the lines to w.
func run(w io.Writer, models, imagePath, via string) error {
	var read func(context.Context, *triton.Server, image.Image) ([]ppocr.Line, error)
	switch via {
	case "bls", "ensemble":
		read = func(ctx context.Context, srv *triton.Server, img image.Image) ([]ppocr.Line, error) {
			return ppocr.Recognize(ctx, srv, "ppocr_"+via, img)
		}
	case "steps":
		read = func(ctx context.Context, srv *triton.Server, img image.Image) ([]ppocr.Line, error) {
			return ppocr.RunSteps(ctx, srv, img)
		}
	default:
		return fmt.Errorf("-via %q: want bls, ensemble or steps", via)
	}
	img, err := loadImage(imagePath)
	if err != nil {
		return err
	}
	if models == "" {
		if models, err = findModels(); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "ppocr-repository")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := ppocr.WriteRepository(dir, models); err != nil {
		return err
	}
	opts := []triton.Option{triton.WithModelRepository(dir), triton.WithBackend("onnxruntime", onnxruntime.New())}
	for name, b := range ppocr.Backends() {
		opts = append(opts, triton.WithBackend(name, b))
	}
	srv, err := triton.New(opts...)
	if err != nil {
		return err
	}
	defer srv.Close()

	ctx := context.Background()
	start := time.Now()
	lines, err := read(ctx, srv, img)
	if err != nil {
		return err
	}
	b := img.Bounds()
	fmt.Fprintf(w, "%d lines in a %d×%d image via %s (%v):\n", len(lines), b.Dx(), b.Dy(), via, time.Since(start).Round(time.Millisecond))
	for _, l := range lines {
		fmt.Fprintf(w, "%-24q conf %.3f  box %v\n", l.Text, l.Conf, l.Box)
	}
	return srv.Shutdown(ctx)
}

// loadImage decodes the image at path, or renders the sample page.
func loadImage(path string) (image.Image, error) {
	if path == "" {
		return ppocr.RenderPage(800, 400, samplePage...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return img, nil
}

// findModels looks for .cache/models/ppocr from the working directory up.
func findModels() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ".cache", "models", "ppocr")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no .cache/models/ppocr above the working directory: run make deps (scripts/fetch-models.sh), or pass -models")
		}
		dir = parent
	}
}
