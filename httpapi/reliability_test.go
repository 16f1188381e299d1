package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triton-go/triton/httpapi"
)

// paramsBody asks the params model, which answers its request parameters
// as "k=v(type);..." in name order.
func paramsBody(params string) []byte {
	return []byte(`{"parameters":{` + params + `},"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`)
}

// inferWithHeaders posts body to model with headers that may repeat.
func inferWithHeaders(h http.Handler, model string, body []byte, hdr http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, inferPath(model), bytes.NewReader(body))
	for k, vs := range hdr {
		r.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestHeaderForwardPattern: headers whose lower-case names match become
// string parameters (several values joined), after the body's parameters,
// so that a header replaces a body parameter of its name; others are not
// forwarded; a matching reserved name fails the request with Triton's
// message; without the option nothing is forwarded.
func TestHeaderForwardPattern(t *testing.T) {
	srv := newServer(t, repo())
	h := httpapi.NewHandler(srv, httpapi.WithHeaderForwardPattern(regexp.MustCompile("(?i)^x-fwd-")))
	hdr := http.Header{
		"X-Fwd-User":  {"alice"},
		"X-Fwd-Multi": {"a", "b"},
		"X-Other":     {"no"},
		"X-Fwd-I":     {"7"},
	}
	rec := inferWithHeaders(h, "params", paramsBody(`"x-fwd-user":"from body","x-fwd-i":1,"s":"x"`), hdr)
	wantBody(t, rec, `{"model_name":"params","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"data":["s=x(string);x-fwd-i=7(string);x-fwd-multi=a, b(string);x-fwd-user=alice(string)"]}]}`)

	// The pattern matches anywhere in the name (RE2's PartialMatch), and
	// names are lower case: a case-sensitive pattern is written so.
	h2 := httpapi.NewHandler(srv, httpapi.WithHeaderForwardPattern(regexp.MustCompile("(?-i)fwd")))
	rec = inferWithHeaders(h2, "params", paramsBody(``), http.Header{"X-Fwd-User": {"bob"}, "Host-Ish": {"no"}})
	wantBody(t, rec, `{"model_name":"params","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"data":["x-fwd-user=bob(string)"]}]}`)

	for _, tc := range []struct{ pattern, header, name string }{
		{"(?i)triton", "Triton_Thing", "triton_thing"},
		{"(?i)^sequence", "Sequence_id", "sequence_id"},
		{"(?i)prio", "Priority", "priority"},
		{"(?i)^headers$", "Headers", "headers"},
		{"(?i)binary", "Binary_data_output", "binary_data_output"},
	} {
		h := httpapi.NewHandler(srv, httpapi.WithHeaderForwardPattern(regexp.MustCompile(tc.pattern)))
		rec := inferWithHeaders(h, "params", paramsBody(``), http.Header{tc.header: {"1"}})
		wantError(t, rec, 400, "Header '"+tc.name+"' is reserved for Triton usage and cannot be forwarded.", "model 'params'")
	}

	// Without the option, or when nothing matches: no parameters.
	for _, h := range []http.Handler{httpapi.NewHandler(srv), httpapi.NewHandler(srv, httpapi.WithHeaderForwardPattern(regexp.MustCompile("^nothing$")))} {
		rec = inferWithHeaders(h, "params", paramsBody(``), hdr)
		wantBody(t, rec, `{"model_name":"params","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1],"data":[""]}]}`)
	}
}

// TestClientErrorsAre4xx: the client mistakes that Triton answers with a
// 5xx status are 4xx here, with Triton's messages.
func TestClientErrorsAre4xx(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		rec    *httptest.ResponseRecorder
		status int
		msg    string
	}{
		{"unknown Content-Encoding", f.do(req{path: inferPath("id_INT32"), body: []byte(smallInfer), header: map[string]string{"Content-Encoding": "br"}}),
			http.StatusUnsupportedMediaType, "Unsupported compression type"},
		{"unknown Content-Encoding x-gzip", f.do(req{path: inferPath("id_INT32"), body: []byte(smallInfer), header: map[string]string{"Content-Encoding": "x-gzip"}}),
			http.StatusUnsupportedMediaType, "Unsupported compression type"},
		{"long string correlation ID", f.post(inferPath("params"), string(paramsBody(`"sequence_id":"`+strings.Repeat("c", 129)+`"`))),
			400, "string correlation ID cannot be longer than 128 characters"},
		{"unknown log_format", f.post("/v2/logging", `{"log_format":"json"}`), 400, "invalid argument for --log_format, got: json"},
		{"unknown load parameter", f.post("/v2/repository/models/id_INT32/load", `{"parameters":{"bogus":"x"}}`), 400, "unexpected error on creating Triton parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.rec, tc.status, tc.msg)
		})
	}
	// 128 characters are fine.
	wantStatus(t, f.post(inferPath("params"), string(paramsBody(`"sequence_id":"`+strings.Repeat("c", 128)+`"`))), 200)
	rec := f.do(req{path: inferPath("id_INT32"), body: []byte(smallInfer), header: map[string]string{"Content-Encoding": "br"}})
	if got := rec.Header().Get("Accept-Encoding"); got != "gzip, deflate" {
		t.Errorf("415 Accept-Encoding %q, want \"gzip, deflate\"", got)
	}
}

// TestInputParametersNotObject: input- and output-level "parameters" that
// are not a JSON object are refused, where they used to be read as empty.
func TestInputParametersNotObject(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{`[]`, `"binary_data_size"`, `1`, `null`, `true`} {
		rec := f.post(inferPath("id_FP32"), `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1],"parameters":`+p+`}]}`)
		wantError(t, rec, 400, "model 'id_FP32', input 'INPUT0': Unable to parse 'parameters': attempt to access JSON non-object as object")
		rec = f.post(inferPath("id_FP32"), `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"OUTPUT0","parameters":`+p+`}]}`)
		wantError(t, rec, 400, "model 'id_FP32': Unable to parse 'parameters': attempt to access JSON non-object as object")
	}
	wantStatus(t, f.post(inferPath("id_FP32"), `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1],"parameters":{}}]}`), 200)
}

// TestParseErrorsNameModelAndInput: errors from decoding JSON and binary
// bodies name the model and the input at fault.
func TestParseErrorsNameModelAndInput(t *testing.T) {
	f := newFixture(t)
	two := func(second string) string {
		return `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]},` + second + `]}`
	}
	for _, tc := range []struct {
		name, model, body, hl string
		want                  []string
	}{
		{"shape", "id_FP32", two(`{"name":"IN1","shape":[-1],"datatype":"FP32","data":[1]}`), "",
			[]string{"model 'id_FP32', input 'IN1': Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer"}},
		{"data count", "id_FP32", two(`{"name":"IN1","shape":[3],"datatype":"FP32","data":[1]}`), "",
			[]string{"model 'id_FP32', input 'IN1': Failed to parse 'data' field: shape does not match true shape of 'data' field"}},
		{"element type", "id_INT32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"INT32","data":["x"]}]}`, "",
			[]string{"model 'id_INT32', input 'INPUT0': Unable to parse 'data': attempt to access JSON non-signed-integer as signed-integer"}},
		{"out of range", "id_INT8", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"INT8","data":[300]}]}`, "",
			[]string{"model 'id_INT8', input 'INPUT0': Unable to parse 'data': value 300 is out of range for INT8 input 'INPUT0'"}},
		{"bytes element", "id_BYTES", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"BYTES","data":[1]}]}`, "",
			[]string{"model 'id_BYTES', input 'INPUT0': Unable to parse JSON bytes array"}},
		{"no name", "id_FP32", two(`{"shape":[1],"datatype":"FP32","data":[1]}`), "",
			[]string{"model 'id_FP32', input #1: Unable to parse 'name'"}},
		{"not an object", "id_FP32", `{"inputs":[7]}`, "",
			[]string{"model 'id_FP32', input #0: Unable to parse 'inputs'"}},
		{"datatype", "id_FP32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":3,"data":[1]}]}`, "",
			[]string{"model 'id_FP32', input 'INPUT0': Unable to parse 'datatype'"}},
		{"FP16 in JSON", "nb_FP16", `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP16","data":[1]}]}`, "",
			[]string{"model 'nb_FP16', input 'INPUT0': receiving FP16 data via JSON is not supported"}},
		{"binary size type", "id_FP32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","parameters":{"binary_data_size":"4"}}]}`, "",
			[]string{"model 'id_FP32', input 'INPUT0': Unable to parse 'binary_data_size'"}},
		{"binary short", "id_FP32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","parameters":{"binary_data_size":8}}]}` + "|\x00\x00", "auto",
			[]string{"unexpected size for input 'INPUT0', expecting 6 additional bytes for model 'id_FP32'"}},
		{"binary extra", "id_FP32", `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}` + "|\x00\x00\x80\x3f\x00", "auto",
			[]string{"unexpected additional input data for model 'id_FP32'"}},
		{"syntax", "id_FP32", `{"inputs":[{"name":"INPUT0",]}`, "",
			[]string{"model 'id_FP32': failed to parse the request JSON buffer"}},
		{"header length", "id_FP32", `{}`, "x",
			[]string{"model 'id_FP32': Unable to parse Inference-Header-Content-Length, got: x"}},
		{"request parameters", "id_FP32", `{"parameters":{"priority":"high"},"inputs":[]}`, "",
			[]string{"model 'id_FP32': Unable to parse 'priority'"}},
		{"raw input", "id_FP32", "abc", "0",
			[]string{"raw input size 3 is not a multiple of the 4-byte element size of input 'INPUT0' (FP32) of model 'id_FP32'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			body := tc.body
			if tc.hl == "auto" { // the JSON header, "|", the binary data
				json, bin, _ := strings.Cut(tc.body, "|")
				body, tc.hl = json+bin, strconv.Itoa(len(json))
			}
			if tc.hl != "" {
				hdr["Inference-Header-Content-Length"] = tc.hl
			}
			rec := f.do(req{path: inferPath(tc.model), body: []byte(body), header: hdr})
			wantError(t, rec, 400, tc.want...)
			if strings.Count(rec.Body.String(), "model '") > 1 {
				t.Errorf("the model is named twice: %s", rec.Body.String())
			}
		})
	}
}

// TestErrorJSONIsUTF8: names and messages that quote the client's bytes
// are answered as valid UTF-8 JSON.
func TestErrorJSONIsUTF8(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{
		`{"inputs":[{"name":"IN\xff\xfe","shape":[-1],"datatype":"FP32","data":[1]}]}`,
		`{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP\xc3","data":[1]}]}`,
		`{"id":"\xed\xa0\x80","inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP32","data":[1]}],"outputs":[{"name":"OUT\x80"}]}`,
		`{"parameters":{"sequence_id":"` + strings.Repeat("\xff", 200) + `"},"inputs":[]}`,
	} {
		rec := f.post(inferPath("id_FP32"), body)
		var e map[string]string
		if rec.Code < 400 || rec.Code >= 500 || !utf8.Valid(rec.Body.Bytes()) || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e["error"] == "" {
			t.Errorf("%q: status %d, body %q", body, rec.Code, rec.Body.Bytes())
		}
	}
}
