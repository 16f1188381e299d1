package triton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

func TestInferSimple(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	for _, batch := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			req := simpleRequest(t, batch)
			resp, err := srv.Infer(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != "simple" || resp.Version != 1 || resp.ID != req.ID {
				t.Errorf("response names %q v%d id %q", resp.Model, resp.Version, resp.ID)
			}
			sum, diff := outputInt32(t, resp, "OUTPUT0"), outputInt32(t, resp, "OUTPUT1")
			for i := range batch * 16 {
				if sum[i] != int32(i)+1 || diff[i] != int32(i)-1 {
					t.Fatalf("element %d: sum %d diff %d", i, sum[i], diff[i])
				}
			}
			if out, _ := resp.Output("OUTPUT0"); !out.Shape.Equal(tensor.Shape{int64(batch), 16}) {
				t.Errorf("OUTPUT0 shape %v", out.Shape)
			}
		})
	}
}

func TestInferRequestedOutputs(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	req := simpleRequest(t, 2)
	req.Outputs = []string{"OUTPUT1"}
	resp, err := srv.Infer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if names := outputNames(resp); !slices.Equal(names, []string{"OUTPUT1"}) {
		t.Fatalf("outputs %v, want only OUTPUT1", names)
	}
}

func TestInferConcurrentGoroutines(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			batch := g%8 + 1
			req := simpleRequest(t, batch)
			resp, err := srv.Infer(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			out, _ := resp.Output("OUTPUT0")
			vals, _ := tensor.View[int32](out)
			if len(vals) != batch*16 || vals[batch*16-1] != int32(batch*16) {
				errs <- fmt.Errorf("goroutine %d: wrong output %v", g, vals)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInferBadRequests(t *testing.T) {
	files := simpleRepo(
		"strings/config.pbtxt", `backend: "gofunc"
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`,
		"strings/1/x", "",
	)
	srv := newServer(t, files, triton.WithBackend("gofunc", mirror))
	good := func() *triton.InferRequest { return simpleRequest(t, 2) }
	bytesIn := func(data []byte, shape tensor.Shape) *triton.InferRequest {
		return &triton.InferRequest{Model: "strings", ID: "s1", Inputs: []tensor.Tensor{{Name: "INPUT0", DataType: tensor.Bytes, Shape: shape, Data: data}}}
	}
	cases := []struct {
		name  string
		req   func() *triton.InferRequest
		code  triton.Code
		parts []string
	}{
		{"nil", func() *triton.InferRequest { return nil }, triton.InvalidArgument, []string{"nil request"}},
		{"unknown model", func() *triton.InferRequest { return &triton.InferRequest{Model: "nope"} }, triton.InvalidArgument,
			[]string{"Request for unknown model: 'nope' is not found"}},
		{"unknown version", func() *triton.InferRequest { r := good(); r.Version = 7; return r }, triton.NotFound,
			[]string{"Request for unknown model: 'simple' version 7 is not found"}},
		{"missing input", func() *triton.InferRequest { r := good(); r.Inputs = r.Inputs[:1]; return r }, triton.InvalidArgument,
			[]string{"expected 2 inputs but got 1 inputs for model 'simple'", "missing required input(s) ['INPUT1']"}},
		{"unexpected input", func() *triton.InferRequest {
			r := good()
			r.Inputs = append(r.Inputs, int32s(t, "EXTRA", tensor.Shape{2, 16}, make([]int32, 32)...))
			return r
		}, triton.InvalidArgument, []string{"unexpected inference input 'EXTRA' for model 'simple'"}},
		{"duplicate input", func() *triton.InferRequest { r := good(); r.Inputs[1].Name = "INPUT0"; return r }, triton.InvalidArgument,
			[]string{"'INPUT0'", "twice"}},
		{"datatype", func() *triton.InferRequest {
			r := good()
			r.Inputs[1], _ = tensor.From("INPUT1", tensor.Shape{2, 16}, make([]float32, 32))
			return r
		}, triton.InvalidArgument, []string{"inference input 'INPUT1' data-type is 'FP32', but model 'simple' expects 'INT32'"}},
		{"shape", func() *triton.InferRequest {
			r := good()
			r.Inputs[0] = int32s(t, "INPUT0", tensor.Shape{2, 8}, make([]int32, 16)...)
			return r
		}, triton.InvalidArgument, []string{"unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [2,8]"}},
		{"missing batch dim", func() *triton.InferRequest {
			r := good()
			r.Inputs[0] = int32s(t, "INPUT0", tensor.Shape{16}, make([]int32, 16)...)
			return r
		}, triton.InvalidArgument, []string{"INPUT0", "batch dimension"}},
		{"batch too large", func() *triton.InferRequest { return simpleRequest(t, 9) }, triton.InvalidArgument,
			[]string{"inference request batch-size must be <= 8 for 'simple'"}},
		{"batch mismatch", func() *triton.InferRequest {
			r := good()
			r.Inputs[1] = int32s(t, "INPUT1", tensor.Shape{3, 16}, make([]int32, 48)...)
			return r
		}, triton.InvalidArgument, []string{"input 'INPUT1' batch size does not match other inputs for 'simple'"}},
		{"zero batch", func() *triton.InferRequest {
			r := good()
			r.Inputs[0] = tensor.Tensor{Name: "INPUT0", DataType: tensor.Int32, Shape: tensor.Shape{0, 16}}
			return r
		}, triton.InvalidArgument, []string{"'INPUT0'", "at least 1"}},
		{"byte size", func() *triton.InferRequest { r := good(); r.Inputs[0].Data = r.Inputs[0].Data[:100]; return r }, triton.InvalidArgument,
			[]string{"input 'INPUT0' for model 'simple'", "128"}},
		{"unknown output", func() *triton.InferRequest { r := good(); r.Outputs = []string{"OUTPUT9"}; return r }, triton.InvalidArgument,
			[]string{"unexpected inference output 'OUTPUT9' for model 'simple'"}},
		{"parameter type", func() *triton.InferRequest { r := good(); r.Parameters = map[string]any{"p": []int{1}}; return r }, triton.InvalidArgument,
			[]string{"parameter 'p'"}},
		{"bytes truncated prefix", func() *triton.InferRequest { return bytesIn([]byte{5, 0, 0}, tensor.Shape{1}) }, triton.InvalidArgument,
			[]string{"'INPUT0'", "'strings'"}},
		{"bytes length past end", func() *triton.InferRequest { return bytesIn([]byte{9, 0, 0, 0, 'a'}, tensor.Shape{1}) }, triton.InvalidArgument,
			[]string{"'INPUT0'"}},
		{"bytes count", func() *triton.InferRequest { return bytesIn(tensor.AppendElement(nil, []byte("a")), tensor.Shape{2}) }, triton.InvalidArgument,
			[]string{"'INPUT0'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := srv.Infer(context.Background(), tc.req())
			if resp != nil {
				t.Errorf("got a response with the error")
			}
			wantError(t, err, tc.code, tc.parts...)
			if r := tc.req(); r != nil && r.ID != "" {
				var e *triton.Error
				if errors.As(err, &e) && e.RequestID != r.ID {
					t.Errorf("error request id %q, want %q", e.RequestID, r.ID)
				}
			}
		})
	}
	// The server is unharmed: a good request still works.
	if _, err := srv.Infer(context.Background(), good()); err != nil {
		t.Fatalf("good request after bad ones: %v", err)
	}
}

func TestInferBytesRoundTrip(t *testing.T) {
	files := map[string]string{
		"strings/config.pbtxt": `backend: "gofunc"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`,
		"strings/1/x": "",
	}
	srv := newServer(t, files, triton.WithBackend("gofunc", mirror))
	vals := []string{"he\x00llo", "\xff\xfe not utf-8", "", "plain"}
	in, err := tensor.FromStrings("INPUT0", tensor.Shape{2, 2}, vals)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "strings", Inputs: []tensor.Tensor{in}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := resp.Output("OUTPUT0")
	got, err := tensor.Strings(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, vals) {
		t.Fatalf("got %q, want %q", got, vals)
	}
}

func TestInferBackendMisbehaviour(t *testing.T) {
	cases := []struct {
		name  string
		fn    func(ctx context.Context, b *backend.Batch) error
		code  triton.Code
		parts []string
	}{
		{"error", func(context.Context, *backend.Batch) error { return errors.New("boom") }, triton.Internal, []string{"boom"}},
		{"invalid input", func(context.Context, *backend.Batch) error {
			return fmt.Errorf("tensor rejected: %w", backend.ErrInvalidInput)
		}, triton.InvalidArgument, []string{"tensor rejected"}},
		{"unavailable", func(context.Context, *backend.Batch) error {
			return fmt.Errorf("device busy: %w", backend.ErrUnavailable)
		}, triton.Unavailable, []string{"device busy"}},
		{"per-request failure", func(_ context.Context, b *backend.Batch) error {
			b.Requests[0].Fail(errors.New("this one is bad"))
			return nil
		}, triton.Internal, []string{"this one is bad"}},
		{"wrong output datatype", func(_ context.Context, b *backend.Batch) error {
			out, _ := tensor.From("OUTPUT0", tensor.Shape{1, 16}, make([]float32, 16))
			b.Requests[0].SetOutput(out)
			return nil
		}, triton.Internal, []string{"'OUTPUT0'", "data-type 'FP32'", "'INT32'"}},
		{"wrong output shape", func(_ context.Context, b *backend.Batch) error {
			out, _ := tensor.From("OUTPUT0", tensor.Shape{1, 15}, make([]int32, 15))
			b.Requests[0].SetOutput(out)
			return nil
		}, triton.Internal, []string{"'OUTPUT0'", "[1,15]", "[1,16]"}},
		{"undeclared output", func(_ context.Context, b *backend.Batch) error {
			out, _ := tensor.From("SURPRISE", tensor.Shape{1}, make([]int32, 1))
			b.Requests[0].SetOutput(out)
			return nil
		}, triton.Internal, []string{"'SURPRISE'", "does not declare"}},
		{"output malformed", func(_ context.Context, b *backend.Batch) error {
			b.Requests[0].SetOutput(tensor.Tensor{Name: "OUTPUT0", DataType: tensor.Int32, Shape: tensor.Shape{1, 16}, Data: make([]byte, 3)})
			return nil
		}, triton.Internal, []string{"'OUTPUT0'", "malformed"}},
		{"panic", func(context.Context, *backend.Batch) error { panic("kaboom") }, triton.Internal, []string{"backend panic: kaboom"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			fn := backend.Func(func(ctx context.Context, b *backend.Batch) error {
				if calls.Add(1) == 1 {
					return tc.fn(ctx, b)
				}
				return addSub(ctx, b)
			})
			srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", fn))
			req := simpleRequest(t, 1)
			req.ID = "r1"
			_, err := srv.Infer(context.Background(), req)
			wantError(t, err, tc.code, append(tc.parts, `model "simple" version 1`, `request "r1"`)...)
			// The model keeps serving.
			if _, err := srv.Infer(context.Background(), simpleRequest(t, 1)); err != nil {
				t.Fatalf("request after the failure: %v", err)
			}
			if !srv.ModelReady(context.Background(), "simple", 1) {
				t.Error("model not ready after a backend failure")
			}
		})
	}
}

func TestRequestedOutputMissing(t *testing.T) {
	onlyFirst := backend.Func(func(_ context.Context, b *backend.Batch) error {
		in, _ := b.Input("INPUT0")
		out := in
		out.Name = "OUTPUT0"
		return b.SetOutput(out)
	})
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", onlyFirst))
	req := simpleRequest(t, 1)
	req.Outputs = []string{"OUTPUT1"}
	_, err := srv.Infer(context.Background(), req)
	wantError(t, err, triton.Internal, "did not produce the requested output 'OUTPUT1'")
}

// panicky counts instances and panics on request, to check that a panic
// replaces the instance and leaves the model serving.
type panicky struct {
	created, closed atomic.Int32
}

func (p *panicky) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return p, nil }
func (p *panicky) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	p.created.Add(1)
	return &panickyInstance{p: p}, nil
}
func (p *panicky) Close() error { return nil }

type panickyInstance struct {
	p      *panicky
	closed bool
}

func (i *panickyInstance) Execute(ctx context.Context, b *backend.Batch) error {
	if i.closed {
		panic("Execute after Close")
	}
	if b.Requests[0].ID == "panic" {
		panic("requested panic")
	}
	return mirror(ctx, b)
}

func (i *panickyInstance) Close() error {
	i.closed = true
	i.p.closed.Add(1)
	return nil
}

func TestPanicRecreatesInstance(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": oneInput("p", 1, ""),
		"m/1/x":          "",
	}
	p := &panicky{}
	srv := newServer(t, files, triton.WithBackend("p", p))
	req := func(id string) *triton.InferRequest {
		return oneInputRequest(t, "m", id, 7)
	}
	for range 3 {
		_, err := srv.Infer(context.Background(), req("panic"))
		wantError(t, err, triton.Internal, "requested panic")
		resp, err := srv.Infer(context.Background(), req("ok"))
		if err != nil {
			t.Fatalf("after panic: %v", err)
		}
		if v := outputInt32(t, resp, "OUTPUT0"); v[0] != 7 {
			t.Fatalf("output %v", v)
		}
	}
	if got := p.created.Load(); got != 4 {
		t.Errorf("instances created = %d, want 4 (1 + one per panic)", got)
	}
	if got := p.closed.Load(); got != 3 {
		t.Errorf("instances closed = %d, want 3", got)
	}
}

// TestInstancesRunInParallel checks that count instances execute at once
// and that no instance ever runs two batches at the same time.
func TestInstancesRunInParallel(t *testing.T) {
	const count = 3
	files := map[string]string{
		"m/config.pbtxt": oneInput("tracker", count, ""),
		"m/1/x":          "",
	}
	tr := &tracker{release: make(chan struct{}), arrived: make(chan string, 100)}
	srv := newServer(t, files, triton.WithBackend("tracker", tr))
	var wg sync.WaitGroup
	for range 2 * count {
		wg.Go(func() {
			_, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1))
			if err != nil {
				t.Error(err)
			}
		})
	}
	seen := map[string]bool{}
	for range count {
		seen[<-tr.arrived] = true // each instance holds one request
	}
	if len(seen) != count {
		t.Errorf("%d distinct instances running at once, want %d", len(seen), count)
	}
	close(tr.release)
	wg.Wait()
	if tr.overlap.Load() {
		t.Error("an instance ran two batches concurrently")
	}
}

type tracker struct {
	release chan struct{}
	arrived chan string
	overlap atomic.Bool
}

func (tr *tracker) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return tr, nil }
func (tr *tracker) NewInstance(_ context.Context, s backend.InstanceSpec) (backend.Instance, error) {
	return &trackerInstance{tr: tr, name: s.Name}, nil
}
func (tr *tracker) Close() error { return nil }

type trackerInstance struct {
	tr   *tracker
	name string
	busy atomic.Bool
}

func (i *trackerInstance) Execute(ctx context.Context, b *backend.Batch) error {
	if !i.busy.CompareAndSwap(false, true) {
		i.tr.overlap.Store(true)
	}
	defer i.busy.Store(false)
	i.tr.arrived <- i.name
	<-i.tr.release
	return mirror(ctx, b)
}
func (i *trackerInstance) Close() error { return nil }

// TestCancelWhileQueued runs in a synctest bubble: the deadline and the
// cancellation come on the bubble's clock, while the requests wait for the
// busy instance.
func TestCancelWhileQueued(t *testing.T) { synctest.Test(t, testCancelWhileQueued) }

func testCancelWhileQueued(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": oneInput("block", 1, ""),
		"m/1/x":          "",
	}
	started, release := make(chan struct{}, 10), make(chan struct{})
	var executed sync.Map
	block := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		executed.Store(b.Requests[0].ID, true)
		started <- struct{}{}
		<-release
		return mirror(ctx, b)
	})
	srv := newServer(t, files, triton.WithBackend("block", block))
	req := func(id string) *triton.InferRequest {
		return oneInputRequest(t, "m", id, 1)
	}
	first := make(chan error, 1)
	go func() {
		_, err := srv.Infer(context.Background(), req("first"))
		first <- err
	}()
	<-started // the only instance is busy now

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	begun := time.Now()
	_, err := srv.Infer(ctx, req("deadline"))
	wantError(t, err, triton.DeadlineExceeded, `request "deadline"`)
	if d := time.Since(begun); d != 20*time.Millisecond {
		t.Errorf("the request left after %v, want its deadline, 20ms", d)
	}

	ctx, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel2)
	begun = time.Now()
	_, err = srv.Infer(ctx, req("cancelled"))
	wantError(t, err, triton.Cancelled)
	if d := time.Since(begun); d != 10*time.Millisecond {
		t.Errorf("the request left after %v, want its cancellation, 10ms", d)
	}

	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The abandoned calls never reach the backend; a new request does.
	if _, err := srv.Infer(context.Background(), req("after")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"deadline", "cancelled"} {
		if _, ok := executed.Load(id); ok {
			t.Errorf("request %q was executed after its context ended", id)
		}
	}
	if _, ok := executed.Load("after"); !ok {
		t.Error("request after the cancellations did not run")
	}
}

func TestCancelledBeforeInfer(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := srv.Infer(ctx, simpleRequest(t, 1))
	wantError(t, err, triton.Cancelled)
}

func TestReshape(t *testing.T) {
	files := map[string]string{
		"r/config.pbtxt": `backend: "shape"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } } ]`,
		"r/1/x": "",
	}
	var seen tensor.Shape
	shape := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		in, _ := b.Input("INPUT0")
		seen = in.Shape.Clone()
		return mirror(ctx, b)
	})
	srv := newServer(t, files, triton.WithBackend("shape", shape))
	in, _ := tensor.From("INPUT0", tensor.Shape{3, 4}, make([]float32, 12))
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "r", Inputs: []tensor.Tensor{in}})
	if err != nil {
		t.Fatal(err)
	}
	if !seen.Equal(tensor.Shape{3, 2, 2}) {
		t.Errorf("backend saw shape %v, want [3,2,2]", seen)
	}
	if out, _ := resp.Output("OUTPUT0"); !out.Shape.Equal(tensor.Shape{3, 4}) {
		t.Errorf("client got shape %v, want [3,4]", out.Shape)
	}
	if !in.Shape.Equal(tensor.Shape{3, 4}) {
		t.Errorf("the caller's input shape was changed to %v", in.Shape)
	}
}

// TestReshapeToScalar checks `reshape: { shape: [ ] }`: a batching model
// takes [batch, 1] from clients and gives the backend [batch]; a
// non-batching one is refused, as Triton refuses it.
func TestReshapeToScalar(t *testing.T) {
	scalar := `backend: "shape"
input [ { name: "INPUT0" data_type: TYPE_INT64 dims: [ 1 ] reshape: { shape: [ ] } } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT64 dims: [ 1 ] reshape: { shape: [ ] } } ]`
	files := map[string]string{
		"b/config.pbtxt": "max_batch_size: 4\n" + scalar,
		"b/1/x":          "",
	}
	seen := map[string]tensor.Shape{}
	var mu sync.Mutex
	shape := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		in, _ := b.Input("INPUT0")
		mu.Lock()
		seen[b.Requests[0].ID] = in.Shape.Clone()
		mu.Unlock()
		return mirror(ctx, b)
	})
	srv := newServer(t, files, triton.WithBackend("shape", shape))
	for _, tc := range []struct {
		model       string
		shape, want tensor.Shape
	}{{"b", tensor.Shape{3, 1}, tensor.Shape{3}}} {
		in, _ := tensor.From("INPUT0", tc.shape, make([]int64, tc.shape[0]))
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: tc.model, ID: tc.model, Inputs: []tensor.Tensor{in}})
		if err != nil {
			t.Fatal(err)
		}
		if got := seen[tc.model]; !got.Equal(tc.want) || got == nil {
			t.Errorf("%s: backend saw %v, want %v", tc.model, got, tc.want)
		}
		if out, _ := resp.Output("OUTPUT0"); !out.Shape.Equal(tc.shape) {
			t.Errorf("%s: client got %v, want %v", tc.model, out.Shape, tc.shape)
		}
	}
	_, err := triton.New(triton.WithRepository(mapFS(map[string]string{"s/config.pbtxt": scalar, "s/1/x": ""})), triton.WithBackend("shape", shape))
	wantError(t, err, triton.InvalidArgument,
		"model input 'INPUT0' cannot have empty reshape for non-batching model as scalar tensors are not supported for s",
		"model output 'OUTPUT0' cannot have empty reshape for non-batching model as scalar tensors are not supported for s")
}

func TestOptionalInputs(t *testing.T) {
	files := map[string]string{
		"o/config.pbtxt": `backend: "gofunc"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] },
        { name: "INPUT1" data_type: TYPE_INT32 dims: [ 1 ] optional: true } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] },
         { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
		"o/1/x": "",
	}
	srv := newServer(t, files, triton.WithBackend("gofunc", mirror))
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "o", Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1}, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	if names := outputNames(resp); !slices.Equal(names, []string{"OUTPUT0"}) {
		t.Errorf("outputs %v", names)
	}
	_, err = srv.Infer(context.Background(), &triton.InferRequest{Model: "o", Inputs: []tensor.Tensor{int32s(t, "INPUT1", tensor.Shape{1}, 5)}})
	wantError(t, err, triton.InvalidArgument, "missing required input(s) ['INPUT0']")
}

func TestScalarAndZeroSizedShapes(t *testing.T) {
	files := map[string]string{
		"z/config.pbtxt": `backend: "gofunc"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]`,
		"z/1/x": "",
	}
	srv := newServer(t, files, triton.WithBackend("gofunc", mirror))
	in := tensor.Tensor{Name: "INPUT0", DataType: tensor.FP32, Shape: tensor.Shape{0, 3}}
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "z", Inputs: []tensor.Tensor{in}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := resp.Output("OUTPUT0"); !out.Shape.Equal(tensor.Shape{0, 3}) || len(out.Data) != 0 {
		t.Errorf("output %v with %d bytes", out.Shape, len(out.Data))
	}
}

// brittle panics in Execute and cannot create a second instance, so the
// version loses its only instance for good.
type brittle struct{ created atomic.Int32 }

func (b *brittle) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return b, nil }
func (b *brittle) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	if b.created.Add(1) > 1 {
		return nil, errors.New("device gone")
	}
	return backend.Func(func(context.Context, *backend.Batch) error { panic("device fault") }), nil
}
func (b *brittle) Close() error { return nil }

func TestLastInstanceLost(t *testing.T) { synctest.Test(t, testLastInstanceLost) }

func testLastInstanceLost(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": oneInput("brittle", 1, ""),
		"m/1/x":          "",
	}
	srv := newServer(t, files, triton.WithBackend("brittle", &brittle{}))
	req := func(ver int64) *triton.InferRequest {
		return &triton.InferRequest{Model: "m", Version: ver, Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1}, 1)}}
	}
	_, err := srv.Infer(context.Background(), req(0))
	wantError(t, err, triton.Internal, "device fault")
	// Were the version to stop on another goroutine after answering, this
	// waits for it.
	synctest.Wait()
	if srv.ModelReady(context.Background(), "m", 1) || srv.Ready(context.Background()) {
		t.Fatal("model still ready without an instance")
	}
	_, err = srv.Infer(context.Background(), req(1))
	wantError(t, err, triton.Unavailable, "version 1 is not at ready state")
	_, err = srv.Infer(context.Background(), req(0))
	wantError(t, err, triton.NotFound, "has no available versions")
}

// TestSeveralInstanceGroups: every group gets its instances, named after
// the group, and all of them run at once.
func TestSeveralInstanceGroups(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": `backend: "tracker"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { name: "cpu" count: 1 kind: KIND_CPU }, { count: 2 kind: KIND_MODEL }, { name: "auto" count: 1 } ]`,
		"m/1/x": "",
	}
	tr := &tracker{release: make(chan struct{}), arrived: make(chan string, 100)}
	srv := newServer(t, files, triton.WithBackend("tracker", tr))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1)); err != nil {
				t.Error(err)
			}
		})
	}
	var names []string
	for range 4 {
		names = append(names, <-tr.arrived)
	}
	close(tr.release)
	wg.Wait()
	slices.Sort(names)
	if want := []string{"auto_0", "cpu_0", "m_1_0", "m_1_1"}; !slices.Equal(names, want) {
		t.Errorf("instances running at once %v, want %v", names, want)
	}
}
