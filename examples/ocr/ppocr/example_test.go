package ppocr_test

import (
	"context"
	"fmt"
	"image"
	"log"
	"os"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/examples/ocr/ppocr"
)

// The detector marks the shrunk kernel of each text line; DBPostprocess
// finds them, grows them back and scales them to the image.
func ExampleDBPostprocess() {
	// A 64 × 32 probability map for a 128 × 64 image with one line's
	// kernel, 48 × 6: grown by 48·6·1.5/108 = 4 on each side, then doubled.
	const w, h = 64, 32
	prob := make([]float32, w*h)
	for y := 10; y < 16; y++ {
		for x := 8; x < 56; x++ {
			prob[y*w+x] = 0.95
		}
	}
	fmt.Println(ppocr.DBPostprocess(prob, w, h, image.Rect(0, 0, 128, 64)))
	// Output: [(8,12)-(120,40)]
}

// The recogniser scores, per time step, the blank (0), each dictionary
// entry and the space; greedy CTC decoding keeps each step's best class,
// collapses repeats and drops blanks.
func ExampleCTCDecode() {
	keys := []string{"G", "o"}
	C := len(keys) + 2
	best := []int{1, 1, 0, 2, 3, 1, 2, 2} // G G _ o ␣ G o o
	probs := make([]float32, len(best)*C)
	for t, c := range best {
		probs[t*C+c] = 1
	}
	text, conf, err := ppocr.CTCDecode(probs, len(best), C, keys)
	fmt.Printf("%q %.1f %v\n", text, conf, err)
	// Output: "Go Go" 1.0 <nil>
}

// Serving the pipeline: write the repository, register the backends, and
// read a page through the Go BLS model (or "ppocr_ensemble").
func Example() {
	dir, err := os.MkdirTemp("", "ppocr")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := ppocr.WriteRepository(dir, ".cache/models/ppocr"); err != nil {
		log.Fatal(err)
	}
	opts := []triton.Option{triton.WithModelRepository(dir), triton.WithBackend("onnxruntime", onnxruntime.New())}
	for name, b := range ppocr.Backends() {
		opts = append(opts, triton.WithBackend(name, b))
	}
	srv, err := triton.New(opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	page, err := ppocr.RenderPage(640, 160, ppocr.PageLine{Text: "Hello World 123", At: image.Pt(40, 40)})
	if err != nil {
		log.Fatal(err)
	}
	lines, err := ppocr.Recognize(context.Background(), srv, "ppocr_bls", page)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range lines {
		fmt.Printf("%q at %v\n", l.Text, l.Box)
	}
}
