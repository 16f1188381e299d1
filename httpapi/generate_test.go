package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// upper is a text model in the generate extension's names: text_output
// is text_input in upper case, length its length in bytes.
var upper = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("text_input")
		var outs []string
		var lens []int64
		for _, e := range in.Elements() {
			outs = append(outs, strings.ToUpper(string(e)))
			lens = append(lens, int64(len(e)))
		}
		text, err := tensor.FromStrings("text_output", in.Shape, outs)
		if err != nil {
			return err
		}
		n, err := tensor.From("length", in.Shape, lens)
		if err != nil {
			return err
		}
		r.SetOutput(text)
		r.SetOutput(n)
	}
	return nil
})

const upperConfig = `
name: "upper"
backend: "upper"
max_batch_size: 0
input [ { name: "text_input" data_type: TYPE_STRING dims: [ -1 ] } ]
output [
  { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] },
  { name: "length" data_type: TYPE_INT64 dims: [ -1 ] }
]
`

// paramsInputConfig has an input named like generate's "parameters" key.
const paramsInputConfig = `
name: "pinput"
backend: "mirror"
max_batch_size: 0
input [ { name: "parameters" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "parameters" data_type: TYPE_INT32 dims: [ 1 ] } ]
`

// generateFixture is the standard repository plus upper and pinput.
func generateFixture(t *testing.T, opts ...httpapi.Option) *fixture {
	t.Helper()
	files := repo()
	files["upper/config.pbtxt"] = upperConfig
	files["upper/1/model"] = ""
	files["pinput/config.pbtxt"] = paramsInputConfig
	files["pinput/1/model"] = ""
	srv := newServer(t, files, triton.WithBackend("upper", upper))
	return &fixture{t: t, srv: srv, h: httpapi.NewHandler(srv, opts...)}
}

func generatePath(model string) string { return "/v2/models/" + model + "/generate" }
func streamPath(model string) string   { return "/v2/models/" + model + "/generate_stream" }

func jsonSeq(from, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(from + i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestGenerateText(t *testing.T) {
	f := generateFixture(t)
	// A string is one element: the text model answers with single-element
	// outputs, unwrapped, members sorted by name.
	rec := f.post(generatePath("upper"), `{"text_input":"Hello, world","id":"42"}`)
	wantBody(t, rec, `{"id":"42","length":12,"model_name":"upper","model_version":"1","text_output":"HELLO, WORLD"}`)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	// An array of strings: several elements stay an array.
	wantBody(t, f.post(generatePath("upper"), `{"text_input":["a","bc"]}`),
		`{"length":[1,2],"model_name":"upper","model_version":"1","text_output":["A","BC"]}`)
	// An input may travel inside "parameters" too.
	wantBody(t, f.post(generatePath("upper"), `{"parameters":{"text_input":"x"}}`),
		`{"length":1,"model_name":"upper","model_version":"1","text_output":"X"}`)
}

func TestGenerateTensors(t *testing.T) {
	f := generateFixture(t)
	// simple batches (metadata shape [-1,16]): 16 numbers become [1,16].
	body := fmt.Sprintf(`{"INPUT0":%s,"INPUT1":%s}`, jsonSeq(0, 16), jsonSeq(1, 16))
	want := fmt.Sprintf(`{"OUTPUT0":%s,"OUTPUT1":%s,"model_name":"simple","model_version":"1"}`,
		"[1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31]", "[-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1]")
	wantBody(t, f.post(generatePath("simple"), body), want)
	wantBody(t, f.post("/v2/models/simple/versions/1/generate", body), want)
	// Numbers take the input's datatype.
	for _, tc := range []struct{ model, in, out string }{
		{"nb_FP32", `[1.5,-2,3]`, `[1.5,-2.0,3.0]`},
		{"nb_UINT8", `255`, `255`},
		{"nb_BOOL", `[true,false]`, `[true,false]`},
		{"nb_INT64", `[-9223372036854775808]`, `-9223372036854775808`},
		{"id_INT16", `[[1],[2]]`, `[1,2]`}, // nested, as many scalars as elements
	} {
		wantBody(t, f.post(generatePath(tc.model), `{"INPUT0":`+tc.in+`}`),
			fmt.Sprintf(`{"OUTPUT0":%s,"model_name":%q,"model_version":"1"}`, tc.out, tc.model))
	}
	// A decoupled model that answers once (here through Infer).
	wantBody(t, f.post(generatePath("decoupled"), `{"INPUT0":5}`), `{"OUTPUT0":5,"model_name":"decoupled","model_version":"1"}`)
}

func TestGenerateParameters(t *testing.T) {
	f := generateFixture(t)
	// Keys that name no input, top level or in "parameters", are request
	// parameters; so is "id", as in Triton. Reserved names are plain
	// parameters here (Triton's generate does not interpret them).
	rec := f.post(generatePath("params"), `{"INPUT0":1,"id":"r1","temperature":"hot","n":-3,"stream":false,"parameters":{"top_k":5,"sequence_id":"s"}}`)
	wantBody(t, rec, `{"OUTPUT0":"id=r1(string);n=-3(int64);sequence_id=s(string);stream=false(bool);temperature=hot(string);top_k=5(int64)","id":"r1","model_name":"params","model_version":"1"}`)
}

func TestGenerateErrors(t *testing.T) {
	f := generateFixture(t, httpapi.WithMaxRequestSize(1000))
	// Strings for BYTES inputs must be UTF-8; the error gives the offset of
	// the bad byte in the body.
	notUTF8 := func(body string, bad byte, within string) []string {
		return []string{fmt.Sprintf("model 'upper', input 'text_input': %sJSON strings must be UTF-8; invalid byte 0x%02x at offset %d of the request body; send arbitrary bytes as binary tensor data", within, bad, strings.IndexByte(body, bad))}
	}
	const ffBody, nestedBody = "{\"text_input\":\"\xff\xfe\"}", "{\"parameters\":{\"text_input\":[\"\\u00e9\",\"a\xc3(\"]}}"
	for _, tc := range []struct {
		name, model, body string
		header            map[string]string
		code              int
		parts             []string
	}{
		{"BYTES not UTF-8", "upper", ffBody, nil, 400, notUTF8(ffBody, 0xff, "")},
		{"BYTES not UTF-8 in parameters", "upper", nestedBody, nil, 400, notUTF8(nestedBody, 0xc3, "Converting keyword: 'parameters': ")},
		{"bad JSON", "upper", `{"text_input":`, nil, 400, []string{"model 'upper': failed to parse the request JSON buffer"}},
		{"empty body", "upper", ``, nil, 400, []string{"The document is empty."}},
		{"not an object", "upper", `["x"]`, nil, 400, []string{"the request must be a JSON object"}},
		{"id not a string", "upper", `{"id":1,"text_input":"x"}`, nil, 400, []string{"Unable to parse 'id': attempt to access JSON non-string as string"}},
		{"float parameter", "upper", `{"text_input":"x","temperature":0.5}`, nil, 400, []string{"parameter 'temperature' has invalid type. It should be either 'int', 'bool', or 'string'."}},
		{"null parameter", "upper", `{"text_input":"x","stop":null}`, nil, 400, []string{"parameter 'stop' has invalid type"}},
		{"array parameter in parameters", "upper", `{"text_input":"x","parameters":{"stop":["a"]}}`, nil, 400, []string{"Converting keyword: 'parameters': parameter 'stop' has invalid type"}},
		{"parameters not an object", "upper", `{"text_input":"x","parameters":3}`, nil, 400, []string{"Expected JSON object for keyword: 'parameters'"}},
		{"parameters is an input", "pinput", `{"parameters":{"a":1}}`, nil, 400, []string{"Keyword 'parameters' for nested schema also given as input tensor name"}},
		{"missing required input", "simple", `{"INPUT0":` + jsonSeq(0, 16) + `}`, nil, 400, []string{"missing required input(s) ['INPUT1']", "model 'simple'"}},
		{"string for INT32", "params", `{"INPUT0":"7"}`, nil, 400, []string{"model 'params', input 'INPUT0': Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"}},
		{"number for BYTES", "upper", `{"text_input":[1]}`, nil, 400, []string{"input 'text_input': Unable to parse JSON bytes array"}},
		{"inside parameters", "params", `{"parameters":{"INPUT0":true}}`, nil, 400, []string{"model 'params', input 'INPUT0': Converting keyword: 'parameters': Unable to parse 'data'"}},
		{"count does not fit", "simple", `{"INPUT0":[1,2,3],"INPUT1":[1,2,3]}`, nil, 400, []string{"The schema can not convert input 'INPUT0' to tensor with proper shape"}},
		{"nested too many", "nb_INT32", `{"INPUT0":[[1,2]]}`, nil, 400, []string{"Shape does not match true shape of 'data' field"}},
		{"nested too few", "nb_INT32", `{"INPUT0":[[],[1]]}`, nil, 400, []string{"shape does not match true shape"}},
		{"out of range", "nb_UINT8", `{"INPUT0":300}`, nil, 400, []string{"out of range for UINT8 input 'INPUT0'"}},
		{"FP16", "nb_FP16", `{"INPUT0":[1]}`, nil, 400, []string{"receiving FP16 data via JSON is not supported"}},
		{"too large decoded", "nb_INT64", `{"INPUT0":` + jsonSeq(0, 200) + `}`, nil, 400, []string{"exceeds the maximum allowed input size of 1000. Use --http-max-input-size to increase the limit."}},
		{"compressed", "upper", `{"text_input":"x"}`, map[string]string{"Content-Encoding": "gzip"}, 400, []string{"Unsupported content-encoding, only 'identity' is supported."}},
		{"unknown model", "nosuch", `{}`, nil, 400, []string{"Request for unknown model: 'nosuch' is not found"}},
		{"unknown version", "upper/versions/3", `{}`, nil, 404, []string{"'upper' version 3 is not found"}},
	} {
		for _, path := range []string{generatePath(tc.model), streamPath(tc.model)} {
			t.Run(tc.name+path[strings.LastIndexByte(path, '/'):], func(t *testing.T) {
				wantError(t, f.do(req{method: http.MethodPost, path: path, body: []byte(tc.body), header: tc.header}), tc.code, tc.parts...)
			})
		}
	}
	wantError(t, f.get(generatePath("upper")), 405, "Method Not Allowed")
	wantError(t, f.get(streamPath("upper")), 405, "Method Not Allowed")
}

func TestGenerateRestricted(t *testing.T) {
	f := generateFixture(t, httpapi.WithRestrictedAPI("inference", "infer-key", "s3cret"))
	wantError(t, f.post(streamPath("upper"), `{"text_input":"x"}`), 403, "This API is restricted, expecting header 'infer-key'")
	rec := f.do(req{path: generatePath("upper"), body: []byte(`{"text_input":"x"}`), header: map[string]string{"infer-key": "s3cret"}})
	wantStatus(t, rec, 200)
}

func TestGenerateStream(t *testing.T) {
	f := generateFixture(t)
	rec := f.post(streamPath("upper"), `{"text_input":"hi","id":"7"}`)
	wantBody(t, rec, "data: {\"id\":\"7\",\"length\":2,\"model_name\":\"upper\",\"model_version\":\"1\",\"text_output\":\"HI\"}\n\n")
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type %q, want text/event-stream; charset=utf-8", ct)
	}
	if !rec.Flushed {
		t.Error("the event was not flushed")
	}
}

// Responses are never compressed, whatever Accept-Encoding asks and however
// large: a compressor would hold SSE events back.
func TestGenerateUncompressed(t *testing.T) {
	f := generateFixture(t, httpapi.WithCompressionMinSize(1))
	body := []byte(`{"INPUT0":` + jsonSeq(1000000, 400) + `}`)
	for _, path := range []string{generatePath("nb_INT64"), streamPath("nb_INT64")} {
		rec := f.do(req{path: path, body: body, header: map[string]string{"Accept-Encoding": "gzip"}})
		wantStatus(t, rec, 200)
		if enc := rec.Header().Get("Content-Encoding"); enc != "" {
			t.Errorf("%s: Content-Encoding %q", path, enc)
		}
		if !bytes.Contains(rec.Body.Bytes(), []byte(`"OUTPUT0":[1000000,1000001,`)) {
			t.Errorf("%s: body %.80q", path, rec.Body.Bytes())
		}
	}
}

// FuzzGenerate sends arbitrary bodies to both generate endpoints of the
// test models. The handler must never panic or answer 5xx for a request
// it could not use (501 and 503 aside), must answer errors as
// {"error": string}, and a stream as "data: <JSON object>\n\n" events.
func FuzzGenerate(f *testing.F) {
	models := []string{"upper", "simple", "params", "nb_BYTES", "id_FP32", "nb_FP16", "id_UINT8", "decoupled", "pinput", "batched"}
	seeds := []struct {
		model int
		body  string
	}{
		{0, `{"text_input":"hi","id":"1","max_tokens":3,"stream":true}`},
		{0, `{"parameters":{"text_input":["a","b"],"temperature":1}}`},
		{1, `{"INPUT0":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"INPUT1":[[1,2,3,4,5,6,7,8],[9,10,11,12,13,14,15,16]]}`},
		{2, `{"INPUT0":7,"sequence_id":"s","triton_x":true}`},
		{3, `{"INPUT0":["\u0000","\ud83d\ude00"]}`},
		{4, `{"INPUT0":[1.5,1e39,-0]}`},
		{5, `{"INPUT0":[1]}`},
		{6, `{"INPUT0":[[[[[300]]]]]}`},
		{7, `{"INPUT0":[]}`},
		{8, `{"parameters":[]}`},
		{9, `{"INPUT0":[1,2,3,4,5,6,7,8],"id":null}`},
		{0, "{\"text_input\":\"\xff\xfe\",\"k\xff\":1}"},
		{0, "{\"parameters\":{\"text_input\":[\"\\u00e9\",\"\xef\xbf\xbd\xe2\x82\"]}}"},
	}
	for _, s := range seeds {
		f.Add(uint8(s.model), false, []byte(s.body))
		f.Add(uint8(s.model), true, []byte(s.body))
	}
	files := repo()
	files["upper/config.pbtxt"] = upperConfig
	files["upper/1/model"] = ""
	files["pinput/config.pbtxt"] = paramsInputConfig
	files["pinput/1/model"] = ""
	srv := newServer(f, files, triton.WithBackend("upper", upper))
	h := httpapi.NewHandler(srv, httpapi.WithMaxRequestSize(1<<16))
	f.Fuzz(func(t *testing.T, model uint8, stream bool, body []byte) {
		path := generatePath(models[int(model)%len(models)])
		if stream {
			path += "_stream"
		}
		rec := serve(h, req{method: http.MethodPost, path: path, body: body})
		switch {
		case rec.Code == 200 && stream:
			rest := rec.Body.String()
			for rest != "" {
				ev, after, ok := strings.Cut(rest, "\n\n")
				data, isData := strings.CutPrefix(ev, "data: ")
				if !ok || !isData || !jsonObject(data) {
					t.Fatalf("stream %q is not data: {...} events", rec.Body.String())
				}
				rest = after
			}
			return
		case rec.Code == 200:
			if !jsonObject(rec.Body.String()) {
				t.Fatalf("answer %q is not a UTF-8 JSON object", rec.Body.String())
			}
			return
		case rec.Code >= 500 && rec.Code != 501 && rec.Code != 503:
			t.Fatalf("status %d for a bad request: %s", rec.Code, rec.Body.String())
		case rec.Code < 400:
			t.Fatalf("status %d", rec.Code)
		}
		var e map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" || !utf8.Valid(rec.Body.Bytes()) {
			t.Fatalf("error body %q is not {\"error\": string} in UTF-8: %v", rec.Body.String(), err)
		}
	})
}

// jsonObject reports whether s is a JSON object in UTF-8, allowing the NaN
// and infinities that FP32 and FP64 outputs may hold (as the infer
// endpoint writes them).
func jsonObject(s string) bool {
	var obj map[string]any
	s = strings.NewReplacer("-Infinity", "0", "Infinity", "0", "NaN", "0").Replace(s)
	return utf8.ValidString(s) && json.Unmarshal([]byte(s), &obj) == nil
}

// TestGenerateStreamDecoupled: generate_stream sends each response of a
// decoupled model (the repeat backend) as its own event, in order, and
// the final flag alone adds none; generate refuses the several responses
// with Triton's message.
func TestGenerateStreamDecoupled(t *testing.T) {
	files := repo()
	files["repeat/config.pbtxt"] = `name: "repeat"` + testmodels.RepeatConfig
	files["repeat/1/model"] = ""
	srv := newServer(t, files, triton.WithBackend("repeat", &testmodels.Repeat{}))
	f := &fixture{t: t, srv: srv, h: httpapi.NewHandler(srv)}
	body := `{"IN":[4,5,6],"DELAY":[0,0,0],"WAIT":0}`
	rec := f.post(streamPath("repeat"), body)
	wantStatus(t, rec, 200)
	wantBody(t, rec, `data: {"IDX":0,"OUT":4,"model_name":"repeat","model_version":"1"}`+"\n\n"+
		`data: {"IDX":1,"OUT":5,"model_name":"repeat","model_version":"1"}`+"\n\n"+
		`data: {"IDX":2,"OUT":6,"model_name":"repeat","model_version":"1"}`+"\n\n")
	rec = f.post(generatePath("repeat"), body)
	wantStatus(t, rec, 400)
	if !strings.Contains(rec.Body.String(), "generate expects model to produce exactly 1 response") {
		t.Errorf("generate on 3 responses: %s", rec.Body.String())
	}
}
