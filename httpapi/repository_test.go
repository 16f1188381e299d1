package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/tensor"
)

// fileModel is a backend whose models answer OUTPUT0 (BYTES [1]) with the
// content of their version folder's "weights.bin".
type fileModel struct{}

func (fileModel) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	weights := "none"
	if vfs, err := spec.VersionFS(); err == nil {
		if b, err := fs.ReadFile(vfs, "weights.bin"); err == nil {
			weights = string(b)
		}
	}
	return backend.Func(func(_ context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			out, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{weights})
			if err != nil {
				return err
			}
			r.SetOutput(out)
		}
		return nil
	}), nil
}

const fileConfig = `
name: "%s"
backend: "file"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]
`

func explicitHandler(t *testing.T, startup ...string) (*triton.Server, http.Handler) {
	t.Helper()
	files := map[string]string{
		"a/config.pbtxt":   sprintf(fileConfig, "a"),
		"a/1/weights.bin":  "A1",
		"b/config.pbtxt":   sprintf(fileConfig, "b"),
		"b/1/weights.bin":  "B1",
		"b/2/weights.bin":  "B2",
		"bad/config.pbtxt": `name: "bad" backend: "nosuch" input [ { name: "X" data_type: TYPE_INT32 dims: [1] } ] output [ { name: "Y" data_type: TYPE_INT32 dims: [1] } ]`,
		"bad/1/model":      "",
	}
	srv := newServer(t, files,
		triton.WithBackend("file", fileModel{}),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(startup...))
	return srv, httpapi.NewHandler(srv)
}

func fileInfer(t *testing.T, h http.Handler, model string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(h, req{path: inferPath(model), body: []byte(`{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[0]}]}`)})
}

func wantWeights(t *testing.T, h http.Handler, model, weights string) {
	t.Helper()
	rec := fileInfer(t, h, model)
	wantStatus(t, rec, 200)
	var resp struct{ Outputs []struct{ Data []string } }
	decode(t, rec.Body.Bytes(), &resp)
	if got := resp.Outputs[0].Data[0]; got != weights {
		t.Errorf("%s serves %q, want %q", model, got, weights)
	}
}

func TestRepositoryIndexLoadUnload(t *testing.T) {
	_, h := explicitHandler(t, "a")
	index := func(body string) string {
		t.Helper()
		rec := serve(h, req{method: "POST", path: "/v2/repository/index", body: []byte(body)})
		wantStatus(t, rec, 200)
		return rec.Body.String()
	}
	if got, want := index(""), `[{"name":"a","version":"1","state":"READY"},{"name":"b"},{"name":"bad"}]`; got != want {
		t.Errorf("index\n got %s\nwant %s", got, want)
	}
	if got, want := index(`{"ready":true}`), `[{"name":"a","version":"1","state":"READY"}]`; got != want {
		t.Errorf("ready index %s", got)
	}
	if got := index(`{"ready":false}`); got != `[{"name":"a","version":"1","state":"READY"},{"name":"b"},{"name":"bad"}]` {
		t.Errorf("ready:false index %s", got)
	}
	wantError(t, serve(h, req{path: "/v2/repository/index", body: []byte(`{"ready":"yes"}`)}), 400, "Invalid value for 'ready': expected a boolean")
	wantError(t, serve(h, req{path: "/v2/repository/index", body: []byte(`{"ready"`)}), 400, "failed to parse the request JSON buffer")

	// Load b (both versions? the default policy serves the latest: 2).
	wantBody(t, serve(h, req{path: "/v2/repository/models/b/load", body: []byte{}}), "")
	wantWeights(t, h, "b", "B2")
	wantBody(t, serve(h, req{path: "/v2/models/b/ready"}), "")
	// A failed load: the reason is in the index.
	rec := serve(h, req{path: "/v2/repository/models/bad/load", body: []byte{}})
	if rec.Code == 200 {
		t.Fatalf("loading bad: %d", rec.Code)
	}
	var rows []map[string]string
	decode(t, []byte(index("")), &rows)
	for _, r := range rows {
		if r["name"] == "bad" && (r["state"] != "UNAVAILABLE" || r["reason"] == "") {
			t.Errorf("bad model row %v", r)
		}
	}

	// Unload: 200 empty, then UNAVAILABLE "unloaded".
	wantBody(t, serve(h, req{path: "/v2/repository/models/b/unload", body: []byte(`{"parameters":{"unload_dependents":true}}`)}), "")
	if got := index(`{"ready":true}`); got != `[{"name":"a","version":"1","state":"READY"}]` {
		t.Errorf("after unload: %s", got)
	}
	decode(t, []byte(index("")), &rows)
	found := false
	for _, r := range rows {
		if r["name"] == "b" {
			found = true
			if r["state"] != "UNAVAILABLE" || r["reason"] != "unloaded" {
				t.Errorf("unloaded row %v", r)
			}
		}
	}
	if !found {
		t.Errorf("no row for b after unload")
	}
	wantError(t, fileInfer(t, h, "b"), 404)
	wantError(t, serve(h, req{path: "/v2/repository/models/b/unload", body: []byte(`{"parameters":{"unload_dependents":"yes"}}`)}), 400, "Unable to parse 'unload_dependents'")
	wantError(t, serve(h, req{path: "/v2/repository/models/zzz/unload", body: []byte{}}), 404, "failed to unload 'zzz'")
}

func TestRepositoryLoadOverrides(t *testing.T) {
	_, h := explicitHandler(t)
	cfg := `{"name":"c","backend":"file","input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[1]}],"output":[{"name":"OUTPUT0","data_type":"TYPE_STRING","dims":[1]}]}`
	body, _ := json.Marshal(map[string]any{"parameters": map[string]string{
		"config":              cfg,
		"file:1/weights.bin":  base64.StdEncoding.EncodeToString([]byte("from the wire")),
		"file:1/sub/more.bin": base64.StdEncoding.EncodeToString([]byte{0, 1, 2}),
	}})
	wantBody(t, serve(h, req{path: "/v2/repository/models/c/load", body: body}), "")
	wantWeights(t, h, "c", "from the wire")

	// A config override alone reloads a repository model with it.
	body, _ = json.Marshal(map[string]any{"parameters": map[string]string{"config": sprintf(`{"name":"a","backend":"file","version_policy":{"specific":{"versions":[1]}},"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[1]}],"output":[{"name":"OUTPUT0","data_type":"TYPE_STRING","dims":[1]}]}`)}})
	wantBody(t, serve(h, req{path: "/v2/repository/models/a/load", body: body}), "")
	wantWeights(t, h, "a", "A1")

	for _, tc := range []struct {
		name, path, body string
		status           int
		parts            []string
	}{
		{"unknown key", "/v2/repository/models/a/load", `{"parameters":{"bogus":"x"}}`, 400, []string{"unexpected error on creating Triton parameter"}},
		{"non-string value", "/v2/repository/models/a/load", `{"parameters":{"config":{}}}`, 400, []string{"Unable to parse 'config'"}},
		{"parameters not object", "/v2/repository/models/a/load", `{"parameters":[]}`, 400, []string{"Unable to parse 'parameters'"}},
		{"bad base64", "/v2/repository/models/c/load", `{"parameters":{"config":"{}","file:1/x":"***"}}`, 400, []string{"base64"}},
		{"file without config", "/v2/repository/models/c/load", `{"parameters":{"file:1/x":"eA=="}}`, 400, []string{"file overrides need a config override too"}},
		// Triton's answer to file overrides it cannot place (its poll
		// failure), which its gRPC example checks.
		{"file escaping the folder", "/v2/repository/models/c/load", `{"parameters":{"config":"{}","file:../../etc/passwd":"eA=="}}`, 500, []string{"failed to load 'c', failed to poll from model repository"}},
		{"file name too long", "/v2/repository/models/c/load", `{"parameters":{"config":"{}","file:` + strings.Repeat("A", 256) + `":"YQ=="}}`, 500, []string{"failed to load 'c', failed to poll from model repository"}},
		{"absolute file", "/v2/repository/models/c/load", `{"parameters":{"config":"{}","file:/etc/passwd":"eA=="}}`, 400, []string{"Could not determine backend for model 'c'"}}, // inside the folder, as in Triton
		{"malformed config", "/v2/repository/models/c/load", `{"parameters":{"config":"{"}}`, 400, []string{"config override"}},
		{"malformed body", "/v2/repository/models/a/load", `{"parameters":`, 400, []string{"failed to parse the request JSON buffer"}},
		{"repository name", "/v2/repository/myrepo/models/a/load", ``, 501, []string{"'repository_name' specification is not supported"}},
		{"repository name unload", "/v2/repository/myrepo/models/a/unload", ``, 501, []string{"'repository_name' specification is not supported"}},
		{"dot dot", "/v2/repository/models/../load", ``, 400, []string{"failed to load '..'"}},
		{"encoded dot dot", "/v2/repository/models/%2e%2e/load", ``, 400, []string{"failed to load '..'"}},
		{"dot", "/v2/repository/models/./unload", ``, 400, []string{"failed to unload '.'"}},
		{"unknown model", "/v2/repository/models/nosuch/load", ``, 404, []string{"failed to load 'nosuch'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, serve(h, req{method: "POST", path: tc.path, body: []byte(tc.body)}), tc.status, tc.parts...)
		})
	}
	// The whole answer is Triton's.
	rec := serve(h, req{method: "POST", path: "/v2/repository/models/c/load", body: []byte(`{"parameters":{"config":"{}","file:` + strings.Repeat("A", 256) + `":"YQ=="}}`)})
	if got, want := rec.Body.String(), `{"error":"failed to load 'c', failed to poll from model repository"}`; rec.Code != 500 || got != want {
		t.Errorf("got %d %s, want 500 %s", rec.Code, got, want)
	}
	// A path segment with "/" in it cannot even route.
	wantError(t, serve(h, req{method: "POST", path: "/v2/repository/models/..%2f..%2fetc/load"}), 404, "Not Found")
}

func TestRepositoryNotExplicit(t *testing.T) {
	f := newFixture(t)
	wantError(t, f.post("/v2/repository/models/simple/load", ""), 503, "explicit model load / unload is not allowed if polling is enabled")
	wantError(t, f.post("/v2/repository/models/simple/unload", ""), 503, "explicit model load / unload is not allowed if polling is enabled")
	rec := f.post("/v2/repository/index", "")
	wantStatus(t, rec, 200)
	var rows []map[string]string
	decode(t, rec.Body.Bytes(), &rows)
	if len(rows) != len(repo())/2 || rows[0]["state"] != "READY" || rows[0]["version"] != "1" {
		t.Errorf("index %s", rec.Body.String())
	}
}
