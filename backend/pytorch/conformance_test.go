package pytorch_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/tensor"
)

// TestConformance runs the conformance kit on the PyTorch backend with the
// test models: addsub (traced, batching, inputs by argument name), cnn
// (batching, checked for finite logits), strings (List[str] in and out,
// batching), dict_in (a Dict(str, Tensor) input, not batching), state
// (the implicit state given in each request, as the kit asks) and raises,
// whose requests with a negative element must fail on their own while
// the rest of their batch is served.
func TestConformance(t *testing.T) {
	r := newRepo(t)
	backendtest.Run(t, pytorch.New(),
		kitModel(r, "addsub", "addsub.pt", `max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 16 ] } ]`,
			addSubRequest(1, 0), addSubRequest(3, 100)),
		kitModel(r, "cnn", "cnn.pt", `max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 10 ] } ]`,
			cnnRequest(1), cnnRequest(2)),
		kitModel(r, "strings", "strings.pt", `max_batch_size: 8
input [ { name: "TEXT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]
output [ { name: "LEN__0" data_type: TYPE_INT64 dims: [ 1 ] reshape: { shape: [ ] } },
         { name: "UPPER__1" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]`,
			stringsRequest("abc", "", "x\x00y"), stringsRequest("deja vu")),
		kitModel(r, "dict_in", "dict_in.pt", `input [ { name: "a" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "b" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 2 ] } ]`,
			backendtest.Request{
				Inputs: []tensor.Tensor{must(tensor.From("a", tensor.Shape{2}, []float32{1, 2})), must(tensor.From("b", tensor.Shape{2}, []float32{3, 4}))},
				Check:  wantFloats("OUT__0", 4, 6),
			}),
		kitModel(r, "state", "state.pt", strings.Replace(stateConfig, `backend: "pytorch"`, "", 1),
			backendtest.Request{
				Inputs: []tensor.Tensor{must(tensor.From("INPUT__0", tensor.Shape{1, 4}, []float32{1, 2, 3, 4})), must(tensor.From("STATE__1", tensor.Shape{1, 4}, []float32{10, 10, 10, 10}))},
				Check:  wantFloats("OUTPUT__0", 11, 12, 13, 14),
			}),
		withFailing(kitModel(r, "raises", "raises.pt", `max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 2 ] } ]`,
			backendtest.Request{Inputs: []tensor.Tensor{must(tensor.From("x", tensor.Shape{1, 2}, []float32{1, 2}))}, Check: wantFloats("OUT__0", 2, 4)},
			backendtest.Request{Inputs: []tensor.Tensor{must(tensor.From("x", tensor.Shape{2, 2}, []float32{0, 1, 2, 3}))}, Check: wantFloats("OUT__0", 0, 2, 4, 6)}),
			backendtest.Request{Inputs: []tensor.Tensor{must(tensor.From("x", tensor.Shape{1, 2}, []float32{1, -2}))}}),
	)
}

// kitModel writes the model into r and returns it for the kit, the config
// (name and backend added) parsed, normalized and validated as the server
// does.
func kitModel(r *repo, name, file, config string, reqs ...backendtest.Request) backendtest.Model {
	r.TB.Helper()
	spec := r.spec(name, file, fmt.Sprintf("name: %q\nbackend: %q\n%s", name, pytorch.Name, config))
	return backendtest.Model{Config: spec.Config, Dir: spec.Dir, Requests: reqs}
}

func withFailing(m backendtest.Model, failing ...backendtest.Request) backendtest.Model {
	m.Failing = failing
	return m
}

func addSubRequest(rows int64, base float32) backendtest.Request {
	n := int(rows * 16)
	a, b := seq(n, func(i int) float32 { return base + float32(i) }), seq(n, func(i int) float32 { return base - float32(i)/2 })
	sum, diff := make([]float32, n), make([]float32, n)
	for i := range a {
		sum[i], diff[i] = a[i]+b[i], a[i]-b[i]
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{must(tensor.From("INPUT0", tensor.Shape{rows, 16}, a)), must(tensor.From("INPUT1", tensor.Shape{rows, 16}, b))},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				want := map[string][]float32{"OUTPUT__0": sum, "OUTPUT__1": diff}[o.Name]
				if err := wantFloats(o.Name, want...)([]tensor.Tensor{o}); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func cnnRequest(rows int64) backendtest.Request {
	img := seq(int(rows*784), func(i int) float32 { return float32(i%29) / 29 })
	return backendtest.Request{
		Inputs: []tensor.Tensor{must(tensor.From("INPUT__0", tensor.Shape{rows, 1, 28, 28}, img))},
		Check: func(outs []tensor.Tensor) error {
			v, err := tensor.View[float32](outs[0])
			if err != nil {
				return err
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || x == 0 {
					return fmt.Errorf("logits %v: not all finite and non-zero", v)
				}
			}
			return nil
		},
	}
}

func stringsRequest(texts ...string) backendtest.Request {
	return backendtest.Request{
		Inputs: []tensor.Tensor{must(tensor.FromStrings("TEXT__0", tensor.Shape{int64(len(texts)), 1}, texts))},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				switch o.Name {
				case "LEN__0":
					got, err := tensor.View[int64](o)
					if err != nil {
						return err
					}
					for i, s := range texts {
						if got[i] != int64(len(s)) {
							return fmt.Errorf("LEN__0 = %v for %q", got, texts)
						}
					}
				case "UPPER__1":
					got, err := tensor.Strings(o)
					if err != nil {
						return err
					}
					want := make([]string, len(texts))
					for i, s := range texts {
						want[i] = strings.ToUpper(s)
					}
					if !slices.Equal(got, want) {
						return fmt.Errorf("UPPER__1 = %q, want %q", got, want)
					}
				}
			}
			return nil
		},
	}
}

// wantFloats checks that the first output, named name, holds want.
func wantFloats(name string, want ...float32) func([]tensor.Tensor) error {
	return func(outs []tensor.Tensor) error {
		got, err := tensor.View[float32](outs[0])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s = %v, want %v", name, got, want)
		}
		return nil
	}
}
