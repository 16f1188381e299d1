package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/triton-go/triton/httpapi"
)

// FuzzInfer sends arbitrary bodies and framing headers to the inference
// endpoint of every test model. The handler must never panic (a recovered
// panic would answer 500), never answer 5xx for a request it could not
// parse, and always answer errors as {"error": string}.
func FuzzInfer(f *testing.F) {
	models := []string{"simple", "id_FP32", "nb_BYTES", "id_BOOL", "nb_FP16", "params", "batched", "nb_INT8", "id_UINT64", "decoupled"}
	seeds := []struct {
		model                 int
		body, hl, enc, accept string
	}{
		{0, `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[[1,2,3,4,5,6,7,8],[9,10,11,12,13,14,15,16]]}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"classification":3}}]}`, "", "", ""},
		{1, `{"id":"x","parameters":{"binary_data_output":true,"p":1.5},"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}` + "\x00\x00\x80\x3f\x00\x00\x00\x40", "137", "", "gzip"},
		{2, "hello", "0", "", ""},
		{2, `{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"BYTES","data":["a","\u0000"]}]}`, "", "identity", "deflate;q=0.5"},
		{3, `{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"BOOL","data":[true,false]}],"outputs":[{"name":"OUTPUT0","parameters":{"shared_memory_region":"r","shared_memory_byte_size":2}}]}`, "", "", ""},
		{4, `{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP16","parameters":{"binary_data_size":2}}]}` + "\x00\x3c", "97", "", ""},
		{5, `{"parameters":{"sequence_id":"s","sequence_start":true,"priority":1,"timeout":10,"triton_x":1},"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`, "", "", ""},
		{6, `{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}`, "", "", ""},
		{7, `{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"INT8","data":[-128,127,300]}],"outputs":[{"name":"OUTPUT0","parameters":{"classification":2}}]}`, "", "", ""},
		{8, `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"UINT64","data":[18446744073709551615]}]}`, "", "gzip", ""},
		{9, `{"inputs":[]}`, "", "", ""},
		{1, "[[[[[[[[[[[[[[[[[[[[", "", "", ""},
		{1, `{"inputs":[{"name":"INPUT0","shape":[9223372036854775807,2],"datatype":"FP32","data":[1]}]}`, "", "", ""},
		{1, "{\"inputs\":[{\"name\":\"IN\xff\",\"shape\":[-1],\"datatype\":\"FP\xc3\",\"data\":[1],\"parameters\":[]}]}", "", "", ""},
		{2, "{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[1],\"datatype\":\"BYTES\",\"data\":[\"\xed\xa0\x80\"]}]}", "", "", ""},
		{2, "{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[2],\"datatype\":\"BYTES\",\"data\":[[\"\\u00e9\\ufffd\"],[\"\xef\xbf\xbd\xc3(\"]]}]}", "", "", ""},
		{5, `{"parameters":{"sequence_id":"` + strings.Repeat("x", 129) + `"},"inputs":[]}`, "", "br", ""},
	}
	for _, s := range seeds {
		f.Add(uint8(s.model), []byte(s.body), s.hl, s.enc, s.accept)
	}
	// Compressed bodies, for the fuzzer to break.
	f.Add(uint8(6), gz([]byte(seeds[7].body)), "", "gzip", "gzip")
	f.Add(uint8(1), zl([]byte(seeds[1].body)), seeds[1].hl, "deflate", "deflate")
	srv := newServer(f, repo())
	h := httpapi.NewHandler(srv, httpapi.WithMaxRequestSize(1<<20))
	f.Fuzz(func(t *testing.T, model uint8, body []byte, headerLen, encoding, accept string) {
		hdr := map[string]string{}
		if headerLen != "" {
			hdr["Inference-Header-Content-Length"] = headerLen
		}
		if encoding != "" {
			hdr["Content-Encoding"] = encoding
		}
		if accept != "" {
			hdr["Accept-Encoding"] = accept
		}
		for k, v := range hdr {
			if strings.ContainsAny(k+v, "\r\n\x00") {
				return // not a valid header
			}
		}
		name := models[int(model)%len(models)]
		rec := serve(h, req{method: http.MethodPost, path: inferPath(name), body: body, header: hdr})
		switch {
		case rec.Code == 200:
			if !utf8.Valid(rec.Body.Bytes()) && rec.Header().Get("Content-Type") == "application/json" {
				t.Fatalf("answer %q is not UTF-8", rec.Body.String())
			}
			// JSON BYTES data is refused unless it is UTF-8, so an
			// all-JSON request to the mirroring nb_BYTES never gets a
			// byte replaced by U+FFFD (written \ufffd) in its answer.
			if name == "nb_BYTES" && headerLen == "" && rec.Header().Get("Content-Encoding") == "" && strings.Contains(rec.Body.String(), `\ufffd`) {
				t.Fatalf("answer %q replaced bytes of the request %q", rec.Body.String(), body)
			}
			return
		case rec.Code >= 500 && rec.Code != 501 && rec.Code != 503:
			t.Fatalf("status %d for a bad request: %s", rec.Code, rec.Body.String())
		case rec.Code < 400:
			t.Fatalf("status %d", rec.Code)
		}
		// Errors quote the request's bytes (names, datatypes), which need
		// not be UTF-8: the answer is valid UTF-8 JSON all the same.
		var e map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" || !utf8.Valid(rec.Body.Bytes()) {
			t.Fatalf("error body %q is not {\"error\": string} in UTF-8: %v", rec.Body.String(), err)
		}
	})
}
