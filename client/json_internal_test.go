package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/reverse"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// FuzzFlatStrings checks decodeJSONData's fast path for BYTES against its
// general path: wherever it answers, with the same bytes.
func FuzzFlatStrings(f *testing.F) {
	for _, s := range []string{
		`["dlrow olleh"]`, `[]`, ` [ ] `, `["", "a" ,"b c"]`, "[\n\"x\"\t]", `["é", "\u00e9"]`, `["a\"b"]`,
		`[["a"]]`, `["a", 1]`, `["a", null]`, `[null]`, `"a"`, `["a",]`, "[\"\xff\"]", `["a"] x`, `{"a":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // decodeJSONData gets valid JSON only
		}
		fast, ok := flatStrings(raw)
		if !ok {
			return
		}
		want, err := decodeJSONTokens(tensor.Bytes, raw)
		if err != nil || !bytes.Equal(fast, want) {
			t.Errorf("flatStrings(%q) = %q, the general path %q, %v", raw, fast, want, err)
		}
	})
}

func TestFlatStringsTakes(t *testing.T) {
	for raw, want := range map[string]bool{
		`["dlrow olleh"]`: true, `[]`: true, ` ["a", "b"] `: true,
		`["a\"b"]`: false, `[["a"]]`: false, `["a", null]`: false, "[\"\xff\"]": false,
	} {
		if _, ok := flatStrings([]byte(raw)); ok != want {
			t.Errorf("flatStrings(%q) took it: %v, want %v", raw, ok, want)
		}
	}
}

// FuzzResponseHeader checks readResponseHeader against json.Unmarshal:
// wherever it answers, with the same inferResponseJSON.
func FuzzResponseHeader(f *testing.F) {
	for _, s := range []string{
		`{"model_name":"text_reverse","model_version":"1","outputs":[{"name":"REVERSED","datatype":"BYTES","shape":[1],"data":["dlrow olleh"]}]}`,
		`{"id":"r1","model_name":"m","model_version":"2","parameters":{"a":1,"b":"x","c":true,"d":-2.5e3,"e":false},` +
			`"outputs":[{"name":"O","datatype":"FP32","shape":[2,16],"parameters":{"binary_data_size":128}},{"name":"P","datatype":"INT32","shape":[],"data":[[1,2],[3,null]]}]}`,
		` { "outputs" : [ ] , "parameters" : { } } `, `{}`, `{"outputs":[{"parameters":{}}]}`,
		`{"model_name":"a","model_name":"b"}`, `{"Model_Name":"a"}`, `{"model_name":"a\"b"}`, `{"model_name":null}`,
		`{"outputs":[{"shape":[1.0]}]}`, `{"outputs":[{"shape":[1e2]}]}`, `{"outputs":[{"shape":[99999999999999999999]}]}`,
		`{"outputs":[{"parameters":{"binary_data_size":-1}}]}`, `{"outputs":[{"data":null}]}`, `{"parameters":{"a":{}}}`,
		`{"parameters":{"a":1,"a":2}}`, `{"model_version":1}`, `{"outputs":[{"name":"é","datatype":"\u00e9"}]}`, "{\"id\":\"\xff\"}",
		`{"outputs":[{"data":[1,2,]}]}`, `{} x`, `[]`, `{"outputs":[{"data":[-0.5e-3, 0, 01]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast inferResponseJSON
		if !readResponseHeader(b, &fast) {
			return
		}
		var want inferResponseJSON
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("readResponseHeader read %q, which json.Unmarshal refuses: %v", b, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Errorf("readResponseHeader(%q) = %+v, json.Unmarshal %+v", b, fast, want)
		}
	})
}

// TestResponseHeaderFromServer checks that the reader takes the headers
// httpapi writes, JSON and binary, with and without an ID, and reads them
// as encoding/json does.
func TestResponseHeaderFromServer(t *testing.T) {
	srv := testmodels.NewServer(t, map[string]string{
		"text_reverse/config.pbtxt": `name: "text_reverse" backend: "reverse" max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "REVERSED" data_type: TYPE_STRING dims: [ -1 ] } ]`,
		"text_reverse/1/model.txt": "",
	}, triton.WithBackend(reverse.Name, reverse.Backend))
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	t.Cleanup(ts.Close)
	for _, body := range []string{
		`{"inputs":[{"name":"TEXT","shape":[2],"datatype":"BYTES","data":["hello world","a b"]}]}`,
		`{"id":"r-1","inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["x"]}],"outputs":[{"name":"REVERSED","parameters":{"binary_data":true}}]}`,
		`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["x"]}],"parameters":{"binary_data_output":true}}`,
	} {
		resp, err := http.Post(ts.URL+"/v2/models/text_reverse/infer", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s %v", body, resp.StatusCode, b, err)
		}
		if n, err := strconv.Atoi(resp.Header.Get(headerLengthHeader)); err == nil {
			b = b[:n]
		}
		var fast, want inferResponseJSON
		if !readResponseHeader(b, &fast) {
			t.Errorf("the reader left %s to encoding/json", b)
			continue
		}
		if err := json.Unmarshal(b, &want); err != nil || !reflect.DeepEqual(fast, want) {
			t.Errorf("%s: read %+v, encoding/json %+v, %v", b, fast, want, err)
		}
	}
}

// TestResponseHeaderTakes checks which headers the reader takes itself.
func TestResponseHeaderTakes(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"model_name":"text_reverse","model_version":"1","outputs":[{"name":"REVERSED","datatype":"BYTES","shape":[1],"data":["dlrow olleh"]}]}`:                             true,
		`{"id":"r","model_name":"m","model_version":"1","parameters":{"p":1},"outputs":[{"name":"O","datatype":"FP32","shape":[1,16],"parameters":{"binary_data_size":64}}]}`: true,
		`{"model_name":"a\"b"}`: false, `{"Model_Name":"a"}`: false, `{"model_name":"a","model_name":"b"}`: false, `{"model_name":null}`: false,
	} {
		var rj inferResponseJSON
		if ok := readResponseHeader([]byte(raw), &rj); ok != want {
			t.Errorf("readResponseHeader(%s) took it: %v, want %v", raw, ok, want)
		}
	}
}

func BenchmarkResponseHeader(b *testing.B) {
	header := []byte(`{"model_name":"text_reverse","model_version":"1","outputs":[{"name":"REVERSED","datatype":"BYTES","shape":[1],"data":["dlrow olleh"]}]}`)
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rj inferResponseJSON
			if !readResponseHeader(header, &rj) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var rj inferResponseJSON
			if err := json.Unmarshal(header, &rj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
