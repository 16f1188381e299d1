package triton_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing/fstest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// A model repository laid out as Triton's, here in memory; on disk it would
// be the same files under a folder given to WithModelRepository.
var exampleRepo = fstest.MapFS{
	"add/config.pbtxt": {Data: []byte(`
name: "add"
backend: "go"
max_batch_size: 4
input [
  { name: "A" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "B" data_type: TYPE_FP32 dims: [ 2 ] }
]
output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 2 ] } ]
`)},
	"add/1/README": {Data: []byte("a Go backend needs no model file")},
}

// add is a custom Go backend: SUM = A + B over the whole batch.
var add = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	ta, err := b.Input("A")
	if err != nil {
		return err
	}
	tb, err := b.Input("B")
	if err != nil {
		return err
	}
	a, _ := tensor.View[float32](ta)
	bv, _ := tensor.View[float32](tb)
	sum := make([]float32, len(a))
	for i := range a {
		sum[i] = a[i] + bv[i]
	}
	out, err := tensor.From("SUM", ta.Shape, sum)
	if err != nil {
		return err
	}
	return b.SetOutput(out)
})

func ExampleServer_Infer() {
	srv, err := triton.New(triton.WithRepository(exampleRepo), triton.WithBackend("go", add))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	a, _ := tensor.From("A", tensor.Shape{1, 2}, []float32{1, 2})
	b, _ := tensor.From("B", tensor.Shape{1, 2}, []float32{10, 20})
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add", Inputs: []tensor.Tensor{a, b}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := resp.Output("SUM")
	sum, _ := tensor.View[float32](out)
	fmt.Println(resp.Model, resp.Version, out.Shape, sum)
	// Output: add 1 [1,2] [11 22]
}

// A service that sends many requests to one model keeps a handle on it: the
// handle follows the model through reloads and skips the lookup by name.
func ExampleServer_Model() {
	srv, err := triton.New(triton.WithRepository(exampleRepo), triton.WithBackend("go", add))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	m := srv.Model("add")
	md, _ := m.Metadata()
	fmt.Println(md.Name, md.Versions, md.Inputs[0].Shape)
	for i := range 2 {
		a, _ := tensor.From("A", tensor.Shape{1, 2}, []float32{1, float32(i)})
		b, _ := tensor.From("B", tensor.Shape{1, 2}, []float32{10, 20})
		resp, err := m.Infer(context.Background(), &triton.InferRequest{Inputs: []tensor.Tensor{a, b}})
		if err != nil {
			fmt.Println(err)
			return
		}
		out, _ := resp.Output("SUM")
		sum, _ := tensor.View[float32](out)
		fmt.Println(sum)
	}
	st, _ := m.Stats()
	fmt.Println(st.Success.Count, "requests")
	// Output:
	// add [1] [-1 2]
	// [11 20]
	// [11 21]
	// 2 requests
}

func ExampleCodeOf() {
	srv, err := triton.New(triton.WithRepository(exampleRepo), triton.WithBackend("go", add))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	a, _ := tensor.From("A", tensor.Shape{1, 2}, []int32{1, 2}) // wrong datatype
	_, err = srv.Infer(context.Background(), &triton.InferRequest{Model: "add", ID: "r1", Inputs: []tensor.Tensor{a}})
	fmt.Println(triton.CodeOf(err))
	var e *triton.Error
	if errors.As(err, &e) {
		fmt.Println(e.Message())
	}
	// Output:
	// InvalidArgument
	// [request id: r1] inference input 'A' data-type is 'INT32', but model 'add' expects 'FP32'
}

// A decoupled model answers a request with any number of responses, here
// one per word of its input, as a language model streams tokens. The
// caller ranges over them; breaking out of the loop or ending ctx cancels
// the request.
func ExampleServer_InferStream() {
	repo := fstest.MapFS{
		"words/config.pbtxt": {Data: []byte(`
backend: "words"
model_transaction_policy { decoupled: true }
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "WORD" data_type: TYPE_STRING dims: [ 1 ] } ]
`)},
		"words/1/README": {Data: []byte("a Go backend needs no model file")},
	}
	words := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		in, _ := r.Input("TEXT")
		text, err := tensor.Strings(in)
		if err != nil {
			return err
		}
		for _, w := range strings.Fields(text[0]) {
			out, err := tensor.FromStrings("WORD", tensor.Shape{1}, []string{w})
			if err != nil {
				return err
			}
			if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
				return err // the caller went away
			}
		}
		return nil // StreamFunc sends the final flag
	})
	srv, err := triton.New(triton.WithRepository(repo), triton.WithBackend("words", words))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	text, _ := tensor.FromStrings("TEXT", tensor.Shape{1}, []string{"streams of tokens"})
	req := &triton.InferRequest{Model: "words", Inputs: []tensor.Tensor{text}}
	for resp, err := range srv.InferStream(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		out, _ := resp.Output("WORD")
		w, _ := tensor.Strings(out)
		fmt.Println(w[0])
	}
	// Output:
	// streams
	// of
	// tokens
}

// A model that loops over one request (a token generator, say) declares
// an iterative sequence and reschedules the request until it is done: each
// iteration is an execution of its own, batched with the other requests'
// iterations, and the implicit state carries from one to the next.
func ExampleServer_Infer_iterativeSequence() {
	repo := fstest.MapFS{
		"tokens/config.pbtxt": {Data: []byte(`
backend: "go"
max_batch_size: 0
input [ { name: "LENGTH" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "TOKENS" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  iterative_sequence: true
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "SO_FAR" output_name: "NEXT" data_type: TYPE_INT32 dims: [ 1 ] } ]
}
`)},
		"tokens/1/README": {Data: []byte("a Go backend")},
	}
	generate := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			length, _ := r.Input("LENGTH")
			soFar, _ := r.Input("SO_FAR")
			start, _ := r.Input("START")
			n, _ := tensor.View[int32](soFar)
			want, _ := tensor.View[int32](length)
			first, _ := tensor.View[int32](start)
			made := n[0] + 1 // one more token
			if first[0] == 1 {
				made = 1
			}
			next, _ := tensor.From("NEXT", tensor.Shape{1}, []int32{made})
			r.SetOutput(next)
			if made < want[0] {
				r.Reschedule() // run again, in a later batch
				continue
			}
			tokens, _ := tensor.From("TOKENS", tensor.Shape{1}, []int32{made})
			r.SetOutput(tokens)
		}
		return nil
	})
	srv, err := triton.New(triton.WithRepository(repo), triton.WithBackend("go", generate))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	length, _ := tensor.From("LENGTH", tensor.Shape{1}, []int32{3})
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "tokens", Inputs: []tensor.Tensor{length}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := resp.Output("TOKENS")
	tokens, _ := tensor.View[int32](out)
	stats, _ := srv.Stats("tokens", 0)
	fmt.Println(tokens, "tokens in", stats[0].ExecutionCount, "executions")
	// Output: [3] tokens in 3 executions
}

// weights is a Go backend whose models hold 40 MiB each (as a model's
// weights would) and say so through backend.MemoryReporter; each
// answers SUM = A + B with the add function above.
type weights struct{}

type weightsModel struct{ backend.Func }

func (weights) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return weightsModel{add}, nil
}
func (weightsModel) MemoryBytes() (int64, error) { return 40 << 20, nil }
func (m weightsModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return m.Func, nil
}

// Three models under a memory budget that holds two: each request loads
// its model on demand, and the third evicts the least used one, which a
// later request brings back.
func ExampleWithMemoryBudget() {
	repo := fstest.MapFS{}
	for _, name := range []string{"en", "de", "fr"} {
		cfg := strings.Replace(string(exampleRepo["add/config.pbtxt"].Data), `name: "add"`, `name: "`+name+`"`, 1)
		repo[name+"/config.pbtxt"] = &fstest.MapFile{Data: []byte(strings.Replace(cfg, `backend: "go"`, `backend: "weights"`, 1))}
		repo[name+"/1/README"] = exampleRepo["add/1/README"]
	}
	srv, err := triton.New(
		triton.WithRepository(repo),
		triton.WithBackend("weights", weights{}),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithMemoryBudget(100<<20),
		triton.WithLoadOnDemand(true),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	a, _ := tensor.From("A", tensor.Shape{1, 2}, []float32{1, 2})
	b, _ := tensor.From("B", tensor.Shape{1, 2}, []float32{10, 20})
	for _, model := range []string{"en", "en", "de", "fr"} {
		if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{a, b}}); err != nil {
			fmt.Println(err)
			return
		}
	}
	u := srv.Memory()
	fmt.Printf("resident %d MiB of %d MiB\n", u.Resident>>20, u.Budget>>20)
	for _, st := range srv.Index(context.Background()) {
		fmt.Println(strings.TrimSpace(st.Name + " " + st.State + " " + st.Reason))
	}
	// Output:
	// resident 80 MiB of 100 MiB
	// de UNAVAILABLE evicted to make room for 'fr' in the memory budget
	// en READY
	// fr READY
}

// A client of a model with dynamic_batching (deadline-aware by default)
// learns at once when its request cannot finish in time, and how long the
// queue ahead needs: it can retry later, or elsewhere, instead of waiting
// out its deadline.
func ExampleRetryAfter() {
	srv, err := triton.New(triton.WithRepository(exampleRepo), triton.WithBackend("go", add))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	a, _ := tensor.From("A", tensor.Shape{1, 2}, []float32{1, 2})
	b, _ := tensor.From("B", tensor.Shape{1, 2}, []float32{10, 20})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = srv.Infer(ctx, &triton.InferRequest{Model: "add", Inputs: []tensor.Tensor{a, b}})
	if wait, ok := triton.RetryAfter(err); ok {
		fmt.Printf("refused (%v); the queue ahead needs %v\n", err, wait)
	}
}
