package grpcapi_test

import (
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

// paramsSeen returns what the params model saw of a response.
func paramsSeen(t *testing.T, resp *inferencepb.ModelInferResponse) string {
	t.Helper()
	strs, err := tensor.Strings(tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: resp.GetRawOutputContents()[0]})
	if err != nil {
		t.Fatal(err)
	}
	return strs[0]
}

func paramsRequest(p map[string]*inferencepb.InferParameter) *inferencepb.ModelInferRequest {
	return &inferencepb.ModelInferRequest{
		ModelName:        "params",
		Parameters:       p,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		RawInputContents: [][]byte{raw[int32](1)},
	}
}

// TestHeaderForwardPattern checks --grpc-header-forward-pattern: matching
// metadata reaches the model as string parameters, over a request
// parameter of the same name, for ModelInfer and every request of a
// ModelStreamInfer stream; other metadata and gRPC's own keys do not; a
// reserved key fails the request.
func TestHeaderForwardPattern(t *testing.T) {
	// As tritonserver compiles the flag's pattern: case insensitive.
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithHeaderForwardPattern(regexp.MustCompile("(?i)" + "^X-Fwd-|grpc|^Sequence_|^triton_"))}})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-fwd-user", "ann", "x-fwd-a", "header", "x-other", "no", "x-fwd-multi", "1", "x-fwd-multi", "2")
	resp, err := f.client.ModelInfer(ctx, paramsRequest(params("a", 7, "x-fwd-a", 1, "b", true)))
	if err != nil {
		t.Fatal(err)
	}
	want := "a=7(int64);b=true(bool);x-fwd-a=header(string);x-fwd-multi=2(string);x-fwd-user=ann(string)"
	if got := paramsSeen(t, resp); got != want {
		t.Errorf("ModelInfer: model saw %q, want %q", got, want)
	}

	stream, err := f.client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		send(t, stream, paramsRequest(params("a", 7)))
		r := recv(t, stream)
		if r.GetErrorMessage() != "" {
			t.Fatal(r.GetErrorMessage())
		}
		if got, want := paramsSeen(t, r.GetInferResponse()), "a=7(int64);x-fwd-a=header(string);x-fwd-multi=2(string);x-fwd-user=ann(string)"; got != want {
			t.Errorf("ModelStreamInfer: model saw %q, want %q", got, want)
		}
	}
	stream.CloseSend()
	wantEOF(t, stream)

	for _, key := range []string{"sequence_id", "triton_x"} {
		ctx := metadata.AppendToOutgoingContext(t.Context(), key, "1")
		_, err := f.client.ModelInfer(ctx, paramsRequest(nil))
		wantStatus(t, err, codes.InvalidArgument, "Header '"+key+"' is reserved for Triton usage and cannot be forwarded.")
	}

	// Without the option nothing is forwarded.
	g := newFixture(t, setup{})
	resp, err = g.client.ModelInfer(ctx, paramsRequest(nil))
	if err != nil || paramsSeen(t, resp) != "" {
		t.Errorf("without a pattern: %v, %v", resp, err)
	}
}

// TestModelInferMalformed sends ModelInfer and ModelStreamInfer requests
// that are not valid protobuf: INVALID_ARGUMENT, the client's mistake
// (grpc-go alone says INTERNAL), and the stream goes on.
func TestModelInferMalformed(t *testing.T) {
	f := newFixture(t, setup{})
	good, err := proto.Marshal(simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{
		{0xff, 0xff, 0xff}, // a truncated varint tag
		protowire.AppendTag(nil, 1, protowire.BytesType),                                                      // model_name without its length
		append(good, protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.BytesType), 1<<20)...),      // an entry past the end
		append(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xff\xfe"), good...), // not UTF-8
	} {
		var resp inferencepb.ModelInferResponse
		err := f.conn.Invoke(t.Context(), inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, rawMessage(bad), &resp, grpc.ForceCodecV2(rawCodec{}))
		wantStatus(t, err, codes.InvalidArgument, "unmarshal")

		stream, err := f.conn.NewStream(t.Context(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, inferencepb.GRPCInferenceService_ModelStreamInfer_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []rawMessage{bad, good} {
			if err := stream.SendMsg(m); err != nil {
				t.Fatal(err)
			}
		}
		// Requests outside a sequence run at once: either may answer first.
		var failed, served int
		for range 2 {
			var r inferencepb.ModelStreamInferResponse
			if err := stream.RecvMsg(&r); err != nil {
				t.Fatalf("stream: %v", err)
			}
			switch {
			case strings.Contains(r.GetErrorMessage(), "unmarshal"):
				failed++
			case r.GetErrorMessage() == "" && len(r.GetInferResponse().GetRawOutputContents()) == 2:
				served++
			default:
				t.Errorf("stream: unexpected response %v", &r)
			}
		}
		if failed != 1 || served != 1 {
			t.Errorf("stream: %d failed and %d served, want 1 and 1", failed, served)
		}
		stream.CloseSend()
	}
}

// rawMessage is a message's encoding, sent as it is by rawCodec.
type rawMessage []byte

// rawCodec sends rawMessages unchanged and decodes protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(rawMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	}
	return encoding.GetCodecV2(grpcproto.Name).Marshal(v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(grpcproto.Name).Unmarshal(data, v)
}

func (rawCodec) Name() string { return grpcproto.Name }
