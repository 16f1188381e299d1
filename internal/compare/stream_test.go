package compare

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// streamResponses is how many responses each request of the streaming
// comparison gets.
const streamResponses = 64

// streamServer serves "s", a decoupled no-op model answering each request
// with streamResponses responses whose OUTPUT0 is the request's INPUT0
// (FP32 [16]), then the final flag.
func streamServer(tb testing.TB) *triton.Server {
	tb.Helper()
	send := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		out := r.Inputs[0]
		out.Name = "OUTPUT0"
		outs := []tensor.Tensor{out}
		for range streamResponses {
			if err := send(backend.Response{Outputs: outs}); err != nil {
				return err
			}
		}
		return nil
	})
	const cfg = `name: "s"
backend: "stream"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
`
	return testmodels.NewServer(tb, map[string]string{"s/config.pbtxt": cfg, "s/1/x": ""}, triton.WithBackend("stream", send))
}

// BenchmarkStreaming is the per-response cost of a decoupled no-op model
// sending 64 responses per request (FP32 [16] each), from one caller: a
// bare Go channel carrying the same 64 responses between two goroutines
// (the baseline: a buffered channel of triton.StreamBuffer, as the
// server's), srv.InferStream in process, gRPC ModelStreamInfer over TCP
// loopback, and HTTP generate_stream (server-sent events) over TCP
// loopback, each reading every response. Run the sub-benchmarks in one
// invocation, several times, and divide by the channel's ns/response:
//
//	go test -run '^$' -bench Streaming -benchmem -count 5 ./internal/compare/
func BenchmarkStreaming(b *testing.B) {
	srv := streamServer(b)
	in, err := tensor.From("INPUT0", tensor.Shape{16}, make([]float32, 16))
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B, n int) {
		if n != b.N*streamResponses {
			b.Fatalf("%d responses, want %d", n, b.N*streamResponses)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/response")
	}
	b.Run("channel", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			ch := make(chan *triton.InferResponse, triton.StreamBuffer)
			go func() {
				for range streamResponses {
					ch <- &triton.InferResponse{Model: "s", Version: 1, Outputs: []tensor.Tensor{in}}
				}
				close(ch)
			}()
			for range ch {
				n++
			}
		}
		report(b, n)
	})
	b.Run("inprocess", func(b *testing.B) {
		req := &triton.InferRequest{Model: "s", Inputs: []tensor.Tensor{in}}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for _, err := range srv.InferStream(context.Background(), req) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		report(b, n)
	})
	b.Run("grpc", func(b *testing.B) {
		client := grpcOurs(b, srv)
		stream, err := client.ModelStreamInfer(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		req := &inferencepb.ModelInferRequest{ModelName: "s",
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{16}}},
			RawInputContents: [][]byte{in.Data}}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if err := stream.Send(req); err != nil {
				b.Fatal(err)
			}
			for range streamResponses {
				m, err := stream.Recv()
				if err != nil || m.GetErrorMessage() != "" {
					b.Fatal(err, m.GetErrorMessage())
				}
				n++
			}
		}
		report(b, n)
	})
	b.Run("sse", func(b *testing.B) {
		url := serveHTTP(b, httpapi.NewHandler(srv)).URL + "/v2/models/s/generate_stream"
		body := []byte(`{"INPUT0":[` + strings.TrimSuffix(strings.Repeat("0,", 16), ",") + `]}`)
		c := httpClient(b, false)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			resp, err := c.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if line := sc.Bytes(); bytes.HasPrefix(line, []byte("data: {\"OUTPUT0\"")) {
					n++
				} else if len(line) > 0 {
					b.Fatalf("event %q", line)
				}
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
		report(b, n)
	})
}
