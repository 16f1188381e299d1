package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// FuzzModelInfer hands arbitrary ModelInferRequest messages (any bytes
// that decode as one) to ModelInfer on every test model but the blocking
// one. It must never panic, answer every failure with a gRPC status, and
// never answer INTERNAL or UNKNOWN for a request it refused. Each message
// is decoded as the service's codec decodes a request it receives (every
// tensor by reference, from buffers of a few bytes), which must give what
// proto.Unmarshal gives, and that is the request ModelInfer runs.
func FuzzModelInfer(f *testing.F) {
	raw := func(n int) []byte { return make([]byte, n) }
	seeds := []*inferencepb.ModelInferRequest{
		{ModelName: "simple", Id: "a", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1, 16}}, {Name: "INPUT1", Datatype: "INT32", Shape: []int64{1, 16}}},
			RawInputContents: [][]byte{raw(64), raw(64)},
			Outputs:          []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT1", Parameters: map[string]*inferencepb.InferParameter{"classification": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: 3}}}}}},
		{ModelName: "nb_BYTES", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "INPUT0", Datatype: "BYTES", Shape: []int64{2}, Contents: &inferencepb.InferTensorContents{BytesContents: [][]byte{[]byte("x"), nil}}}}},
		{ModelName: "id_FP16", ModelVersion: "1", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "INPUT0", Datatype: "FP16", Shape: []int64{1, 3}}}, RawInputContents: [][]byte{raw(5)}},
		{ModelName: "params", Parameters: map[string]*inferencepb.InferParameter{
			"sequence_id": {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "s"}},
			"priority":    {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: -1}},
			"p":           {ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: 1.5}}},
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT32", Shape: []int64{1},
				Contents: &inferencepb.InferTensorContents{IntContents: []int32{7}}}}},
		{ModelName: "id_INT8", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "INT8", Shape: []int64{1, 2},
			Parameters: map[string]*inferencepb.InferParameter{"shared_memory_region": {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: "r"}}}}}},
		{ModelName: "decoupled", ModelVersion: "x"},
		{ModelName: "batched", Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{9223372036854775807, 4}}}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	files := repo()
	delete(files, "block/config.pbtxt")
	delete(files, "block/1/model")
	srv, err := triton.New(triton.WithRepository(mapFS(files)),
		triton.WithBackend("mirror", mirror), triton.WithBackend("addsub", addSub), triton.WithBackend("params", echoParams))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })
	svc := grpcapi.New(srv)
	f.Fuzz(func(t *testing.T, data []byte) {
		want := &inferencepb.ModelInferRequest{}
		wantErr := proto.Unmarshal(data, want)
		req, release, err := grpcapi.DecodeThroughCodec(data, 3)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("codec's decoding: error %v, protobuf's %v", err, wantErr)
		}
		if err != nil {
			return
		}
		defer release()
		if !proto.Equal(req, want) {
			t.Fatalf("codec decoded\n%v\nprotobuf decodes\n%v", req, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = svc.ModelInfer(ctx, req)
		if err == nil {
			return
		}
		st, ok := status.FromError(err)
		if !ok {
			t.Fatalf("error %v is not a gRPC status", err)
		}
		if st.Code() == codes.Internal || st.Code() == codes.Unknown {
			t.Fatalf("refused request answered %v: %s", st.Code(), st.Message())
		}
	})
}
