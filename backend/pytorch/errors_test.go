package pytorch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

const oneOut = `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`

// TestLoadErrors: each model that cannot load fails with Triton's text
// (or this backend's, where Triton has none) and code, naming the model.
func TestLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name, file, config string
		code               triton.Code
		want               []string
	}{{
		name: "not_torchscript", file: "README.md", // a file that is not a TorchScript archive
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut,
		code:   triton.Internal, want: []string{"failed to load model 'not_torchscript': "},
	}, {
		name: "arguments", file: "addsub.pt",
		config: `backend: "pytorch" input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut,
		code:   triton.InvalidArgument, want: []string{"unable to load model 'arguments', configuration expects 1 inputs, model provides 2"},
	}, {
		name: "other_args", file: "other_args.pt",
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut,
		code:   triton.Internal, want: []string{"An input of type 'int' was detected in the model. Only a single input of type Dict(str, Tensor) or input(s) of type Tensor are supported."},
	}, {
		name: "uint32", file: "raises.pt",
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_UINT32 dims: [ 4 ] } ] ` + oneOut,
		code:   triton.Internal, want: []string{"unsupported datatype TYPE_UINT32 for input 'x' for model 'uint32'"},
	}, {
		name: "gpu", file: "raises.pt",
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut + ` instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]`,
		code:   triton.Unsupported, want: []string{"model 'gpu': KIND_GPU instances need libtorch built with CUDA", "KIND_CPU or KIND_MODEL"},
	}, {
		name: "aoti", file: "raises.pt",
		config: `platform: "torch_aoti" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut,
		code:   triton.Unsupported, want: []string{"model 'aoti': platform 'torch_aoti' (a PyTorch AOTInductor package, model.pt2) needs libtorch 2's AOTInductor runtime"},
	}, {
		name: "bad_parameter", file: "raises.pt",
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] ` + oneOut + ` parameters { key: "INFERENCE_MODE" value: { string_value: "maybe" } }`,
		code:   triton.InvalidArgument, want: []string{"parameter 'INFERENCE_MODE' of model 'bad_parameter': failed to convert 'maybe' to boolean"},
	}, {
		name: "string_for_tensor", file: "raises.pt",
		config: `backend: "pytorch" input [ { name: "x" data_type: TYPE_STRING dims: [ -1 ] } ] ` + oneOut,
		code:   triton.InvalidArgument, want: []string{"input 'x' of model 'string_for_tensor' is TYPE_STRING, passed as List[str], but forward's argument 0 ('x') is Tensor"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			err := newRepo(t).model(c.name, c.file, c.config).Load(triton.WithStartupModels(c.name), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
			if err == nil {
				t.Fatal("the model loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if code := triton.CodeOf(err); code != c.code {
				t.Errorf("code %v, want %v (error %v)", code, c.code, err)
			}
		})
	}
}

// TestLoadMissingFile: a version folder without model.pt is Triton's
// UNAVAILABLE "unable to find".
func TestLoadMissingFile(t *testing.T) {
	r := newRepo(t)
	r.Write("nofile/config.pbtxt", []byte(`backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] `+oneOut))
	r.Write("nofile/1/other.pt", modelFile(t, "raises.pt"))
	err := r.Load(triton.WithStartupModels("nofile"), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
	if err == nil || !strings.Contains(err.Error(), "unable to find '"+r.Dir+"/nofile/1/model.pt' for model instance 'nofile'") {
		t.Fatalf("error %v", err)
	}
	if code := triton.CodeOf(err); code != triton.Unavailable {
		t.Errorf("code %v, want Unavailable", code)
	}
}

// TestExecuteErrors: what goes wrong when forward runs fails the request
// with Triton's text and code, and the model keeps serving.
func TestExecuteErrors(t *testing.T) {
	in := `input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] `
	for _, c := range []struct {
		name, file, config string
		x                  []float32
		code               triton.Code
		want               string
	}{
		{"raises", "raises.pt", in + oneOut, []float32{1, -1, 2, 3}, triton.Internal, "PyTorch execute failure: "},
		{"dict_out", "dict_out.pt", in + oneOut, []float32{1, 2, 3, 4}, triton.Internal,
			"PyTorch execute failure: output must be of type Tensor, List[str] or Tuple containing one of these two types. It should not be a List / Dictionary of Tensors or a Scalar"},
		{"list_out", "list_out.pt", in + oneOut, []float32{1, 2, 3, 4}, triton.Internal,
			"PyTorch execute failure: output must be of type Tensor or List[str], received List[Tensor]"},
		{"nested_out", "nested_out.pt", in + oneOut, []float32{1, 2, 3, 4}, triton.Internal,
			"PyTorch execute failure: output at index 0 is a nested tensor, which Triton has no shape for"},
		{"tuple_list_int", "tuple_list_int.pt", in + `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "N__1" data_type: TYPE_INT64 dims: [ 1 ] } ]`,
			[]float32{1, 2, 3, 4}, triton.Internal, "PyTorch execute failure: output at index 1 must be of type Tensor or List[str], received List[int]"},
		{"scalar_out", "scalar_out.pt", in + `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 1 ] } ]`, []float32{1, 2, 3, 4}, triton.InvalidArgument,
			"output 'OUT__0' is a scalar which is not supported."},
		{"index", "raises.pt", in + `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			[]float32{1, 2, 3, 4}, triton.InvalidArgument,
			"The output OUT__1 in the model configuration refers to an output index which doesn't exist. This model has 1 outputs"},
		{"dtype", "raises.pt", in + `output [ { name: "OUT__0" data_type: TYPE_INT64 dims: [ 4 ] } ]`, []float32{1, 2, 3, 4}, triton.InvalidArgument,
			"configuration expects datatype TYPE_INT64 for output 'OUT__0', model provides TYPE_FP32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newRepo(t).model(c.name, c.file, `backend: "pytorch" `+c.config).Serve()
			_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: c.name, Inputs: []tensor.Tensor{must(tensor.From("x", tensor.Shape{4}, c.x))}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if code := triton.CodeOf(err); code != c.code {
				t.Errorf("code %v, want %v", code, c.code)
			}
			if c.name == "raises" {
				if !strings.Contains(err.Error(), "negative input") {
					t.Errorf("error %v does not carry the model's message", err)
				}
				resp := infer(t, srv, "raises", must(tensor.From("x", tensor.Shape{4}, []float32{1, 2, 3, 4})))
				if got := floats(t, resp, "OUT__0"); got[3] != 8 {
					t.Errorf("after the failure: %v, want x*2", got)
				}
			}
		})
	}
}

// TestUnaskedOutputChecked: an output's datatype is checked against the
// configuration whether the request asked for it or not, as Triton checks
// every output of the configuration.
func TestUnaskedOutputChecked(t *testing.T) {
	srv := newRepo(t).model("addsub", "addsub_args.pt", `backend: "pytorch"
input [ { name: "a" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "b" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "SUM__0" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "DIFF__1" data_type: TYPE_INT64 dims: [ 2 ] } ]`).Serve()
	x := []float32{1, 2}
	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "addsub", Outputs: []string{"SUM__0"},
		Inputs: []tensor.Tensor{must(tensor.From("a", tensor.Shape{2}, x)), must(tensor.From("b", tensor.Shape{2}, x))}})
	if want := "configuration expects datatype TYPE_INT64 for output 'DIFF__1', model provides TYPE_FP32"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if code := triton.CodeOf(err); code != triton.InvalidArgument {
		t.Errorf("code %v, want InvalidArgument", code)
	}
}
