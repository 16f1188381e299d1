package triton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// traceRec is one record of a trace file, as Triton lays it out.
type traceRec struct {
	ID           uint64  `json:"id"`
	ModelName    *string `json:"model_name"`
	ModelVersion *int64  `json:"model_version"`
	RequestID    *string `json:"request_id"`
	ParentID     *uint64 `json:"parent_id"`
	Timestamps   []struct {
		Name string `json:"name"`
		Ns   int64  `json:"ns"`
	} `json:"timestamps"`
	Activity string `json:"activity"`
	Tensor   *struct {
		Name, Data, Shape, Dtype string
	} `json:"tensor"`
}

// traced is one id's records, put together.
type traced struct {
	id, parent       uint64
	model, requestID string
	version          int64
	events           []string         // stamp names and tensor activities ("TENSOR_QUEUE_INPUT:INPUT0"), in file order
	ns               map[string]int64 // by stamp name
	tensors          map[string]string
	modelBefore      bool // the model record came right before REQUEST_START
}

// traceFile is what a trace file holds: its traces in the order their ids
// first appear.
type traceFile struct {
	order []uint64
	byID  map[uint64]*traced
}

func (f *traceFile) byRequest(id string) *traced {
	for _, x := range f.byID {
		if x.requestID == id {
			return x
		}
	}
	return nil
}

// parseTraceFile reads a trace file, checking that each id's records are
// written together.
func parseTraceFile(t testing.TB, path string) *traceFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []traceRec
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	f := &traceFile{byID: map[uint64]*traced{}}
	var last uint64
	pendingModel := false
	for _, r := range recs {
		x := f.byID[r.ID]
		if x == nil {
			x = &traced{id: r.ID, ns: map[string]int64{}, tensors: map[string]string{}}
			f.byID[r.ID] = x
			f.order = append(f.order, r.ID)
		} else if r.ID != last {
			t.Errorf("records of id %d are not together", r.ID)
		}
		last = r.ID
		switch {
		case r.ModelName != nil:
			x.model, x.version = *r.ModelName, *r.ModelVersion
			if r.RequestID != nil {
				x.requestID = *r.RequestID
			}
			if r.ParentID != nil {
				x.parent = *r.ParentID
			}
			pendingModel = true
			continue
		case len(r.Timestamps) > 0:
			if len(r.Timestamps) != 1 {
				t.Errorf("id %d: %d timestamps in one record", r.ID, len(r.Timestamps))
			}
			s := r.Timestamps[0]
			if s.Name == "REQUEST_START" {
				x.modelBefore = pendingModel
			}
			x.events = append(x.events, s.Name)
			x.ns[s.Name] = s.Ns
		case r.Tensor != nil:
			x.events = append(x.events, r.Activity+":"+r.Tensor.Name)
			x.tensors[r.Activity+":"+r.Tensor.Name] = r.Tensor.Dtype + " " + r.Tensor.Shape + " " + r.Tensor.Data
		default:
			t.Errorf("unknown record %+v", r)
		}
		pendingModel = false
	}
	return f
}

// newTraced starts a server over files with a tracer of mode triton whose
// global settings are set (its file filled in).
func newTraced(t *testing.T, files map[string]string, set settings.Trace, opts ...triton.Option) (*triton.Server, *trace.Tracer, *settings.Store, string) {
	t.Helper()
	store := settings.NewStore(nil)
	set.File = filepath.Join(t.TempDir(), "trace.json")
	store.SetTraceDefaults(set)
	tr, err := trace.New(store, trace.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(context.Background()) })
	srv := newServer(t, files, append([]triton.Option{triton.WithTracer(tr)}, opts...)...)
	return srv, tr, store, set.File
}

// closeAndParse closes the tracer and reads its file.
func closeAndParse(t *testing.T, tr *trace.Tracer, file string) *traceFile {
	t.Helper()
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return parseTraceFile(t, file)
}

var allOn = settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1}

// core is the server's stamps of a request that ran, in order.
var core = []string{"REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END"}

// checkCore checks a request that ran: its name, its stamps in order and
// non-decreasing.
func checkCore(t *testing.T, x *traced, model, requestID string, version int64) {
	t.Helper()
	if x == nil {
		t.Fatalf("request %q was not traced", requestID)
	}
	if x.model != model || x.version != version || x.requestID != requestID || !x.modelBefore {
		t.Errorf("trace %d: model %q version %d request %q (model record before REQUEST_START: %v)", x.id, x.model, x.version, x.requestID, x.modelBefore)
	}
	var stamps []string
	for _, e := range x.events {
		if !strings.HasPrefix(e, "TENSOR_") {
			stamps = append(stamps, e)
		}
	}
	if !slices.Equal(stamps, core) {
		t.Errorf("trace %d (%s): stamps %v, want %v", x.id, requestID, stamps, core)
	}
	for i := 1; i < len(core); i++ {
		if x.ns[core[i]] < x.ns[core[i-1]] {
			t.Errorf("trace %d: %s (%d) before %s (%d)", x.id, core[i], x.ns[core[i]], core[i-1], x.ns[core[i-1]])
		}
	}
}

func TestTraceBatched(t *testing.T) { synctest.Test(t, testTraceBatched) }

// testTraceBatched: two requests in one dynamic batch are two traces with
// their own ids and the same COMPUTE stamps.
func testTraceBatched(t *testing.T) {
	g := newGated(true)
	srv, tr, _, file := newTraced(t, batchingModel(1, `dynamic_batching { }`), allOn, triton.WithBackend("gated", g))
	first := occupy(t, srv, g)
	a := goInfer(srv, context.Background(), rowsRequest(t, "a", 1, 2, 0))
	waitQueued(t, srv, "m", 1)
	b := goInfer(srv, context.Background(), rowsRequest(t, "b", 2, 2, 0))
	waitQueued(t, srv, "m", 2)
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, ch := range []chan result{first, a, b} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if got := g.recorded(); len(got) != 2 || !slices.Equal(got[1], []string{"a", "b"}) {
		t.Fatalf("batches %v", got)
	}
	f := closeAndParse(t, tr, file)
	if len(f.order) != 3 {
		t.Fatalf("%d traces, want 3", len(f.order))
	}
	ta, tb := f.byRequest("a"), f.byRequest("b")
	checkCore(t, ta, "m", "a", 1)
	checkCore(t, tb, "m", "b", 1)
	checkCore(t, f.byRequest("first"), "m", "first", 1)
	if ta.id == tb.id {
		t.Errorf("a and b share id %d", ta.id)
	}
	for _, s := range core[2:6] {
		if ta.ns[s] != tb.ns[s] {
			t.Errorf("%s: a %d, b %d: one batch, one compute", s, ta.ns[s], tb.ns[s])
		}
	}
}

// TestTraceSequence: each request of a sequence is its own trace.
func TestTraceSequence(t *testing.T) {
	acc := &accumulator{}
	srv, tr, _, file := newTraced(t, map[string]string{"acc/config.pbtxt": accConfig, "acc/1/x": ""}, allOn, triton.WithBackend("acc", acc.backend()))
	for i, id := range []string{"s1", "s2", "s3"} {
		req := &triton.InferRequest{Model: "acc", ID: id, SequenceID: 7, SequenceStart: i == 0, SequenceEnd: i == 2,
			Inputs: []tensor.Tensor{int32s(t, "X", tensor.Shape{1, 1}, int32(i+1))}}
		if _, err := srv.Infer(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	f := closeAndParse(t, tr, file)
	for _, id := range []string{"s1", "s2", "s3"} {
		checkCore(t, f.byRequest(id), "acc", id, 1)
	}
	if len(f.order) != 3 {
		t.Errorf("%d traces", len(f.order))
	}
}

// tracedBLS's model calls "simple" through its Caller with its inputs,
// twice, and answers the second call's OUTPUT0.
type tracedBLS struct{}

func (tracedBLS) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return backend.Func(func(ctx context.Context, b *backend.Batch) error {
		r := b.Requests[0]
		var resp *triton.InferResponse
		for i := range 2 {
			var err error
			resp, err = spec.Caller.Infer(ctx, &triton.InferRequest{Model: "simple", ID: fmt.Sprintf("call%d", i), Inputs: r.Inputs})
			if err != nil {
				return err
			}
		}
		out, _ := resp.Output("OUTPUT0")
		r.SetOutput(out)
		return nil
	}).Load(context.Background(), spec)
}
func (tracedBLS) Close() error { return nil }

const blsConfig = `backend: "bls" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]`

func simpleInputs(t testing.TB) []tensor.Tensor {
	return []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1, 16}, seq(16, func(i int) int32 { return int32(i) })...),
		int32s(t, "INPUT1", tensor.Shape{1, 16}, seq(16, func(i int) int32 { return 1 })...)}
}

// TestTraceBLS: calls a Go backend makes through its Caller are child
// traces with parent_id, written right after their parent; a call from an
// untraced request is not sampled.
func TestTraceBLS(t *testing.T) {
	files := map[string]string{"simple/config.pbtxt": simpleConfig, "simple/1/x": "", "bls/config.pbtxt": blsConfig, "bls/1/x": ""}
	srv, tr, _, file := newTraced(t, files, allOn, triton.WithBackend("gofunc", addSub), triton.WithBackend("bls", tracedBLS{}))
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "bls", ID: "outer", Inputs: simpleInputs(t)}); err != nil {
		t.Fatal(err)
	}
	f := closeAndParse(t, tr, file)
	if len(f.order) != 3 {
		t.Fatalf("%d traces, want 3 (the request and its two calls)", len(f.order))
	}
	outer := f.byID[f.order[0]]
	checkCore(t, outer, "bls", "outer", 1)
	for i, id := range f.order[1:] {
		c := f.byID[id]
		checkCore(t, c, "simple", fmt.Sprintf("call%d", i), 1)
		if c.parent != outer.id {
			t.Errorf("call %d: parent_id %d, want %d", i, c.parent, outer.id)
		}
		if c.ns["REQUEST_START"] < outer.ns["COMPUTE_START"] || c.ns["REQUEST_END"] > outer.ns["COMPUTE_END"] {
			t.Errorf("call %d ran outside its parent's compute", i)
		}
	}
	if outer.parent != 0 {
		t.Errorf("outer parent_id %d", outer.parent)
	}
}

// TestTraceFailed: a refused request has the stamps it reached; a backend
// failure has its compute stamps.
func TestTraceFailed(t *testing.T) {
	failing := backend.Func(func(context.Context, *backend.Batch) error { return errors.New("broken") })
	files := map[string]string{"simple/config.pbtxt": simpleConfig, "simple/1/x": "", "bad/config.pbtxt": strings.Replace(simpleConfig, `name: "simple"`+"\n"+`backend: "gofunc"`, `name: "bad"`+"\n"+`backend: "failing"`, 1), "bad/1/x": ""}
	srv, tr, _, file := newTraced(t, files, allOn, triton.WithBackend("gofunc", addSub), triton.WithBackend("failing", failing))
	ins := simpleInputs(t)
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "simple", ID: "refused", Inputs: ins[:1]}); triton.CodeOf(err) != triton.InvalidArgument {
		t.Fatalf("missing input: %v", err)
	}
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "bad", ID: "broken", Inputs: ins}); err == nil {
		t.Fatal("the failing backend succeeded")
	}
	f := closeAndParse(t, tr, file)
	if x := f.byRequest("refused"); x == nil || !slices.Equal(x.events, []string{"REQUEST_START", "REQUEST_END"}) || !x.modelBefore {
		t.Errorf("refused: %+v", x)
	}
	checkCore(t, f.byRequest("broken"), "bad", "broken", 1)
}

// TestTraceSampling: rate, count, a model's own setting, an update that
// applies to the next request, log_frequency's indexed files.
func TestTraceSampling(t *testing.T) {
	files := map[string]string{"simple/config.pbtxt": simpleConfig, "simple/1/x": "", "other/config.pbtxt": strings.Replace(simpleConfig, `name: "simple"`, `name: "other"`, 1), "other/1/x": ""}
	run := func(t *testing.T, srv *triton.Server, model, prefix string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, ID: fmt.Sprintf("%s%d", prefix, i), Inputs: simpleInputs(t)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func(f *traceFile) string {
		var out []string
		for _, id := range f.order {
			out = append(out, f.byID[id].requestID)
		}
		return strings.Join(out, " ")
	}
	t.Run("rate 3", func(t *testing.T) {
		srv, tr, _, file := newTraced(t, files, settings.Trace{Level: settings.TraceTimestamps, Rate: 3, Count: -1}, triton.WithBackend("gofunc", addSub))
		run(t, srv, "simple", "r", 9)
		if got := ids(closeAndParse(t, tr, file)); got != "r3 r6 r9" {
			t.Errorf("traced %s, want r3 r6 r9", got)
		}
	})
	t.Run("count 2", func(t *testing.T) {
		srv, tr, _, file := newTraced(t, files, settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: 2}, triton.WithBackend("gofunc", addSub))
		run(t, srv, "simple", "r", 5)
		// count reached: written to the first indexed file at once
		if err := tr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := ids(parseTraceFile(t, file+".0")); got != "r1 r2" {
			t.Errorf("traced %s, want r1 r2", got)
		}
		tr.Close(context.Background())
	})
	t.Run("per model and updates", func(t *testing.T) {
		srv, tr, store, file := newTraced(t, files, settings.Trace{Level: settings.TraceTimestamps, Rate: 2, Count: -1}, triton.WithBackend("gofunc", addSub))
		if _, err := store.UpdateTrace(settings.HTTP, "other", settings.TraceUpdate{settings.KeyTraceRate: {"1"}}); err != nil {
			t.Fatal(err)
		}
		run(t, srv, "simple", "s", 2) // s2
		run(t, srv, "other", "o", 2)  // o1 o2
		if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"OFF"}}); err != nil {
			t.Fatal(err)
		}
		run(t, srv, "simple", "off", 2)
		if _, err := store.UpdateTrace(settings.GRPC, "", settings.TraceUpdate{settings.KeyTraceLevel: {"TIMESTAMPS"}, settings.KeyTraceRate: {"1"}}); err != nil {
			t.Fatal(err)
		}
		run(t, srv, "simple", "next", 1)
		if got := ids(closeAndParse(t, tr, file)); got != "s2 o1 o2 next1" {
			t.Errorf("traced %s, want s2 o1 o2 next1", got)
		}
	})
	t.Run("log_frequency", func(t *testing.T) {
		srv, tr, _, file := newTraced(t, files, settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, LogFrequency: 2}, triton.WithBackend("gofunc", addSub))
		run(t, srv, "simple", "r", 5)
		if err := tr.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{"r1 r2", "r3 r4", "r5"} {
			f := parseTraceFile(t, fmt.Sprintf("%s.%d", file, i))
			if got := ids(f); got != want {
				t.Errorf("%s.%d: %s, want %s", file, i, got, want)
			}
			for _, id := range f.order {
				checkCore(t, f.byID[id], "simple", f.byID[id].requestID, 1)
			}
		}
		if _, err := os.Stat(file); err == nil {
			t.Error("the plain file was written")
		}
	})
}

// TestTraceStream: a decoupled model's request, through InferStream, has
// the core stamps and, at level TENSORS, each response's outputs.
func TestTraceStream(t *testing.T) {
	set := allOn
	set.Level |= settings.TraceTensors
	srv, tr, _, file := newTraced(t, map[string]string{"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/model.txt": ""}, set,
		triton.WithBackend("repeat", new(testmodels.Repeat)))
	n := 0
	for resp, err := range srv.InferStream(context.Background(), repeatRequest(t, "st", false, 0, []int32{4, 5, 6}, []uint32{0, 0, 0})) {
		if err != nil {
			t.Fatal(err)
		}
		_ = resp
		n++
	}
	f := closeAndParse(t, tr, file)
	x := f.byRequest("st")
	checkCore(t, x, "repeat", "st", 1)
	var outs []string
	for _, e := range x.events {
		if strings.HasPrefix(e, "TENSOR_BACKEND_OUTPUT:OUT") {
			outs = append(outs, e)
		}
	}
	if len(outs) != n || x.tensors["TENSOR_QUEUE_INPUT:IN"] != "INT32 3 4,5,6" {
		t.Errorf("%d responses, outputs traced %v, IN %q", n, outs, x.tensors["TENSOR_QUEUE_INPUT:IN"])
	}
}

// TestTraceNoTracer: without a tracer nothing is traced and requests run as
// before; a tracer's Start on nil is nil.
func TestTraceNoTracer(t *testing.T) {
	srv := newServer(t, map[string]string{"simple/config.pbtxt": simpleConfig, "simple/1/x": ""}, triton.WithBackend("gofunc", addSub), triton.WithTracer(nil))
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "simple", Inputs: simpleInputs(t)}); err != nil {
		t.Fatal(err)
	}
}

// tracingServer serves the no-op model with a tracer of settings set (nil:
// no tracer at all).
func tracingServer(b *testing.B, set *settings.Trace) *triton.Server {
	srv, _ := tracingServerStore(b, set)
	return srv
}

// tracingServerStore is tracingServer with the settings store of its
// tracer (nil without one).
func tracingServerStore(b testing.TB, set *settings.Trace) (*triton.Server, *settings.Store) {
	var store *settings.Store
	opts := []triton.Option{triton.WithBackend("noop", noop)}
	if set != nil {
		store = settings.NewStore(nil)
		s := *set
		s.File = filepath.Join(b.TempDir(), "trace.json")
		store.SetTraceDefaults(s)
		tr, err := trace.New(store, trace.Config{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tr.Close(context.Background()) })
		opts = append(opts, triton.WithTracer(tr))
	}
	return newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/x": ""}, opts...), store
}

// BenchmarkInferTracing is BenchmarkInferNoop without a tracer, with one
// whose level is OFF, and tracing every 1000th and every request (rate 1:
// each request's trace is encoded and written to the file by the tracer's
// writer goroutine).
//
// Run: go test -run '^$' -bench 'InferTracing$' -benchmem .
func BenchmarkInferTracing(b *testing.B) {
	for _, bc := range []struct {
		name string
		set  *settings.Trace
	}{
		{"none", nil},
		{"off", &settings.Trace{Rate: 1000, Count: -1}},
		{"rate1000", &settings.Trace{Level: settings.TraceTimestamps, Rate: 1000, Count: -1}},
		{"rate1", &settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := tracingServer(b, bc.set)
			in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
			req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInferTracingInterleaved measures the throughput cost of tracing
// on the no-op model (about 1 µs a request): TIMESTAMPS at rate 1000, and
// at rate 1 (every request traced to the file), against level OFF, by
// interleavedRatio; "control" is OFF against OFF, what the method itself
// resolves. Each request is timed on its own (about 50 ns of clock reads,
// on both sides alike).
//
// Run: go test -run '^$' -bench 'InferTracingInterleaved$' -benchtime 200x -count 3 .
func BenchmarkInferTracingInterleaved(b *testing.B) {
	in, _ := tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16))
	req := &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}}
	for _, bc := range traceCases {
		b.Run(bc.name, func(b *testing.B) {
			var srvs [2]*triton.Server
			var stores [2]*settings.Store
			for i := range srvs {
				srvs[i], stores[i] = tracingServerStore(b, &traceOff)
			}
			interleavedRatio(b, 10000, srvs, stores, req, bc.set)
		})
	}
}

// traceOff is a trace setting that traces nothing (level OFF).
var traceOff = settings.Trace{Rate: 1000, Count: -1}

// traceCases are the settings the interleaved benchmarks compare with
// traceOff.
var traceCases = []struct {
	name string
	set  settings.Trace
}{
	{"control", traceOff},
	{"rate1000", settings.Trace{Level: settings.TraceTimestamps, Rate: 1000, Count: -1}},
	{"rate1", settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1}},
}

// interleavedRatio measures set against traceOff on two servers of the
// same model, each with a tracer following its own store. Requests
// alternate between the servers one by one (which one goes first
// alternates too), each timed on its own, so that both sides of a pair meet
// the machine in the same state; in each round of n pairs one server has
// set and the other traceOff, and the next round swaps them, so that what
// differs between the servers themselves cancels out. It reports the
// median over the rounds of the traced requests' time over the others'
// ("traced/none"), and the interquartile range of the rounds' ratios over
// the root of their number ("traced/none-iqr/√n", about the median's
// standard error).
func interleavedRatio(b *testing.B, n int, srvs [2]*triton.Server, stores [2]*settings.Store, req *triton.InferRequest, set settings.Trace) {
	file := filepath.Join(b.TempDir(), "trace.json")
	off := traceOff
	set.File, off.File = file, file
	ctx := context.Background()
	var ratios []float64
	for b.Loop() {
		k := len(ratios) % 2            // the traced server this round
		stores[k].SetTraceDefaults(set) // applies to the next request
		stores[1-k].SetTraceDefaults(off)
		var took [2]time.Duration
		for i := range n {
			for j := range 2 {
				s := (i + j) % 2
				start := time.Now()
				if _, err := srvs[s].Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
				took[s] += time.Since(start)
			}
		}
		ratios = append(ratios, float64(took[k])/float64(took[1-k]))
	}
	slices.Sort(ratios)
	m := len(ratios)
	b.ReportMetric(ratios[m/2], "traced/none")
	b.ReportMetric((ratios[m*3/4]-ratios[m/4])/math.Sqrt(float64(m)), "traced/none-iqr/√n")
}
