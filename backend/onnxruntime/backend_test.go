package onnxruntime_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// repo is a model repository under construction in a temporary folder.
type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo {
	testenv.NeedLibrary(t)
	return &repo{t: t, dir: t.TempDir()}
}

// model adds <name>/1/model.onnx copied from testdata/models/<file> and,
// unless config is "", <name>/config.pbtxt.
func (r *repo) model(name, file, config string) *repo {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "models", file))
	if err != nil {
		r.t.Fatal(err)
	}
	return r.file(name+"/1/model.onnx", data).config(name, config)
}

func (r *repo) config(name, config string) *repo {
	if config != "" {
		r.file(name+"/config.pbtxt", []byte(config))
	}
	return r
}

func (r *repo) file(rel string, data []byte) *repo {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func (r *repo) serve(opts ...triton.Option) *triton.Server {
	r.t.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithModelRepository(r.dir), triton.WithBackend("onnxruntime", onnxruntime.New())}, opts...)...)
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			r.t.Errorf("Close: %v", err)
		}
	})
	return srv
}

func infer(t *testing.T, srv *triton.Server, model string, outputs []string, inputs ...tensor.Tensor) *triton.InferResponse {
	t.Helper()
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: inputs, Outputs: outputs})
	if err != nil {
		t.Fatalf("Infer %s: %v", model, err)
	}
	return resp
}

func output(t *testing.T, resp *triton.InferResponse, name string) tensor.Tensor {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Fatalf("no output %q", name)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestEveryDatatype sends each datatype through an identity model, batched,
// and compares the bytes that come back.
func TestEveryDatatype(t *testing.T) {
	r := newRepo(t)
	samples := map[string]tensor.Tensor{
		"bool":   must(tensor.From("INPUT0", tensor.Shape{2, 3}, []bool{true, false, true, false, false, true})),
		"uint8":  must(tensor.From("INPUT0", tensor.Shape{2, 3}, []uint8{0, 1, 255, 7, 8, 9})),
		"uint16": must(tensor.From("INPUT0", tensor.Shape{2, 3}, []uint16{0, 1, math.MaxUint16, 7, 8, 9})),
		"uint32": must(tensor.From("INPUT0", tensor.Shape{2, 3}, []uint32{0, 1, math.MaxUint32, 7, 8, 9})),
		"uint64": must(tensor.From("INPUT0", tensor.Shape{2, 3}, []uint64{0, 1, math.MaxUint64, 7, 8, 9})),
		"int8":   must(tensor.From("INPUT0", tensor.Shape{2, 3}, []int8{math.MinInt8, -1, math.MaxInt8, 7, 8, 9})),
		"int16":  must(tensor.From("INPUT0", tensor.Shape{2, 3}, []int16{math.MinInt16, -1, math.MaxInt16, 7, 8, 9})),
		"int32":  must(tensor.From("INPUT0", tensor.Shape{2, 3}, []int32{math.MinInt32, -1, math.MaxInt32, 7, 8, 9})),
		"int64":  must(tensor.From("INPUT0", tensor.Shape{2, 3}, []int64{math.MinInt64, -1, math.MaxInt64, 7, 8, 9})),
		"fp16": must(tensor.From("INPUT0", tensor.Shape{2, 3}, []tensor.Float16{tensor.Float16FromFloat32(1.5), tensor.Float16FromFloat32(-2),
			tensor.Float16FromFloat32(65504), tensor.Float16FromFloat32(float32(math.Inf(1))), 0, tensor.Float16FromFloat32(0.1)})),
		"fp32":   must(tensor.From("INPUT0", tensor.Shape{2, 3}, []float32{1.5, -2, math.MaxFloat32, float32(math.Inf(-1)), 0, 1e-30})),
		"fp64":   must(tensor.From("INPUT0", tensor.Shape{2, 3}, []float64{1.5, -2, math.MaxFloat64, math.SmallestNonzeroFloat64, 0, math.Pi})),
		"string": must(tensor.FromStrings("INPUT0", tensor.Shape{2, 3}, []string{"he\x00llo", "\xff\xfe not utf-8", "", "plain", "\x00", strings.Repeat("x", 1000)})),
	}
	for dt, in := range samples {
		cfg := fmt.Sprintf(`backend: "onnxruntime" max_batch_size: 8
input [ { name: "INPUT0" data_type: %s dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: %s dims: [ -1 ] } ]`, in.DataType.ConfigName(), in.DataType.ConfigName())
		r.model("identity_"+dt, "identity_"+dt+".onnx", cfg)
	}
	srv := r.serve()
	for dt, in := range samples {
		t.Run(dt, func(t *testing.T) {
			out := output(t, infer(t, srv, "identity_"+dt, nil, in), "OUTPUT0")
			if out.DataType != in.DataType || !out.Shape.Equal(in.Shape) || string(out.Data) != string(in.Data) {
				t.Fatalf("got %v %v %q, want %v %v %q", out.DataType, out.Shape, out.Data, in.DataType, in.Shape, in.Data)
			}
		})
	}
}

func TestAddSubConcurrent(t *testing.T) {
	srv := newRepo(t).model("add_sub", "add_sub.onnx", `
name: "add_sub"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`).serve()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := range 32 {
		wg.Go(func() {
			batch := g%4 + 1
			a, b := make([]float32, batch*16), make([]float32, batch*16)
			for i := range a {
				a[i], b[i] = float32(i*g), float32(g)
			}
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add_sub", Inputs: []tensor.Tensor{
				must(tensor.From("INPUT0", tensor.Shape{int64(batch), 16}, a)), must(tensor.From("INPUT1", tensor.Shape{int64(batch), 16}, b)),
			}})
			if err != nil {
				errs <- err
				return
			}
			sum, _ := resp.Output("OUTPUT0")
			diff, _ := resp.Output("OUTPUT1")
			s, d := must(tensor.View[float32](sum)), must(tensor.View[float32](diff))
			for i := range a {
				if s[i] != a[i]+b[i] || d[i] != a[i]-b[i] {
					errs <- fmt.Errorf("goroutine %d element %d: %v %v", g, i, s[i], d[i])
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

func TestRequestedOutputs(t *testing.T) {
	srv := newRepo(t).model("multi_io", "multi_io.onnx", "").serve()
	inputs := []tensor.Tensor{
		must(tensor.From("FLOATS", tensor.Shape{2, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8})),
		must(tensor.From("INTS", tensor.Shape{2, 2}, []int64{10, 20, 30, 40})),
		// TEXT is [batch] in the model: per item a scalar, so Triton's
		// dims [1] with reshape to [] — clients send [batch, 1].
		must(tensor.FromStrings("TEXT", tensor.Shape{2, 1}, []string{"a\x00b", "c"})),
	}
	all := infer(t, srv, "multi_io", nil, inputs...)
	if len(all.Outputs) != 3 {
		t.Fatalf("all outputs: %v", all.Outputs)
	}
	if got := must(tensor.View[float32](output(t, all, "SCALED"))); !slices.Equal(got, []float32{2, 4, 6, 8, 10, 12, 14, 16}) {
		t.Errorf("SCALED %v", got)
	}
	if got := must(tensor.View[int64](output(t, all, "SHIFTED"))); !slices.Equal(got, []int64{11, 21, 31, 41}) {
		t.Errorf("SHIFTED %v", got)
	}
	text := output(t, all, "TEXT_OUT")
	if got := must(tensor.Strings(text)); !slices.Equal(got, []string{"a\x00b", "c"}) || !text.Shape.Equal(tensor.Shape{2, 1}) {
		t.Errorf("TEXT_OUT %v %q", text.Shape, got)
	}
	sub := infer(t, srv, "multi_io", []string{"TEXT_OUT", "SHIFTED"}, inputs...)
	var names []string
	for _, o := range sub.Outputs {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"SHIFTED", "TEXT_OUT"}) {
		t.Errorf("subset outputs %v", names)
	}
}

func TestAutoComplete(t *testing.T) {
	r := newRepo(t).
		model("add_sub", "add_sub.onnx", "").
		model("matmul_fixed", "matmul_fixed.onnx", "").
		model("reduce", "reduce_dynamic.onnx", `backend: "onnxruntime" max_batch_size: 2`).
		model("custom_name", "add_sub.onnx", "")
	// The custom-name model's file is not model.onnx.
	must(0, os.Rename(filepath.Join(r.dir, "custom_name/1/model.onnx"), filepath.Join(r.dir, "custom_name/1/weights.onnx")))
	r.config("custom_name", `platform: "onnxruntime_onnx" default_model_filename: "weights.onnx"`)
	srv := r.serve()

	cfg, err := srv.ModelConfig("add_sub", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetBackend() != "onnxruntime" || cfg.GetPlatform() != "onnxruntime_onnx" || cfg.GetMaxBatchSize() != 4 ||
		cfg.GetDynamicBatching() == nil || len(cfg.GetInput()) != 2 || !slices.Equal(cfg.GetInput()[0].GetDims(), []int64{16}) ||
		cfg.GetOutput()[1].GetName() != "OUTPUT1" {
		t.Errorf("add_sub completed to %v", cfg)
	}
	fixed, _ := srv.ModelConfig("matmul_fixed", 0)
	if fixed.GetMaxBatchSize() != 0 || !slices.Equal(fixed.GetInput()[0].GetDims(), []int64{2, 3}) {
		t.Errorf("matmul_fixed completed to %v", fixed)
	}
	y := output(t, infer(t, srv, "matmul_fixed", nil, must(tensor.From("X", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6}))), "Y")
	if got := must(tensor.View[float32](y)); !slices.Equal(got, []float32{22, 28, 49, 64}) {
		t.Errorf("matmul %v", got)
	}
	reduce, _ := srv.ModelConfig("reduce", 0)
	if reduce.GetMaxBatchSize() != 2 || !slices.Equal(reduce.GetInput()[0].GetDims(), []int64{-1, 3}) {
		t.Errorf("reduce completed to %v", reduce)
	}
	sum := output(t, infer(t, srv, "reduce", nil, must(tensor.From("X", tensor.Shape{1, 2, 3}, []float32{1, 2, 3, 4, 5, 6}))), "SUM")
	if got := must(tensor.View[float32](sum)); !sum.Shape.Equal(tensor.Shape{1, 2}) || !slices.Equal(got, []float32{6, 15}) {
		t.Errorf("reduce %v %v", sum.Shape, got)
	}
	if _, err := srv.ModelConfig("custom_name", 0); err != nil {
		t.Errorf("default_model_filename: %v", err)
	}

	// Without a default max batch size, batchable models are served unbatched.
	srv2, err := triton.New(triton.WithModelRepository(r.dir), triton.WithStartupModels("add_sub"),
		triton.WithBackend("onnxruntime", onnxruntime.New(onnxruntime.WithDefaultMaxBatchSize(0))))
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if cfg, _ := srv2.ModelConfig("add_sub", 0); cfg.GetMaxBatchSize() != 0 || !slices.Equal(cfg.GetInput()[0].GetDims(), []int64{-1, 16}) {
		t.Errorf("add_sub without default batching: %v", cfg)
	}
}

// TestBadModels loads broken model files and contradicting configs; each
// fails with an error naming the model and the file or tensor, and the good
// model keeps serving.
func TestBadModels(t *testing.T) {
	r := newRepo(t).model("good", "add_sub.onnx", "")
	full, err := os.ReadFile(filepath.Join("testdata", "models", "add_sub.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	r.file("truncated/1/model.onnx", full[:len(full)/2]).config("truncated", `backend: "onnxruntime"`)
	r.file("garbage/1/model.onnx", []byte("this is not a protobuf \x00\x01\x02")).config("garbage", `backend: "onnxruntime"`)
	r.file("missing/1/other.bin", []byte("x")).config("missing", `backend: "onnxruntime"`)
	r.model("wrong_type", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]`)
	r.model("batch_in_dims", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ -1, 16 ] } ]`)
	r.model("unknown_input", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "EXTRA" data_type: TYPE_FP32 dims: [ 1 ] } ]`)
	r.model("no_openvino", "add_sub.onnx", `backend: "onnxruntime"
optimization { execution_accelerators { cpu_execution_accelerator { name: "openvino" } } }`)
	r.model("bad_param", "add_sub.onnx", `backend: "onnxruntime"
parameters { key: "execution_mode" value: { string_value: "fast" } }`)
	r.model("custom_op", "custom_op.onnx", `backend: "onnxruntime" max_batch_size: 8`)
	r.model("custom_op_library", "custom_op.onnx", `backend: "onnxruntime" max_batch_size: 8
model_operations { op_library_filename: [ "libscale_op.so" ] }`)
	// A library the model does not need: it loads, with a warning.
	r.model("unused_library", "add_sub.onnx", `backend: "onnxruntime"
model_operations { op_library_filename: [ "libscale_op.so" ] }`)
	core, logs := observer.New(zap.WarnLevel)
	srv := r.serve(triton.WithExitOnError(false), triton.WithLogger(zap.New(core)))
	if n := logs.FilterMessageSnippet("model_operations is ignored").FilterField(zap.String("model", "unused_library")).Len(); n != 1 {
		t.Errorf("%d warnings that unused_library's model_operations is ignored, want 1; logs %v", n, logs.All())
	}

	want := map[string][]string{
		"truncated":     {"truncated/1/model.onnx", "not a model ONNX Runtime can load"},
		"garbage":       {"garbage/1/model.onnx", "not a model ONNX Runtime can load"},
		"missing":       {"missing/1/model.onnx", "no such file"},
		"wrong_type":    {"wrong_type/1/model.onnx", "input 'INPUT0' has datatype TYPE_INT32, but the model's is TYPE_FP32"},
		"batch_in_dims": {"input 'INPUT0'", "batch dimension is implicit"},
		"unknown_input": {"input 'EXTRA' is not one of the model's inputs"},
		"no_openvino":   {"execution accelerator openvino", "does not provide it"},
		"bad_param":     {"execution_mode must be an integer"},
		"custom_op":     {"custom_op/1/model.onnx", "Scale"},
		// The configuration's op library is said to be the missing piece.
		"custom_op_library": {"custom_op_library/1/model.onnx", "Scale", `model_operations names the custom operator libraries ["libscale_op.so"], which this server does not load`},
	}
	reasons := map[string]string{}
	for _, st := range srv.Index(context.Background()) {
		if st.State != "READY" {
			reasons[st.Name] = st.Reason
		}
	}
	if strings.Contains(reasons["custom_op"], "model_operations") {
		t.Errorf("custom_op: reason %q mentions model_operations, which its configuration has not", reasons["custom_op"])
	}
	for model, parts := range want {
		for _, p := range append(parts, "'"+model+"'") {
			if !strings.Contains(reasons[model], p) {
				t.Errorf("%s: reason %q does not mention %q", model, reasons[model], p)
			}
		}
	}
	if len(reasons) != len(want) {
		t.Errorf("failed models %v, want exactly %d", reasons, len(want))
	}
	in := must(tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16)))
	in1 := in
	in1.Name = "INPUT1"
	infer(t, srv, "good", nil, in, in1)
}

// TestServersShareTheEnvironment runs two servers at once, closes one while
// the other keeps serving, and loads again after both closed (the
// environment is released with the last model and created anew).
func TestServersShareTheEnvironment(t *testing.T) {
	r := newRepo(t).model("add_sub", "add_sub.onnx", "")
	in := must(tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16)))
	in1 := in
	in1.Name = "INPUT1"
	for round := range 2 {
		a := r.serve()
		b := r.serve()
		infer(t, a, "add_sub", nil, in, in1)
		infer(t, b, "add_sub", nil, in, in1)
		if err := a.Close(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		infer(t, b, "add_sub", nil, in, in1)
		if err := b.Close(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func TestLibraryNotFound(t *testing.T) {
	r := newRepo(t).model("add_sub", "add_sub.onnx", "")
	_, err := triton.New(triton.WithModelRepository(r.dir),
		triton.WithBackend("onnxruntime", onnxruntime.New(onnxruntime.WithLibraryPath(filepath.Join(r.dir, "nope.so")))))
	if err == nil || !strings.Contains(err.Error(), "nope.so") {
		t.Fatalf("error %v does not name the missing library", err)
	}
	t.Setenv("ONNXRUNTIME_LIB", "")
	t.Chdir(t.TempDir()) // no checkout above: nothing to find
	_, err = triton.New(triton.WithModelRepository(r.dir))
	for _, p := range []string{"ONNX Runtime 1.24.1 shared library was not found", "ONNXRUNTIME_LIB", "scripts/fetch-onnxruntime.sh", "onnxruntime-node@1.24.1"} {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v does not mention %q", err, p)
		}
	}
}

// TestInputTheModelRejects sends an input that passes the server's checks
// but that ONNX Runtime refuses while running: the request fails with an
// error naming the model, its file and ONNX Runtime's reason, and the model
// keeps serving.
func TestInputTheModelRejects(t *testing.T) {
	srv := newRepo(t).model("rows", "reshape_rows.onnx", `backend: "onnxruntime"
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]`).serve()
	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "rows", Inputs: []tensor.Tensor{
		must(tensor.From("X", tensor.Shape{1, 3}, []float32{1, 2, 3})),
	}})
	if err == nil {
		t.Fatal("ONNX Runtime accepted 3 elements for rows of 4")
	}
	for _, p := range []string{`model "rows"`, "ONNX Runtime failed to run model 'rows'", "rows/1/model.onnx", "Reshape"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
	if c := triton.CodeOf(err); c != triton.Internal && c != triton.InvalidArgument {
		t.Errorf("code %v", c)
	}
	y := output(t, infer(t, srv, "rows", nil, must(tensor.From("X", tensor.Shape{2, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8}))), "Y")
	if !y.Shape.Equal(tensor.Shape{2, 4}) {
		t.Errorf("after the failure: %v", y.Shape)
	}
}

// TestWarmupThroughONNXRuntime runs model_warmup samples (random and zero
// data) through real sessions before the model takes traffic.
func TestWarmupThroughONNXRuntime(t *testing.T) {
	srv := newRepo(t).model("add_sub", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
instance_group [ { count: 2 kind: KIND_CPU } ]
model_warmup [
  { name: "random" batch_size: 8 count: 2
    inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 16 ] random_data: true } }
    inputs { key: "INPUT1" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } }
]`).serve()
	in := must(tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16)))
	in1 := in
	in1.Name = "INPUT1"
	infer(t, srv, "add_sub", nil, in, in1)

	bad := newRepo(t).model("add_sub", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8
model_warmup [ { name: "wrong" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } } ]`)
	_, err := triton.New(triton.WithModelRepository(bad.dir), triton.WithBackend("onnxruntime", onnxruntime.New()))
	if err == nil || !strings.Contains(err.Error(), "model_warmup") || !strings.Contains(err.Error(), "INPUT1") {
		t.Fatalf("warm-up missing an input: %v", err)
	}
}
