package httpapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/tensor"
)

func inferPath(model string) string { return "/v2/models/" + model + "/infer" }

func TestInferJSONDatatypes(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		wire, in, out string
	}{
		{"BOOL", `[true,false,true]`, `[true,false,true]`},
		{"UINT8", `[0,1,255]`, `[0,1,255]`},
		{"UINT16", `[0,1,65535]`, `[0,1,65535]`},
		{"UINT32", `[0,1,4294967295]`, `[0,1,4294967295]`},
		{"UINT64", `[0,1,18446744073709551615]`, `[0,1,18446744073709551615]`},
		{"INT8", `[-128,0,127]`, `[-128,0,127]`},
		{"INT16", `[-32768,0,32767]`, `[-32768,0,32767]`},
		{"INT32", `[-2147483648,0,2147483647]`, `[-2147483648,0,2147483647]`},
		{"INT64", `[-9223372036854775808,0,9223372036854775807]`, `[-9223372036854775808,0,9223372036854775807]`},
		{"FP32", `[1.1,-2.5,3]`, `[1.100000023841858,-2.5,3.0]`},
		{"FP64", `[1.1,1e300,-0.000001]`, `[1.1,1e300,-0.000001]`},
		{"FP64", `[0.1e-6,123456789012345678901234,0]`, `[1e-7,1.2345678901234569e23,0.0]`},
		{"BYTES", `["a","","x\u0000y\"\\é"]`, `["a","","x\u0000y\"\\é"]`},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			body := fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":%q,"data":%s}]}`, tc.wire, tc.in)
			rec := f.post(inferPath("id_"+tc.wire), body)
			wantBody(t, rec, fmt.Sprintf(`{"model_name":"id_%s","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":%q,"shape":[1,3],"data":%s}]}`, tc.wire, tc.wire, tc.out))
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if rec.Header().Get("Inference-Header-Content-Length") != "" {
				t.Errorf("JSON-only response has Inference-Header-Content-Length")
			}
		})
	}
}

func TestInferNestedData(t *testing.T) {
	f := newFixture(t)
	for _, data := range []string{`[1,2,3,4,5,6]`, `[[1,2,3],[4,5,6]]`, `[[[1],[2],[3]],[[4],[5],[6]]]`, `[[1],[2,3,4,5],6]`} {
		rec := f.post(inferPath("id_INT32"), `{"inputs":[{"name":"INPUT0","shape":[2,3],"datatype":"INT32","data":`+data+`}]}`)
		wantBody(t, rec, `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[2,3],"data":[1,2,3,4,5,6]}]}`)
	}
	// Empty tensors: "data" is not looked at.
	rec := f.post(inferPath("id_INT32"), `{"inputs":[{"name":"INPUT0","shape":[1,0],"datatype":"INT32","data":"anything"}]}`)
	wantBody(t, rec, `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,0],"data":[]}]}`)
}

func TestInferErrors(t *testing.T) {
	f := newFixture(t)
	in := func(model, input string) string { return `{"inputs":[` + input + `]}` }
	fp32 := func(shape, data string) string {
		return in("", `{"name":"INPUT0","shape":`+shape+`,"datatype":"FP32","data":`+data+`}`)
	}
	typed := func(dt, data string) string {
		return in("", `{"name":"INPUT0","shape":[1,1],"datatype":"`+dt+`","data":`+data+`}`)
	}
	deep := strings.Repeat("[", 97) + "1" + strings.Repeat("]", 97)
	// BYTES elements in JSON must be UTF-8; the error gives the offset of
	// the first bad byte in the body.
	notUTF8 := func(dt, data string, bad byte) (string, string) {
		body := typed(dt, data)
		return body, fmt.Sprintf("model 'id_BYTES', input 'INPUT0': JSON strings must be UTF-8; invalid byte 0x%02x at offset %d of the request body; send arbitrary bytes as binary tensor data", bad, strings.LastIndexByte(body, bad))
	}
	ffBody, ffMsg := notUTF8("BYTES", "[\"\xff\xfe\"]", 0xff)
	// After an escape and valid UTF-8 (a euro sign, e2 82 ac), a cut
	// sequence.
	lateBody, lateMsg := notUTF8("BYTES", "[\"\\u00e9 ok\", \"\u20ac\xe2\x82\"]", 0xe2)
	surrogateBody, surrogateMsg := notUTF8("BYTES", "[\"\xed\xa0\x80\"]", 0xed) // a UTF-16 surrogate in UTF-8
	for _, tc := range []struct {
		name, model, body string
		status            int
		parts             []string
	}{
		{"bytes not UTF-8", "id_BYTES", ffBody, 400, []string{ffMsg}},
		{"bytes not UTF-8 later", "id_BYTES", strings.Replace(lateBody, "[1,1]", "[1,2]", 1), 400, []string{lateMsg}},
		{"bytes surrogate", "id_BYTES", surrogateBody, 400, []string{surrogateMsg}},
		{"bytes UTF-8", "id_BYTES", typed("BYTES", "[\"é€😀\\u00ff\\ud83d\\ude00\"]"), 200, nil},
		{"malformed", "id_FP32", `{"inputs":[`, 400, []string{"failed to parse the request JSON buffer", "at 11"}},
		{"trailing", "id_FP32", `{"inputs":[]} x`, 400, []string{"The document root must not be followed by other values."}},
		{"bad literal", "id_FP32", `{"inputs":[tru]}`, 400, []string{"Invalid value."}},
		{"bad escape", "id_FP32", `{"id":"\q","inputs":[]}`, 400, []string{"Invalid escape character in string."}},
		{"control char", "id_FP32", "{\"id\":\"a\nb\"}", 400, []string{"Invalid encoding in string."}},
		{"bad number", "id_FP32", `{"id":01}`, 400, []string{"Missing a comma or '}' after an object member."}},
		{"not an object", "id_FP32", `[1]`, 400, []string{"must be a JSON object"}},
		{"no inputs", "id_FP32", `{}`, 400, []string{"Unable to parse 'inputs'"}},
		{"inputs not array", "id_FP32", `{"inputs":{}}`, 400, []string{"Unable to parse 'inputs'", "non-array"}},
		{"input not object", "id_FP32", `{"inputs":[1]}`, 400, []string{"Unable to parse 'inputs'"}},
		{"no data", "id_FP32", in("", `{"name":"INPUT0","shape":[1],"datatype":"FP32"}`), 400, []string{"Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set"}},
		{"data and binary", "id_FP32", in("", `{"name":"INPUT0","shape":[1],"datatype":"FP32","data":[1],"parameters":{"binary_data_size":4}}`), 400, []string{"But set 'data' 'binary_data_size'"}},
		{"no name", "id_FP32", in("", `{"shape":[1,1],"datatype":"FP32","data":[1]}`), 400, []string{"Unable to parse 'name'"}},
		{"no datatype", "id_FP32", in("", `{"name":"INPUT0","shape":[1,1],"data":[1]}`), 400, []string{"Unable to parse 'datatype'"}},
		{"unknown datatype", "id_FP32", typed("FLOAT32", `[1]`), 400, []string{"invalid datatype for input INPUT0"}},
		{"lowercase datatype", "id_FP32", typed("fp32", `[1]`), 400, []string{"invalid datatype for input INPUT0"}},
		{"wrong datatype", "id_FP32", typed("INT32", `[1]`), 400, []string{"inference input 'INPUT0' data-type is 'INT32', but model 'id_FP32' expects 'FP32'"}},
		{"unknown input", "id_FP32", in("", `{"name":"X","shape":[1,1],"datatype":"FP32","data":[1]}`), 400, []string{"unexpected inference input 'X'"}},
		{"missing input", "simple", in("", `{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`), 400, []string{"expected 2 inputs but got 1"}},
		{"negative dim", "id_FP32", fp32(`[-1,3]`, `[1,2,3]`), 400, []string{"Unable to parse 'shape'", "non-unsigned-integer"}},
		{"float dim", "id_FP32", fp32(`[1.0,3]`, `[1,2,3]`), 400, []string{"Unable to parse 'shape'"}},
		{"shape not array", "id_FP32", fp32(`3`, `[1,2,3]`), 400, []string{"Unable to parse 'shape'"}},
		{"no shape", "id_FP32", in("", `{"name":"INPUT0","datatype":"FP32","data":[1]}`), 400, []string{"Unable to parse 'shape'"}},
		{"huge dim", "id_FP32", fp32(`[18446744073709551615]`, `[1]`), 400, []string{"Unable to parse 'shape'", "too large"}},
		{"overflowing shape", "id_FP32", fp32(`[9223372036854775807,9223372036854775807]`, `[1]`), 400, []string{"Unable to parse 'shape'"}},
		{"shape beyond data", "id_FP32", fp32(`[1,100000000000]`, `[1]`), 400, []string{"shape does not match"}},
		{"too few elements", "id_FP32", fp32(`[1,3]`, `[1,2]`), 400, []string{"Failed to parse 'data' field: shape does not match true shape"}},
		{"too many elements", "id_FP32", fp32(`[1,3]`, `[1,2,3,4]`), 400, []string{"shape does not match"}},
		{"data not array", "id_FP32", fp32(`[1,1]`, `1`), 400, []string{"Unable to parse 'data'"}},
		{"bool as int", "id_BOOL", typed("BOOL", `[1]`), 400, []string{"Unable to parse 'data': attempt to access JSON non-boolean as boolean"}},
		{"uint negative", "id_UINT8", typed("UINT8", `[-1]`), 400, []string{"Unable to parse 'data'", "non-unsigned-integer"}},
		{"uint fraction", "id_UINT32", typed("UINT32", `[1.5]`), 400, []string{"non-unsigned-integer"}},
		{"uint8 range", "id_UINT8", typed("UINT8", `[256]`), 400, []string{"value 256 is out of range for UINT8 input 'INPUT0'"}},
		{"uint64 range", "id_UINT64", typed("UINT64", `[18446744073709551616]`), 400, []string{"non-unsigned-integer"}},
		{"int 1.0", "id_INT32", typed("INT32", `[1.0]`), 400, []string{"Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"}},
		{"int exponent", "id_INT64", typed("INT64", `[1e3]`), 400, []string{"non-signed-integer"}},
		{"int string", "id_INT32", typed("INT32", `["1"]`), 400, []string{"non-signed-integer"}},
		{"int8 range", "id_INT8", typed("INT8", `[-129]`), 400, []string{"out of range for INT8"}},
		{"int32 range", "id_INT32", typed("INT32", `[2147483648]`), 400, []string{"out of range for INT32"}},
		{"float string", "id_FP32", typed("FP32", `["1"]`), 400, []string{"Unable to parse 'data'", "non-number"}},
		{"float bool", "id_FP64", typed("FP64", `[true]`), 400, []string{"non-number"}},
		{"float too big", "id_FP64", typed("FP64", `[1e400]`), 400, []string{"non-number"}},
		{"bytes number", "id_BYTES", typed("BYTES", `[1]`), 400, []string{"Unable to parse JSON bytes array: attempt to access JSON non-string as string"}},
		{"bytes count", "id_BYTES", typed("BYTES", `["a","b"]`), 400, []string{"shape does not match"}},
		{"fp16 json", "id_FP16", typed("FP16", `[1]`), 400, []string{"receiving FP16 data via JSON is not supported. Please use the binary data format for input INPUT0"}},
		{"bf16 json", "id_BF16", typed("BF16", `[1]`), 400, []string{"receiving BF16 data via JSON is not supported. Please use the binary data format for input INPUT0"}},
		{"nesting at the limit", "id_FP32", fp32(`[1,1]`, deep), 200, nil},
		{"nesting bomb", "id_FP32", fp32(`[1,1]`, "["+deep+"]"), 400, []string{"failed to parse the request JSON buffer", "Nesting depth exceeds the limit of 100"}},
		{"deep bomb", "id_FP32", strings.Repeat("[", 1_000_000), 400, []string{"Nesting depth exceeds the limit of 100"}},
		{"unknown model", "nosuch", typed("FP32", `[1]`), 400, []string{"Request for unknown model: 'nosuch' is not found"}},
		{"unknown output", "id_FP32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"NOPE"}]}`, 400, []string{"unexpected inference output 'NOPE' for model 'id_FP32'"}},
		{"id not string", "id_FP32", `{"id":1,"inputs":[]}`, 400, []string{"Unable to parse 'id'"}},
		{"error with id", "id_FP32", `{"id":"r7","inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"INT32","data":[1]}]}`, 400, []string{"[request id: r7] inference input 'INPUT0' data-type is 'INT32'"}},
		{"parameters not object", "id_FP32", `{"parameters":[],"inputs":[]}`, 400, []string{"Unable to parse 'parameters'"}},
		{"reserved parameter", "id_FP32", `{"parameters":{"triton_x":1},"inputs":[]}`, 400, []string{"parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified."}},
		{"parameter type", "id_FP32", `{"parameters":{"p":[1]},"inputs":[]}`, 400, []string{"parameter 'p' has invalid type. It should be either 'int', 'bool', or 'string'."}},
		{"parameter null", "id_FP32", `{"parameters":{"p":null},"inputs":[]}`, 400, []string{"parameter 'p' has invalid type"}},
		{"sequence_id type", "id_FP32", `{"parameters":{"sequence_id":true},"inputs":[]}`, 400, []string{"Unable to parse 'sequence_id'"}},
		{"sequence_id length", "id_FP32", `{"parameters":{"sequence_id":"` + strings.Repeat("s", 129) + `"},"inputs":[]}`, 400, []string{"string correlation ID cannot be longer than 128 characters"}},
		{"sequence_start type", "id_FP32", `{"parameters":{"sequence_start":1},"inputs":[]}`, 400, []string{"Unable to parse 'sequence_start'"}},
		{"sequence_end type", "id_FP32", `{"parameters":{"sequence_end":"true"},"inputs":[]}`, 400, []string{"Unable to parse 'sequence_end'"}},
		{"priority type", "id_FP32", `{"parameters":{"priority":-1},"inputs":[]}`, 400, []string{"Unable to parse 'priority'"}},
		{"timeout type", "id_FP32", `{"parameters":{"timeout":1.5},"inputs":[]}`, 400, []string{"Unable to parse 'timeout'"}},
		{"binary_data_output type", "id_FP32", `{"parameters":{"binary_data_output":"yes"},"inputs":[]}`, 400, []string{"Unable to parse 'binary_data_output'"}},
		{"outputs not array", "id_FP32", `{"inputs":[],"outputs":{}}`, 400, []string{"Unable to parse 'outputs'"}},
		{"output not object", "id_FP32", `{"inputs":[],"outputs":["OUTPUT0"]}`, 400, []string{"Unable to parse 'outputs'"}},
		{"output no name", "id_FP32", `{"inputs":[],"outputs":[{}]}`, 400, []string{"Unable to parse 'name'"}},
		{"classification type", "id_FP32", `{"inputs":[],"outputs":[{"name":"OUTPUT0","parameters":{"classification":-2}}]}`, 400, []string{"Unable to set 'classification'"}},
		{"binary_data type", "id_FP32", `{"inputs":[],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":1}}]}`, 400, []string{"Unable to parse 'binary_data'"}},
		{"shm and classification", "id_FP32", `{"inputs":[],"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"r","classification":1}}]}`, 400, []string{"Output can't set both 'shared_memory_region' and 'classification'"}},
		{"shm and binary", "id_FP32", `{"inputs":[],"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"r","binary_data":true}}]}`, 400, []string{"Output can't set both 'shared_memory_region' and 'binary_data'"}},
		{"shm disabled", "id_FP32", in("", `{"name":"INPUT0","shape":[1,1],"datatype":"FP32","parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}`), 501, []string{"Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."}},
		{"decoupled", "decoupled", typed("INT32", `[1]`), 501, []string{"HTTP end point doesn't support models with decoupled transaction policy"}},
		{"classify bool", "id_BOOL", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"BOOL","data":[true]}],"outputs":[{"name":"OUTPUT0","parameters":{"classification":1}}]}`, 400, []string{"class result not available for output due to unsupported type 'BOOL'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := f.post(inferPath(tc.model), tc.body)
			if tc.status == 200 {
				wantStatus(t, rec, 200)
				return
			}
			wantError(t, rec, tc.status, tc.parts...)
		})
	}
	// UTF-8 in BYTES elements, escaped or not, comes back as sent.
	rec := f.post(inferPath("nb_BYTES"), `{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"BYTES","data":["é€😀","\u00ff\ud83d\ude00"]}]}`)
	wantBody(t, rec, `{"model_name":"nb_BYTES","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[2],"data":["é€😀","ÿ😀"]}]}`)
	// Versions in the path.
	wantError(t, f.post("/v2/models/id_FP32/versions/2/infer", `{"inputs":[]}`), 404, "Request for unknown model: 'id_FP32' version 2 is not found")
	wantError(t, f.post("/v2/models/id_FP32/versions/0/infer", `{"inputs":[]}`), 404, "version 0 is not found")
	wantStatus(t, f.post("/v2/models/id_FP32/versions/1/infer", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}]}`), 200)
}

// le encodes values as little-endian bytes.
func le[T int32 | float32 | uint64 | float64 | uint16](vals ...T) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, vals)
	return b.Bytes()
}

func seq(n int, f func(i int) int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func TestInferBinary(t *testing.T) {
	f := newFixture(t)
	x := seq(16, func(i int) int32 { return int32(i) })
	y := seq(16, func(i int) int32 { return 1 })
	body, hl := binaryBody(`{"id":"b1","inputs":[`+
		`{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},`+
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],`+
		`"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}`,
		le(x...), le(y...))
	rec := f.do(req{path: inferPath("simple"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantStatus(t, rec, 200)
	if ct := rec.Header().Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	hdr, rest := splitBinary(t, rec)
	want := `{"id":"b1","model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}`
	if got := rec.Body.String()[:len(rec.Body.String())-len(rest)]; got != want {
		t.Errorf("header\n got %s\nwant %s", got, want)
	}
	_ = hdr
	sum := seq(16, func(i int) int32 { return int32(i) + 1 })
	diff := seq(16, func(i int) int32 { return int32(i) - 1 })
	if !bytes.Equal(rest, append(le(sum...), le(diff...)...)) {
		t.Errorf("binary outputs %v", rest)
	}
	if got := rec.Header().Get("Content-Length"); got != fmt.Sprint(rec.Body.Len()) {
		t.Errorf("Content-Length %s, body %d", got, rec.Body.Len())
	}
}

func TestInferBinaryBytesAndFP16(t *testing.T) {
	f := newFixture(t)
	elems := [][]byte{[]byte("a\x00b"), {}, {0, 0, 0, 0xff}}
	var data []byte
	for _, e := range elems {
		data = tensor.AppendElement(data, e)
	}
	body, hl := binaryBody(fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`, len(data)), data)
	rec := f.do(req{path: inferPath("nb_BYTES"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantStatus(t, rec, 200)
	hdr, rest := splitBinary(t, rec)
	if !bytes.Equal(rest, data) {
		t.Errorf("BYTES binary output %q, want %q", rest, data)
	}
	out := hdr["outputs"].([]any)[0].(map[string]any)
	if out["datatype"] != "BYTES" || fmt.Sprint(out["parameters"]) != fmt.Sprintf("map[binary_data_size:%d]", len(data)) {
		t.Errorf("output %v", out)
	}
	// The same as JSON output: the bytes as they are, escaped where JSON
	// needs, and a byte that is not UTF-8 replaced, so that the answer is
	// JSON that strict readers take.
	body, hl = binaryBody(fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":%d}}]}`, len(data)), data)
	rec = f.do(req{path: inferPath("nb_BYTES"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantBody(t, rec, `{"model_name":"nb_BYTES","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[3],"data":["a\u0000b","","\u0000\u0000\u0000\ufffd"]}]}`)
	if !utf8.Valid(rec.Body.Bytes()) || !json.Valid(rec.Body.Bytes()) {
		t.Errorf("BYTES answer in JSON is not valid UTF-8 JSON: %q", rec.Body.Bytes())
	}

	// FP16 travels in binary only.
	h := le[uint16](uint16(tensor.Float16FromFloat32(1.5)), uint16(tensor.Float16FromFloat32(-2)))
	body, hl = binaryBody(`{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"FP16","parameters":{"binary_data_size":4}}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`, h)
	rec = f.do(req{path: inferPath("nb_FP16"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantStatus(t, rec, 200)
	if _, rest := splitBinary(t, rec); !bytes.Equal(rest, h) {
		t.Errorf("FP16 output %v", rest)
	}
	body, hl = binaryBody(`{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"FP16","parameters":{"binary_data_size":4}}]}`, h)
	rec = f.do(req{path: inferPath("nb_FP16"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantError(t, rec, 400, "sending FP16 data via JSON is not supported. Please use the binary data format for output")
	body, hl = binaryBody(`{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"BF16","parameters":{"binary_data_size":4}}]}`, h)
	rec = f.do(req{path: inferPath("nb_BF16"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantError(t, rec, 400, "sending BF16 data via JSON is not supported. Please use the binary data format for output")
}

func TestInferBinaryErrors(t *testing.T) {
	f := newFixture(t)
	header := `{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}`
	data := le[float32](1, 2)
	for _, tc := range []struct {
		name   string
		body   []byte
		hl     string
		status int
		parts  []string
	}{
		{"header length past body", []byte(header), "1000", 400, []string{fmt.Sprintf("inference header size should be in range (0, %d), got: 1000", len(header))}},
		{"negative header length", []byte(header), "-1", 400, []string{"inference header size should be in range"}},
		{"header length not a number", []byte(header), "12abc", 400, []string{"Unable to parse Inference-Header-Content-Length, got: 12abc"}},
		{"binary overrun", append([]byte(header), data[:5]...), fmt.Sprint(len(header)), 400, []string{"unexpected size for input 'INPUT0', expecting 3 additional bytes for model 'id_FP32'"}},
		{"leftover bytes", append(append([]byte(header), data...), 0, 1), fmt.Sprint(len(header)), 400, []string{"unexpected additional input data for model 'id_FP32'"}},
		{"no header length", append([]byte(header), data...), "", 400, []string{"failed to parse the request JSON buffer"}},
		{"header length cuts the JSON", append([]byte(header), data...), "10", 400, []string{"failed to parse the request JSON buffer"}},
		{"binary size type", []byte(`{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":-8}}]}`), "", 400, []string{"Unable to parse 'binary_data_size'"}},
		{"byte size mismatch", append([]byte(strings.Replace(header, `[1,2]`, `[1,3]`, 1)), data...), fmt.Sprint(len(header)), 400, []string{"input byte size mismatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.hl != "" {
				hdr["Inference-Header-Content-Length"] = tc.hl
			}
			wantError(t, f.do(req{path: inferPath("id_FP32"), body: tc.body, header: hdr}), tc.status, tc.parts...)
		})
	}
}

func TestInferRawBinary(t *testing.T) {
	f := newFixture(t)
	raw := map[string]string{"Inference-Header-Content-Length": "0"}
	data := le[float32](1, 2, 3)
	rec := f.do(req{path: inferPath("id_FP32"), body: data, header: raw})
	wantStatus(t, rec, 200)
	hdr, rest := splitBinary(t, rec)
	out := hdr["outputs"].([]any)[0].(map[string]any)
	if fmt.Sprint(out["shape"]) != "[1 3]" || !bytes.Equal(rest, data) {
		t.Errorf("raw FP32: output %v, data %v", out, rest)
	}
	rec = f.do(req{path: inferPath("nb_BYTES"), body: []byte("hello\x00world"), header: raw})
	wantStatus(t, rec, 200)
	_, rest = splitBinary(t, rec)
	if want := tensor.AppendElement(nil, []byte("hello\x00world")); !bytes.Equal(rest, want) {
		t.Errorf("raw BYTES: %q, want %q", rest, want)
	}
	wantError(t, f.do(req{path: inferPath("simple"), body: data, header: raw}), 400, "exactly 1 input", "has 2")
	wantError(t, f.do(req{path: inferPath("id_FP32"), body: data[:5], header: raw}), 400, "raw input size 5 is not a multiple of the 4-byte element size")
	// An empty body without the header is a raw request too (Triton).
	wantError(t, f.do(req{path: inferPath("simple"), body: []byte{}}), 400, "exactly 1 input")
}

func TestInferMixedAndOutputs(t *testing.T) {
	f := newFixture(t)
	x := seq(16, func(i int) int32 { return int32(i) })
	body, hl := binaryBody(`{"inputs":[`+
		`{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]},`+
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],`+
		`"outputs":[{"name":"OUTPUT1"}]}`, le(x...))
	rec := f.do(req{path: inferPath("simple"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantBody(t, rec, `{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]}`)

	// binary_data_output: every output binary, unless an output says
	// otherwise.
	body, hl = binaryBody(`{"parameters":{"binary_data_output":true},"inputs":[`+
		`{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},`+
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}]}`, le(x...), le(x...))
	rec = f.do(req{path: inferPath("simple"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantStatus(t, rec, 200)
	hdr, rest := splitBinary(t, rec)
	if len(hdr["outputs"].([]any)) != 2 || len(rest) != 128 {
		t.Errorf("binary_data_output: %v, %d bytes", hdr, len(rest))
	}
	body, hl = binaryBody(`{"parameters":{"binary_data_output":true},"inputs":[`+
		`{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},`+
		`{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],`+
		`"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false}},{"name":"OUTPUT1"}]}`, le(x...), le(x...))
	rec = f.do(req{path: inferPath("simple"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantStatus(t, rec, 200)
	hdr, rest = splitBinary(t, rec)
	outs := hdr["outputs"].([]any)
	if _, ok := outs[0].(map[string]any)["data"]; !ok || len(rest) != 64 {
		t.Errorf("override: %v, %d bytes", hdr, len(rest))
	}
}

func TestInferClassification(t *testing.T) {
	f := newFixture(t)
	classify := func(model, shape, data, k string, binary bool) string {
		p := `"classification":` + k
		if binary {
			p += `,"binary_data":true`
		}
		return fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":%s,"datatype":"FP32","data":%s}],"outputs":[{"name":"OUTPUT0","parameters":{%s}}]}`, shape, data, p)
	}
	wantBody(t, f.post(inferPath("nb_FP32"), classify("nb_FP32", "[4]", "[0.1,3.3,2.2,4.4]", "2", false)),
		`{"model_name":"nb_FP32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[2],"data":["4.400000:3","3.300000:1"]}]}`)
	// k beyond the elements: all of them; ties keep index order.
	wantBody(t, f.post(inferPath("nb_FP32"), classify("nb_FP32", "[3]", "[1,2,1]", "10", false)),
		`{"model_name":"nb_FP32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[3],"data":["2.000000:1","1.000000:0","1.000000:2"]}]}`)
	// Batching model: [batch, k].
	wantBody(t, f.post(inferPath("id_FP32"), classify("id_FP32", "[2,3]", "[[0.5,-1,2],[7,8,-9]]", "2", false)),
		`{"model_name":"id_FP32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[2,2],"data":["2.000000:2","0.500000:0","8.000000:1","7.000000:0"]}]}`)
	// Integers print as integers.
	wantBody(t, f.post(inferPath("nb_INT32"), `{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"INT32","data":[-5,10,3]}],"outputs":[{"name":"OUTPUT0","parameters":{"classification":1}}]}`),
		`{"model_name":"nb_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"data":["10:1"]}]}`)
	// Labels from label_filename; class 3 has no line, so no label.
	wantBody(t, f.post(inferPath("labeled"), classify("labeled", "[4]", "[0.1,3.3,2.2,4.4]", "4", false)),
		`{"model_name":"labeled","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[4],"data":["4.400000:3","3.300000:1:dog","2.200000:2:","0.100000:0:cat"]}]}`)
	// Binary classification: BYTES framing.
	rec := f.post(inferPath("nb_FP32"), classify("nb_FP32", "[2]", "[1,2]", "1", true))
	wantStatus(t, rec, 200)
	if _, rest := splitBinary(t, rec); !bytes.Equal(rest, tensor.AppendElement(nil, []byte("2.000000:1"))) {
		t.Errorf("binary classification %q", rest)
	}
}

func TestInferParameters(t *testing.T) {
	f := newFixture(t)
	rec := f.post(inferPath("params"), `{"parameters":{"s":"x","i":-3,"b":true,"d":1.5,"big":18446744073709551615,`+
		`"sequence_id":5,"sequence_start":true,"sequence_end":false,"priority":0,"timeout":0,"binary_data_output":false,"headers":{"h":"v"}},`+
		`"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)
	wantBody(t, rec, `{"model_name":"params","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"data":["b=true(bool);big=1.8446744073709552e+19(float64);d=1.5(float64);i=-3(int64);s=x(string)"]}]}`)
	rec = f.post(inferPath("params"), `{"parameters":{"sequence_id":"corr-1"},"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)
	wantStatus(t, rec, 200)

	// priority and timeout reach the scheduler: the batched model has no
	// priority levels and no timeout override.
	body := `{"parameters":{%s},"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`
	wantError(t, f.post(inferPath("batched"), fmt.Sprintf(body, `"priority":5`)), 400, "priority 5 is not a priority level of model 'batched'")
	wantError(t, f.post(inferPath("batched"), fmt.Sprintf(body, `"timeout":100`)), 400, "does not allow a request to set its own timeout")
	wantStatus(t, f.post(inferPath("batched"), fmt.Sprintf(body, `"priority":0,"timeout":0`)), 200)
}

// failing fails every request with the error its "code" parameter names.
var failing = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		var err error
		switch r.Parameters["code"] {
		case "invalid":
			err = fmt.Errorf("bad tensor: %w", backend.ErrInvalidInput)
		case "unavailable":
			err = fmt.Errorf("busy: %w", backend.ErrUnavailable)
		case "unsupported":
			err = fmt.Errorf("no: %w", errors.ErrUnsupported)
		case "notfound":
			err = fmt.Errorf("gone: %w", fs.ErrNotExist)
		case "deadline":
			err = context.DeadlineExceeded
		case "exists":
			err = &triton.Error{Code: triton.AlreadyExists, Err: errors.New("twice")}
		default:
			err = errors.New("boom")
		}
		r.Fail(err)
	}
	return nil
})

func TestInferBackendErrors(t *testing.T) {
	files := map[string]string{
		"fail/config.pbtxt": strings.Replace(identityConfig("fail", "TYPE_INT32", 0), `"mirror"`, `"failing"`, 1),
		"fail/1/model":      "",
	}
	h := httpapi.NewHandler(newServer(t, files, triton.WithBackend("failing", failing)))
	for code, status := range map[string]int{
		"invalid": 400, "unavailable": 503, "unsupported": 501, "notfound": 404, "deadline": 504, "exists": 400, "other": 500,
	} {
		rec := serve(h, req{path: inferPath("fail"), body: []byte(`{"parameters":{"code":"` + code + `"},"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)})
		wantError(t, rec, status)
	}
}

func TestInferMaxSize(t *testing.T) {
	f := newFixture(t, httpapi.WithMaxRequestSize(1024))
	big := `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}],"pad":"` + strings.Repeat("x", 2000) + `"}`
	wantError(t, f.post(inferPath("id_FP32"), big), 400, fmt.Sprintf("Request body size of %d bytes exceeds the maximum allowed value of 1024 bytes", len(big)), "Use --http-max-input-size to increase the limit")
	// A JSON input that decodes larger than the limit: 200 FP64 zeros are
	// 400 bytes of JSON and 1600 of tensor.
	zeros := strings.TrimSuffix(strings.Repeat("0,", 200), ",")
	wantError(t, f.post(inferPath("id_FP64"), `{"inputs":[{"name":"INPUT0","shape":[1,200],"datatype":"FP64","data":[`+zeros+`]}]}`), 400,
		"Input 'INPUT0' has a byte_size (1600 bytes) that exceeds the maximum allowed value of 1024 bytes")
	// Other endpoints are bounded too.
	wantError(t, f.post("/v2/logging", `{"log_info":true,"pad":"`+strings.Repeat("x", 2000)+`"}`), 400, "exceeds the maximum allowed value")
	// Within the limit: fine.
	wantStatus(t, f.post(inferPath("id_FP32"), `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}]}`), 200)
}

func TestInferFloatFormatting(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ in, out string }{
		{"0.1", "0.1"}, {"100", "100.0"}, {"1e21", "1e21"}, {"1e20", "100000000000000000000.0"},
		{"1.5e-7", "1.5e-7"}, {"0.000001", "0.000001"}, {"-0", "-0.0"}, {"123.456", "123.456"},
		{"1.7976931348623157e308", "1.7976931348623157e308"}, {"5e-324", "5e-324"},
	} {
		rec := f.post(inferPath("nb_FP64"), `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP64","data":[`+tc.in+`]}]}`)
		wantBody(t, rec, `{"model_name":"nb_FP64","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP64","shape":[1],"data":[`+tc.out+`]}]}`)
	}
	// NaN and infinities (which JSON cannot hold) arrive in binary.
	body, hl := binaryBody(`{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP64","parameters":{"binary_data_size":24}}]}`, le(math.NaN(), math.Inf(1), math.Inf(-1)))
	rec := f.do(req{path: inferPath("nb_FP64"), body: body, header: map[string]string{"Inference-Header-Content-Length": hl}})
	wantBody(t, rec, `{"model_name":"nb_FP64","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP64","shape":[3],"data":[NaN,Infinity,-Infinity]}]}`)
}

func TestInferIDEcho(t *testing.T) {
	f := newFixture(t)
	rec := f.post(inferPath("nb_INT32"), `{"id":"q\"1","inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[7]}]}`)
	wantBody(t, rec, `{"id":"q\"1","model_name":"nb_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1],"data":[7]}]}`)
}

func TestInferBinaryZeroSizeOutput(t *testing.T) {
	f := newFixture(t)
	// A binary output of 0 bytes contributes no bytes: the answer stays JSON.
	rec := f.post(inferPath("nb_INT32"), `{"inputs":[{"name":"INPUT0","shape":[0],"datatype":"INT32","data":[]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`)
	wantBody(t, rec, `{"model_name":"nb_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[0],"parameters":{"binary_data_size":0}}]}`)
	if rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
	}
}

var _ = http.MethodPost

// TestInferResponseParameters: the parameters a model sets on its response
// are the response's "parameters", after model_version, keys sorted.
func TestInferResponseParameters(t *testing.T) {
	annotate := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			for k, v := range map[string]any{"tokens": int64(3), "done": true, "why": "stop \"eos\"", "p": 0.25, "temp": 2.0, "big": uint64(1) << 63} {
				r.SetParameter(k, v)
			}
		}
		return mirror(ctx, b)
	})
	files := repo()
	files["ann/config.pbtxt"] = `backend: "annotate" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`
	files["ann/1/model"] = ""
	h := httpapi.NewHandler(newServer(t, files, triton.WithBackend("annotate", annotate)))
	rec := serve(h, req{path: inferPath("ann"), body: []byte(`{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[4]}]}`)})
	wantBody(t, rec, `{"model_name":"ann","model_version":"1","parameters":{"big":9223372036854775808,"done":true,"p":0.25,"temp":2.0,"tokens":3,"why":"stop \"eos\""},`+
		`"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1],"data":[4]}]}`)
}
