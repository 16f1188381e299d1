package torchrun_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

func TestAddSub(t *testing.T) {
	for _, name := range []string{"addsub.pt", "addsub_args.pt"} {
		t.Run(name, func(t *testing.T) {
			m := load(t, name, torchrun.Options{InferenceMode: true})
			a := make([]float32, 32)
			b := make([]float32, 32)
			for i := range a {
				a[i] = float32(i) * 1.5
				b[i] = float32(100 - i)
			}
			out := forward(t, m, val(t, []int64{2, 16}, a...), val(t, []int64{2, 16}, b...))
			if len(out) != 2 {
				t.Fatalf("Forward returned %d outputs, want 2", len(out))
			}
			sum, diff := view[float32](t, out[0]), view[float32](t, out[1])
			for i := range a {
				if sum[i] != a[i]+b[i] || diff[i] != a[i]-b[i] {
					t.Fatalf("element %d: got %v, %v; want %v, %v", i, sum[i], diff[i], a[i]+b[i], a[i]-b[i])
				}
			}
			for _, o := range out {
				if o.DataType != tensor.FP32 || !slices.Equal(o.Shape, []int64{2, 16}) {
					t.Errorf("output %v %v, want FP32 [2 16]", o.DataType, o.Shape)
				}
			}
		})
	}
}

func TestArguments(t *testing.T) {
	tests := []struct {
		model string
		want  []torchrun.Argument
	}{
		{"addsub.pt", []torchrun.Argument{{"INPUT0", "Tensor", "Tensor", false}, {"INPUT1", "Tensor", "Tensor", false}}},
		{"addsub_args.pt", []torchrun.Argument{{"a", "Tensor", "Tensor", false}, {"b", "Tensor", "Tensor", false}}},
		{"cnn.pt", []torchrun.Argument{{"INPUT__0", "Tensor", "Tensor", false}}},
		{"strings.pt", []torchrun.Argument{{"x", "List[str]", "str[]", false}}},
		{"dict_in.pt", []torchrun.Argument{{"d", "Dict(str, Tensor)", "Dict(str, Tensor)", false}}},
		{"state.pt", []torchrun.Argument{{"x", "Tensor", "Tensor", false}, {"state", "Tensor", "Tensor", false}}},
		{"other_args.pt", []torchrun.Argument{{"x", "Tensor", "Tensor", false}, {"n", "int", "int", false}, {"y", "Optional[Tensor]", "Tensor?", false}}},
		{"dtypes.pt", []torchrun.Argument{{"b", "Tensor", "Tensor", false}, {"u8", "Tensor", "Tensor", false}, {"i8", "Tensor", "Tensor", false}, {"i16", "Tensor", "Tensor", false},
			{"i32", "Tensor", "Tensor", false}, {"i64", "Tensor", "Tensor", false}, {"f16", "Tensor", "Tensor", false}, {"bf16", "Tensor", "Tensor", false}, {"f32", "Tensor", "Tensor", false}, {"f64", "Tensor", "Tensor", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			m := load(t, tt.model, torchrun.Options{})
			got := m.Arguments()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Arguments() = %v, want %v", got, tt.want)
			}
			got[0].Name = "changed"
			if m.Arguments()[0].Name == "changed" {
				t.Error("Arguments() returns the module's own slice")
			}
		})
	}
}

// TestDataTypes round-trips every data type the shim takes through
// dtypes.pt, which adds 1 to each (logical not for BOOL).
func TestDataTypes(t *testing.T) {
	m := load(t, "dtypes.pt", torchrun.Options{InferenceMode: true})
	shape := []int64{2, 3}
	f16 := make([]tensor.Float16, 6)
	bf16 := make([]tensor.BFloat16, 6)
	for i := range f16 {
		f16[i] = tensor.Float16FromFloat32(float32(i) - 2.5)
		bf16[i] = tensor.BFloat16FromFloat32(float32(i) * -4)
	}
	in := []torchrun.Value{
		val(t, shape, true, false, true, true, false, false),
		val(t, shape, uint8(0), 1, 2, 254, 100, 7),
		val(t, shape, int8(-128), -1, 0, 1, 126, 5),
		val(t, shape, int16(-32768), -1, 0, 1, 32766, 300),
		val(t, shape, int32(math.MinInt32), -1, 0, 1, math.MaxInt32-1, 70000),
		val(t, shape, int64(math.MinInt64), -1, 0, 1, math.MaxInt64-1, 1<<40),
		val(t, shape, f16...),
		val(t, shape, bf16...),
		val(t, shape, float32(-1.5), 0, 1e-3, 3.25, 1e30, -7),
		val(t, shape, -1.5, 0, 1e-300, 3.25, 1e300, -7),
	}
	out := forward(t, m, in...)
	if len(out) != len(in) {
		t.Fatalf("Forward returned %d outputs, want %d", len(out), len(in))
	}
	for i, o := range out {
		if o.DataType != in[i].DataType || !slices.Equal(o.Shape, shape) {
			t.Errorf("output %d: %v %v, want %v %v", i, o.DataType, o.Shape, in[i].DataType, shape)
		}
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("BOOL", view[bool](t, out[0]), []bool{false, true, false, false, true, true})
	check("UINT8", view[uint8](t, out[1]), []uint8{1, 2, 3, 255, 101, 8})
	check("INT8", view[int8](t, out[2]), []int8{-127, 0, 1, 2, 127, 6})
	check("INT16", view[int16](t, out[3]), []int16{-32767, 0, 1, 2, 32767, 301})
	check("INT32", view[int32](t, out[4]), []int32{math.MinInt32 + 1, 0, 1, 2, math.MaxInt32, 70001})
	check("INT64", view[int64](t, out[5]), []int64{math.MinInt64 + 1, 0, 1, 2, math.MaxInt64, 1<<40 + 1})
	for i, h := range view[tensor.Float16](t, out[6]) {
		if want := float32(i) - 1.5; h.Float32() != want {
			t.Errorf("FP16 element %d: got %v, want %v", i, h.Float32(), want)
		}
	}
	for i, b := range view[tensor.BFloat16](t, out[7]) {
		if want := float32(i)*-4 + 1; b.Float32() != want {
			t.Errorf("BF16 element %d: got %v, want %v", i, b.Float32(), want)
		}
	}
	check("FP32", view[float32](t, out[8]), []float32{-0.5, 1, 1 + 1e-3, 4.25, 1e30, -6})
	check("FP64", view[float64](t, out[9]), []float64{-0.5, 1, 1, 4.25, 1e300, -6})
}

func TestUnsupportedInputTypes(t *testing.T) {
	m := load(t, "raises.pt", torchrun.Options{})
	for _, dt := range []tensor.DataType{tensor.Uint16, tensor.Uint32, tensor.Uint64, tensor.Invalid, 99} {
		size := max(dt.Size(), 1)
		_, err := m.Forward(context.Background(), []torchrun.Value{{DataType: dt, Shape: []int64{2}, Data: make([]byte, 2*size)}})
		if err == nil || !strings.Contains(err.Error(), "data type") {
			t.Errorf("Forward with a %v input: error %v, want one about the data type", dt, err)
		}
	}
}

func TestInputChecks(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{})
	good := val(t, []int64{1, 16}, make([]float32, 16)...)
	tests := []struct {
		name string
		in   torchrun.Value
		want string
	}{
		{"short data", torchrun.Value{DataType: tensor.FP32, Shape: []int64{1, 16}, Data: make([]byte, 63)}, "needs 64 bytes, the data has 63"},
		{"negative dim", torchrun.Value{DataType: tensor.FP32, Shape: []int64{-1, 16}}, "negative dimension"},
		{"huge shape", torchrun.Value{DataType: tensor.FP32, Shape: []int64{1 << 40, 1 << 40}}, "too many elements"},
		{"strings shape", torchrun.Value{DataType: tensor.Bytes, Shape: []int64{3}, Strings: [][]byte{[]byte("a")}}, "needs shape [1]"},
	}
	for _, tt := range tests {
		_, err := m.Forward(context.Background(), []torchrun.Value{tt.in, good})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestStrings(t *testing.T) {
	m := load(t, "strings.pt", torchrun.Options{InferenceMode: true})
	in := [][]byte{[]byte("hello"), {}, []byte("x\x00y"), []byte("MiXeD 42"), bytes.Repeat([]byte("ab"), 5000)}
	out := forward(t, m, torchrun.Value{DataType: tensor.Bytes, Shape: []int64{int64(len(in))}, Strings: in})
	if len(out) != 2 {
		t.Fatalf("Forward returned %d outputs, want 2", len(out))
	}
	lengths := view[int64](t, out[0])
	if out[0].DataType != tensor.Int64 || !slices.Equal(out[0].Shape, []int64{int64(len(in))}) {
		t.Errorf("lengths: %v %v", out[0].DataType, out[0].Shape)
	}
	up := out[1]
	if up.DataType != tensor.Bytes || !slices.Equal(up.Shape, []int64{int64(len(in))}) || len(up.Strings) != len(in) {
		t.Fatalf("upper: %v %v with %d strings, want BYTES [%d]", up.DataType, up.Shape, len(up.Strings), len(in))
	}
	for i, s := range in {
		if lengths[i] != int64(len(s)) {
			t.Errorf("length %d: %d, want %d", i, lengths[i], len(s))
		}
		if want := bytes.ToUpper(s); !bytes.Equal(up.Strings[i], want) {
			t.Errorf("string %d: %q, want %q", i, up.Strings[i], want)
		}
	}

	// An empty list in, empty outputs out.
	out = forward(t, m, torchrun.Value{DataType: tensor.Bytes, Shape: []int64{0}})
	if len(out[0].Data) != 0 || !slices.Equal(out[0].Shape, []int64{0}) || len(out[1].Strings) != 0 || !slices.Equal(out[1].Shape, []int64{0}) {
		t.Errorf("empty list: got %v and %v", out[0], out[1])
	}
}

func TestDictInput(t *testing.T) {
	m := load(t, "dict_in.pt", torchrun.Options{InferenceMode: true})
	a := val(t, []int64{3}, float32(1), 2, 3)
	b := val(t, []int64{3}, float32(10), 20, 30)
	out, err := m.ForwardDict(context.Background(), []string{"b", "a"}, []torchrun.Value{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if got := view[float32](t, out[0]); !slices.Equal(got, []float32{11, 22, 33}) {
		t.Errorf("d[a]+d[b] = %v, want [11 22 33]", got)
	}
	_, err = m.ForwardDict(context.Background(), []string{"a", "c"}, []torchrun.Value{a, b})
	var e *torchrun.Error
	if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, "PyTorch execute failure: ") {
		t.Errorf("a dict without key b: error %v, want a PyTorch execute failure", err)
	}
	if _, err := m.ForwardDict(context.Background(), []string{"a"}, []torchrun.Value{a, b}); err == nil {
		t.Error("ForwardDict with 1 name for 2 inputs succeeded")
	}
	str := torchrun.Value{DataType: tensor.Bytes, Shape: []int64{1}, Strings: [][]byte{[]byte("s")}}
	if _, err := m.ForwardDict(context.Background(), []string{"a", "b"}, []torchrun.Value{a, str}); err == nil ||
		!strings.Contains(err.Error(), "cannot hold BYTES") {
		t.Errorf("ForwardDict with a BYTES value: error %v", err)
	}
}

func TestState(t *testing.T) {
	m := load(t, "state.pt", torchrun.Options{InferenceMode: true})
	state := val(t, []int64{1, 2}, float32(0), 0)
	for i := range 3 {
		out := forward(t, m, val(t, []int64{1, 2}, float32(1), 2), state)
		state = out[1]
		want := []float32{float32(i + 1), float32(2 * (i + 1))}
		if got := view[float32](t, out[0]); !slices.Equal(got, want) {
			t.Fatalf("step %d: %v, want %v", i, got, want)
		}
	}
}

func TestCNN(t *testing.T) {
	m := load(t, "cnn.pt", torchrun.Options{InferenceMode: true})
	const n = 3
	img := make([]float32, n*28*28)
	for i := range img {
		img[i] = float32((i*7919)%255) / 255
	}
	out := forward(t, m, val(t, []int64{n, 1, 28, 28}, img...))
	if len(out) != 1 || !slices.Equal(out[0].Shape, []int64{n, 10}) {
		t.Fatalf("outputs %v, want one [3 10]", out)
	}
	batch := view[float32](t, out[0])
	for i := range n {
		one := forward(t, m, val(t, []int64{1, 1, 28, 28}, img[i*784:(i+1)*784]...))
		got := view[float32](t, one[0])
		for k := range 10 {
			if d := math.Abs(float64(got[k] - batch[i*10+k])); d > 1e-5 || math.IsNaN(float64(got[k])) {
				t.Fatalf("image %d logit %d: alone %v, in the batch %v", i, k, got[k], batch[i*10+k])
			}
		}
	}
	if slices.Equal(batch[:10], batch[10:20]) {
		t.Error("two different images give the same logits")
	}
}

func TestLoadErrors(t *testing.T) {
	open(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "model.pt")
	if err := os.WriteFile(text, []byte("not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(dir, "other.zip")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("archive/hello.txt")
	_, _ = w.Write([]byte("hello"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zipPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"text":      text,
		"zip":       zipPath,
		"empty":     empty,
		"missing":   filepath.Join(dir, "missing.pt"),
		"directory": dir,
	} {
		m, err := torchrun.Load(path, torchrun.Options{InferenceMode: true})
		var e *torchrun.Error
		if !errors.As(err, &e) || e.Msg == "" {
			t.Errorf("Load(%s): %v, %v; want an *Error", name, m, err)
		}
		if m != nil {
			_ = m.Close()
		}
	}
}

func TestRaises(t *testing.T) {
	m := load(t, "raises.pt", torchrun.Options{InferenceMode: true})
	_, err := m.Forward(context.Background(), []torchrun.Value{val(t, []int64{3}, float32(1), -2, 3)})
	var e *torchrun.Error
	if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, "PyTorch execute failure: ") || !strings.Contains(e.Msg, "negative input") {
		t.Fatalf("error %v, want \"PyTorch execute failure: ...negative input...\"", err)
	}
	// The module still works.
	out := forward(t, m, val(t, []int64{2}, float32(1), 2))
	if got := view[float32](t, out[0]); !slices.Equal(got, []float32{2, 4}) {
		t.Errorf("after the exception: %v, want [2 4]", got)
	}
}

func TestWrongInputs(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{})
	x := val(t, []int64{1, 16}, make([]float32, 16)...)
	for name, in := range map[string][]torchrun.Value{
		"too few":       {x},
		"too many":      {x, x, x},
		"strings":       {x, {DataType: tensor.Bytes, Shape: []int64{1}, Strings: [][]byte{[]byte("a")}}},
		"shape":         {x, val(t, []int64{3}, float32(1), 2, 3)},
		"no inputs":     nil,
		"mixed 0-d in ": {val(t, nil, float32(1)), val(t, []int64{2, 3}, make([]float32, 6)...)},
	} {
		out, err := m.Forward(context.Background(), in)
		var e *torchrun.Error
		if name == "mixed 0-d in " {
			// Broadcasting makes this valid.
			if err != nil || !slices.Equal(out[0].Shape, []int64{2, 3}) {
				t.Errorf("%s: %v, %v", name, out, err)
			}
			continue
		}
		if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, "PyTorch execute failure: ") {
			t.Errorf("%s: %v, %v; want a PyTorch execute failure", name, out, err)
		}
	}
}

// TestTraining: a module keeps the mode it was saved in (no eval(), as
// Triton): training.pt runs its training branch, and Training says so.
func TestTraining(t *testing.T) {
	for model, training := range map[string]bool{"training.pt": true, "raises.pt": false} {
		m := load(t, model, torchrun.Options{InferenceMode: true})
		if got := m.Training(); got != training {
			t.Errorf("%s: Training() = %v, want %v", model, got, training)
		}
	}
	out := forward(t, load(t, "training.pt", torchrun.Options{InferenceMode: true}), val(t, []int64{2}, float32(1), 2))
	if got := view[float32](t, out[0]); !slices.Equal(got, []float32{2, 3}) {
		t.Errorf("training.pt([1 2]) = %v, want x + 1", got)
	}
}

func TestOutputTypes(t *testing.T) {
	const bad = "PyTorch execute failure: output must be of type Tensor, List[str] or Tuple containing one of these two types. " +
		"It should not be a List / Dictionary of Tensors or a Scalar"
	for model, want := range map[string]string{
		"dict_out.pt":       bad,
		"list_out.pt":       "PyTorch execute failure: output must be of type Tensor or List[str], received List[Tensor]",
		"tuple_list_int.pt": "PyTorch execute failure: output at index 1 must be of type Tensor or List[str], received List[int]",
	} {
		m := load(t, model, torchrun.Options{InferenceMode: true})
		_, err := m.Forward(context.Background(), []torchrun.Value{val(t, []int64{2}, float32(1), 2)})
		var e *torchrun.Error
		if !errors.As(err, &e) || e.Msg != want {
			t.Errorf("%s: error %v, want %q", model, err, want)
		}
	}
}

func TestScalarOutput(t *testing.T) {
	m := load(t, "scalar_out.pt", torchrun.Options{InferenceMode: true})
	out := forward(t, m, val(t, []int64{2, 2}, float32(1), 2, 3, 4.5))
	if len(out) != 1 || len(out[0].Shape) != 0 || out[0].DataType != tensor.FP32 {
		t.Fatalf("got %v, want one 0-d FP32 output", out)
	}
	if got := view[float32](t, out[0]); !slices.Equal(got, []float32{10.5}) {
		t.Errorf("sum = %v, want 10.5", got)
	}
}

func TestZeroSizeInput(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{InferenceMode: true})
	empty := torchrun.Value{DataType: tensor.FP32, Shape: []int64{0, 16}}
	out := forward(t, m, empty, empty)
	for i, o := range out {
		if !slices.Equal(o.Shape, []int64{0, 16}) || len(o.Data) != 0 {
			t.Errorf("output %d: shape %v, %d bytes; want [0 16], none", i, o.Shape, len(o.Data))
		}
	}
}

func TestNonContiguousOutput(t *testing.T) {
	m := load(t, "transpose.pt", torchrun.Options{InferenceMode: true})
	out := forward(t, m, val(t, []int64{2, 3}, int32(1), 2, 3, 4, 5, 6))
	if !slices.Equal(out[0].Shape, []int64{3, 2}) {
		t.Fatalf("shape %v, want [3 2]", out[0].Shape)
	}
	if got := view[int32](t, out[0]); !slices.Equal(got, []int32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("x.t() = %v, want [1 4 2 5 3 6]", got)
	}
}

func TestUnalignedInput(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{})
	x := val(t, []int64{1, 16}, make([]float32, 16)...)
	raw := make([]byte, 65)
	y := val(t, []int64{1, 16}, slices.Repeat([]float32{2}, 16)...)
	copy(raw[1:], y.Data)
	y.Data = raw[1:]
	out := forward(t, m, x, y)
	if got := view[float32](t, out[1]); got[0] != -2 || got[15] != -2 {
		t.Errorf("0 - 2 = %v", got)
	}
}

func TestOptions(t *testing.T) {
	x := val(t, []int64{1, 16}, slices.Repeat([]float32{3}, 16)...)
	for _, opts := range []torchrun.Options{
		{},
		{InferenceMode: true, DisableOptimizedExecution: true},
		{JITExecutor: torchrun.True, JITProfiling: torchrun.True, TensorFuser: torchrun.True},
		{JITExecutor: torchrun.False, JITProfiling: torchrun.False, TensorFuser: torchrun.False},
	} {
		m := load(t, "addsub_args.pt", opts)
		for range 3 { // the profiling executor changes plans after its first runs
			out := forward(t, m, x, x)
			if got := view[float32](t, out[0]); got[0] != 6 || view[float32](t, out[1])[0] != 0 {
				t.Fatalf("%+v: got %v", opts, got)
			}
		}
	}
	// Leave libtorch's defaults in place for the other tests.
	m := load(t, "addsub_args.pt", torchrun.Options{JITExecutor: torchrun.True, JITProfiling: torchrun.True, TensorFuser: torchrun.True})
	forward(t, m, x, x)
	if _, err := torchrun.Load(modelPath(t, "addsub.pt"), torchrun.Options{TensorFuser: 7}); err == nil {
		t.Error("Load with an invalid Tristate succeeded")
	}
}

// threadsSet records that TestSetThreads has run in this process.
var threadsSet atomic.Bool

func TestSetThreads(t *testing.T) {
	open(t)
	if intra, inter, err := torchrun.SetThreads(0, 0); intra || inter || err != nil {
		t.Errorf("SetThreads(0, 0) = %v, %v, %v; want nothing applied", intra, inter, err)
	}
	if _, _, err := torchrun.SetThreads(-1, 0); err == nil {
		t.Error("SetThreads(-1, 0) succeeded")
	}
	if threadsSet.Swap(true) {
		// A repeat run (-count): this process has applied its counts.
		if intra, inter, err := torchrun.SetThreads(2, 2); intra || inter || err != nil {
			t.Errorf("repeated SetThreads(2, 2) = %v, %v, %v; want nothing applied", intra, inter, err)
		}
		return
	}
	intra, inter, err := torchrun.SetThreads(2, 2)
	if !intra {
		t.Errorf("SetThreads(2, 2): the intra-op count was not applied (err %v)", err)
	}
	var e *torchrun.Error
	if inter == (err != nil) || (err != nil && !errors.As(err, &e)) {
		t.Errorf("SetThreads(2, 2) = %v, %v, %v; want the inter-op count applied or an *Error", intra, inter, err)
	}
	if intra, inter, err := torchrun.SetThreads(1, 1); intra || inter || err != nil {
		t.Errorf("second SetThreads(1, 1) = %v, %v, %v; want nothing applied (the first call wins)", intra, inter, err)
	}
}

func TestContextDone(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := val(t, []int64{1, 16}, make([]float32, 16)...)
	if _, err := m.Forward(ctx, []torchrun.Value{x, x}); !errors.Is(err, context.Canceled) {
		t.Errorf("Forward with a cancelled context: %v", err)
	}
}

func TestForwardAfterClose(t *testing.T) {
	open(t)
	m, err := torchrun.Load(modelPath(t, "addsub.pt"), torchrun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := torchrun.Live()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := torchrun.Live(); got != before-1 {
		t.Errorf("Close left the shim holding %d objects, want %d", got, before-1)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	x := val(t, []int64{1, 16}, make([]float32, 16)...)
	if _, err := m.Forward(context.Background(), []torchrun.Value{x, x}); !errors.Is(err, torchrun.ErrClosed) {
		t.Errorf("Forward after Close: %v, want ErrClosed", err)
	}
	if _, err := m.ForwardDict(context.Background(), []string{"a"}, []torchrun.Value{x}); !errors.Is(err, torchrun.ErrClosed) {
		t.Errorf("ForwardDict after Close: %v, want ErrClosed", err)
	}
	if len(m.Arguments()) != 2 {
		t.Errorf("Arguments after Close: %v", m.Arguments())
	}
}

func TestConcurrentForward(t *testing.T) {
	m := load(t, "addsub.pt", torchrun.Options{InferenceMode: true})
	const workers, calls = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for c := range calls {
				a := slices.Repeat([]float32{float32(w)}, 16)
				b := slices.Repeat([]float32{float32(c)}, 16)
				out, err := m.Forward(context.Background(), []torchrun.Value{val(t, []int64{1, 16}, a...), val(t, []int64{1, 16}, b...)})
				if err != nil {
					errs <- err
					return
				}
				sum := view[float32](t, out[0])
				if sum[0] != float32(w+c) || sum[15] != float32(w+c) {
					errs <- fmt.Errorf("worker %d call %d: sum %v, want %d", w, c, sum[0], w+c)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCloseWaitsForForward closes a module while other goroutines run
// it: every call either completes or reports ErrClosed.
func TestCloseWaitsForForward(t *testing.T) {
	open(t)
	m, err := torchrun.Load(modelPath(t, "cnn.pt"), torchrun.Options{InferenceMode: true})
	if err != nil {
		t.Fatal(err)
	}
	x := val(t, []int64{4, 1, 28, 28}, make([]float32, 4*784)...)
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	errs := make(chan error, 3*50)
	for range 3 {
		wg.Go(func() {
			started <- struct{}{}
			for range 50 {
				out, err := m.Forward(context.Background(), []torchrun.Value{x})
				switch {
				case errors.Is(err, torchrun.ErrClosed):
					return
				case err != nil:
					errs <- err
				case !slices.Equal(out[0].Shape, []int64{4, 10}):
					errs <- fmt.Errorf("shape %v", out[0].Shape)
				}
			}
		})
	}
	for range 3 {
		<-started
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestOpen checks Open's once-per-process rule in this process, and the
// error for a missing file in a child process (where nothing is open yet).
func TestOpen(t *testing.T) {
	if p := os.Getenv("TORCHRUN_OPEN_CHILD"); p != "" {
		err := torchrun.Open(p)
		fmt.Printf("first: %v\n", err)
		fmt.Printf("again: %v\n", torchrun.Open(p))
		if _, err := torchrun.Load("x.pt", torchrun.Options{}); err != nil {
			fmt.Printf("load: %v\n", err)
		}
		return
	}
	open(t)
	shim := testenv.TorchShim(t)
	if err := torchrun.Open(shim); err != nil {
		t.Errorf("Open again with the same path: %v", err)
	}
	if err := torchrun.Open(shim + ".other"); err == nil || !strings.Contains(err.Error(), "already opened") {
		t.Errorf("Open with another path: %v", err)
	}
	if v := torchrun.Version(); !strings.HasPrefix(v, "1.") && !strings.HasPrefix(v, "2.") {
		t.Errorf("Version() = %q", v)
	}

	missing := filepath.Join(t.TempDir(), torchrun.ShimName)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpen$")
	cmd.Env = append(os.Environ(), "TORCHRUN_OPEN_CHILD="+missing)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, outb)
	}
	got := string(outb)
	for _, want := range []string{
		"first: torchrun: Open: " + missing + ": dlopen: " + missing + ": cannot open shared object file",
		"again: torchrun: Open: " + missing + ": dlopen",
		"load: torchrun: the shim is not loaded",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("child output lacks %q:\n%s", want, got)
		}
	}
}

// TestWrittenOrKept: forward's arguments that it writes in place or keeps
// in the module's state are found at load (Copied) and get a copy: the
// caller's Data is left as it was, and a kept input keeps its values after
// the caller reuses its memory; the others are not copied.
func TestWrittenOrKept(t *testing.T) {
	copied := map[string][]bool{
		"inplace.pt": {true}, "fork_inplace.pt": {true}, "keeps.pt": {true}, "keeps_in_list.pt": {true},
		"addsub.pt": {false, false}, "cnn.pt": {false}, "state.pt": {false, false}, "strings.pt": {false},
		"dict_in.pt": {false}, "transpose.pt": {false}, "raises.pt": {false}, "modes.pt": {false}, "batchnorm.pt": {false},
		"copies_in.pt": {false},
	}
	for model, want := range copied {
		var got []bool
		for _, a := range load(t, model, torchrun.Options{InferenceMode: true}).Arguments() {
			got = append(got, a.Copied)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Copied %v, want %v", model, got, want)
		}
	}
	for _, model := range []string{"inplace.pt", "fork_inplace.pt"} {
		in := val(t, []int64{4}, float32(1), 2, 3, 4)
		out := forward(t, load(t, model, torchrun.Options{InferenceMode: true}), in)
		if got, data := view[float32](t, out[0]), view[float32](t, in); !slices.Equal(got, []float32{4, 6, 8, 10}) || !slices.Equal(data, []float32{1, 2, 3, 4}) {
			t.Errorf("%s([1 2 3 4]) = %v, the input left %v; want [4 6 8 10], [1 2 3 4]", model, got, data)
		}
	}
	in := val(t, []int64{4}, float32(1), 2, 3, 4)
	if got := view[float32](t, forward(t, load(t, "copies_in.pt", torchrun.Options{InferenceMode: true}), in)[0]); !slices.Equal(got, []float32{2, 4, 6, 8}) {
		t.Errorf("copies_in.pt([1 2 3 4]) = %v, want [2 4 6 8]", got)
	}
	for _, model := range []string{"keeps.pt", "keeps_in_list.pt"} {
		m := load(t, model, torchrun.Options{InferenceMode: true})
		in := val(t, []int64{4}, float32(1), 2, 3, 4)
		forward(t, m, in)
		copy(in.Data, val(t, []int64{4}, float32(5), 6, 7, 8).Data) // the caller reuses its memory
		if got := view[float32](t, forward(t, m, in)[0]); !slices.Equal(got, []float32{1, 2, 3, 4}) {
			t.Errorf("%s: the kept input reads %v, want [1 2 3 4]", model, got)
		}
	}
}
