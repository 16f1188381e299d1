package compare

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
)

// The HTTP comparison of issue #22: our handler (httpapi.NewHandler over
// addSubServer, as cmd/tritonserver mounts it) against the server someone
// would write in an afternoon, minimalHTTP: net/http and encoding/json
// calling one onnxruntime_go session. Both listen on loopback TCP
// (httptest.NewServer) and are driven by a keep-alive net/http client,
// whose work is in the figures.

// kserveTensor is a tensor of a KServe v2 request or response, as
// encoding/json sees it.
type kserveTensor struct {
	Name       string         `json:"name"`
	Shape      []int64        `json:"shape"`
	Datatype   string         `json:"datatype"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Data       []float32      `json:"data,omitempty"`
}

// kserveRequest is a KServe v2 inference request.
type kserveRequest struct {
	Inputs  []kserveTensor `json:"inputs"`
	Outputs []struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters,omitempty"`
	} `json:"outputs,omitempty"`
}

// kserveResponse is a KServe v2 inference response.
type kserveResponse struct {
	ModelName    string         `json:"model_name"`
	ModelVersion string         `json:"model_version"`
	Outputs      []kserveTensor `json:"outputs"`
}

// minimalHTTP is the baseline server: add_sub on one raw session that all
// requests share. ONNX Runtime sessions allow concurrent Run calls, and
// onnxruntime_go keeps no state of its own in Run, so, like the simplest
// handler anyone would write, it takes no lock: requests run in parallel
// on as many threads as net/http gives them (a mutex would only make the
// baseline slower at 16 and 64 clients). It takes the KServe v2 JSON
// request and, with Inference-Header-Content-Length, the binary tensor
// form, and answers in the same form (binary outputs for binary requests);
// it ignores Accept-Encoding, as net/http does.
type minimalHTTP struct {
	s *ort.DynamicAdvancedSession
}

func (m minimalHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := m.serve(w, r); err != nil {
		http.Error(w, `{"error":`+strconv.Quote(err.Error())+`}`, http.StatusBadRequest)
	}
}

func (m minimalHTTP) serve(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	headerLen, binaryForm := len(body), false
	if v := r.Header.Get("Inference-Header-Content-Length"); v != "" {
		if headerLen, err = strconv.Atoi(v); err != nil || headerLen > len(body) {
			return fmt.Errorf("bad Inference-Header-Content-Length %q", v)
		}
		binaryForm = true
	}
	var req kserveRequest
	if err := json.Unmarshal(body[:headerLen], &req); err != nil {
		return err
	}
	in := map[string][]float32{}
	rest := body[headerLen:]
	for _, t := range req.Inputs {
		data := t.Data
		if size, ok := t.Parameters["binary_data_size"].(float64); ok {
			n := int(size)
			if n > len(rest) || n%4 != 0 {
				return fmt.Errorf("input %s: %d bytes of binary data, %d left", t.Name, n, len(rest))
			}
			data = float32s(rest[:n])
			rest = rest[n:]
		}
		in[t.Name] = data
	}
	if len(in["INPUT0"]) != 16 || len(in["INPUT1"]) != 16 {
		return errors.New("INPUT0 and INPUT1 must hold 16 FP32 values each")
	}
	sum, diff, err := rawAddSub(m.s, in["INPUT0"], in["INPUT1"])
	if err != nil {
		return err
	}
	resp := kserveResponse{ModelName: "add_sub", ModelVersion: "1", Outputs: []kserveTensor{
		{Name: "OUTPUT0", Shape: []int64{1, 16}, Datatype: "FP32", Data: sum},
		{Name: "OUTPUT1", Shape: []int64{1, 16}, Datatype: "FP32", Data: diff},
	}}
	if !binaryForm {
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(resp)
	}
	var tail []byte
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		tail = appendFloat32s(tail, o.Data)
		o.Parameters = map[string]any{"binary_data_size": 4 * len(o.Data)}
		o.Data = nil
	}
	header, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Inference-Header-Content-Length", strconv.Itoa(len(header)))
	w.Header().Set("Content-Length", strconv.Itoa(len(header)+len(tail)))
	_, _ = w.Write(header)
	_, _ = w.Write(tail)
	return nil
}

// float32s decodes little-endian FP32 values (len(b) a multiple of 4).
func float32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// appendFloat32s appends vals to b as little-endian FP32.
func appendFloat32s(b []byte, vals []float32) []byte {
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// httpForm is one way of sending add_sub request i: its body and headers.
type httpForm struct {
	name    string
	request func(i int) (body []byte, header http.Header)
}

var httpForms = []httpForm{
	{"json", func(i int) ([]byte, http.Header) {
		a, b, _, _ := addSubInputs(i)
		body, _ := json.Marshal(kserveRequest{Inputs: []kserveTensor{
			{Name: "INPUT0", Shape: []int64{1, 16}, Datatype: "FP32", Data: a},
			{Name: "INPUT1", Shape: []int64{1, 16}, Datatype: "FP32", Data: b},
		}})
		return body, http.Header{"Content-Type": {"application/json"}}
	}},
	{"binary", func(i int) ([]byte, http.Header) {
		a, b, _, _ := addSubInputs(i)
		const header = `{"inputs":[` +
			`{"name":"INPUT0","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}},` +
			`{"name":"INPUT1","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}}],` +
			`"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}`
		return appendFloat32s(appendFloat32s([]byte(header), a), b), http.Header{"Content-Type": {"application/octet-stream"}, "Inference-Header-Content-Length": {strconv.Itoa(len(header))}}
	}},
}

// httpClient is a keep-alive client for up to 64 concurrent requests.
// With gzip its transport adds Accept-Encoding: gzip to every request and
// decompresses gzip answers, as Go's http.DefaultTransport (and hey,
// aiohttp) does; without, it sends no Accept-Encoding.
func httpClient(tb testing.TB, gzip bool) *http.Client {
	t := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: !gzip}
	tb.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t}
}

// send posts body to url with header (shared between goroutines: clients
// do not modify requests).
func send(c *http.Client, url string, body []byte, header http.Header) (*http.Response, error) {
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header = header
	return c.Do(r)
}

// post sends body to url with header, reads the whole answer and fails
// on any status but 200.
func post(c *http.Client, url string, body []byte, header http.Header) (*http.Response, []byte, error) {
	resp, err := send(c, url, body, header)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
	}
	return resp, got, err
}

// postDiscard is post for large answers: it reads the answer into
// io.Discard, so that the client's work stays small beside the server's.
func postDiscard(c *http.Client, url string, body []byte, header http.Header) error {
	resp, err := send(c, url, body, header)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// addSubAnswer decodes an add_sub answer in either form.
func addSubAnswer(resp *http.Response, body []byte) (sum, diff []float32, err error) {
	header, tail := body, []byte(nil)
	if v := resp.Header.Get("Inference-Header-Content-Length"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n > len(body) {
			return nil, nil, fmt.Errorf("bad Inference-Header-Content-Length %q", v)
		}
		header, tail = body[:n], body[n:]
	}
	var r kserveResponse
	if err := json.Unmarshal(header, &r); err != nil {
		return nil, nil, err
	}
	out := map[string][]float32{}
	for _, o := range r.Outputs {
		data := o.Data
		if size, ok := o.Parameters["binary_data_size"].(float64); ok {
			n := int(size)
			if n > len(tail) {
				return nil, nil, fmt.Errorf("output %s: %d bytes, %d left", o.Name, n, len(tail))
			}
			data = float32s(tail[:n])
			tail = tail[n:]
		}
		out[o.Name] = data
	}
	return out["OUTPUT0"], out["OUTPUT1"], nil
}

// httpHandlers returns both handlers of the comparison: the minimal one
// and ours (2 instances, one per core of the machine the figures come
// from).
func httpHandlers(tb testing.TB) (minimal, ours http.Handler) {
	ours = httpapi.NewHandler(addSubServer(tb, addSubConfig(2))) // first: it starts ONNX Runtime
	return minimalHTTP{s: rawSession(tb, 1)}, ours
}

// serveHTTP serves h on loopback TCP until the test ends.
func serveHTTP(tb testing.TB, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	tb.Cleanup(ts.Close)
	return ts
}

// TestMinimalHTTP: the minimal server and ours answer add_sub correctly
// in both forms, to clients with and without Accept-Encoding: gzip (which
// the gzip client does send, and neither server compresses answers this
// small).
func TestMinimalHTTP(t *testing.T) {
	minimal, ours := httpHandlers(t)
	for _, h := range []http.Handler{minimal, ours} {
		seen := make(chan string, 1)
		ts := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen <- r.Header.Get("Accept-Encoding")
			h.ServeHTTP(w, r)
		}))
		for _, form := range httpForms {
			for _, gzip := range []bool{false, true} {
				c := httpClient(t, gzip)
				for i := range 3 {
					body, header := form.request(i)
					resp, got, err := post(c, ts.URL+"/v2/models/add_sub/infer", body, header)
					if err != nil {
						t.Fatalf("%T, %s, gzip %v: %v", h, form.name, gzip, err)
					}
					want := ""
					if gzip {
						want = "gzip"
					}
					if ae := <-seen; ae != want {
						t.Errorf("%T, %s, gzip %v: the client sent Accept-Encoding %q", h, form.name, gzip, ae)
					}
					if resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" {
						t.Errorf("%T, %s, gzip %v: a %d-byte answer was compressed", h, form.name, gzip, len(got))
					}
					sum, diff, err := addSubAnswer(resp, got)
					if err == nil {
						err = checkAddSub(i, sum, diff)
					}
					if err != nil {
						t.Errorf("%T, %s, gzip %v: %v in %s", h, form.name, gzip, err, got)
					}
				}
			}
		}
	}
}

// httpContender drives one server with one form and client.
func httpContender(name string, c *http.Client, url string, form httpForm) contender {
	bodies := make([][]byte, 64)
	var header http.Header
	for i := range bodies {
		bodies[i], header = form.request(i)
	}
	return contender{name, func(conc int, d time.Duration) load {
		return closedLoop(conc, d, func(g int) error {
			_, _, err := post(c, url, bodies[g%len(bodies)], header)
			return err
		})
	}}
}

// BenchmarkHTTPMinimal compares our server with the minimal one, per form
// and client, at 1, 16 and 64 clients: the ratios are ours ÷ minimal.
//
//	go test -run '^$' -bench HTTPMinimal -benchtime 8x ./internal/compare/
func BenchmarkHTTPMinimal(b *testing.B) {
	mh, oh := httpHandlers(b)
	minimal, ours := serveHTTP(b, mh), serveHTTP(b, oh)
	for _, form := range httpForms {
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(form.name+"/"+enc, func(b *testing.B) {
				c := httpClient(b, enc == "gzip")
				paired(b, time.Second, []int{1, 16, 64},
					httpContender("minimal", c, minimal.URL+"/v2/models/add_sub/infer", form),
					httpContender("ours", c, ours.URL+"/v2/models/add_sub/infer", form))
			})
		}
	}
}

// BenchmarkHTTPGzipSmall compares our server with itself: the add_sub
// answers (a few hundred bytes) to a client sending Accept-Encoding: gzip
// against one sending none. The ratios are gzip ÷ identity.
//
//	go test -run '^$' -bench HTTPGzipSmall -benchtime 8x ./internal/compare/
func BenchmarkHTTPGzipSmall(b *testing.B) {
	_, oh := httpHandlers(b)
	url := serveHTTP(b, oh).URL + "/v2/models/add_sub/infer"
	for _, form := range httpForms {
		b.Run(form.name, func(b *testing.B) {
			paired(b, time.Second, []int{1, 16, 64},
				httpContender("identity", httpClient(b, false), url, form),
				httpContender("gzip", httpClient(b, true), url, form))
		})
	}
}

// largeConfig is the identity model of BenchmarkHTTPGzipLarge.
const largeConfig = `
name: "mirror"
backend: "mirror"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`

// mirrorServer serves the identity model of the large comparisons.
func mirrorServer(tb testing.TB) *triton.Server {
	return testmodels.NewServer(tb, map[string]string{"mirror/config.pbtxt": largeConfig, "mirror/1/model": ""},
		triton.WithBackend("mirror", testmodels.Mirror))
}

// largeValues are n FP32 values: "noise" from a normal distribution
// (embeddings, logits: the mantissas do not compress), "relu" the same
// with the negative half zero (activations after a ReLU).
func largeValues(kind string, n int) []byte {
	r := rand.New(rand.NewPCG(22, uint64(n)))
	b := make([]byte, 0, 4*n)
	for range n {
		v := float32(r.NormFloat64())
		if kind == "relu" && v < 0 {
			v = 0
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// largeRequest is a binary request for the mirror model carrying values,
// asking for the output in binary or as JSON.
func largeRequest(values []byte, jsonOutput bool) ([]byte, http.Header) {
	header := fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[%d],"datatype":"FP32","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":%v}}`,
		len(values)/4, len(values), !jsonOutput)
	return append([]byte(header), values...), http.Header{
		"Content-Type":                    {"application/octet-stream"},
		"Inference-Header-Content-Length": {strconv.Itoa(len(header))},
	}
}

// TestHTTPGzipLarge: the large answers come back whole, compressed when
// asked, with either level.
func TestHTTPGzipLarge(t *testing.T) {
	srv := mirrorServer(t)
	c := httpClient(t, true) // decompresses
	values := largeValues("relu", 1<<16)
	for _, level := range []int{1, 6} {
		ts := serveHTTP(t, httpapi.NewHandler(srv, httpapi.WithCompressionLevel(level)))
		body, header := largeRequest(values, false)
		resp, got, err := post(c, ts.URL+"/v2/models/mirror/infer", body, header)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
		if !resp.Uncompressed || n > len(got) || !bytes.Equal(got[n:], values) {
			t.Errorf("level %d: uncompressed by the client %v, %d bytes after the header, want %d equal bytes", level, resp.Uncompressed, len(got)-n, len(values))
		}
	}
}

// BenchmarkHTTPGzipLarge measures response compression on large answers:
// an identity model returning 1 MiB or 16 MiB of FP32 (binary; and 1 MiB
// as JSON), to a client sending no Accept-Encoding (identity, the
// baseline), and to one sending Accept-Encoding: gzip without decoding the
// answer (so that the figures are the server's), our default level
// (Triton's, 6) and level 1. wire-ratio is the compressed ÷ uncompressed
// size of one answer; MB/s served is req/s × the uncompressed size.
//
//	go test -run '^$' -bench HTTPGzipLarge -benchtime 6x -timeout 30m ./internal/compare/
func BenchmarkHTTPGzipLarge(b *testing.B) {
	srv := mirrorServer(b)
	l6 := serveHTTP(b, httpapi.NewHandler(srv))
	l1 := serveHTTP(b, httpapi.NewHandler(srv, httpapi.WithCompressionLevel(1)))
	plain := httpClient(b, false)
	for _, tc := range []struct {
		kind       string
		size       int
		jsonOutput bool
	}{
		{"noise", 1 << 20, false}, {"relu", 1 << 20, false}, {"noise", 16 << 20, false}, {"relu", 16 << 20, false},
		{"noise", 1 << 20, true},
	} {
		form := "binary"
		if tc.jsonOutput {
			form = "json"
		}
		b.Run(fmt.Sprintf("%s/%s/%dMiB", form, tc.kind, tc.size>>20), func(b *testing.B) {
			body, header := largeRequest(largeValues(tc.kind, tc.size/4), tc.jsonOutput)
			gzipped := header.Clone()
			gzipped.Set("Accept-Encoding", "gzip")
			run := func(name, url string, header http.Header) contender {
				return contender{name, func(conc int, d time.Duration) load {
					return closedLoop(conc, d, func(int) error { return postDiscard(plain, url+"/v2/models/mirror/infer", body, header) })
				}}
			}
			slice := 2 * time.Second
			if tc.size > 1<<20 || tc.jsonOutput {
				slice = 4 * time.Second // fewer answers a second: longer rounds
			}
			paired(b, slice, []int{1, 2},
				run("identity", l6.URL, header),
				run("gzip-l6", l6.URL, gzipped),
				run("gzip-l1", l1.URL, gzipped))
			// After paired: b.Loop's start drops metrics reported before.
			for _, lv := range []struct {
				name string
				url  string
			}{{"l6", l6.URL}, {"l1", l1.URL}} {
				_, id, err := post(plain, lv.url+"/v2/models/mirror/infer", body, header)
				if err != nil {
					b.Fatal(err)
				}
				resp, z, err := post(plain, lv.url+"/v2/models/mirror/infer", body, gzipped)
				if err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
					b.Fatalf("%s: %v, Content-Encoding %q", lv.name, err, resp.Header.Get("Content-Encoding"))
				}
				b.ReportMetric(float64(len(z))/float64(len(id)), "gzip-"+lv.name+"/wire-ratio")
				b.ReportMetric(float64(len(id)), "answer-bytes")
			}
		})
	}
}

// BenchmarkHTTPPeakRSS drives one server with JSON add_sub requests from
// 64 clients for 5 s and reports the process's peak resident set
// (VmHWM): run one sub-benchmark per process, as the figure is the
// process's.
//
//	for s in minimal/identity minimal/gzip ours/identity ours/gzip; do
//	  go test -run '^$' -bench "HTTPPeakRSS/$s\$" -benchtime 1x ./internal/compare/; done
func BenchmarkHTTPPeakRSS(b *testing.B) {
	mh, oh := httpHandlers(b)
	for _, s := range []struct {
		name string
		h    http.Handler
	}{{"minimal", mh}, {"ours", oh}} {
		for _, enc := range []string{"identity", "gzip"} {
			b.Run(s.name+"/"+enc, func(b *testing.B) {
				x := httpContender(s.name, httpClient(b, enc == "gzip"), serveHTTP(b, s.h).URL+"/v2/models/add_sub/infer", httpForms[0])
				var l load
				for b.Loop() {
					l = x.run(64, 5*time.Second)
				}
				if l.errs > 0 {
					b.Fatalf("%d requests failed", l.errs)
				}
				status, err := os.ReadFile("/proc/self/status")
				if err != nil {
					b.Skip("no /proc/self/status")
				}
				for line := range strings.Lines(string(status)) {
					if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")))
						b.ReportMetric(float64(n)/1024, "peak-RSS-MB")
					}
				}
				b.ReportMetric(l.rps, "req/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
