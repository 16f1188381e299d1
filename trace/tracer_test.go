package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTracer returns a tracer in mode triton writing to a file in a temp
// folder, with the global settings set (File filled in when empty).
func newTracer(t *testing.T, set settings.Trace, logger *zap.Logger) (*Tracer, *settings.Store, string) {
	t.Helper()
	store := settings.NewStore(nil)
	if set.File == "" {
		set.File = filepath.Join(t.TempDir(), "trace.json")
	}
	store.SetTraceDefaults(set)
	tr, err := New(store, Config{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close(context.Background()) })
	return tr, store, set.File
}

var on = settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1}

func closeTracer(t *testing.T, tr *Tracer) {
	t.Helper()
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON: %s", path, b)
	}
	return string(b)
}

// at is a time k µs after the trace clock's base: ns k*1000.
func at(k int) time.Time { return base.Add(time.Duration(k) * time.Microsecond) }

// TestFileLayout checks the file's bytes after one request with a child:
// model records before REQUEST_START, one stamp per record, tensors after
// the stamps taken before them, the child's records right after its
// parent's, strings escaped, the closing bracket at Close.
func TestFileLayout(t *testing.T) {
	set := on
	set.Level |= settings.TraceTensors
	tr, store, file := newTracer(t, set, nil)
	if got := store.Trace("").Mode; got != "triton" {
		t.Errorf("trace_mode %q", got)
	}
	root := tr.Start(context.Background(), "ens", nil)
	if root == nil {
		t.Fatal("rate 1 did not sample the first request")
	}
	id := root.ID()
	root.Stamp(HTTPRecvStart, at(1))
	root.Stamp(HTTPRecvEnd, at(2))
	root.Bind("ens", 3, `r"1`)
	if !root.Bound() {
		t.Fatal("not bound")
	}
	root.Stamp(RequestStart, at(3))
	root.Stamp(QueueStart, at(4))
	x, _ := tensor.From("IN", tensor.Shape{1, 3}, []int32{1, -2, 3})
	root.Tensor(TensorQueueInput, x)
	child := root.Child()
	child.Bind("step", 1, "")
	child.Stamp(RequestStart, base.Add(time.Since(base)+time.Hour)) // after the tensor
	child.End()
	root.Stamp(RequestEnd, time.Now().Add(2*time.Hour))
	root.End()
	closeTracer(t, tr)
	got := readFile(t, file)
	cns := fmt.Sprint(int64(child.rec.Stamps[0].At.Sub(base)))
	ens := fmt.Sprint(int64(root.rec.Stamps[4].At.Sub(base)))
	want := fmt.Sprintf(`[{"id":%[1]d,"timestamps":[{"name":"HTTP_RECV_START","ns":1000}]},`+
		`{"id":%[1]d,"timestamps":[{"name":"HTTP_RECV_END","ns":2000}]},`+
		`{"id":%[1]d,"model_name":"ens","model_version":3,"request_id":"r\"1"},`+
		`{"id":%[1]d,"timestamps":[{"name":"REQUEST_START","ns":3000}]},`+
		`{"id":%[1]d,"timestamps":[{"name":"QUEUE_START","ns":4000}]},`+
		`{"id":%[1]d,"activity":"TENSOR_QUEUE_INPUT","tensor":{"name":"IN","data":"1,-2,3","shape":"1,3","dtype":"INT32"}},`+
		`{"id":%[1]d,"timestamps":[{"name":"REQUEST_END","ns":%[4]s}]},`+
		`{"id":%[2]d,"model_name":"step","model_version":1,"parent_id":%[1]d},`+
		`{"id":%[2]d,"timestamps":[{"name":"REQUEST_START","ns":%[3]s}]}]`, id, id+1, cns, ens)
	if got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

// TestTensorData checks Triton's rendering of each data type.
func TestTensorData(t *testing.T) {
	mk := func(dt tensor.DataType, data []byte) tensor.Tensor {
		return tensor.Tensor{Name: "x", DataType: dt, Shape: tensor.Shape{int64(len(data))}, Data: data}
	}
	f32, _ := tensor.From("x", tensor.Shape{4}, []float32{0.1, 1e6, 2.5, -3})
	f64, _ := tensor.From("x", tensor.Shape{2}, []float64{1.0 / 3, 123456789})
	u16, _ := tensor.From("x", tensor.Shape{2}, []uint16{7, 65535})
	i64, _ := tensor.From("x", tensor.Shape{2}, []int64{-9, 1 << 40})
	for _, tc := range []struct {
		x    tensor.Tensor
		want string
	}{
		{mk(tensor.Bool, []byte{0, 1, 2}), "0,1,1"},
		{mk(tensor.Uint8, []byte{'a', 'b'}), "a,b"}, // characters, as C++ streams them
		{u16, "7,65535"},
		{i64, "-9,1099511627776"},
		{f32, "0.1,1e+06,2.5,-3"},
		{f64, "0.333333,1.23457e+08"},
		{mk(tensor.FP16, []byte{0, 0x3c}), ""},
		{mk(tensor.Bytes, []byte{2, 0, 0, 0, 'h', 'i', 0, 0, 0, 0, 9, 0, 0, 0, 'x'}), `"hi",""`}, // the third is cut short
	} {
		if got := string(tensorData(nil, tc.x)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.x.DataType, got, tc.want)
		}
	}
	// The rendering is escaped in the record: BYTES quotes, control bytes.
	got := string(appendTensor(nil, 7, TensorRecord{Activity: TensorBackendOutput, Tensor: mk(tensor.Bytes, []byte{2, 0, 0, 0, '\n', 0xff})}))
	want := `{"id":7,"activity":"TENSOR_BACKEND_OUTPUT","tensor":{"name":"x","data":"\"\nÿ\"","shape":"6","dtype":"BYTES"}}`
	if got != want || !json.Valid([]byte(got)) {
		t.Errorf("record %s, want %s", got, want)
	}
}

// sampled runs n requests to model and returns the 1-based numbers of
// those traced, ending each trace.
func sampled(tr *Tracer, model string, n int) []int {
	var got []int
	for i := 1; i <= n; i++ {
		if x := tr.Start(context.Background(), model, nil); x != nil {
			got = append(got, i)
			x.Bind(model, 1, "")
			x.Stamp(RequestStart, time.Now())
			x.End()
		}
	}
	return got
}

func TestSampling(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  uint32
		count int32
		n     int
		want  string
	}{
		{"rate 3", 3, -1, 9, "[3 6 9]"},
		{"count 2", 1, 2, 5, "[1 2]"},
		{"rate 2 count 2", 2, 2, 9, "[2 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, store, _ := newTracer(t, settings.Trace{Level: settings.TraceTimestamps, Rate: tc.rate, Count: tc.count}, nil)
			if got := fmt.Sprint(sampled(tr, "m", tc.n)); got != tc.want {
				t.Errorf("traced %s, want %s", got, tc.want)
			}
			left := tc.count // what the store reports: the traces left, as Triton does
			if left > 0 {
				left = 0 // every test case uses its count up
			}
			if got := store.Trace("").Count; got != left {
				t.Errorf("reported count %d, want %d left", got, left)
			}
		})
	}
}

// TestPerModelAndUpdates: a model's own setting samples with its own
// counter, others fall back to the global one; an update applies to the
// next request, with its counter restarted; OFF stops sampling.
func TestPerModelAndUpdates(t *testing.T) {
	tr, store, _ := newTracer(t, settings.Trace{Level: settings.TraceTimestamps, Rate: 2, Count: -1}, nil)
	if _, err := store.UpdateTrace(settings.HTTP, "m", settings.TraceUpdate{settings.KeyTraceRate: {"3"}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sampled(tr, "m", 6), sampled(tr, "other", 4)); got != "[3 6] [2 4]" {
		t.Errorf("model, global: %s", got)
	}
	// Two requests into a rate-3 counter, then an update: counting restarts.
	sampled(tr, "m", 2)
	if _, err := store.UpdateTrace(settings.GRPC, "m", settings.TraceUpdate{settings.KeyTraceRate: {"3"}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sampled(tr, "m", 3)); got != "[3]" {
		t.Errorf("after the update: %s, want [3]", got)
	}
	// A global update leaves the model's own counter alone when its values
	// did not change, and restarts the global one.
	sampled(tr, "m", 1)
	sampled(tr, "other", 1)
	if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceCount: {"5"}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sampled(tr, "m", 2), sampled(tr, "other", 2)); got != "[] [2]" {
		t.Errorf("after a global update: %s, want [] [2] (the model now takes count 5 from global: new counter)", got)
	}
	if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"OFF"}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sampled(tr, "other", 4)); got != "[]" {
		t.Errorf("OFF traced %s", got)
	}
	if got := fmt.Sprint(sampled(tr, "m", 3)); got != "[]" {
		t.Errorf("OFF (followed by m) traced %s", got)
	}
	// Clearing the model's values makes it follow the global setting.
	store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"TIMESTAMPS"}, settings.KeyTraceRate: {"1"}})
	store.ClearTrace("m")
	if got := fmt.Sprint(sampled(tr, "m", 2)); got != "[1 2]" {
		t.Errorf("cleared: %s", got)
	}
}

func TestInvalidSettings(t *testing.T) {
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1}) // no file
	tr, err := New(store, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTracer(t, tr)
	if got := sampled(tr, "m", 3); got != nil {
		t.Errorf("a setting without a file traced %v", got)
	}
	for _, tc := range []struct {
		u    settings.TraceUpdate
		want string
	}{
		{settings.TraceUpdate{settings.KeyTraceRate: {"5"}}, "Attempting to set invalid trace setting :trace file name is not given"},
		{settings.TraceUpdate{settings.KeyTraceRate: {"0"}}, "Attempting to set invalid trace setting :sample rate must be non-zero"},
	} {
		_, err := store.UpdateTrace(settings.HTTP, "m", tc.u)
		if err == nil || err.Error() != tc.want || !errors.Is(err, settings.ErrInvalid) {
			t.Errorf("%v: %v, want %q", tc.u, err, tc.want)
		}
	}
	_, withFile, _ := newTracer(t, on, nil)
	if _, err := withFile.UpdateTrace(settings.GRPC, "", settings.TraceUpdate{settings.KeyTraceCount: {"0"}}); err == nil || err.Error() != "Attempting to set invalid trace setting :" {
		t.Errorf("count 0: %v", err) // Triton's reason is empty
	}
	// Disabling is always allowed, and trace_file still cannot be set.
	if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"OFF"}, settings.KeyTraceRate: {"0"}}); err != nil {
		t.Errorf("OFF: %v", err)
	}
	if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceFile: {"x"}}); !errors.Is(err, settings.ErrTraceFile) {
		t.Errorf("trace_file: %v", err)
	}
}

// TestLogFrequency: every log_frequency traces a complete array goes to
// <file>.<idx>; the rest at Close; count reached flushes at once.
func TestLogFrequency(t *testing.T) {
	tr, _, file := newTracer(t, settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, LogFrequency: 2}, nil)
	sampled(tr, "m", 5)
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := func(path string) string {
		var recs []struct{ ID uint64 }
		if err := json.Unmarshal([]byte(readFile(t, path)), &recs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, fmt.Sprint(r.ID))
		}
		return strings.Join(out, " ")
	}
	a, b := ids(file+".0"), ids(file+".1")
	if strings.Count(a, " ") != 3 || strings.Count(b, " ") != 3 || a == b { // 2 traces × (model record + 1 stamp)
		t.Errorf(".0 %s, .1 %s", a, b)
	}
	if _, err := os.Stat(file + ".2"); err == nil {
		t.Error(".2 written before the fifth trace's group was complete")
	}
	open := tr.Start(context.Background(), "m", nil) // still open at Close: dropped, not waited for
	closeTracer(t, tr)
	open.End()
	if c := ids(file + ".2"); strings.Count(c, " ") != 1 {
		t.Errorf(".2 (at Close) %s", c)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("the plain file was written with log_frequency 2")
	}

	// count reached: the last group goes at once.
	tr2, _, file2 := newTracer(t, settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: 2, LogFrequency: 5}, nil)
	sampled(tr2, "m", 2)
	tr2.Flush(context.Background())
	if c := ids(file2 + ".0"); strings.Count(c, " ") != 3 {
		t.Errorf("count reached: .0 %s", c)
	}
	closeTracer(t, tr2)
}

// TestStreamedFile: log_frequency 0 appends each tree to the file at once.
func TestStreamedFile(t *testing.T) {
	tr, _, file := newTracer(t, on, nil)
	sampled(tr, "m", 2)
	tr.Flush(context.Background())
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), `[{"id":`) || strings.Count(string(b), `"model_name"`) != 2 || strings.HasSuffix(string(b), "]") {
		t.Errorf("before Close: %s", b)
	}
	closeTracer(t, tr)
	var recs []map[string]any
	if err := json.Unmarshal([]byte(readFile(t, file)), &recs); err != nil || len(recs) != 4 {
		t.Errorf("after Close: %d records, %v", len(recs), err)
	}
	// A trace that ends after Close is dropped, not written.
	tr3, _, file3 := newTracer(t, on, nil)
	late := tr3.Start(context.Background(), "m", nil)
	closeTracer(t, tr3)
	late.Stamp(RequestStart, time.Now())
	late.End()
	if _, err := os.Stat(file3); err == nil {
		t.Error("a trace ended after Close was written")
	}
}

func TestFileError(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	file := filepath.Join(t.TempDir(), "missing", "trace.json")
	tr, _, _ := newTracer(t, settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, File: file}, zap.New(core))
	sampled(tr, "m", 2)
	closeTracer(t, tr)
	if logs.FilterMessageSnippet("failed creating trace file: ").Len() != 1 {
		t.Errorf("logs: %v", logs.All())
	}
}

// TestOffCostsNothing: no allocation when tracing is off or a request is
// not sampled; nil traces do nothing.
func TestOffCostsNothing(t *testing.T) {
	tr, store, _ := newTracer(t, settings.Trace{Rate: 1000, Count: -1}, nil)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { tr.Start(ctx, "m", nil) }); n != 0 {
		t.Errorf("off: %v allocs", n)
	}
	store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"TIMESTAMPS"}})
	if n := testing.AllocsPerRun(100, func() { tr.Start(ctx, "m", nil).End() }); n > 0.05 { // the 1000th is traced
		t.Errorf("rate 1000: %v allocs", n)
	}
	var nilTrace *Trace
	nilTrace.Stamp(RequestStart, time.Now())
	nilTrace.Bind("m", 1, "")
	nilTrace.Child().End()
	if nilTrace.Level() != settings.TraceOff || FromContext(NewContext(ctx, nilTrace)) != nil {
		t.Error("nil trace")
	}
	var nilTracer *Tracer
	if nilTracer.Start(ctx, "m", nil) != nil || nilTracer.Close(ctx) != nil {
		t.Error("nil tracer")
	}
}

// BenchmarkTraceFile measures one traced request's trace (nine stamps and
// a child) from Start to the writer, at rate 1.
func BenchmarkTraceFile(b *testing.B) {
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 1, Count: -1, File: filepath.Join(b.TempDir(), "t.json")})
	tr, err := New(store, Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		x := tr.Start(ctx, "m", nil)
		x.Bind("m", 1, "id")
		now := time.Now()
		for a := RequestStart; a <= RequestEnd; a++ {
			x.Stamp(a, now)
		}
		c := x.Child()
		c.Bind("c", 1, "")
		c.Stamp(RequestStart, now)
		c.End()
		x.End()
	}
	tr.Close(ctx)
}

// memExporter keeps what it is given: the exporter side of mode
// opentelemetry is helper code of its own (otel.go); here only sampling
// is checked.
type memExporter struct {
	mu   sync.Mutex
	recs []*Record
}

func (m *memExporter) export(r *Record) {
	m.mu.Lock()
	m.recs = append(m.recs, r)
	m.mu.Unlock()
}
func (m *memExporter) close() error { return nil }

// TestForcedSampling: in mode opentelemetry a request with a valid W3C
// parent (headers, or the span in ctx in-process) is traced whatever rate
// and count say, even at rate 0, and carries the parent as Remote.
func TestForcedSampling(t *testing.T) {
	store := settings.NewStore(nil)
	store.SetTraceDefaults(settings.Trace{Level: settings.TraceTimestamps, Rate: 0, Count: -1})
	exp := &memExporter{}
	tr := &Tracer{store: store, mode: ModeOpenTelemetry, otel: true, log: zap.NewNop(), exp: exp}
	store.SetTraceMode(ModeOpenTelemetry)
	tr.stop = store.WatchTrace(tr.update)
	defer closeTracer(t, tr)
	if got := store.Trace("").Mode; got != "opentelemetry" {
		t.Errorf("trace_mode %q", got)
	}
	ctx := context.Background()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if tr.Start(ctx, "m", propagation.HeaderCarrier{}) != nil {
		t.Error("rate 0 traced a request without a parent")
	}
	if tr.Start(ctx, "m", propagation.HeaderCarrier{"Traceparent": {"00-bad"}}) != nil {
		t.Error("an invalid traceparent forced a trace")
	}
	x := tr.Start(ctx, "m", propagation.HeaderCarrier{"Traceparent": {parent}})
	if x == nil {
		t.Fatal("a valid traceparent did not force a trace")
	}
	x.End()
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: oteltrace.TraceID{1}, SpanID: oteltrace.SpanID{2}, TraceFlags: oteltrace.FlagsSampled})
	y := tr.Start(oteltrace.ContextWithSpanContext(ctx, sc), "m", nil)
	if y == nil {
		t.Fatal("the span in ctx did not force a trace")
	}
	c := y.Child()
	c.End()
	y.End()
	if len(exp.recs) != 2 || exp.recs[0].Remote.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
		exp.recs[1].Remote.TraceID() != sc.TraceID() || exp.recs[1].Children[0].Remote.TraceID() != sc.TraceID() {
		t.Errorf("exported %+v", exp.recs)
	}
	// No file is needed in this mode; OFF stops even forced sampling.
	if _, err := store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceRate: {"1"}}); err != nil {
		t.Errorf("rate 1 without a file: %v", err)
	}
	store.UpdateTrace(settings.HTTP, "", settings.TraceUpdate{settings.KeyTraceLevel: {"OFF"}})
	if tr.Start(ctx, "m", propagation.HeaderCarrier{"Traceparent": {parent}}) != nil {
		t.Error("OFF traced")
	}
}
