package backend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

func mustPanic(t *testing.T, parts ...string) {
	t.Helper()
	r := recover()
	if r == nil {
		t.Fatal("no panic")
	}
	msg := fmt.Sprint(r)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("panic %q does not mention %q", msg, p)
		}
	}
}

var nop = backend.Func(func(context.Context, *backend.Batch) error { return nil })

var registerRuns atomic.Int32

func TestRegister(t *testing.T) {
	// Names unique per run, so that -count=N works with a process-wide registry.
	run := registerRuns.Add(1)
	a, b := fmt.Sprintf("test-register-a%d", run), fmt.Sprintf("test-register-b%d", run)
	backend.Register(a, nop)
	backend.Register(b, nop)
	if b, ok := backend.Lookup(a); !ok || b == nil {
		t.Fatal("registered backend not found")
	}
	if _, ok := backend.Lookup("test-register-missing"); ok {
		t.Fatal("found a backend never registered")
	}
	names := backend.Backends()
	if !slices.IsSorted(names) || !slices.Contains(names, a) || !slices.Contains(names, b) {
		t.Errorf("Backends() = %v", names)
	}
	t.Run("duplicate", func(t *testing.T) {
		defer mustPanic(t, fmt.Sprintf("%q registered twice", a), "backend_test.go:")
		backend.Register(a, nop)
	})
	t.Run("nil", func(t *testing.T) {
		defer mustPanic(t, "nil Backend", "backend_test.go:")
		backend.Register("test-register-nil", nil)
	})
	t.Run("empty name", func(t *testing.T) {
		defer mustPanic(t, "empty name")
		backend.Register("", nop)
	})
}

func f32(t *testing.T, name string, shape tensor.Shape, vals ...float32) tensor.Tensor {
	t.Helper()
	ts, err := tensor.From(name, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestBatchInputGathers(t *testing.T) {
	r1 := &backend.Request{ID: "1", BatchSize: 1, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{1, 2}, 1, 2)}}
	r2 := &backend.Request{ID: "2", BatchSize: 2, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{2, 2}, 3, 4, 5, 6)}}
	b := backend.NewBatch(true, r1, r2)
	if b.Size() != 3 || !b.Batched() {
		t.Fatalf("size %d batched %v", b.Size(), b.Batched())
	}
	x, err := b.Input("X")
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := tensor.View[float32](x)
	if !x.Shape.Equal(tensor.Shape{3, 2}) || !slices.Equal(vals, []float32{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("gathered %v %v", x.Shape, vals)
	}
	again, _ := b.Input("X")
	if &again.Data[0] != &x.Data[0] {
		t.Error("second Input gathered again instead of using the cached tensor")
	}
	if _, err := b.Input("Y"); !errors.Is(err, backend.ErrInvalidInput) {
		t.Errorf("missing input: %v", err)
	}
}

func TestBatchOfOneIsZeroCopy(t *testing.T) {
	in := f32(t, "X", tensor.Shape{2, 2}, 1, 2, 3, 4)
	r := &backend.Request{BatchSize: 2, Inputs: []tensor.Tensor{in}}
	b := backend.NewBatch(true, r)
	x, err := b.Input("X")
	if err != nil {
		t.Fatal(err)
	}
	if &x.Data[0] != &in.Data[0] {
		t.Error("a batch of one copied its input")
	}
	out := f32(t, "Y", tensor.Shape{2, 1}, 7, 8)
	if err := b.SetOutput(out); err != nil {
		t.Fatal(err)
	}
	if got := r.Outputs(); len(got) != 1 || &got[0].Data[0] != &out.Data[0] {
		t.Error("a batch of one did not hand over its output as is")
	}
}

func TestBatchSetOutputSplits(t *testing.T) {
	r1 := &backend.Request{ID: "1", BatchSize: 1}
	r2 := &backend.Request{ID: "2", BatchSize: 2, RequestedOutputs: []string{"OTHER"}}
	r3 := &backend.Request{ID: "3", BatchSize: 1}
	b := backend.NewBatch(true, r1, r2, r3)
	out := f32(t, "Y", tensor.Shape{4, 2}, 0, 1, 2, 3, 4, 5, 6, 7)
	if err := b.SetOutput(out); err != nil {
		t.Fatal(err)
	}
	check := func(r *backend.Request, want []float32) {
		t.Helper()
		if want == nil {
			if len(r.Outputs()) != 0 {
				t.Errorf("request %s got an output it did not ask for", r.ID)
			}
			return
		}
		got, _ := tensor.View[float32](r.Outputs()[0])
		if !slices.Equal(got, want) || r.Outputs()[0].Shape[0] != int64(len(want)/2) {
			t.Errorf("request %s got %v %v, want %v", r.ID, r.Outputs()[0].Shape, got, want)
		}
	}
	check(r1, []float32{0, 1})
	check(r2, nil)
	check(r3, []float32{6, 7})
	if &r3.Outputs()[0].Data[0] != &out.Data[24] {
		t.Error("split output is not a view of the batch output")
	}
	if err := b.SetOutput(f32(t, "Y", tensor.Shape{3, 2}, 0, 1, 2, 3, 4, 5)); err == nil {
		t.Error("an output with the wrong batch size was accepted")
	}
}

func TestRequestResults(t *testing.T) {
	r := &backend.Request{}
	r.SetOutput(f32(t, "A", tensor.Shape{1}, 1))
	r.SetOutput(f32(t, "A", tensor.Shape{1}, 2))
	if len(r.Outputs()) != 1 {
		t.Fatalf("SetOutput of the same name twice kept %d outputs", len(r.Outputs()))
	}
	if v, _ := tensor.View[float32](r.Outputs()[0]); v[0] != 2 {
		t.Error("SetOutput did not replace")
	}
	first := errors.New("first")
	r.Fail(first)
	r.Fail(errors.New("second"))
	r.Fail(nil)
	if r.Err() != first {
		t.Errorf("Err = %v, want the first failure", r.Err())
	}
	r.Reset()
	if r.Err() != nil || len(r.Outputs()) != 0 {
		t.Error("Reset left results behind")
	}
	if !r.Wants("anything") {
		t.Error("a request without requested outputs must want them all")
	}
}

type warmReady struct {
	backend.Func
	warmed bool
	err    error
}

func (w *warmReady) Warmup(context.Context) error { w.warmed = true; return nil }
func (w *warmReady) Ready(context.Context) error  { return w.err }

type wrapper struct{ inner backend.Instance }

func (w wrapper) Execute(ctx context.Context, b *backend.Batch) error { return w.inner.Execute(ctx, b) }
func (w wrapper) Close() error                                        { return w.inner.Close() }
func (w wrapper) Unwrap() backend.Instance                            { return w.inner }

func TestCapabilitiesThroughWrappers(t *testing.T) {
	inner := &warmReady{Func: nop, err: errors.New("sick")}
	wrapped := wrapper{wrapper{inner}}
	if err := backend.Warmup(context.Background(), wrapped); err != nil || !inner.warmed {
		t.Errorf("Warmup through wrappers: err %v warmed %v", err, inner.warmed)
	}
	if err := backend.Ready(context.Background(), wrapped); err == nil || err.Error() != "sick" {
		t.Errorf("Ready through wrappers = %v", err)
	}
	if err := backend.Ready(context.Background(), wrapper{nop}); err != nil {
		t.Errorf("an instance without Readier must be ready: %v", err)
	}
	if err := backend.Warmup(context.Background(), nop); err != nil {
		t.Errorf("Warmup without Warmer: %v", err)
	}
	done, err := backend.CompleteConfig(context.Background(), nop, &backend.ModelSpec{})
	if done || err != nil {
		t.Errorf("CompleteConfig on a backend without it: %v %v", done, err)
	}
}

func TestModelSpec(t *testing.T) {
	spec := &backend.ModelSpec{
		Name: "m", Version: 3, Dir: "/repo/m",
		FS: fstest.MapFS{"3/model.onnx": {Data: []byte("x")}},
		Config: &modelconfig.ModelConfig{
			Parameters: map[string]*modelconfig.ModelParameter{"k": {StringValue: "v"}},
		},
	}
	if got := spec.VersionDir(); got != "/repo/m/3" {
		t.Errorf("VersionDir = %q", got)
	}
	vfs, err := spec.VersionFS()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Open("model.onnx"); err != nil {
		t.Errorf("VersionFS: %v", err)
	}
	if v, ok := spec.Parameter("k"); !ok || v != "v" {
		t.Errorf("Parameter = %q %v", v, ok)
	}
	if _, ok := spec.Parameter("missing"); ok {
		t.Error("missing parameter found")
	}
	if got := spec.ModelFilename("model.onnx"); got != "model.onnx" {
		t.Errorf("ModelFilename default = %q", got)
	}
	spec.Config.DefaultModelFilename = "custom.onnx"
	if got := spec.ModelFilename("model.onnx"); got != "custom.onnx" {
		t.Errorf("ModelFilename = %q", got)
	}
	if (&backend.ModelSpec{Version: 1}).VersionDir() != "" {
		t.Error("VersionDir without a local folder must be empty")
	}
}

// TestBatchArena: gathered inputs are aligned for typed views even after an
// odd-sized one, and the next batch reuses the memory.
func TestBatchArena(t *testing.T) {
	s1, _ := tensor.FromStrings("S", tensor.Shape{1}, []string{"abc"}) // 7 bytes
	s2, _ := tensor.FromStrings("S", tensor.Shape{1}, []string{"de"})  // 6 bytes
	r1 := &backend.Request{BatchSize: 1, Inputs: []tensor.Tensor{s1, f32(t, "X", tensor.Shape{1, 2}, 1, 2)}}
	r2 := &backend.Request{BatchSize: 1, Inputs: []tensor.Tensor{s2, f32(t, "X", tensor.Shape{1, 2}, 3, 4)}}
	b := backend.NewBatch(true, r1, r2)
	strs, err := b.Input("S")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tensor.Strings(strs); !slices.Equal(got, []string{"abc", "de"}) {
		t.Fatalf("strings %q", got)
	}
	x, err := b.Input("X")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := tensor.View[float32](x)
	if err != nil {
		t.Fatalf("view after an odd-sized input: %v", err)
	}
	if !slices.Equal(vals, []float32{1, 2, 3, 4}) || !x.Shape.Equal(tensor.Shape{2, 2}) {
		t.Fatalf("X %v %v", x.Shape, vals)
	}
	first := &x.Data[0]
	b.Reset(true, []*backend.Request{r1, r2})
	if _, err := b.Input("S"); err != nil {
		t.Fatal(err)
	}
	again, _ := b.Input("X")
	if v, _ := tensor.View[float32](again); !slices.Equal(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("after Reset: %v", v)
	}
	if &again.Data[0] != first {
		t.Error("the next batch did not reuse the gather memory")
	}
	mixed := backend.NewBatch(true, r1, &backend.Request{BatchSize: 1, Inputs: []tensor.Tensor{f32(t, "S", tensor.Shape{1}, 1)}})
	if _, err := mixed.Input("S"); !errors.Is(err, backend.ErrInvalidInput) {
		t.Errorf("mixed data types: %v", err)
	}
}
