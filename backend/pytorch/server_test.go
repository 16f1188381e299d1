package pytorch_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

const addsubConfig = `platform: "pytorch_libtorch"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 16 ] } ]
`

// TestServeAddSub serves addsub.pt (traced) through the platform name, its
// inputs named after forward's arguments, outputs by <name>__<index>.
func TestServeAddSub(t *testing.T) {
	srv := newRepo(t).model("addsub", "addsub.pt", addsubConfig).Serve()
	a, b := seq(32, func(i int) float32 { return float32(i) }), seq(32, func(i int) float32 { return float32(i) / 4 })
	resp := infer(t, srv, "addsub", must(tensor.From("INPUT0", tensor.Shape{2, 16}, a)), must(tensor.From("INPUT1", tensor.Shape{2, 16}, b)))
	sum, diff := floats(t, resp, "OUTPUT__0"), floats(t, resp, "OUTPUT__1")
	for i := range a {
		if sum[i] != a[i]+b[i] || diff[i] != a[i]-b[i] {
			t.Fatalf("element %d: sum %v diff %v, want %v %v", i, sum[i], diff[i], a[i]+b[i], a[i]-b[i])
		}
	}
	if s := output(t, resp, "OUTPUT__0").Shape; !s.Equal(tensor.Shape{2, 16}) {
		t.Errorf("OUTPUT__0 shape %v, want [2 16]", s)
	}
}

// TestServeNamingConventions serves addsub_args.pt (forward(a, b) -> (a+b,
// a-b)) under each convention: inputs by argument name in either order,
// by <name>__<index> swapped, and by config order with Triton's warning.
func TestServeNamingConventions(t *testing.T) {
	for _, c := range []struct {
		name, inputs, outputs string
		in0, in1, sum, diff   string // config names: input fed to a, to b; output read as a+b, a-b
		warns                 []string
	}{{
		name:    "forward_argument",
		inputs:  `{ name: "b" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "a" data_type: TYPE_FP32 dims: [ 4 ] }`,
		outputs: `{ name: "OUT__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] }`,
		in0:     "a", in1: "b", sum: "OUT__0", diff: "OUT__1",
	}, {
		name:    "named_index",
		inputs:  `{ name: "X__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "Y__0" data_type: TYPE_FP32 dims: [ 4 ] }`,
		outputs: `{ name: "D__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "S__0" data_type: TYPE_FP32 dims: [ 4 ] }`,
		in0:     "Y__0", in1: "X__1", sum: "S__0", diff: "D__1",
	}, {
		name:    "strict_ordering",
		inputs:  `{ name: "first" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "second" data_type: TYPE_FP32 dims: [ 4 ] }`,
		outputs: `{ name: "plus" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "minus" data_type: TYPE_FP32 dims: [ 4 ] }`,
		in0:     "first", in1: "second", sum: "plus", diff: "minus",
		// No warning, as Triton: the names have no "__".
	}, {
		name:    "strict_ordering_warned",
		inputs:  `{ name: "first__a" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "second" data_type: TYPE_FP32 dims: [ 4 ] }`,
		outputs: `{ name: "plus__p" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "minus" data_type: TYPE_FP32 dims: [ 4 ] }`,
		in0:     "first__a", in1: "second", sum: "plus__p", diff: "minus",
		warns: []string{
			"input 'first__a' or previous input(s) are neither an input argument to the model 'strict_ordering_warned' nor do they follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.",
			"output 'plus__p' or previous output(s) of the model 'strict_ordering_warned' do not follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			srv := newRepo(t).model(c.name, "addsub_args.pt", fmt.Sprintf("backend: \"pytorch\"\ninput [ %s ]\noutput [ %s ]\n", c.inputs, c.outputs)).
				Serve(triton.WithLogger(zap.New(core)))
			a, b := []float32{1, 2, 3, 4}, []float32{10, 20, 30, 40}
			resp := infer(t, srv, c.name, must(tensor.From(c.in0, tensor.Shape{4}, a)), must(tensor.From(c.in1, tensor.Shape{4}, b)))
			if got := floats(t, resp, c.sum); !slices.Equal(got, []float32{11, 22, 33, 44}) {
				t.Errorf("%s = %v, want a+b", c.sum, got)
			}
			if got := floats(t, resp, c.diff); !slices.Equal(got, []float32{-9, -18, -27, -36}) {
				t.Errorf("%s = %v, want a-b", c.diff, got)
			}
			var warns []string
			for _, e := range logs.All() {
				if strings.Contains(e.Message, "naming convention") {
					warns = append(warns, e.Message)
				}
			}
			if !slices.Equal(warns, c.warns) {
				t.Errorf("warnings\n%q\nwant\n%q", warns, c.warns)
			}
		})
	}
}

// TestServeTrainingMode serves training.pt, saved in training mode: as
// under Triton (no eval()), forward sees self.training and returns x + 1
// (x in eval mode), and the load warns about it; a module saved in eval
// mode gets no warning.
func TestServeTrainingMode(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	srv := newRepo(t).model("training", "training.pt", `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 3 ] } ]`).
		model("eval", "raises.pt", `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 3 ] } ]`).Serve(triton.WithLogger(zap.New(core)))
	resp := infer(t, srv, "training", must(tensor.From("x", tensor.Shape{3}, []float32{1, 2, 3})))
	if got := floats(t, resp, "OUT__0"); !slices.Equal(got, []float32{2, 3, 4}) {
		t.Errorf("OUT__0 = %v, want x + 1 (the module's training branch)", got)
	}
	var warned []string
	for _, e := range logs.FilterMessageSnippet("saved in training mode").All() {
		warned = append(warned, e.Message)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "model 'training'") {
		t.Errorf("training-mode warnings %q, want one naming model 'training'", warned)
	}
}

// TestServeWrittenOrKeptInputs: a model that writes its input in place
// leaves the caller's tensor as it was, and one that keeps its input in
// the module reads the values it was given after the caller has reused
// that memory (before, libtorch wrapped the caller's memory for both);
// the load says which arguments are copied.
func TestServeWrittenOrKeptInputs(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	const config = `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`
	srv := newRepo(t).model("inplace", "inplace.pt", config).model("keeps", "keeps.pt", config).
		model("addsub", "addsub.pt", `backend: "pytorch"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]`).
		Serve(triton.WithLogger(zap.New(core)))
	x := must(tensor.From("x", tensor.Shape{4}, []float32{1, 2, 3, 4}))
	if got := floats(t, infer(t, srv, "inplace", x), "OUT__0"); !slices.Equal(got, []float32{4, 6, 8, 10}) {
		t.Errorf("inplace: OUT__0 = %v, want (x + 1) * 2", got)
	}
	if got, _ := tensor.View[float32](x); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("inplace: the caller's input now reads %v, want it unchanged", got)
	}
	infer(t, srv, "keeps", x)
	copy(x.Data, must(tensor.From("x", tensor.Shape{4}, []float32{5, 6, 7, 8})).Data) // the caller reuses its memory
	if got := floats(t, infer(t, srv, "keeps", x), "OUT__0"); !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("keeps: the kept input reads %v, want the first call's [1 2 3 4]", got)
	}
	var said []string
	for _, e := range logs.FilterMessageSnippet("are copied before each forward").All() {
		said = append(said, e.Message)
	}
	slices.Sort(said)
	if len(said) != 2 || !strings.Contains(said[0], `model 'inplace': forward may write in place or keep the arguments ["x"]`) ||
		!strings.Contains(said[1], "model 'keeps'") {
		t.Errorf("load messages %q, want one for inplace and one for keeps (none for addsub)", said)
	}
}

// TestServeDictInput serves dict_in.pt: the config's inputs become the
// entries of forward's Dict(str, Tensor).
func TestServeDictInput(t *testing.T) {
	srv := newRepo(t).model("dict_in", "dict_in.pt", `backend: "pytorch"
input [ { name: "b" data_type: TYPE_FP32 dims: [ 3 ] }, { name: "a" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 3 ] } ]`).Serve()
	resp := infer(t, srv, "dict_in", must(tensor.From("a", tensor.Shape{3}, []float32{1, 2, 3})), must(tensor.From("b", tensor.Shape{3}, []float32{0.5, 0.25, 0})))
	if got := floats(t, resp, "OUT__0"); !slices.Equal(got, []float32{1.5, 2.25, 3}) {
		t.Errorf("OUT__0 = %v, want a+b", got)
	}
}

// TestServeStrings serves strings.pt (List[str] -> (INT64 lengths,
// upper-cased List[str])), batching: two requests' strings go as one list
// and come back split per request.
func TestServeStrings(t *testing.T) {
	srv := newRepo(t).model("strings", "strings.pt", `backend: "pytorch"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 50000 preferred_batch_size: [ 2 ] }
input [ { name: "TEXT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]
output [ { name: "LEN__0" data_type: TYPE_INT64 dims: [ 1 ] reshape: { shape: [ ] } },
         { name: "UPPER__1" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]`).Serve()
	reqs := [][]string{{"hello", "", "a\x00b"}, {"xyz"}}
	var wg sync.WaitGroup
	for _, texts := range reqs {
		wg.Go(func() {
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "strings", Inputs: []tensor.Tensor{
				must(tensor.FromStrings("TEXT__0", tensor.Shape{int64(len(texts)), 1}, texts)),
			}})
			if err != nil {
				t.Errorf("Infer %q: %v", texts, err)
				return
			}
			lens, err := tensor.View[int64](output(t, resp, "LEN__0"))
			up, err2 := tensor.Strings(output(t, resp, "UPPER__1"))
			if err != nil || err2 != nil {
				t.Errorf("%q: %v %v", texts, err, err2)
				return
			}
			for i, s := range texts {
				if lens[i] != int64(len(s)) || up[i] != strings.ToUpper(s) {
					t.Errorf("%q: lengths %v, upper %q", texts, lens, up)
				}
			}
			if s := output(t, resp, "UPPER__1").Shape; !s.Equal(tensor.Shape{int64(len(texts)), 1}) {
				t.Errorf("%q: UPPER__1 shape %v", texts, s)
			}
		})
	}
	wg.Wait()
}

// TestServeStringsShape serves joined.pt, which returns one string
// whatever its list's length: without batching the request gets it as
// [1]; with batching a lone request gets its rows, as Triton shapes it,
// so a list that is not one string per row fails the request as the
// model's other output errors do (it got the whole list, which the
// server's shape check then refused as Internal).
func TestServeStringsShape(t *testing.T) {
	const io = `input [ { name: "TEXT__0" data_type: TYPE_STRING dims: [ %s ] } ]
output [ { name: "OUT__0" data_type: TYPE_STRING dims: [ %[1]s ] } ]`
	srv := newRepo(t).
		model("plain", "joined.pt", `backend: "pytorch"
`+fmt.Sprintf(io, "-1")).
		model("batching", "joined.pt", `backend: "pytorch"
max_batch_size: 4
`+strings.ReplaceAll(fmt.Sprintf(io, "1"), "] }", "] reshape: { shape: [ ] } }")+` dynamic_batching { }`).Serve()

	out := output(t, infer(t, srv, "plain", must(tensor.FromStrings("TEXT__0", tensor.Shape{3}, []string{"a", "b", "c"}))), "OUT__0")
	if got, err := tensor.Strings(out); err != nil || !slices.Equal(got, []string{"a b c"}) || !out.Shape.Equal(tensor.Shape{1}) {
		t.Errorf("plain: %q %v, shape %v; want [\"a b c\"] [1]", got, err, out.Shape)
	}

	out = output(t, infer(t, srv, "batching", must(tensor.FromStrings("TEXT__0", tensor.Shape{1, 1}, []string{"x"}))), "OUT__0")
	if got, err := tensor.Strings(out); err != nil || !slices.Equal(got, []string{"x"}) || !out.Shape.Equal(tensor.Shape{1, 1}) {
		t.Errorf("batching, one row: %q %v, shape %v; want [\"x\"] [1 1]", got, err, out.Shape)
	}

	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "batching", Inputs: []tensor.Tensor{
		must(tensor.FromStrings("TEXT__0", tensor.Shape{3, 1}, []string{"a", "b", "c"}))}})
	const want = "model 'batching': output 'OUT__0' is a List[str] of 1 strings for a batch of 3"
	if err == nil || !strings.Contains(err.Error(), want) || triton.CodeOf(err) != triton.InvalidArgument {
		t.Errorf("batching, three rows: %v (%v); want InvalidArgument containing %q", err, triton.CodeOf(err), want)
	}
}

// dtypeNames are dtypes.pt's arguments with their config types.
var dtypeNames = []struct{ arg, typ string }{
	{"b", "BOOL"}, {"u8", "UINT8"}, {"i8", "INT8"}, {"i16", "INT16"}, {"i32", "INT32"},
	{"i64", "INT64"}, {"f16", "FP16"}, {"bf16", "BF16"}, {"f32", "FP32"}, {"f64", "FP64"},
}

// TestServeDatatypes serves dtypes.pt, one input and output of every
// datatype libtorch has (BF16 beyond Triton): each comes back + 1 (BOOL
// negated).
func TestServeDatatypes(t *testing.T) {
	var ins, outs []string
	for i, d := range dtypeNames {
		ins = append(ins, fmt.Sprintf(`{ name: "%s" data_type: TYPE_%s dims: [ 3 ] }`, d.arg, d.typ))
		outs = append(outs, fmt.Sprintf(`{ name: "OUT_%s__%d" data_type: TYPE_%s dims: [ 3 ] }`, d.arg, i, d.typ))
	}
	srv := newRepo(t).model("dtypes", "dtypes.pt", fmt.Sprintf("backend: \"pytorch\"\nmax_batch_size: 4\ninput [ %s ]\noutput [ %s ]\n",
		strings.Join(ins, ", "), strings.Join(outs, ", "))).Serve()
	inputs := []tensor.Tensor{
		must(tensor.From("b", tensor.Shape{1, 3}, []bool{true, false, true})),
		must(tensor.From("u8", tensor.Shape{1, 3}, []uint8{0, 254, 7})),
		must(tensor.From("i8", tensor.Shape{1, 3}, []int8{-128, -1, 5})),
		must(tensor.From("i16", tensor.Shape{1, 3}, []int16{-300, 0, 300})),
		must(tensor.From("i32", tensor.Shape{1, 3}, []int32{-70000, 0, 70000})),
		must(tensor.From("i64", tensor.Shape{1, 3}, []int64{-1 << 40, 0, 1 << 40})),
		must(tensor.From("f16", tensor.Shape{1, 3}, []tensor.Float16{tensor.Float16FromFloat32(0.5), tensor.Float16FromFloat32(-2), 0})),
		must(tensor.From("bf16", tensor.Shape{1, 3}, []tensor.BFloat16{tensor.BFloat16FromFloat32(1), tensor.BFloat16FromFloat32(-3), tensor.BFloat16FromFloat32(256)})),
		must(tensor.From("f32", tensor.Shape{1, 3}, []float32{0.25, -1, 1e6})),
		must(tensor.From("f64", tensor.Shape{1, 3}, []float64{math.Pi, -0.5, 1e300})),
	}
	resp := infer(t, srv, "dtypes", inputs...)
	check := func(i int, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", dtypeNames[i].typ, got, want)
		}
	}
	o := func(i int) tensor.Tensor {
		out := output(t, resp, fmt.Sprintf("OUT_%s__%d", dtypeNames[i].arg, i))
		if out.DataType.String() != dtypeNames[i].typ || !out.Shape.Equal(tensor.Shape{1, 3}) {
			t.Errorf("output %d is %v %v, want %s [1 3]", i, out.DataType, out.Shape, dtypeNames[i].typ)
		}
		return out
	}
	check(0, must(tensor.View[bool](o(0))), []bool{false, true, false})
	check(1, must(tensor.View[uint8](o(1))), []uint8{1, 255, 8})
	check(2, must(tensor.View[int8](o(2))), []int8{-127, 0, 6})
	check(3, must(tensor.View[int16](o(3))), []int16{-299, 1, 301})
	check(4, must(tensor.View[int32](o(4))), []int32{-69999, 1, 70001})
	check(5, must(tensor.View[int64](o(5))), []int64{-1<<40 + 1, 1, 1<<40 + 1})
	f16 := must(tensor.View[tensor.Float16](o(6)))
	check(6, []float32{f16[0].Float32(), f16[1].Float32(), f16[2].Float32()}, []float32{1.5, -1, 1})
	bf := must(tensor.View[tensor.BFloat16](o(7)))
	check(7, []float32{bf[0].Float32(), bf[1].Float32(), bf[2].Float32()}, []float32{2, -2, 256}) // 257 rounds to 256 in bfloat16
	check(8, must(tensor.View[float32](o(8))), []float32{1.25, 0, 1e6 + 1})
	check(9, must(tensor.View[float64](o(9))), []float64{math.Pi + 1, 0.5, 1e300})
}

// TestServeCNNBatching sends cnn.pt single images from 16 goroutines at
// once under dynamic batching: every answer equals the same image run
// alone, whatever batch it rode in.
func TestServeCNNBatching(t *testing.T) {
	srv := newRepo(t).model("cnn", "cnn.pt", `backend: "pytorch"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 2000 }
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]`).Serve()
	image := func(k int) []float32 { return seq(784, func(i int) float32 { return float32((i*7+k*13)%17) / 17 }) }
	const n = 16
	want := make([][]float32, n)
	for k := range n {
		want[k] = floats(t, infer(t, srv, "cnn", must(tensor.From("INPUT__0", tensor.Shape{1, 1, 28, 28}, image(k)))), "OUTPUT__0")
	}
	var wg sync.WaitGroup
	for round := range 3 {
		for k := range n {
			wg.Go(func() {
				resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "cnn", Inputs: []tensor.Tensor{
					must(tensor.From("INPUT__0", tensor.Shape{1, 1, 28, 28}, image(k))),
				}})
				if err != nil {
					t.Errorf("round %d image %d: %v", round, k, err)
					return
				}
				got, err := tensor.View[float32](resp.Outputs[0])
				if err != nil || len(got) != 10 {
					t.Errorf("round %d image %d: %v %v", round, k, got, err)
					return
				}
				for i := range got {
					if math.Abs(float64(got[i]-want[k][i])) > 1e-5 {
						t.Errorf("round %d image %d: logits %v, alone %v", round, k, got, want[k])
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if st, err := srv.Stats("cnn", 0); err == nil && len(st) == 1 {
		t.Logf("%d inferences in %d executions", st[0].InferenceCount, st[0].ExecutionCount)
	}
}

// TestServeEdgeShapes: a non-contiguous output (transpose.pt returns
// x.t()) comes back in row-major order, a zero-element input runs, and a
// KIND_MODEL instance serves on the CPU.
func TestServeEdgeShapes(t *testing.T) {
	srv := newRepo(t).
		model("transpose", "transpose.pt", `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2, 3 ] } ]
output [ { name: "T__0" data_type: TYPE_FP32 dims: [ 3, 2 ] } ]
instance_group [ { kind: KIND_MODEL } ]`).
		model("empty", "addsub_args.pt", `backend: "pytorch"
input [ { name: "a" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "b" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "S__0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "D__1" data_type: TYPE_FP32 dims: [ -1 ] } ]`).
		Serve()
	resp := infer(t, srv, "transpose", must(tensor.From("x", tensor.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})))
	if got := floats(t, resp, "T__0"); !slices.Equal(got, []float32{1, 4, 2, 5, 3, 6}) || !output(t, resp, "T__0").Shape.Equal(tensor.Shape{3, 2}) {
		t.Errorf("T__0 = %v %v, want x transposed, [3 2] [1 4 2 5 3 6]", output(t, resp, "T__0").Shape, got)
	}
	resp = infer(t, srv, "empty", must(tensor.From("a", tensor.Shape{0}, []float32{})), must(tensor.From("b", tensor.Shape{0}, []float32{})))
	if s := output(t, resp, "S__0"); !s.Shape.Equal(tensor.Shape{0}) || len(s.Data) != 0 {
		t.Errorf("S__0 of empty inputs: %v %d bytes, want [0]", s.Shape, len(s.Data))
	}
}

// TestServeRaggedBatching: four requests of different lengths run as one
// batch of ragged.pt, which takes every element in one rank-1 tensor and
// the batch input that says where each request's elements lie; each
// request gets back its own elements, in its own shape (batch_output),
// each plus 100 times its place in the batch.
func TestServeRaggedBatching(t *testing.T) {
	srv := newRepo(t).model("ragged", "ragged.pt", `backend: "pytorch"
max_batch_size: 4
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 60000000 }
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO target_name: "offsets" data_type: TYPE_INT32 source_input: "x" } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ]
batch_output [ { target_name: "OUTPUT__0" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "x" } ]`).Serve()
	places := make([]float32, 4)
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			in := seq(k+1, func(i int) float32 { return float32(10*k + i) })
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "ragged", Inputs: []tensor.Tensor{
				must(tensor.From("x", tensor.Shape{1, int64(k + 1)}, in)),
			}})
			if err != nil {
				t.Errorf("request %d: %v", k, err)
				return
			}
			out := output(t, resp, "OUTPUT__0")
			got, err := tensor.View[float32](out)
			if err != nil || !out.Shape.Equal(tensor.Shape{1, int64(k + 1)}) {
				t.Errorf("request %d: output %v %v, want shape [1 %d]", k, out.Shape, err, k+1)
				return
			}
			places[k] = got[0] - in[0]
			for i := range got {
				if got[i]-in[i] != places[k] {
					t.Errorf("request %d: output %v for input %v: not one offset for the request", k, got, in)
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(places)
	if !slices.Equal(places, []float32{0, 100, 200, 300}) {
		t.Errorf("offsets the model added %v, want 0, 100, 200 and 300 (each request's place in one batch)", places)
	}
	if st, err := srv.Stats("ragged", 0); err != nil || len(st) != 1 || st[0].ExecutionCount != 1 {
		t.Errorf("stats %+v %v, want one execution", st, err)
	}
}
