// Command python serves the example repository's Python models inside
// this process: Triton model.py files, unchanged, each instance in a
// Python process of its own (Debian's /usr/bin/python3 with numpy), beside
// ONNX models on ONNX Runtime. It classifies a few sentences through the
// text_classify ensemble (a Python tokenizer, an ONNX model, a Python
// postprocessing step), runs the detect_classify BLS model (Python calling
// two ONNX models, the second only when the first's score is high), and
// streams the decoupled repeat_py, then prints what came back.
//
//	go run ./examples/python
//
// The same repository is served over HTTP and gRPC by cmd/tritonserver
// (`make run`).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime" // registers "onnxruntime"
	_ "github.com/triton-go/triton/backend/python"      // registers "python"
	"github.com/triton-go/triton/tensor"
)

// Models are the models loaded at start (text_classify brings its steps).
var Models = []string{"text_classify", "detector", "classifier", "detect_classify", "repeat_py"}

// Sentences are what run classifies.
var Sentences = []string{
	"What a great movie, I loved it!",
	"Terrible service and awful food.",
	"The plot of the book.",
}

func main() {
	repo := flag.String("model-repository", "examples/model_repository", "model repository folder")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *repo); err != nil {
		log.Fatal(err)
	}
}

// newServer serves Models of the repository at dir.
func newServer(dir string) (*triton.Server, error) {
	return triton.New(
		triton.WithModelRepository(dir),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(Models...),
	)
}

// run calls the three kinds of Python model and writes the answers to w.
func run(ctx context.Context, w io.Writer, dir string) error {
	srv, err := newServer(dir)
	if err != nil {
		return err
	}
	defer srv.Close()

	// The ensemble, from concurrent goroutines: each step batches.
	labels := make([]string, len(Sentences))
	scores := make([]float32, len(Sentences))
	errs := make([]error, len(Sentences))
	var wg sync.WaitGroup
	for i, s := range Sentences {
		wg.Go(func() {
			in, err := tensor.FromStrings("TEXT", tensor.Shape{1, 1}, []string{s})
			if err != nil {
				errs[i] = err
				return
			}
			resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "text_classify", Inputs: []tensor.Tensor{in}})
			if err != nil {
				errs[i] = err
				return
			}
			labels[i], scores[i], errs[i] = labelScore(resp)
		})
	}
	wg.Wait()
	for i, s := range Sentences {
		if errs[i] != nil {
			return errs[i]
		}
		fmt.Fprintf(w, "%q: %s (p = %.3f)\n", s, labels[i], scores[i])
	}

	// BLS: a dark image and one bright in its third column, in one request.
	img := make([]float32, 2*16)
	for r := range 4 {
		img[16+4*r+2] = 4
	}
	in, err := tensor.From("INPUT", tensor.Shape{2, 16}, img)
	if err != nil {
		return err
	}
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "detect_classify", Inputs: []tensor.Tensor{in}})
	if err != nil {
		return err
	}
	classes, err := outputStrings(resp, "CLASS")
	if err != nil {
		return err
	}
	score, err := output[float32](resp, "SCORE")
	if err != nil {
		return err
	}
	st, err := srv.Model("classifier").Stats()
	if err != nil {
		return err
	}
	for i := range classes {
		fmt.Fprintf(w, "image %d: detector score %.3f, class %s\n", i, score[i], classes[i])
	}
	fmt.Fprintf(w, "the classifier ran %d time(s) on %d image(s)\n", st.ExecutionCount, st.InferenceCount)

	// A decoupled model: one response per element of IN, as it comes.
	values := []int32{4, 8, 15}
	stream := &triton.InferRequest{Model: "repeat_py", Inputs: []tensor.Tensor{
		must(tensor.From("IN", tensor.Shape{3}, values)),
		must(tensor.From("DELAY", tensor.Shape{3}, []uint32{10, 10, 10})),
		must(tensor.From("WAIT", tensor.Shape{1}, []uint32{0})),
	}}
	for resp, err := range srv.InferStream(ctx, stream) {
		if err != nil {
			return err
		}
		out, err := output[int32](resp, "OUT")
		if err != nil {
			return err
		}
		idx, err := output[uint32](resp, "IDX")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "repeat_py: OUT %d IDX %d\n", out[0], idx[0])
	}
	return nil
}

// labelScore reads the one LABEL and SCORE of a text_classify answer.
func labelScore(resp *triton.InferResponse) (string, float32, error) {
	label, err := outputStrings(resp, "LABEL")
	if err != nil {
		return "", 0, err
	}
	score, err := output[float32](resp, "SCORE")
	if err != nil {
		return "", 0, err
	}
	return label[0], score[0], nil
}

// output views resp's output name, which must have at least one element.
func output[T tensor.Element](resp *triton.InferResponse, name string) ([]T, error) {
	t, ok := resp.Output(name)
	if !ok {
		return nil, fmt.Errorf("%s answered without %s", resp.Model, name)
	}
	v, err := tensor.View[T](t)
	if err == nil && len(v) == 0 {
		err = fmt.Errorf("%s answered an empty %s", resp.Model, name)
	}
	return v, err
}

// outputStrings reads resp's BYTES output name, at least one element.
func outputStrings(resp *triton.InferResponse, name string) ([]string, error) {
	t, ok := resp.Output(name)
	if !ok {
		return nil, fmt.Errorf("%s answered without %s", resp.Model, name)
	}
	s, err := tensor.Strings(t)
	if err == nil && len(s) == 0 {
		err = fmt.Errorf("%s answered an empty %s", resp.Model, name)
	}
	return s, err
}

// must returns t, panicking on err: for tensors built from constants.
func must(t tensor.Tensor, err error) tensor.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}
