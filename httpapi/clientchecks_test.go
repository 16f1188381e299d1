package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClientExampleChecks makes the requests of Triton's client examples
// (triton-inference-server/client, src/python/examples) that compare an
// error's text, and checks the answer as they do, or more strictly: the
// package documentation lists them.
func TestClientExampleChecks(t *testing.T) {
	_, h := explicitHandler(t, "a")
	contains := func(s string) func(string) bool { return func(m string) bool { return strings.Contains(m, s) } }
	for _, tc := range []struct {
		example string
		method  string
		path    string
		body    string
		status  int // 0: any error status
		check   func(msg string) bool
		want    string
	}{
		{"simple_http_model_control.py: malformed config override", "POST", "/v2/repository/models/a/load",
			`{"parameters":{"config":"\"parameters\": {\"config\": {{\"max_batch_size\": \"16\"}}}"}}`,
			0, contains("failed to load"), `a message holding "failed to load"`},
		{"simple_http_model_control.py: unknown model", "POST", "/v2/repository/models/wrong_model_name/load", ``,
			0, contains("failed to load"), `a message holding "failed to load"`},
		// No HTTP example loads an over-long file path; the answer is
		// Triton's, as over gRPC, where simple_grpc_model_control.py
		// checks it.
		{"file path element over NAME_MAX", "POST", "/v2/repository/models/a/load",
			`{"parameters":{"config":"{}","file:` + strings.Repeat("A", 256) + `":"YQ=="}}`,
			500, func(m string) bool { return m == "failed to load 'a', failed to poll from model repository" },
			`"failed to load 'a', failed to poll from model repository"`},
		{"simple_http_health_metadata.py: metadata of an unknown model", "GET", "/v2/models/wrong_model_name", ``,
			0, contains("Request for unknown model"), `a message holding "Request for unknown model"`},
		{"simple_http_infer_client.py: inference on an unknown model", "POST", "/v2/models/wrong_model_name/infer",
			`{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}`,
			0, func(m string) bool { return strings.HasPrefix(m, "Request for unknown model") }, `a message starting "Request for unknown model"`},
	} {
		t.Run(tc.example, func(t *testing.T) {
			rec := serve(h, req{method: tc.method, path: tc.path, body: []byte(tc.body)})
			if rec.Code < 400 || (tc.status != 0 && rec.Code != tc.status) {
				t.Errorf("status %d, want %d (any error when 0)", rec.Code, tc.status)
			}
			var body struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if !tc.check(body.Error) {
				t.Errorf("error %q, want %s", body.Error, tc.want)
			}
		})
	}
	wantWeights(t, h, "a", "A1") // the refused loads left a alone
}
