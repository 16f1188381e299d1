package main

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testenv"
)

// TestGRPCEndToEnd talks to the binary over gRPC with a client generated
// from our protos, as Triton's gRPC clients would.
func TestGRPCEndToEnd(t *testing.T) {
	testenv.NeedLibrary(t)
	s := startBinary(t, "--model-repository=../../examples/model_repository", exampleBackends, "--grpc-restricted-protocol=model-repository:admin=yes")
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := inferencepb.NewGRPCInferenceServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v, %v", h, err)
	}
	if r, err := client.ServerReady(ctx, &inferencepb.ServerReadyRequest{}); err != nil || !r.GetReady() {
		t.Fatalf("ServerReady: %v, %v", r, err)
	}

	// ONNX Runtime through raw contents, gzip-compressed both ways.
	raw := func(base float32) []byte {
		b := make([]byte, 64)
		for i := range 16 {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(base*float32(i)))
		}
		return b
	}
	resp, err := client.ModelInfer(ctx, &inferencepb.ModelInferRequest{
		ModelName: "add_sub", Id: "g1",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 16}},
			{Name: "INPUT1", Datatype: "FP32", Shape: []int64{1, 16}},
		},
		RawInputContents: [][]byte{raw(1), raw(10)},
	}, grpc.UseCompressor(gzip.Name))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetId() != "g1" || resp.GetModelVersion() != "1" || len(resp.GetRawOutputContents()) != 2 {
		t.Fatalf("response %v", resp)
	}
	for i, o := range resp.GetOutputs() {
		if o.GetName() == "OUTPUT0" {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(resp.GetRawOutputContents()[i][4*5:])); got != 55 {
				t.Fatalf("OUTPUT0[5] = %v, want 55", got)
			}
		}
	}

	// The ensemble, with typed contents, over a stream.
	stream, err := client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := make([]float32, 16)
	a[15] = 3
	req := &inferencepb.ModelInferRequest{ModelName: "add_sub_twice", Id: "s1",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "A", Datatype: "FP32", Shape: []int64{1, 16}, Contents: &inferencepb.InferTensorContents{Fp32Contents: a}},
			{Name: "B", Datatype: "FP32", Shape: []int64{1, 16}, Contents: &inferencepb.InferTensorContents{Fp32Contents: make([]float32, 16)}},
		},
		Outputs: []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "A2"}},
	}
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	sr, err := stream.Recv()
	if err != nil || sr.GetErrorMessage() != "" {
		t.Fatalf("stream: %v, %v", sr, err)
	}
	out := sr.GetInferResponse()
	if out.GetId() != "s1" || len(out.GetRawOutputContents()) != 1 ||
		math.Float32frombits(binary.LittleEndian.Uint32(out.GetRawOutputContents()[0][60:])) != 6 {
		t.Fatalf("ensemble over the stream: %v", out)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}

	// Errors carry Triton's codes; the restricted category needs its key.
	_, err = client.ModelInfer(ctx, &inferencepb.ModelInferRequest{ModelName: "nope"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = client.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{})
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || st.Message() != "This protocol is restricted, expecting header 'triton-grpc-protocol-admin'" {
		t.Fatalf("restricted index: %v", err)
	}
}

// TestGRPCResponseCompressionFlag: --grpc-infer-response-compression-level
// decides how inference answers are encoded: identity at Triton's default
// (none) even for a gzip request, gzip at low for a client that accepts it.
func TestGRPCResponseCompressionFlag(t *testing.T) {
	for _, tc := range []struct{ level, want string }{{"", "identity"}, {"low", "gzip"}} {
		t.Run(tc.want, func(t *testing.T) {
			args := []string{"--model-repository=../../examples/model_repository", exampleBackends}
			if tc.level != "" {
				args = append(args, "--grpc-infer-response-compression-level="+tc.level)
			}
			s := startBinary(t, args...)
			enc := &answerEncoding{}
			conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(enc))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, err = inferencepb.NewGRPCInferenceServiceClient(conn).ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
				ModelName:        "text_reverse",
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "TEXT", Datatype: "BYTES", Shape: []int64{1}}},
				RawInputContents: [][]byte{{5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'}},
			}, grpc.UseCompressor(gzip.Name))
			if err != nil {
				t.Fatal(err)
			}
			enc.mu.Lock()
			got := enc.name
			enc.mu.Unlock()
			if got == "" {
				got = "identity"
			}
			if got != tc.want {
				t.Errorf("answer encoded %q, want %q", got, tc.want)
			}
		})
	}
}

// answerEncoding is a client stats handler that keeps the encoding of the
// last answer's header.
type answerEncoding struct {
	mu   sync.Mutex
	name string
}

func (a *answerEncoding) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (a *answerEncoding) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (a *answerEncoding) HandleConn(context.Context, stats.ConnStats) {}
func (a *answerEncoding) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		a.mu.Lock()
		a.name = h.Compression
		a.mu.Unlock()
	}
}
