package grpcapi_test

import (
	"context"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

// BenchmarkModelInfer measures the adapter's own cost: Service.ModelInfer
// called directly (no transport, no protobuf encoding) on an identity
// model, against srv.Infer with the same tensor, for raw and typed
// contents.
//
//	go test -run '^$' -bench ModelInfer -benchmem ./grpcapi/
func BenchmarkModelInfer(b *testing.B) {
	srv, err := triton.New(triton.WithRepository(mapFS(map[string]string{
		"id_FP32/config.pbtxt": `name: "id_FP32" backend: "mirror" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
		"id_FP32/1/model": "",
	})), triton.WithBackend("mirror", mirror))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	svc := grpcapi.New(srv)
	ctx := context.Background()
	values := make([]float32, 16)
	data := raw(values...)

	b.Run("inprocess", func(b *testing.B) {
		in, _ := tensor.New("INPUT0", tensor.FP32, tensor.Shape{1, 16}, data)
		req := &triton.InferRequest{Model: "id_FP32", Inputs: []tensor.Tensor{in}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		req := &inferencepb.ModelInferRequest{
			ModelName:        "id_FP32",
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "FP32", 1, 16)},
			RawInputContents: [][]byte{data},
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.ModelInfer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		input := in("INPUT0", "FP32", 1, 16)
		input.Contents = &inferencepb.InferTensorContents{Fp32Contents: values}
		req := &inferencepb.ModelInferRequest{ModelName: "id_FP32", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{input}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := svc.ModelInfer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
