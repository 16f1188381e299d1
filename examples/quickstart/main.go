// Command quickstart embeds a Triton model repository in a Go program: it
// loads the repository next to this file (or the one given with
// -model-repository), serves two models with a custom Go backend and one
// ONNX model with ONNX Runtime (its config completed from the model file),
// and prints the outputs of requests sent from concurrent goroutines.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	_ "github.com/triton-go/triton/backend/onnxruntime" // registers the "onnxruntime" backend
	"github.com/triton-go/triton/tensor"
)

//go:embed models
var embedded embed.FS

func main() {
	repo := flag.String("model-repository", "", "model repository folder (default: the embedded examples/quickstart/models)")
	verbose := flag.Bool("v", false, "log model lifecycle events")
	flag.Parse()

	logger := zap.NewNop()
	if *verbose {
		logger, _ = zap.NewDevelopment()
	}
	if err := run(os.Stdout, *repo, logger); err != nil {
		log.Fatal(err)
	}
}

// run serves the repository at dir (the embedded one when dir is "") and
// writes what a few requests return to w.
func run(w io.Writer, dir string, logger *zap.Logger) error {
	opts := []triton.Option{triton.WithLogger(logger), triton.WithBackend("go", goBackend)}
	if dir != "" {
		opts = append(opts, triton.WithModelRepository(dir))
	} else {
		models, _ := fs.Sub(embedded, "models")
		opts = append(opts, triton.WithRepository(models))
	}
	srv, err := triton.New(opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx := context.Background()

	for _, st := range srv.Index(ctx) {
		fmt.Fprintf(w, "model %-8s version %d %s\n", st.Name, st.Version, st.State)
	}

	// Four goroutines call the same model at once; its two instances serve them.
	var wg sync.WaitGroup
	results := make([]string, 4)
	for g := range results {
		wg.Go(func() { results[g] = callSimple(srv, g) })
	}
	wg.Wait()
	for _, r := range results {
		fmt.Fprintln(w, r)
	}

	text, _ := tensor.FromStrings("TEXT", tensor.Shape{3}, []string{"hello", "triton", "he\x00llo"})
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "reverse", Inputs: []tensor.Tensor{text}})
	if err != nil {
		return err
	}
	out, _ := resp.Output("REVERSED")
	rev, _ := tensor.Strings(out)
	fmt.Fprintf(w, "reverse: %q\n", rev)

	// The ONNX model has no config.pbtxt: ONNX Runtime's backend completed it.
	cfg, err := srv.ModelConfig("add_sub_onnx", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "add_sub_onnx: platform %s, max_batch_size %d, inputs", cfg.GetPlatform(), cfg.GetMaxBatchSize())
	for _, in := range cfg.GetInput() {
		fmt.Fprintf(w, " %s %s %v", in.GetName(), in.GetDataType(), in.GetDims())
	}
	fmt.Fprintln(w)
	x, _ := tensor.From("INPUT0", tensor.Shape{2, 16}, seq(32, 1))
	y, _ := tensor.From("INPUT1", tensor.Shape{2, 16}, seq(32, 0.5))
	resp, err = srv.Infer(ctx, &triton.InferRequest{Model: "add_sub_onnx", Inputs: []tensor.Tensor{x, y}, Outputs: []string{"OUTPUT0"}})
	if err != nil {
		return err
	}
	sum, _ := resp.Output("OUTPUT0")
	vals, _ := tensor.View[float32](sum)
	fmt.Fprintf(w, "add_sub_onnx: OUTPUT0 %v = %v ... %v\n", sum.Shape, vals[:3], vals[len(vals)-1])

	// Bad input gets a clear error naming the model, the tensor and the problem.
	bad, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	_, err = srv.Infer(ctx, &triton.InferRequest{Model: "simple", ID: "bad-1", Inputs: []tensor.Tensor{bad}})
	fmt.Fprintf(w, "bad request: %s: %v\n", triton.CodeOf(err), err)

	return srv.Shutdown(ctx)
}

// seq returns n float32 values i*step.
func seq(n int, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i) * step
	}
	return out
}

func callSimple(srv *triton.Server, g int) string {
	a, b := make([]int32, 16), make([]int32, 16)
	for i := range a {
		a[i], b[i] = int32(i*(g+1)), int32(g)
	}
	in0, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, a)
	in1, _ := tensor.From("INPUT1", tensor.Shape{1, 16}, b)
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{
		Model: "simple", ID: fmt.Sprintf("req-%d", g), Inputs: []tensor.Tensor{in0, in1},
	})
	if err != nil {
		return err.Error()
	}
	sum, _ := resp.Output("OUTPUT0")
	diff, _ := resp.Output("OUTPUT1")
	s, _ := tensor.View[int32](sum)
	d, _ := tensor.View[int32](diff)
	return fmt.Sprintf("%s: %s v%d OUTPUT0=%v OUTPUT1=%v", resp.ID, resp.Model, resp.Version, s[:4], d[:4])
}

// goBackend serves both models: the config's output names tell it which.
var goBackend = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	if _, err := b.Input("TEXT"); err == nil {
		return reverse(b)
	}
	return addSub(b)
})

func addSub(b *backend.Batch) error {
	t0, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	t1, err := b.Input("INPUT1")
	if err != nil {
		return err
	}
	x, _ := tensor.View[int32](t0)
	y, _ := tensor.View[int32](t1)
	sum, diff := make([]int32, len(x)), make([]int32, len(x))
	for i := range x {
		sum[i], diff[i] = x[i]+y[i], x[i]-y[i]
	}
	s, _ := tensor.From("OUTPUT0", t0.Shape, sum)
	d, _ := tensor.From("OUTPUT1", t0.Shape, diff)
	if err := b.SetOutput(s); err != nil {
		return err
	}
	return b.SetOutput(d)
}

func reverse(b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("TEXT")
		elems, err := tensor.ByteSlices(in)
		if err != nil {
			return err
		}
		out := make([][]byte, len(elems))
		for i, e := range elems {
			out[i] = slices.Clone(e)
			slices.Reverse(out[i])
		}
		t, err := tensor.FromByteSlices("REVERSED", in.Shape, out)
		if err != nil {
			return err
		}
		r.SetOutput(t)
	}
	return nil
}
