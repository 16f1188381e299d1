package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

func TestRouting(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		method, path string
		status       int
		err          string // "" for success answers
	}{
		{"GET", "/", 404, "Not Found"},
		{"GET", "/v2/", 404, "Not Found"},
		{"GET", "/v2/health", 404, "Not Found"},
		{"GET", "/v2/health/dead", 404, "Not Found"},
		{"GET", "/v2/models", 404, "Not Found"},
		{"GET", "/v2/models/", 404, "Not Found"},
		{"GET", "/v2/models/simple/", 404, "Not Found"},
		{"GET", "/v2/models/simple/versions/x", 404, "Not Found"},
		{"GET", "/v2/models/simple/versions/1/trace/setting", 404, "Not Found"},
		{"GET", "/v2/models/a%2Fb/ready", 404, "Not Found"},
		{"GET", "/v2/models/simple/unknown", 404, "Not Found"},
		{"GET", "/v2/systemsharedmemory/status/", 404, "Not Found"},
		{"GET", "/v2/repository/models/simple", 404, "Not Found"},
		{"GET", "/v2/trace/setting/x", 404, "Not Found"},
		{"POST", "/v2", 405, "Method Not Allowed"},
		{"PUT", "/v2/health/live", 405, "Method Not Allowed"},
		{"POST", "/v2/health/ready", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple/ready", 405, "Method Not Allowed"},
		{"GET", "/v2/models/simple/infer", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple/config", 405, "Method Not Allowed"},
		{"POST", "/v2/models/stats", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple/stats", 405, "Method Not Allowed"},
		{"GET", "/v2/repository/index", 405, "Method Not Allowed"},
		{"GET", "/v2/repository/models/simple/load", 405, "Method Not Allowed"},
		{"POST", "/v2/systemsharedmemory/status", 405, "Method Not Allowed"},
		{"GET", "/v2/systemsharedmemory/register", 405, "Method Not Allowed"},
		{"GET", "/v2/cudasharedmemory/unregister", 405, "Method Not Allowed"},
		{"DELETE", "/v2/trace/setting", 405, "Method Not Allowed"},
		{"PUT", "/v2/logging", 405, "Method Not Allowed"},
		{"GET", "/v2/models/simple/generate", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple/generate", 400, "The document is empty."},
		{"GET", "/v2/models/simple/generate_stream", 405, "Method Not Allowed"},
		{"POST", "/v2/models/simple/versions/1/generate_stream", 400, "The document is empty."},
		{"GET", "/v2", 200, ""},
		{"GET", "/v2/health/live", 200, ""},
		{"GET", "/v2/models/simple", 200, ""},
		{"GET", "/v2/models/simple/versions/1", 200, ""},
		{"GET", "/v2/models/stats", 200, ""},
		{"GET", "/v2/models/simple/versions/1/stats", 200, ""},
		{"GET", "/v2/models/simple/trace/setting", 200, ""},
		{"GET", "/v2/trace/setting", 200, ""},
		{"GET", "/v2/logging", 200, ""},
		{"POST", "/v2/repository/index", 200, ""},
		{"POST", "/v2/repository/myrepo/index", 200, ""},
		{"GET", "/v2/systemsharedmemory/status", 200, ""},
		{"GET", "/v2/cudasharedmemory/status", 200, ""},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			rec := f.do(req{method: tc.method, path: tc.path})
			if tc.err != "" {
				wantError(t, rec, tc.status, tc.err)
				if rec.Code == 405 && rec.Header().Get("Allow") == "" {
					t.Errorf("405 without Allow")
				}
				return
			}
			wantStatus(t, rec, tc.status)
		})
	}
}

func TestHealth(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/v2/health/live", "/v2/health/ready"} {
		rec := f.get(p)
		wantStatus(t, rec, 200)
		if rec.Body.Len() != 0 {
			t.Errorf("%s: body %q, want empty", p, rec.Body.String())
		}
	}

	// A model that failed to load makes the server not ready: 400, empty.
	files := repo()
	files["broken/config.pbtxt"] = `name: "broken" backend: "nosuchbackend" input [ { name: "X" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "Y" data_type: TYPE_FP32 dims: [1] } ]`
	files["broken/1/model"] = ""
	srv := newServer(t, files, triton.WithExitOnError(false))
	h := httpapi.NewHandler(srv)
	rec := serve(h, req{path: "/v2/health/ready"})
	wantStatus(t, rec, 400)
	if rec.Body.Len() != 0 {
		t.Errorf("not ready: body %q, want empty", rec.Body.String())
	}
	wantStatus(t, serve(h, req{path: "/v2/health/live"}), 200)

	// Shutting down: 503 "Server exiting" for both.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v2/health/live", "/v2/health/ready"} {
		wantError(t, f.get(p), 503, "Server exiting")
	}
	wantError(t, f.get("/v2/models/simple/ready"), 503, "Server not ready")
}

func TestServerMetadata(t *testing.T) {
	f := newFixture(t)
	wantBody(t, f.get("/v2"), `{"name":"triton","version":"`+triton.Version+`","extensions":["classification","sequence","model_repository","model_repository(unload_dependents)","schedule_policy","model_configuration","cuda_shared_memory","binary_tensor_data","parameters","statistics","logging"]}`)
	if ct := f.get("/v2").Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestModelReady(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		path   string
		status int
		err    string
	}{
		{"/v2/models/simple/ready", 200, ""},
		{"/v2/models/simple/versions/1/ready", 200, ""},
		{"/v2/models/nosuch/ready", 400, "Request for unknown model: 'nosuch' is not found"},
		{"/v2/models/simple/versions/2/ready", 404, "Request for unknown model: 'simple' version 2 is not found"},
		{"/v2/models/simple/versions/0/ready", 404, "version 0 is not found"},
		{"/v2/models/simple/versions/99999999999999999999/ready", 400, "failed to get model version from specified version string '99999999999999999999'"},
	} {
		rec := f.get(tc.path)
		if tc.err == "" {
			wantStatus(t, rec, tc.status)
			if rec.Body.Len() != 0 {
				t.Errorf("%s: body %q", tc.path, rec.Body.String())
			}
			continue
		}
		wantError(t, rec, tc.status, tc.err)
	}
}

func TestModelMetadata(t *testing.T) {
	f := newFixture(t)
	want := `{"name":"simple","versions":["1"],"platform":"addsub","inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]},{"name":"INPUT1","datatype":"INT32","shape":[-1,16]}],"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]},{"name":"OUTPUT1","datatype":"INT32","shape":[-1,16]}]}`
	wantBody(t, f.get("/v2/models/simple"), want)
	wantBody(t, f.get("/v2/models/simple/versions/1"), want)
	wantBody(t, f.get("/v2/models/nb_BYTES"), `{"name":"nb_BYTES","versions":["1"],"platform":"mirror","inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[-1]}],"outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[-1]}]}`)
	wantError(t, f.get("/v2/models/nosuch"), 400, "Request for unknown model: 'nosuch' is not found")
	wantError(t, f.get("/v2/models/simple/versions/7"), 404, "Request for unknown model: 'simple' version 7 is not found")
}

func TestModelMetadataVersions(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": strings.Replace(identityConfig("m", "TYPE_FP32", 0), `backend: "mirror"`, `backend: "mirror" version_policy { all { } }`, 1),
		"m/1/model":      "",
		"m/3/model":      "",
	}
	h := httpapi.NewHandler(newServer(t, files))
	var md struct{ Versions []string }
	rec := serve(h, req{path: "/v2/models/m"})
	wantStatus(t, rec, 200)
	decode(t, rec.Body.Bytes(), &md)
	if strings.Join(md.Versions, ",") != "1,3" {
		t.Errorf("versions %v, want [1 3]", md.Versions)
	}
	rec = serve(h, req{path: "/v2/models/m/versions/3"})
	decode(t, rec.Body.Bytes(), &md)
	if strings.Join(md.Versions, ",") != "3" {
		t.Errorf("versions %v, want only [3] with a version in the URL", md.Versions)
	}
}

func TestModelConfig(t *testing.T) {
	f := newFixture(t)
	rec := f.get("/v2/models/batched/config")
	wantStatus(t, rec, 200)
	body := rec.Body.String()
	for _, part := range []string{
		`"name":"batched"`,
		`"max_batch_size":8`,
		`"input":[{"name":"INPUT0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[4],`,
		`"output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4],`,
		`"dynamic_batching":{`,
		`"max_queue_delay_microseconds":0`,
		`"label_filename":""`,
	} {
		if !strings.Contains(body, part) {
			t.Errorf("config does not contain %s:\n%s", part, body)
		}
	}
	if strings.Contains(body, "null") || strings.Contains(body, " ") {
		t.Errorf("config has null or whitespace (unset messages must be left out, JSON compact):\n%s", body)
	}
	var cfg map[string]any
	decode(t, rec.Body.Bytes(), &cfg)
	wantError(t, f.get("/v2/models/nosuch/config"), 400, "Request for unknown model: 'nosuch' is not found")
	wantError(t, f.get("/v2/models/simple/versions/2/config"), 404, "version 2 is not found")
}

func TestStats(t *testing.T) {
	f := newFixture(t)
	before := time.Now().UnixMilli()
	body, hl := binaryBody(`{"inputs":[{"name":"INPUT0","shape":[2,4],"datatype":"FP32","parameters":{"binary_data_size":32}}]}`, make([]byte, 32))
	for range 3 {
		wantStatus(t, f.do(req{path: "/v2/models/batched/infer", body: body, header: map[string]string{"Inference-Header-Content-Length": hl}}), 200)
	}
	// One failure: a wrong datatype.
	wantStatus(t, f.post("/v2/models/batched/infer", `{"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"INT32","data":[1,2,3,4]}]}`), 400)

	rec := f.get("/v2/models/batched/stats")
	wantStatus(t, rec, 200)
	type dur struct{ Count, Ns uint64 }
	var st struct {
		ModelStats []struct {
			Name, Version  string
			LastInference  int64          `json:"last_inference"`
			InferenceCount uint64         `json:"inference_count"`
			ExecutionCount uint64         `json:"execution_count"`
			InferenceStats map[string]dur `json:"inference_stats"`
			ResponseStats  map[string]any `json:"response_stats"`
			BatchStats     []struct {
				BatchSize     int64 `json:"batch_size"`
				ComputeInput  dur   `json:"compute_input"`
				ComputeInfer  dur   `json:"compute_infer"`
				ComputeOutput dur   `json:"compute_output"`
			} `json:"batch_stats"`
			MemoryUsage []any `json:"memory_usage"`
		} `json:"model_stats"`
	}
	decode(t, rec.Body.Bytes(), &st)
	if len(st.ModelStats) != 1 {
		t.Fatalf("stats %s", rec.Body.String())
	}
	s := st.ModelStats[0]
	if s.Name != "batched" || s.Version != "1" {
		t.Errorf("name/version %q/%q", s.Name, s.Version)
	}
	if s.LastInference < before || s.LastInference > time.Now().UnixMilli() {
		t.Errorf("last_inference %d not in [%d, now] (ms since epoch)", s.LastInference, before)
	}
	if s.InferenceStats["success"].Count != 3 || s.InferenceStats["fail"].Count != 1 || s.InferenceStats["queue"].Count != 3 {
		t.Errorf("inference_stats %+v", s.InferenceStats)
	}
	for _, k := range []string{"success", "fail", "queue", "compute_input", "compute_infer", "compute_output", "cache_hit", "cache_miss"} {
		if _, ok := s.InferenceStats[k]; !ok {
			t.Errorf("inference_stats has no %q", k)
		}
	}
	if s.InferenceCount != 6 || s.ExecutionCount == 0 || s.ExecutionCount > 3 {
		t.Errorf("inference_count %d (want 6), execution_count %d", s.InferenceCount, s.ExecutionCount)
	}
	if len(s.BatchStats) == 0 || s.BatchStats[0].ComputeInfer.Count == 0 {
		t.Errorf("batch_stats %+v", s.BatchStats)
	}
	if s.ResponseStats == nil || s.MemoryUsage == nil {
		t.Errorf("response_stats/memory_usage missing: %s", rec.Body.String())
	}
	// Key order and shape of one entry.
	if !strings.HasPrefix(rec.Body.String(), `{"model_stats":[{"name":"batched","version":"1","last_inference":`) ||
		!strings.Contains(rec.Body.String(), `,"inference_count":6,"execution_count":`) ||
		!strings.Contains(rec.Body.String(), `"inference_stats":{"success":{"count":3,"ns":`) {
		t.Errorf("stats JSON layout: %s", rec.Body.String())
	}

	rec = f.get("/v2/models/stats")
	decode(t, rec.Body.Bytes(), &st)
	if len(st.ModelStats) != len(repo())/2 {
		t.Errorf("all-model stats has %d entries, want %d", len(st.ModelStats), len(repo())/2)
	}
	wantError(t, f.get("/v2/models/nosuch/stats"), 400, "requested model 'nosuch' is not available")
	wantError(t, f.get("/v2/models/simple/versions/4/stats"), 400, "requested model version is not available for model 'simple'")
}

func TestRestrictedAPI(t *testing.T) {
	f := newFixture(t,
		httpapi.WithRestrictedAPI("model-repository,shared-memory", "X-Admin-Key", "s3cret"),
		httpapi.WithRestrictedAPI("health", "Probe", "yes"),
		httpapi.WithRestrictedAPI("inference", "Infer-Key", "k"),
		httpapi.WithRestrictedAPI("metadata", "Meta", "m"),
		httpapi.WithRestrictedAPI("model-config", "Cfg", "c"),
		httpapi.WithRestrictedAPI("statistics", "Stat", "s"),
		httpapi.WithRestrictedAPI("trace", "Trace", "t"),
		httpapi.WithRestrictedAPI("logging", "Log", "l"),
	)
	for _, tc := range []struct {
		method, path, header, value string
	}{
		{"POST", "/v2/repository/index", "X-Admin-Key", "s3cret"},
		{"POST", "/v2/repository/models/simple/unload", "X-Admin-Key", "s3cret"},
		{"GET", "/v2/systemsharedmemory/status", "X-Admin-Key", "s3cret"},
		{"GET", "/v2/cudasharedmemory/status", "X-Admin-Key", "s3cret"},
		{"GET", "/v2/health/live", "Probe", "yes"},
		{"GET", "/v2/models/simple/ready", "Probe", "yes"},
		{"GET", "/v2", "Meta", "m"},
		{"GET", "/v2/models/simple", "Meta", "m"},
		{"GET", "/v2/models/simple/config", "Cfg", "c"},
		{"GET", "/v2/models/stats", "Stat", "s"},
		{"GET", "/v2/trace/setting", "Trace", "t"},
		{"GET", "/v2/models/simple/trace/setting", "Trace", "t"},
		{"GET", "/v2/logging", "Log", "l"},
		{"POST", "/v2/models/simple/infer", "Infer-Key", "k"},
	} {
		// Missing and wrong headers: 403, checked before the method (a GET
		// on infer is 403, not 405).
		for _, hdr := range []map[string]string{nil, {tc.header: tc.value + "x"}, {tc.header + "x": tc.value}} {
			rec := f.do(req{method: tc.method, path: tc.path, header: hdr})
			wantError(t, rec, 403, "This API is restricted, expecting header '"+tc.header+"'")
			rec = f.do(req{method: "PATCH", path: tc.path, header: hdr})
			wantError(t, rec, 403, "This API is restricted")
		}
		// The right header: through (the name matches in any case).
		rec := f.do(req{method: tc.method, path: tc.path, header: map[string]string{strings.ToLower(tc.header): tc.value}})
		if rec.Code == 403 {
			t.Errorf("%s %s with the header: %d %s", tc.method, tc.path, rec.Code, rec.Body.String())
		}
	}
}

func TestRestrictedAPIPanics(t *testing.T) {
	srv := newServer(t, repo())
	for _, opt := range []httpapi.Option{
		httpapi.WithRestrictedAPI("helth", "k", "v"),
		httpapi.WithRestrictedAPI("health,", "k", "v"),
		httpapi.WithRestrictedAPI("health", "", "v"),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic for a bad restriction")
				}
			}()
			httpapi.NewHandler(srv, opt)
		}()
	}
}

// TestModelConfigInt64Fields checks the rewrite of Triton's listed 64-bit
// fields from JSON strings to numbers, and that others (map keys, string
// parameters) stay as they are.
func TestModelConfigInt64Fields(t *testing.T) {
	cfg := `
name: "m"
backend: "noop"
max_batch_size: 8
version_policy { specific { versions: [1] } }
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, 3 ] reshape { shape: [ 1, -1, 3 ] } } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
dynamic_batching { max_queue_delay_microseconds: 100 priority_levels: 2 default_priority_level: 1
  default_queue_policy { default_timeout_microseconds: 5 }
  priority_queue_policy { key: 1 value: { default_timeout_microseconds: 7 } } }
parameters { key: "dims" value: { string_value: "12" } }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 2, 3 ] zero_data: true } } } ]
`
	noop := backend.Func(func(context.Context, *backend.Batch) error { return nil })
	h := httpapi.NewHandler(newServer(t, map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""}, triton.WithBackend("noop", noop)))
	rec := serve(h, req{path: "/v2/models/m/config"})
	wantStatus(t, rec, 200)
	body := rec.Body.String()
	for _, part := range []string{
		`"version_policy":{"specific":{"versions":[1]}}`,
		`"dims":[-1,3],"reshape":{"shape":[1,-1,3]}`,
		`"max_queue_delay_microseconds":100`,
		`"priority_levels":2,"default_priority_level":1`,
		`"default_queue_policy":{"timeout_action":"REJECT","default_timeout_microseconds":5,`,
		`"priority_queue_policy":{"1":{"timeout_action":"REJECT","default_timeout_microseconds":7,`,
		`"parameters":{"dims":{"string_value":"12"}}`,
		`"inputs":{"INPUT0":{"data_type":"TYPE_FP32","dims":[2,3],"zero_data":true}}`,
	} {
		if !strings.Contains(body, part) {
			t.Errorf("config lacks %s:\n%s", part, body)
		}
	}
}

// TestStatsResponseStats: after a decoupled model streams three responses
// and its final flag alone, /v2/models/repeat/stats has response_stats
// "0", "1" and "2" with one success each and "3" with one empty_response,
// as Triton counts the flag, each with Triton's keys in Triton's order.
func TestStatsResponseStats(t *testing.T) {
	files := repo()
	files["repeat/config.pbtxt"] = `name: "repeat"` + testmodels.RepeatConfig
	files["repeat/1/model"] = ""
	srv := newServer(t, files, triton.WithBackend("repeat", &testmodels.Repeat{}))
	h := httpapi.NewHandler(srv)

	vals, err1 := tensor.From("IN", tensor.Shape{3}, []int32{7, 8, 9})
	delays, err2 := tensor.From("DELAY", tensor.Shape{3}, []uint32{0, 0, 0})
	wait, err3 := tensor.From("WAIT", tensor.Shape{1}, []uint32{0})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range srv.InferStream(t.Context(), &triton.InferRequest{Model: "repeat", Inputs: []tensor.Tensor{vals, delays, wait}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d responses, want 3", n)
	}

	rec := serve(h, req{path: "/v2/models/repeat/stats"})
	wantStatus(t, rec, 200)
	type dur struct{ Count, Ns uint64 }
	var st struct {
		ModelStats []struct {
			ResponseStats map[string]map[string]dur `json:"response_stats"`
		} `json:"model_stats"`
	}
	decode(t, rec.Body.Bytes(), &st)
	if len(st.ModelStats) != 1 {
		t.Fatalf("stats %s", rec.Body.String())
	}
	rs := st.ModelStats[0].ResponseStats
	if len(rs) != 4 {
		t.Fatalf("response_stats %v, want keys 0..3", rs)
	}
	for key, want := range map[string][4]uint64{"0": {1, 0, 0, 0}, "1": {1, 0, 0, 0}, "2": {1, 0, 0, 0}, "3": {0, 0, 1, 0}} {
		r := rs[key]
		got := [4]uint64{r["success"].Count, r["fail"].Count, r["empty_response"].Count, r["cancel"].Count}
		if got != want {
			t.Errorf("response_stats[%q] success, fail, empty_response, cancel counts %v, want %v", key, got, want)
		}
		ci, co := r["compute_infer"], r["compute_output"]
		if len(r) != 6 || ci.Count != want[0] || co.Count != want[0] || ci.Ns+co.Ns != r["success"].Ns {
			t.Errorf("response_stats[%q] %v: want 6 entries, compute_infer and compute_output counting the successes and adding up to them", key, r)
		}
	}
	if !strings.Contains(rec.Body.String(), `"response_stats":{"0":{"compute_infer":{"count":1,"ns":`) ||
		!strings.Contains(rec.Body.String(), `"3":{"compute_infer":{"count":0,"ns":0},"compute_output":{"count":0,"ns":0},"success":{"count":0,"ns":0},"fail":{"count":0,"ns":0},"empty_response":{"count":1,"ns":`) {
		t.Errorf("response_stats JSON layout: %s", rec.Body.String())
	}
}
