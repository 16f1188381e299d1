package grpcapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/sysshm"
	"github.com/triton-go/triton/tensor"
)

// param makes an InferParameter of v's kind.
func param(v any) *inferencepb.InferParameter {
	switch v := v.(type) {
	case bool:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: v}}
	case int:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: int64(v)}}
	case int64:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: v}}
	case uint64:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Uint64Param{Uint64Param: v}}
	case string:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: v}}
	case float64:
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: v}}
	case nil:
		return &inferencepb.InferParameter{}
	}
	panic(fmt.Sprintf("param of %T", v))
}

// params makes a parameter map from key, value pairs.
func params(kv ...any) map[string]*inferencepb.InferParameter {
	m := map[string]*inferencepb.InferParameter{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = param(kv[i+1])
	}
	return m
}

// in makes an input tensor.
func in(name, datatype string, shape ...int64) *inferencepb.ModelInferRequest_InferInputTensor {
	return &inferencepb.ModelInferRequest_InferInputTensor{Name: name, Datatype: datatype, Shape: shape}
}

// out makes a requested output.
func out(name string, p map[string]*inferencepb.InferParameter) *inferencepb.ModelInferRequest_InferRequestedOutputTensor {
	return &inferencepb.ModelInferRequest_InferRequestedOutputTensor{Name: name, Parameters: p}
}

// raw returns the tensor bytes of values.
func raw[T tensor.Element](values ...T) []byte {
	t, err := tensor.Copy("x", tensor.Shape{int64(len(values))}, values)
	if err != nil {
		panic(err)
	}
	return t.Data
}

// rawStrings returns BYTES tensor bytes.
func rawStrings(values ...string) []byte {
	var b []byte
	for _, v := range values {
		b = tensor.AppendElement(b, []byte(v))
	}
	return b
}

// simpleRequest asks the simple model for x+y and x-y with x = 0..15 and
// y = 1.
func simpleRequest() *inferencepb.ModelInferRequest {
	x, y := make([]int32, 16), make([]int32, 16)
	for i := range x {
		x[i], y[i] = int32(i), 1
	}
	return &inferencepb.ModelInferRequest{
		ModelName:        "simple",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1, 16), in("INPUT1", "INT32", 1, 16)},
		RawInputContents: [][]byte{raw(x...), raw(y...)},
	}
}

// sample is test data of one datatype: the raw bytes, and the same values
// as typed contents (nil for FP16 and BF16, which have none).
type sample struct {
	n     int64
	raw   []byte
	typed *inferencepb.InferTensorContents
}

func sampleOf(wire string) sample {
	switch wire {
	case "BOOL":
		return sample{3, raw(true, false, true), &inferencepb.InferTensorContents{BoolContents: []bool{true, false, true}}}
	case "UINT8":
		return sample{3, raw[uint8](0, 200, 255), &inferencepb.InferTensorContents{UintContents: []uint32{0, 200, 255}}}
	case "UINT16":
		return sample{3, raw[uint16](1, 300, 65535), &inferencepb.InferTensorContents{UintContents: []uint32{1, 300, 65535}}}
	case "UINT32":
		return sample{2, raw[uint32](7, 1<<32-1), &inferencepb.InferTensorContents{UintContents: []uint32{7, 1<<32 - 1}}}
	case "UINT64":
		return sample{2, raw[uint64](7, 1<<63+5), &inferencepb.InferTensorContents{Uint64Contents: []uint64{7, 1<<63 + 5}}}
	case "INT8":
		return sample{3, raw[int8](-128, 127, -1), &inferencepb.InferTensorContents{IntContents: []int32{-128, 127, -1}}}
	case "INT16":
		return sample{3, raw[int16](-32768, 32767, -2), &inferencepb.InferTensorContents{IntContents: []int32{-32768, 32767, -2}}}
	case "INT32":
		return sample{2, raw[int32](-5, 1<<30), &inferencepb.InferTensorContents{IntContents: []int32{-5, 1 << 30}}}
	case "INT64":
		return sample{2, raw[int64](-5, 1<<40), &inferencepb.InferTensorContents{Int64Contents: []int64{-5, 1 << 40}}}
	case "FP16":
		return sample{2, raw(tensor.Float16FromFloat32(1.5), tensor.Float16FromFloat32(-2)), nil}
	case "BF16":
		return sample{2, raw(tensor.BFloat16FromFloat32(1.5), tensor.BFloat16FromFloat32(-2)), nil}
	case "FP32":
		return sample{2, raw[float32](1.25, -3.5), &inferencepb.InferTensorContents{Fp32Contents: []float32{1.25, -3.5}}}
	case "FP64":
		return sample{2, raw(1.25, -3.5e300), &inferencepb.InferTensorContents{Fp64Contents: []float64{1.25, -3.5e300}}}
	case "BYTES":
		return sample{3, rawStrings("", "a", "hello\x00world"), &inferencepb.InferTensorContents{BytesContents: [][]byte{{}, []byte("a"), []byte("hello\x00world")}}}
	}
	panic(wire)
}

// checkResponse checks the metadata of a one-output identity response and
// returns the output's bytes.
func checkResponse(t *testing.T, resp *inferencepb.ModelInferResponse, model, id, wire string, shape []int64) []byte {
	t.Helper()
	if resp.GetModelName() != model || resp.GetModelVersion() != "1" || resp.GetId() != id {
		t.Errorf("response model %q version %q id %q, want %q 1 %q", resp.GetModelName(), resp.GetModelVersion(), resp.GetId(), model, id)
	}
	if len(resp.GetOutputs()) != 1 || len(resp.GetRawOutputContents()) != 1 {
		t.Fatalf("%d outputs, %d raw entries, want 1 and 1", len(resp.GetOutputs()), len(resp.GetRawOutputContents()))
	}
	o := resp.GetOutputs()[0]
	if o.GetName() != "OUTPUT0" || o.GetDatatype() != wire || fmt.Sprint(o.GetShape()) != fmt.Sprint(shape) {
		t.Errorf("output %q %q %v, want OUTPUT0 %q %v", o.GetName(), o.GetDatatype(), o.GetShape(), wire, shape)
	}
	if o.GetContents() != nil {
		t.Errorf("output has typed contents %v", o.GetContents())
	}
	return resp.GetRawOutputContents()[0]
}

// TestModelInferDatatypes sends every datatype through the identity
// models, as raw_input_contents and as typed contents.
func TestModelInferDatatypes(t *testing.T) {
	f := newFixture(t, setup{})
	for _, d := range dtypes {
		s := sampleOf(d.Wire)
		for _, prefix := range []string{"id_", "nb_"} {
			model := prefix + d.Wire
			shape := []int64{s.n}
			if prefix == "id_" {
				shape = []int64{1, s.n}
			}
			t.Run(model+"/raw", func(t *testing.T) {
				resp, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
					ModelName: model, Id: "r-" + model,
					Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", d.Wire, shape...)},
					RawInputContents: [][]byte{s.raw},
				})
				if err != nil {
					t.Fatal(err)
				}
				if got := checkResponse(t, resp, model, "r-"+model, d.Wire, shape); !bytes.Equal(got, s.raw) {
					t.Errorf("output bytes %v, want %v", got, s.raw)
				}
			})
			if s.typed == nil {
				continue
			}
			t.Run(model+"/typed", func(t *testing.T) {
				input := in("INPUT0", d.Wire, shape...)
				input.Contents = s.typed
				resp, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
					ModelName: model, ModelVersion: "1",
					Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{input},
				})
				if err != nil {
					t.Fatal(err)
				}
				if got := checkResponse(t, resp, model, "", d.Wire, shape); !bytes.Equal(got, s.raw) {
					t.Errorf("output bytes %v, want %v", got, s.raw)
				}
			})
		}
	}
}

// TestModelInferTypedMismatch sends typed contents in a field that is not
// the datatype's.
func TestModelInferTypedMismatch(t *testing.T) {
	f := newFixture(t, setup{})
	for _, d := range dtypes {
		wrong, wrongName := &inferencepb.InferTensorContents{Fp64Contents: []float64{1}}, "FP64"
		if d.Wire == "FP64" {
			wrong, wrongName = &inferencepb.InferTensorContents{Int64Contents: []int64{1}}, "INT64"
		}
		t.Run(d.Wire, func(t *testing.T) {
			input := in("INPUT0", d.Wire, 1)
			input.Contents = wrong
			_, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
				ModelName: "nb_" + d.Wire, Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{input},
			})
			wantStatus(t, err, codes.InvalidArgument, fmt.Sprintf(
				"unexpected explicit tensor data for input tensor 'INPUT0' for model 'nb_%s' of type '%s', expected datatype '%s'", d.Wire, wrongName, d.Wire))
		})
	}
	// INT32 contents for an INT64 input, and two typed fields at once.
	input := in("INPUT0", "INT64", 1)
	input.Contents = &inferencepb.InferTensorContents{IntContents: []int32{1}}
	_, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{ModelName: "nb_INT64", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{input}})
	wantStatus(t, err, codes.InvalidArgument, "of type 'INT32', expected datatype 'INT64'")
	input = in("INPUT0", "INT64", 1)
	input.Contents = &inferencepb.InferTensorContents{Int64Contents: []int64{1}, Fp32Contents: []float32{1}}
	_, err = f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{ModelName: "nb_INT64", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{input}})
	wantStatus(t, err, codes.InvalidArgument, "unexpected explicit tensor data for input tensor 'INPUT0' for model 'nb_INT64', binary data was already supplied.")
}

// TestModelInferBytes checks the BYTES framing both ways, and that
// malformed framing is refused.
func TestModelInferBytes(t *testing.T) {
	f := newFixture(t, setup{})
	elems := []string{"first", "", strings.Repeat("x", 300), "\xff\x00"}
	framed := rawStrings(elems...)
	resp, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
		ModelName: "id_BYTES", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "BYTES", 2, 2)},
		RawInputContents: [][]byte{framed},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := checkResponse(t, resp, "id_BYTES", "", "BYTES", []int64{2, 2})
	strs, err := tensor.Strings(tensor.Tensor{Name: "OUTPUT0", DataType: tensor.Bytes, Shape: tensor.Shape{2, 2}, Data: got})
	if err != nil || fmt.Sprintf("%q", strs) != fmt.Sprintf("%q", elems) {
		t.Errorf("output strings %q (%v), want %q", strs, err, elems)
	}

	typed := in("INPUT0", "BYTES", 1, 4)
	typed.Contents = &inferencepb.InferTensorContents{}
	for _, e := range elems {
		typed.Contents.BytesContents = append(typed.Contents.BytesContents, []byte(e))
	}
	resp, err = f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{ModelName: "id_BYTES", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{typed}})
	if err != nil {
		t.Fatal(err)
	}
	if got := checkResponse(t, resp, "id_BYTES", "", "BYTES", []int64{1, 4}); !bytes.Equal(got, framed) {
		t.Errorf("typed BYTES came back as %q, want %q", got, framed)
	}

	for name, data := range map[string][]byte{
		"short prefix":   {1, 0},
		"length too big": {9, 0, 0, 0, 'a'},
		"trailing bytes": append(rawStrings("a"), 0),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
				ModelName: "nb_BYTES", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "BYTES", 1)},
				RawInputContents: [][]byte{data},
			})
			wantStatus(t, err, codes.InvalidArgument, "input byte size mismatch or malformed data for input 'INPUT0' for model 'nb_BYTES'")
		})
	}
}

// TestModelInferSimple checks Triton's simple example: sums and
// differences, every output in raw_output_contents, the id echoed.
func TestModelInferSimple(t *testing.T) {
	f := newFixture(t, setup{})
	for _, version := range []string{"", "1"} {
		req := simpleRequest()
		req.ModelVersion, req.Id = version, "my-id"
		resp, err := f.client.ModelInfer(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetModelName() != "simple" || resp.GetModelVersion() != "1" || resp.GetId() != "my-id" || len(resp.GetParameters()) != 0 {
			t.Errorf("response %q %q %q %v", resp.GetModelName(), resp.GetModelVersion(), resp.GetId(), resp.GetParameters())
		}
		if len(resp.GetOutputs()) != 2 || len(resp.GetRawOutputContents()) != 2 {
			t.Fatalf("%d outputs, %d raw entries", len(resp.GetOutputs()), len(resp.GetRawOutputContents()))
		}
		for i, o := range resp.GetOutputs() {
			sum, diff := make([]int32, 16), make([]int32, 16)
			for j := range sum {
				sum[j], diff[j] = int32(j+1), int32(j-1)
			}
			want := map[string][]byte{"OUTPUT0": raw(sum...), "OUTPUT1": raw(diff...)}[o.GetName()]
			if o.GetDatatype() != "INT32" || fmt.Sprint(o.GetShape()) != "[1 16]" || !bytes.Equal(resp.GetRawOutputContents()[i], want) {
				t.Errorf("output %d: %q %q %v %v", i, o.GetName(), o.GetDatatype(), o.GetShape(), resp.GetRawOutputContents()[i])
			}
		}
	}
}

// TestModelInferOutputSubset asks for one output of two.
func TestModelInferOutputSubset(t *testing.T) {
	f := newFixture(t, setup{})
	req := simpleRequest()
	req.Outputs = []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{out("OUTPUT1", nil)}
	resp, err := f.client.ModelInfer(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetOutputs()) != 1 || resp.GetOutputs()[0].GetName() != "OUTPUT1" || len(resp.GetRawOutputContents()) != 1 {
		t.Fatalf("outputs %v", resp.GetOutputs())
	}
	diff := make([]int32, 16)
	for j := range diff {
		diff[j] = int32(j - 1)
	}
	if !bytes.Equal(resp.GetRawOutputContents()[0], raw(diff...)) {
		t.Errorf("OUTPUT1 = %v", resp.GetRawOutputContents()[0])
	}
}

// TestModelInferErrors checks the request errors: codes and Triton's
// messages.
func TestModelInferErrors(t *testing.T) {
	f := newFixture(t, setup{})
	withContents := func(r *inferencepb.ModelInferRequest, i int, c *inferencepb.InferTensorContents) *inferencepb.ModelInferRequest {
		r.Inputs[i].Contents = c
		return r
	}
	simple := func(mod func(r *inferencepb.ModelInferRequest)) *inferencepb.ModelInferRequest {
		r := simpleRequest()
		mod(r)
		return r
	}
	one := func(model, dt string, p map[string]*inferencepb.InferParameter) *inferencepb.ModelInferRequest {
		i := in("INPUT0", dt, 1)
		i.Parameters = p
		return &inferencepb.ModelInferRequest{ModelName: model, Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{i}, RawInputContents: [][]byte{raw[int32](1)}}
	}
	classified := func(model string, p map[string]*inferencepb.InferParameter) *inferencepb.ModelInferRequest {
		r := one(model, "INT32", nil)
		if model == "nb_BOOL" {
			r.Inputs[0].Datatype, r.RawInputContents[0] = "BOOL", raw(true)
		}
		r.Outputs = []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{out("OUTPUT0", p)}
		return r
	}
	for _, tc := range []struct {
		name  string
		req   *inferencepb.ModelInferRequest
		code  codes.Code
		parts []string
	}{
		{"unknown model", &inferencepb.ModelInferRequest{ModelName: "nope"}, codes.InvalidArgument, []string{"Request for unknown model: 'nope' is not found"}},
		{"bad version", simple(func(r *inferencepb.ModelInferRequest) { r.ModelVersion = "abc" }), codes.InvalidArgument,
			[]string{"failed to get model version from specified version string 'abc'", "version should be an integral value > 0"}},
		{"negative version", simple(func(r *inferencepb.ModelInferRequest) { r.ModelVersion = "-1" }), codes.InvalidArgument,
			[]string{"invalid model version specified '-1'"}},
		{"version 0", simple(func(r *inferencepb.ModelInferRequest) { r.ModelVersion = "0" }), codes.NotFound, []string{"Request for unknown model: 'simple' version 0 is not found"}},
		{"missing version", simple(func(r *inferencepb.ModelInferRequest) { r.ModelVersion = "7" }), codes.NotFound, []string{"Request for unknown model: 'simple' version 7 is not found"}},
		{"decoupled", one("decoupled", "INT32", nil), codes.Unimplemented, []string{"ModelInfer RPC doesn't support models with decoupled transaction policy"}},
		{"shape", simple(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Shape = []int64{1, 8} }), codes.InvalidArgument,
			[]string{"unexpected shape for input 'INPUT0' for model 'simple'"}},
		{"byte size", simple(func(r *inferencepb.ModelInferRequest) { r.RawInputContents[1] = r.RawInputContents[1][:60] }), codes.InvalidArgument,
			[]string{"input byte size mismatch or malformed data for input 'INPUT1' for model 'simple'"}},
		{"missing data", simple(func(r *inferencepb.ModelInferRequest) { r.RawInputContents = r.RawInputContents[:1] }), codes.InvalidArgument,
			[]string{"unable to find data for input tensor 'INPUT1' for model 'simple' in request."}},
		{"contents and raw", withContents(simple(func(r *inferencepb.ModelInferRequest) { r.RawInputContents = r.RawInputContents[:1] }), 1,
			&inferencepb.InferTensorContents{IntContents: make([]int32, 16)}), codes.InvalidArgument,
			[]string{"contents field must not be specified when using raw_input_contents for 'INPUT1' for model 'simple'"}},
		{"empty contents and raw", withContents(simpleRequest(), 0, &inferencepb.InferTensorContents{}), codes.InvalidArgument,
			[]string{"contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'"}},
		{"extra raw", simple(func(r *inferencepb.ModelInferRequest) { r.RawInputContents = append(r.RawInputContents, []byte{1}) }), codes.InvalidArgument,
			[]string{"unexpected additional input data for model 'simple'"}},
		{"unknown input", simple(func(r *inferencepb.ModelInferRequest) { r.Inputs[1].Name, r.Id = "INPUT9", "r1" }), codes.InvalidArgument,
			[]string{"[request id: r1] unexpected inference input 'INPUT9' for model 'simple'"}},
		{"missing input", simple(func(r *inferencepb.ModelInferRequest) {
			r.Inputs, r.RawInputContents = r.Inputs[:1], r.RawInputContents[:1]
		}),
			codes.InvalidArgument, []string{"expected 2 inputs but got 1 inputs for model 'simple'"}},
		{"datatype", simple(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Datatype = "FP32" }), codes.InvalidArgument,
			[]string{"inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'"}},
		{"unknown datatype", simple(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Datatype = "int32" }), codes.InvalidArgument,
			[]string{"inference input 'INPUT0' data-type is '<invalid>'"}},
		{"unknown output", simple(func(r *inferencepb.ModelInferRequest) {
			r.Outputs = []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{out("OUTPUT9", nil)}
		}), codes.InvalidArgument, []string{"unexpected inference output 'OUTPUT9' for model 'simple'"}},
		{"shm disabled", one("nb_INT32", "INT32", params("shared_memory_region", "r", "shared_memory_byte_size", 4)), codes.Unimplemented,
			[]string{"Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."}},
		{"shm offset without region", one("nb_INT32", "INT32", params("shared_memory_offset", 0)), codes.InvalidArgument,
			[]string{"'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'INPUT0'"}},
		{"shm without byte size", one("nb_INT32", "INT32", params("shared_memory_region", "r")), codes.InvalidArgument,
			[]string{"'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor 'INPUT0'"}},
		{"shm region type", one("nb_INT32", "INT32", params("shared_memory_region", 1, "shared_memory_byte_size", 4)), codes.InvalidArgument,
			[]string{"invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', expected string_param."}},
		{"shm byte size type", one("nb_INT32", "INT32", params("shared_memory_region", "r", "shared_memory_byte_size", uint64(4))), codes.InvalidArgument,
			[]string{"invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', expected int64_param."}},
		{"shm negative offset", one("nb_INT32", "INT32", params("shared_memory_region", "r", "shared_memory_byte_size", 4, "shared_memory_offset", -4)), codes.InvalidArgument,
			[]string{"invalid value for 'shared_memory_offset' parameter for tensor 'INPUT0'"}},
		{"shm and contents", withContents(one("nb_INT32", "INT32", params("shared_memory_region", "r", "shared_memory_byte_size", 4)), 0,
			&inferencepb.InferTensorContents{IntContents: []int32{1}}), codes.InvalidArgument,
			[]string{"unexpected 'content' provided when using shared memory for input tensor 'INPUT0' for model 'nb_INT32'"}},
		{"output shm disabled", classified("nb_INT32", params("shared_memory_region", "r", "shared_memory_byte_size", 4)), codes.Unimplemented,
			[]string{"Client shared memory is disabled"}},
		{"classification type", classified("nb_INT32", params("classification", "2")), codes.InvalidArgument,
			[]string{"invalid value type for 'classification' parameter, expected int64_param"}},
		{"classification value", classified("nb_INT32", params("classification", 0)), codes.InvalidArgument,
			[]string{"invalid value for 'classification' parameter, expected >= 0"}},
		{"classification and shm", classified("nb_INT32", params("classification", 1, "shared_memory_region", "r", "shared_memory_byte_size", 4)),
			codes.InvalidArgument, []string{"output can't set both 'shared_memory_region' and 'classification'"}},
		{"classify bool", classified("nb_BOOL", params("classification", 1)), codes.InvalidArgument,
			[]string{"class result not available for output due to unsupported type 'BOOL'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.ModelInfer(t.Context(), tc.req)
			wantStatus(t, err, tc.code, tc.parts...)
		})
	}
}

// TestModelInferParameters checks that custom parameters reach the model
// with their types, and that reserved ones do not.
func TestModelInferParameters(t *testing.T) {
	f := newFixture(t, setup{})
	req := &inferencepb.ModelInferRequest{
		ModelName: "params",
		Inputs:    []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		Parameters: params("a", 7, "b", true, "c", "x", "d", 1.5,
			"sequence_id", 5, "sequence_start", true, "sequence_end", false, "priority", 0, "timeout", 0,
			"headers", "h", "binary_data_output", true, "triton_enable_empty_final_response", true),
		RawInputContents: [][]byte{raw[int32](1)},
	}
	resp, err := f.client.ModelInfer(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	strs, err := tensor.Strings(tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: resp.GetRawOutputContents()[0]})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a=7(int64);b=true(bool);c=x(string);d=1.5(float64)"; strs[0] != want {
		t.Errorf("model saw %q, want %q", strs[0], want)
	}
}

// TestModelInferRequestFields checks that the sequence, priority and
// timeout parameters reach the request.
func TestModelInferRequestFields(t *testing.T) {
	files := repo()
	files["fields/config.pbtxt"] = `name: "fields" backend: "fields" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]`
	files["fields/1/model"] = ""
	fields := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			s := fmt.Sprintf("id=%d str=%q start=%v end=%v priority=%d timeout=%v", r.SequenceID, r.SequenceIDString, r.SequenceStart, r.SequenceEnd, r.Priority, r.Timeout)
			o, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{s})
			if err != nil {
				return err
			}
			r.SetOutput(o)
		}
		return nil
	})
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("fields", fields)}})
	for _, tc := range []struct {
		params map[string]*inferencepb.InferParameter
		want   string
	}{
		{params("sequence_id", 42, "sequence_start", true), `id=42 str="" start=true end=false priority=0 timeout=0s`},
		{params("sequence_id", -1, "sequence_end", true), `id=18446744073709551615 str="" start=false end=true priority=0 timeout=0s`},
		{params("sequence_id", "corr-7", "sequence_start", false, "sequence_end", true), `id=0 str="corr-7" start=false end=true priority=0 timeout=0s`},
	} {
		resp, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
			ModelName: "fields", Parameters: tc.params,
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
			RawInputContents: [][]byte{raw[int32](1)},
		})
		if err != nil {
			t.Fatal(err)
		}
		strs, _ := tensor.Strings(tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: resp.GetRawOutputContents()[0]})
		if len(strs) != 1 || strs[0] != tc.want {
			t.Errorf("backend saw %q, want %q", strs, tc.want)
		}
	}
	// Priority and timeout are applied by the server, which refuses them
	// on a model without priority levels or queue policy.
	for _, tc := range []struct {
		params map[string]*inferencepb.InferParameter
		msg    string
	}{
		{params("priority", 3), "priority 3 is not a priority level of model 'batched'"},
		{params("priority", uint64(3)), "priority 3 is not a priority level of model 'batched'"},
		{params("timeout", 1000), "the queue policy does not allow a request to set its own timeout"},
	} {
		_, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
			ModelName: "batched", Parameters: tc.params,
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "FP32", 1, 4)},
			RawInputContents: [][]byte{raw[float32](1, 2, 3, 4)},
		})
		wantStatus(t, err, codes.InvalidArgument, tc.msg)
	}
}

// TestModelInferParameterErrors checks the parameters of reserved keys
// with wrong types, and the other refused parameters.
func TestModelInferParameterErrors(t *testing.T) {
	f := newFixture(t, setup{})
	for _, tc := range []struct {
		params map[string]*inferencepb.InferParameter
		code   codes.Code
		msg    string
	}{
		{params("sequence_id", true), codes.InvalidArgument, "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."},
		{params("sequence_id", uint64(3)), codes.InvalidArgument, "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."},
		// Triton says UNIMPLEMENTED; a client's mistake is INVALID_ARGUMENT here.
		{params("sequence_id", strings.Repeat("s", 129)), codes.InvalidArgument, "string correlation ID cannot be longer than 128 characters"},
		{params("sequence_start", 1), codes.InvalidArgument, "invalid value type for 'sequence_start' parameter, expected bool_param."},
		{params("sequence_end", "true"), codes.InvalidArgument, "invalid value type for 'sequence_end' parameter, expected bool_param."},
		{params("priority", "1"), codes.InvalidArgument, "invalid value type for 'priority' parameter, expected int64_param or uint64_param."},
		{params("priority", -1), codes.InvalidArgument, "invalid value for 'priority', expected value >= 0."},
		{params("timeout", 1.5), codes.InvalidArgument, "invalid value type for 'timeout' parameter, expected int64_param."},
		{params("timeout", uint64(1)), codes.InvalidArgument, "invalid value type for 'timeout' parameter, expected int64_param."},
		{params("custom", uint64(1)), codes.InvalidArgument, "invalid value type for 'custom' parameter, expected int64_param, bool_param, or string_param."},
		{params("custom", nil), codes.InvalidArgument, "invalid value type for 'custom' parameter, expected int64_param, bool_param, or string_param."},
		{params("triton_other", true), codes.InvalidArgument, "parameter keys starting with 'triton_' are reserved for Triton usage"},
		{params("triton_enable_empty_final_response", 1), codes.InvalidArgument, "invalid value type for 'triton_enable_empty_final_response' parameter, expected bool_param."},
	} {
		t.Run(strings.Join(slices.Sorted(maps.Keys(tc.params)), ","), func(t *testing.T) {
			_, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
				ModelName: "params", Parameters: tc.params,
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
				RawInputContents: [][]byte{raw[int32](1)},
			})
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
}

// TestModelInferClassification checks classification outputs: BYTES
// strings of the top classes, per batch item, with labels.
func TestModelInferClassification(t *testing.T) {
	files := repo()
	files["labeled/config.pbtxt"] = `name: "labeled" backend: "mirror" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] label_filename: "labels.txt" } ]`
	files["labeled/labels.txt"] = "cat\r\ndog\n\n"
	files["labeled/1/model"] = ""
	f := newFixture(t, setup{files: files})
	classify := func(model, dt string, shape []int64, data []byte, k int) (*inferencepb.ModelInferResponse_InferOutputTensor, []string) {
		t.Helper()
		resp, err := f.client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
			ModelName:        model,
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", dt, shape...)},
			Outputs:          []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{out("OUTPUT0", params("classification", k))},
			RawInputContents: [][]byte{data},
		})
		if err != nil {
			t.Fatal(err)
		}
		o := resp.GetOutputs()[0]
		strs, err := tensor.Strings(tensor.Tensor{DataType: tensor.Bytes, Shape: o.GetShape(), Data: resp.GetRawOutputContents()[0]})
		if err != nil {
			t.Fatal(err)
		}
		return o, strs
	}
	for _, tc := range []struct {
		model, dt string
		shape     []int64
		data      []byte
		k         int
		wantShape string
		want      string
	}{
		{"nb_FP32", "FP32", []int64{4}, raw[float32](0.1, 3.3, 2.2, 4.4), 2, "[2]", `["4.400000:3" "3.300000:1"]`},
		{"nb_FP32", "FP32", []int64{3}, raw[float32](1, 2, 1), 10, "[3]", `["2.000000:1" "1.000000:0" "1.000000:2"]`},
		{"id_FP32", "FP32", []int64{2, 3}, raw[float32](0.5, -1, 2, 7, 8, -9), 2, "[2 2]", `["2.000000:2" "0.500000:0" "8.000000:1" "7.000000:0"]`},
		{"nb_INT32", "INT32", []int64{3}, raw[int32](-5, 10, 3), 1, "[1]", `["10:1"]`},
		{"nb_UINT64", "UINT64", []int64{2}, raw[uint64](1<<63, 1), 2, "[2]", `["9223372036854775808:0" "1:1"]`},
		{"labeled", "FP32", []int64{4}, raw[float32](0.1, 3.3, 2.2, 4.4), 4, "[4]", `["4.400000:3" "3.300000:1:dog" "2.200000:2:" "0.100000:0:cat"]`},
	} {
		o, strs := classify(tc.model, tc.dt, tc.shape, tc.data, tc.k)
		if o.GetDatatype() != "BYTES" || fmt.Sprint(o.GetShape()) != tc.wantShape || fmt.Sprintf("%q", strs) != tc.want {
			t.Errorf("%s %v k=%d: %s %v %q, want BYTES %s %s", tc.model, tc.shape, tc.k, o.GetDatatype(), o.GetShape(), strs, tc.wantShape, tc.want)
		}
	}
}

// TestModelInferDeadline checks that the call's deadline reaches the
// backend and the client gets DEADLINE_EXCEEDED.
func TestModelInferDeadline(t *testing.T) {
	f := newFixture(t, setup{})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := f.client.ModelInfer(ctx, blockRequest("d"))
	wantStatus(t, err, codes.DeadlineExceeded)
	waitBlocked(t, f.block, nil)
}

// TestModelInferCancel checks that a client cancelling its call cancels
// the request in the backend.
func TestModelInferCancel(t *testing.T) {
	f := newFixture(t, setup{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := f.client.ModelInfer(ctx, blockRequest("c"))
		errc <- err
	}()
	waitStarted(t, f.block)
	cancel()
	wantStatus(t, <-errc, codes.Canceled)
	waitBlocked(t, f.block, context.Canceled)
}

// blockRequest is a request for the block model.
func blockRequest(id string) *inferencepb.ModelInferRequest {
	return &inferencepb.ModelInferRequest{
		ModelName: "block", Id: id,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		RawInputContents: [][]byte{raw[int32](1)},
	}
}

func waitStarted(t *testing.T, bl *testmodels.Blocker) {
	t.Helper()
	select {
	case <-bl.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the block backend never started")
	}
}

// waitBlocked waits for the block backend to see its ctx end, with want
// (any error when nil).
func waitBlocked(t *testing.T, bl *testmodels.Blocker, want error) {
	t.Helper()
	select {
	case err := <-bl.Ended:
		if err == nil || (want != nil && !errors.Is(err, want)) {
			t.Errorf("the backend's ctx ended with %v, want %v", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the block backend's ctx never ended")
	}
}

// TestModelInferRestricted checks the inference restriction.
func TestModelInferRestricted(t *testing.T) {
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithRestrictedProtocol("inference", "infer-key", "secret")}})
	_, err := f.client.ModelInfer(t.Context(), simpleRequest())
	wantStatus(t, err, codes.Unavailable, "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'")
	bare := metadata.AppendToOutgoingContext(t.Context(), "infer-key", "secret")
	_, err = f.client.ModelInfer(bare, simpleRequest())
	wantStatus(t, err, codes.Unavailable, "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "triton-grpc-protocol-infer-key", "secret")
	if _, err := f.client.ModelInfer(ctx, simpleRequest()); err != nil {
		t.Fatal(err)
	}
	stream, err := f.client.ModelStreamInfer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	wantStatus(t, err, codes.Unavailable, "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'")
}

// shmObject creates a POSIX shared-memory object of size bytes, removed
// when the test ends, and returns its key and path.
func shmObject(t *testing.T, size int) (string, string) {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skipf("no /dev/shm: %v", err)
	}
	fh, err := os.CreateTemp("/dev/shm", "grpcapi-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(fh.Name()) })
	if err := fh.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	return "/" + filepath.Base(fh.Name()), fh.Name()
}

// TestModelInferSharedMemory reads an input from and writes outputs to
// system shared memory.
func TestModelInferSharedMemory(t *testing.T) {
	key, path := shmObject(t, 128)
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	if err := reg.Register("region", key, 0, 128); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithSharedMemory(reg)}})
	data := make([]int32, 16)
	for i := range data {
		data[i] = int32(10 * i)
	}
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(raw(data...), 0); err != nil {
		t.Fatal(err)
	}
	shmIn := in("INPUT0", "INT32", 1, 16)
	shmIn.Parameters = params("shared_memory_region", "region", "shared_memory_byte_size", 64)
	ones := make([]int32, 16)
	for i := range ones {
		ones[i] = 1
	}
	req := &inferencepb.ModelInferRequest{
		ModelName: "simple",
		// The raw entry goes to INPUT1: shared-memory inputs take none.
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{shmIn, in("INPUT1", "INT32", 1, 16)},
		RawInputContents: [][]byte{raw(ones...)},
		Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{
			out("OUTPUT0", params("shared_memory_region", "region", "shared_memory_offset", 64, "shared_memory_byte_size", 64)),
			out("OUTPUT1", nil),
		},
	}
	resp, err := f.client.ModelInfer(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	sum, diff := make([]int32, 16), make([]int32, 16)
	for i := range data {
		sum[i], diff[i] = data[i]+1, data[i]-1
	}
	for i, o := range resp.GetOutputs() {
		if fmt.Sprint(o.GetShape()) != "[1 16]" || o.GetDatatype() != "INT32" {
			t.Errorf("output %s: %s %v", o.GetName(), o.GetDatatype(), o.GetShape())
		}
		switch o.GetName() {
		case "OUTPUT0":
			if len(resp.GetRawOutputContents()[i]) != 0 {
				t.Errorf("shared-memory output has %d raw bytes", len(resp.GetRawOutputContents()[i]))
			}
		case "OUTPUT1":
			if !bytes.Equal(resp.GetRawOutputContents()[i], raw(diff...)) {
				t.Errorf("OUTPUT1 = %v", resp.GetRawOutputContents()[i])
			}
		}
	}
	got := make([]byte, 64)
	if _, err := fh.ReadAt(got, 64); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, raw(sum...)) {
		t.Errorf("region holds %v, want the sums", got)
	}

	// A region too small for the output, and regions that do not exist.
	req.Outputs[0] = out("OUTPUT0", params("shared_memory_region", "region", "shared_memory_offset", 64, "shared_memory_byte_size", 32))
	_, err = f.client.ModelInfer(t.Context(), req)
	// Triton says INTERNAL; the region is the client's, so INVALID_ARGUMENT.
	wantStatus(t, err, codes.InvalidArgument, "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results")
	req.Outputs[0] = out("OUTPUT0", params("shared_memory_region", "nope", "shared_memory_byte_size", 64))
	_, err = f.client.ModelInfer(t.Context(), req)
	wantStatus(t, err, codes.NotFound, "Unable to find shared memory region: 'nope'")
	req.Outputs = nil
	shmIn.Parameters = params("shared_memory_region", "region", "shared_memory_offset", 100, "shared_memory_byte_size", 64)
	_, err = f.client.ModelInfer(t.Context(), req)
	wantStatus(t, err, codes.InvalidArgument, "Invalid offset + byte size for shared memory region: 'region'")
}

// largeRequest is a request to id_FP32 with one FP32 [1, n/4] input of n
// bytes whose contents depend on seed.
func largeRequest(seed, n int) *inferencepb.ModelInferRequest {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(seed*31 + i*7 + i>>10)
	}
	return &inferencepb.ModelInferRequest{
		ModelName:        "id_FP32",
		Id:               fmt.Sprint(seed),
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "FP32", 1, int64(n/4))},
		RawInputContents: [][]byte{data},
	}
}

// checkLarge checks an identity model's answer to a largeRequest.
func checkLarge(resp *inferencepb.ModelInferResponse, req *inferencepb.ModelInferRequest) error {
	if resp.GetId() != req.GetId() || len(resp.GetRawOutputContents()) != 1 || len(resp.GetOutputs()) != 1 {
		return fmt.Errorf("request %s: response %s with %d outputs", req.GetId(), resp.GetId(), len(resp.GetRawOutputContents()))
	}
	if !slices.Equal(resp.GetOutputs()[0].GetShape(), req.GetInputs()[0].GetShape()) {
		return fmt.Errorf("request %s: output shape %v", req.GetId(), resp.GetOutputs()[0].GetShape())
	}
	if !bytes.Equal(resp.GetRawOutputContents()[0], req.GetRawInputContents()[0]) {
		return fmt.Errorf("request %s: output differs from its input", req.GetId())
	}
	return nil
}

// TestModelInferLargeTensors: tensors large enough for the codec to pass
// them by reference come back intact from an identity model, whose output
// is its input's memory, from many concurrent calls (each with its own
// contents, so that a buffer reused too early would show), compressed or
// not, with unary interceptors that pass the answer on or answer with a
// copy of their own, and with the service registered through inferencepb
// (protobuf's copies).
func TestModelInferLargeTensors(t *testing.T) {
	pass := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, ok := req.(*inferencepb.ModelInferRequest); !ok && info.FullMethod == inferencepb.GRPCInferenceService_ModelInfer_FullMethodName {
			return nil, fmt.Errorf("interceptor got a %T", req)
		}
		return h(ctx, req)
	}
	replace := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if m, ok := resp.(proto.Message); ok && err == nil {
			return proto.Clone(m), nil
		}
		return resp, err
	}
	for name, s := range map[string]setup{
		"codec":               {},
		"interceptor":         {grpc: []grpc.ServerOption{grpc.UnaryInterceptor(pass)}},
		"replacing":           {grpc: []grpc.ServerOption{grpc.UnaryInterceptor(replace)}},
		"inferencepb handler": {register: func(g *grpc.Server, svc *grpcapi.Service) { inferencepb.RegisterGRPCInferenceServiceServer(g, svc) }},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, s)
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for g := range 4 {
				wg.Go(func() {
					for k := range 4 {
						var opts []grpc.CallOption
						if k%2 == 1 {
							opts = append(opts, grpc.UseCompressor("gzip"))
						}
						req := largeRequest(10*g+k, 40<<10+4*k)
						resp, err := f.client.ModelInfer(context.Background(), req, opts...)
						if err == nil {
							err = checkLarge(resp, req)
						}
						if err != nil {
							errs <- err
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
		})
	}
}

// TestModelInferResponseParameters: the parameters a model sets on its
// response are the response's parameters, unary and on a stream (beside
// triton_final_response).
func TestModelInferResponseParameters(t *testing.T) {
	files := repo()
	files["ann/config.pbtxt"] = `name: "ann" backend: "annotate" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`
	files["ann/1/model"] = ""
	annotate := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			r.SetParameter("tokens", int64(3))
			r.SetParameter("done", true)
			r.SetParameter("why", "stop")
			r.SetParameter("p", 0.25)
		}
		return mirror(ctx, b)
	})
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("annotate", annotate)}})
	req := &inferencepb.ModelInferRequest{ModelName: "ann", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		RawInputContents: [][]byte{raw[int32](4)}}
	check := func(where string, p map[string]*inferencepb.InferParameter) {
		t.Helper()
		if p["tokens"].GetInt64Param() != 3 || !p["done"].GetBoolParam() || p["why"].GetStringParam() != "stop" || p["p"].GetDoubleParam() != 0.25 {
			t.Errorf("%s: parameters %v", where, p)
		}
	}
	resp, err := f.client.ModelInfer(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	check("ModelInfer", resp.GetParameters())
	if len(resp.GetParameters()) != 4 {
		t.Errorf("ModelInfer: %d parameters, want 4", len(resp.GetParameters()))
	}
	st, err := f.client.ModelStreamInfer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(req); err != nil {
		t.Fatal(err)
	}
	sr, err := st.Recv()
	if err != nil || sr.GetErrorMessage() != "" {
		t.Fatalf("stream: %v %q", err, sr.GetErrorMessage())
	}
	p := sr.GetInferResponse().GetParameters()
	check("ModelStreamInfer", p)
	if final, ok := p["triton_final_response"]; !ok || !final.GetBoolParam() {
		t.Errorf("stream: triton_final_response %v, want true beside the model's", final)
	}
	_ = st.CloseSend()
}
