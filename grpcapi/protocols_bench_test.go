package grpcapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/loadtest"
	"github.com/triton-go/triton/tensor"
)

// BenchmarkProtocols is the matrix of issue #9: the same model served
// in-process (srv.Infer), over HTTP (binary tensor extension, keep-alive
// client) and over gRPC (raw_input_contents, one client connection), both
// on TCP loopback with the client's work included, at concurrency 1, 16
// and 64, for a tiny input (FP32 [1, 16], 64 B) and a 1 MiB one (FP32
// [1, 262144]). The model is an identity (its output is its input), so what
// is measured is the path, not the model. Metrics: req/s, p50-µs, p99-µs,
// and overhead-µs, the mean latency minus the in-process mean at the same
// size and concurrency, measured in the same run.
//
//	go test -run '^$' -bench Protocols -benchtime 2s -count 3 ./grpcapi/
func BenchmarkProtocols(b *testing.B) {
	srv, err := triton.New(
		triton.WithRepository(mapFS(map[string]string{
			"identity/config.pbtxt": `name: "identity" backend: "mirror" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
			"identity/1/model": "",
		})),
		triton.WithBackend("mirror", mirror))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()

	hs := httptest.NewServer(httpapi.NewHandler(srv, httpapi.WithMaxRequestSize(1<<24)))
	defer hs.Close()
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpcapi.ServerOptions()...)
	grpcapi.New(srv).Register(gs)
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	defer func() { gs.Stop(); <-served }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<25), grpc.MaxCallSendMsgSize(1<<25)))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	grpcClient := inferencepb.NewGRPCInferenceServiceClient(conn)

	for _, size := range []struct {
		name  string
		elems int64
	}{{"64B", 16}, {"1MiB", 1 << 18}} {
		raw := make([]byte, 4*size.elems)
		for i := range size.elems {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i)))
		}
		in, err := tensor.New("INPUT0", tensor.FP32, tensor.Shape{1, size.elems}, raw)
		if err != nil {
			b.Fatal(err)
		}
		inprocess := func() error {
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "identity", Inputs: []tensor.Tensor{in}})
			if err == nil && resp.Outputs[0].Shape[1] != size.elems {
				err = fmt.Errorf("output shape %v", resp.Outputs[0].Shape)
			}
			return err
		}
		header := fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"FP32","parameters":{"binary_data_size":%d}}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`,
			size.elems, len(raw))
		body := append([]byte(header), raw...)
		hl := strconv.Itoa(len(header))
		overHTTP := func() error {
			r, err := http.NewRequest(http.MethodPost, hs.URL+"/v2/models/identity/infer", bytes.NewReader(body))
			if err != nil {
				return err
			}
			r.Header.Set("Content-Type", "application/octet-stream")
			r.Header.Set("Inference-Header-Content-Length", hl)
			resp, err := httpClient.Do(r)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != 200 || n < int64(len(raw))) {
				err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
			}
			return err
		}
		greq := &inferencepb.ModelInferRequest{
			ModelName:        "identity",
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, size.elems}}},
			RawInputContents: [][]byte{raw},
		}
		overGRPC := func() error {
			resp, err := grpcClient.ModelInfer(context.Background(), greq)
			if err == nil && len(resp.GetRawOutputContents()[0]) != len(raw) {
				err = fmt.Errorf("%d output bytes", len(resp.GetRawOutputContents()[0]))
			}
			return err
		}
		for _, c := range []int{1, 16, 64} {
			var base time.Duration
			b.Run(fmt.Sprintf("%s/inprocess/c%d", size.name, c), func(b *testing.B) { base = loadtest.Run(b, c, inprocess) })
			for _, p := range []struct {
				name string
				do   func() error
			}{{"http", overHTTP}, {"grpc", overGRPC}} {
				b.Run(fmt.Sprintf("%s/%s/c%d", size.name, p.name, c), func(b *testing.B) {
					if base == 0 {
						base = loadtest.Mean(c, 2000, inprocess)
					}
					mean := loadtest.Run(b, c, p.do)
					b.ReportMetric(float64(mean-base)/float64(time.Microsecond), "overhead-µs")
				})
			}
		}
	}
}
