package main

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testenv"
)

// TestGRPCEndToEnd talks to the binary over gRPC with a client generated
// from our protos, as Triton's gRPC clients would.
func TestGRPCEndToEnd(t *testing.T) {
	testenv.NeedLibrary(t)
	s := startBinary(t, "--model-repository=../../examples/model_repository", "--grpc-restricted-protocol=model-repository:admin=yes")
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
