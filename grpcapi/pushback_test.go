package grpcapi_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// TestRetryPushback: a request the deadline-aware schedule refuses (a
// model whose batches cost 100 ms, a call with 50 ms left) answers
// UNAVAILABLE with the reason and a grpc-retry-pushback-ms trailer.
func TestRetryPushback(t *testing.T) {
	slow := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		<-time.After(100 * time.Millisecond) // the model's cost
		return mirror(ctx, b)
	})
	f := newFixture(t, setup{
		files: map[string]string{
			"slow/config.pbtxt": `name: "slow" backend: "slow" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }`,
			"slow/1/model": "",
		},
		server: []triton.Option{triton.WithBackend("slow", slow)},
	})
	req := &inferencepb.ModelInferRequest{ModelName: "slow",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 4}}},
		RawInputContents: [][]byte{make([]byte, 16)}}
	for range 10 { // 2 warm-up batches and 8 for the estimate
		if _, err := f.client.ModelInfer(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var trailer metadata.MD
	_, err := f.client.ModelInfer(ctx, req, grpc.Trailer(&trailer))
	wantStatus(t, err, codes.Unavailable, "cannot finish before its deadline")
	v := trailer.Get("grpc-retry-pushback-ms")
	if len(v) != 1 {
		t.Fatalf("trailer %v: want one grpc-retry-pushback-ms", trailer)
	}
	if ms, err := strconv.Atoi(v[0]); err != nil || ms < 0 {
		t.Errorf("grpc-retry-pushback-ms %q: want a number of milliseconds", v[0])
	}
}
