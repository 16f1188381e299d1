package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test backends and helpers shared with the other packages' tests.
var (
	mirror     = testmodels.Mirror
	addSub     = testmodels.AddSub
	echoParams = testmodels.EchoParams
	newBlocker = testmodels.NewBlocker
	dtypes     = testmodels.Dtypes
)

// identityConfig is a model answering OUTPUT0 = INPUT0 of one datatype.
func identityConfig(name, dt string, maxBatch int) string {
	return fmt.Sprintf(`
name: %q
backend: "mirror"
max_batch_size: %d
input [ { name: "INPUT0" data_type: %s dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: %s dims: [ -1 ] } ]
`, name, maxBatch, dt, dt)
}

const simpleConfig = `
name: "simple"
backend: "addsub"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
`

const paramsConfig = `
name: "params"
backend: "params"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]
`

const decoupledConfig = `
name: "decoupled"
backend: "mirror"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }
`

const batchedConfig = `
name: "batched"
backend: "mirror"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }
`

const labeledConfig = `
name: "labeled"
backend: "mirror"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] label_filename: "labels.txt" } ]
`

// repo returns the standard test repository: simple, params, decoupled,
// batched, labeled (classes 0-2 named cat, dog and ""), and id_<wire> (batching) and nb_<wire> (not batching) identity
// models of every datatype, all with a version 1.
func repo() map[string]string {
	files := map[string]string{
		"simple/config.pbtxt":    simpleConfig,
		"simple/1/model":         "",
		"params/config.pbtxt":    paramsConfig,
		"params/1/model":         "",
		"decoupled/config.pbtxt": decoupledConfig,
		"decoupled/1/model":      "",
		"batched/config.pbtxt":   batchedConfig,
		"batched/1/model":        "",
		"labeled/config.pbtxt":   labeledConfig,
		"labeled/labels.txt":     "cat\r\ndog\n\n",
		"labeled/1/model":        "",
	}
	for _, d := range dtypes {
		for _, m := range []struct {
			prefix string
			batch  int
		}{{"id_", 8}, {"nb_", 0}} {
			name := m.prefix + d.Wire
			files[name+"/config.pbtxt"] = identityConfig(name, d.Config, m.batch)
			files[name+"/1/model"] = ""
		}
	}
	return files
}

// backends are the Go backends of the test repositories.
func backends(extra ...triton.Option) []triton.Option {
	return append([]triton.Option{
		triton.WithBackend("mirror", mirror),
		triton.WithBackend("addsub", addSub),
		triton.WithBackend("params", echoParams),
	}, extra...)
}

// newServer starts a server over an in-memory repository and closes it
// when the test ends.
func newServer(t testing.TB, files map[string]string, opts ...triton.Option) *triton.Server {
	t.Helper()
	return testmodels.NewServer(t, files, backends(opts...)...)
}

// fixture is a handler over the standard repository.
type fixture struct {
	t   testing.TB
	srv *triton.Server
	h   http.Handler
}

func newFixture(t testing.TB, opts ...httpapi.Option) *fixture {
	t.Helper()
	srv := newServer(t, repo())
	return &fixture{t: t, srv: srv, h: httpapi.NewHandler(srv, opts...)}
}

// req is an HTTP request to send to a handler.
type req struct {
	method, path string
	body         []byte
	header       map[string]string
}

func (f *fixture) do(r req) *httptest.ResponseRecorder {
	f.t.Helper()
	return serve(f.h, r)
}

func serve(h http.Handler, r req) *httptest.ResponseRecorder {
	if r.method == "" {
		r.method = http.MethodGet
		if r.body != nil {
			r.method = http.MethodPost
		}
	}
	hr := httptest.NewRequest(r.method, r.path, bytes.NewReader(r.body))
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, hr)
	return rec
}

func (f *fixture) get(path string) *httptest.ResponseRecorder {
	f.t.Helper()
	return f.do(req{method: http.MethodGet, path: path})
}

func (f *fixture) post(path, body string) *httptest.ResponseRecorder {
	f.t.Helper()
	return f.do(req{method: http.MethodPost, path: path, body: []byte(body)})
}

// wantStatus fails unless rec has status code.
func wantStatus(t testing.TB, rec *httptest.ResponseRecorder, code int) {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("status %d, want %d; body %s", rec.Code, code, rec.Body.String())
	}
}

// wantError fails unless rec is {"error": msg} with msg holding every part,
// with status code.
func wantError(t testing.TB, rec *httptest.ResponseRecorder, code int, parts ...string) {
	t.Helper()
	wantStatus(t, rec, code)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q, want application/json", ct)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body.String(), err)
	}
	msg, ok := body["error"].(string)
	if !ok || len(body) != 1 {
		t.Fatalf("error body %s is not {\"error\": string}", rec.Body.String())
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("error %q does not contain %q", msg, p)
		}
	}
}

// wantBody fails unless rec is 200 with exactly body.
func wantBody(t testing.TB, rec *httptest.ResponseRecorder, body string) {
	t.Helper()
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != body {
		t.Fatalf("body\n got %s\nwant %s", got, body)
	}
}

// decode parses a JSON body into v.
func decode(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
}

// binaryBody frames a JSON header and binary blobs as the binary tensor
// extension does, returning the body and the header length.
func binaryBody(header string, blobs ...[]byte) ([]byte, string) {
	b := []byte(header)
	for _, blob := range blobs {
		b = append(b, blob...)
	}
	return b, fmt.Sprint(len(header))
}

// splitBinary splits a binary response into its JSON header and the rest.
func splitBinary(t testing.TB, rec *httptest.ResponseRecorder) (map[string]any, []byte) {
	t.Helper()
	n := 0
	if _, err := fmt.Sscan(rec.Header().Get("Inference-Header-Content-Length"), &n); err != nil {
		t.Fatalf("no Inference-Header-Content-Length: %v (body %q)", err, rec.Body.Bytes())
	}
	body := rec.Body.Bytes()
	var hdr map[string]any
	decode(t, body[:n], &hdr)
	return hdr, body[n:]
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
