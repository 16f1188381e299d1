package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/loadtest"
	"github.com/triton-go/triton/tensor"
)

// noopConfig is the benchmark model of issue #8: one FP32 [16] input,
// max_batch_size 8, answered by the mirror backend (the output aliases the
// input: no work at all).
const noopConfig = `
name: "noop"
backend: "mirror"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
`

// inprocessMean remembers the in-process mean latency per concurrency, so
// that the http sub-benchmarks can report their overhead.
var inprocessMean sync.Map // int → time.Duration

// BenchmarkHTTPInfer compares an inference over HTTP (binary tensors, a
// keep-alive client on a local port, the client's work included) with the
// same request through srv.Infer, on the same server, at concurrency 1, 16
// and 64. Metrics: req/s, p50-µs and p99-µs latency, and for http
// overhead-µs, its mean latency minus the in-process mean at the same
// concurrency (measured in the same run; run inprocess first, or the http
// sub-benchmark measures a baseline itself).
func BenchmarkHTTPInfer(b *testing.B) {
	srv := newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/model": ""})
	vals := make([]float32, 16)
	for i := range vals {
		vals[i] = float32(i)
	}
	in, err := tensor.From("INPUT0", tensor.Shape{1, 16}, vals)
	if err != nil {
		b.Fatal(err)
	}
	inprocess := func() error {
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "noop", Inputs: []tensor.Tensor{in}})
		if err == nil && len(resp.Outputs) != 1 {
			err = fmt.Errorf("%d outputs", len(resp.Outputs))
		}
		return err
	}

	ts := httptest.NewServer(httpapi.NewHandler(srv))
	defer ts.Close()
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	client := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	header := `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`
	body, hl := binaryBody(header, le(vals...))
	url := ts.URL + inferPath("noop")
	overHTTP := func() error {
		r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		r.Header.Set("Content-Type", "application/octet-stream")
		r.Header.Set("Inference-Header-Content-Length", hl)
		resp, err := client.Do(r)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != 200 || n < 64) {
			err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
		}
		return err
	}

	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("inprocess/c%d", c), func(b *testing.B) {
			mean := loadtest.Run(b, c, inprocess)
			inprocessMean.Store(c, mean)
		})
	}
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("http/c%d", c), func(b *testing.B) {
			base, ok := inprocessMean.Load(c)
			if !ok {
				base = loadtest.Mean(c, 20000, inprocess)
				inprocessMean.Store(c, base)
			}
			mean := loadtest.Run(b, c, overHTTP)
			b.ReportMetric(float64(mean-base.(time.Duration))/float64(time.Microsecond), "overhead-µs")
		})
	}
}

// BenchmarkHTTPFloor is the cost of net/http itself in BenchmarkHTTPInfer:
// the same client, request and response sizes, against a handler that
// only reads the body and writes as many bytes as the real answer.
func BenchmarkHTTPFloor(b *testing.B) {
	answer := make([]byte, 142+64)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Inference-Header-Content-Length", "142")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = w.Write(answer)
	}))
	defer ts.Close()
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	client := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	body := make([]byte, 165+64)
	do := func() error {
		r, err := http.NewRequest(http.MethodPost, ts.URL+inferPath("noop"), bytes.NewReader(body))
		if err != nil {
			return err
		}
		r.Header.Set("Content-Type", "application/octet-stream")
		r.Header.Set("Inference-Header-Content-Length", "165")
		resp, err := client.Do(r)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) { loadtest.Run(b, c, do) })
	}
}

// BenchmarkHandlerInfer is the adapter's own cost, without sockets: the
// handler called directly with the request of BenchmarkHTTPInfer (binary
// tensors) or its JSON equivalent, in-process inference included,
// httptest's request and recorder construction included.
func BenchmarkHandlerInfer(b *testing.B) {
	srv := newServer(b, map[string]string{"noop/config.pbtxt": noopConfig, "noop/1/model": ""})
	h := httpapi.NewHandler(srv)
	vals := make([]float32, 16)
	for i := range vals {
		vals[i] = float32(i) / 3
	}
	binBody, hl := binaryBody(`{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`, le(vals...))
	jsonBody := []byte(fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":%s}]}`, strings.ReplaceAll(fmt.Sprint(vals), " ", ",")))
	for _, tc := range []struct {
		name   string
		body   []byte
		header map[string]string
	}{
		{"binary", binBody, map[string]string{"Inference-Header-Content-Length": hl}},
		{"json", jsonBody, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rec := serve(h, req{method: http.MethodPost, path: inferPath("noop"), body: tc.body, header: tc.header}); rec.Code != 200 {
					b.Fatal(rec.Body.String())
				}
			}
		})
	}
}
