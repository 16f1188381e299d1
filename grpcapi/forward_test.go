package grpcapi_test

import (
	"encoding/binary"
	"io"
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
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithHeaderForwardPattern(regexp.MustCompile("(?i)" + "^X-Fwd-|grpc|^Sequence_|^triton_|^content-type|authority"))}})
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

// TestModelInferContentErrors checks that bad raw and typed contents fail
// INVALID_ARGUMENT with errors that name the input tensor and the model.
func TestModelInferContentErrors(t *testing.T) {
	f := newFixture(t, setup{})
	input := func(dt string, n int64, c *inferencepb.InferTensorContents) []*inferencepb.ModelInferRequest_InferInputTensor {
		return []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: dt, Shape: []int64{n}, Contents: c}}
	}
	for _, tc := range []struct {
		name string
		req  *inferencepb.ModelInferRequest
		want string
	}{
		{"BYTES length past the end", &inferencepb.ModelInferRequest{ModelName: "nb_BYTES", Inputs: input("BYTES", 1, nil), RawInputContents: [][]byte{{0xff, 0, 0, 0}}}, "length 255 runs past the end"},
		{"BYTES truncated prefix", &inferencepb.ModelInferRequest{ModelName: "nb_BYTES", Inputs: input("BYTES", 1, nil), RawInputContents: [][]byte{{1, 0}}}, "2 bytes cannot hold 1 elements"},
		{"BYTES too few", &inferencepb.ModelInferRequest{ModelName: "nb_BYTES", Inputs: input("BYTES", 2, nil), RawInputContents: [][]byte{{1, 0, 0, 0, 'a'}}}, "cannot hold 2 elements"},
		{"typed too few", &inferencepb.ModelInferRequest{ModelName: "nb_INT32", Inputs: input("INT32", 4, &inferencepb.InferTensorContents{IntContents: []int32{1, 2, 3}})}, "expected 16 bytes for shape [4] of INT32, got 12"},
		{"typed BYTES too few", &inferencepb.ModelInferRequest{ModelName: "nb_BYTES", Inputs: input("BYTES", 2, &inferencepb.InferTensorContents{BytesContents: [][]byte{[]byte("a")}})}, "cannot hold 2 elements"},
		{"typed wrong field", &inferencepb.ModelInferRequest{ModelName: "nb_FP16", Inputs: input("FP16", 1, &inferencepb.InferTensorContents{Fp32Contents: []float32{1}})}, "of type 'FP32', expected datatype 'FP16'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.ModelInfer(t.Context(), tc.req)
			wantStatus(t, err, codes.InvalidArgument, "'INPUT0'", "model '"+tc.req.ModelName+"'", tc.want)
		})
	}
}

// TestServerOptionsStreamLimit reads the HTTP/2 SETTINGS a server with
// ServerOptions sends a new connection: it allows 1024 concurrent streams
// (grpc-go's default is no limit).
func TestServerOptionsStreamLimit(t *testing.T) {
	f := newFixture(t, setup{})
	conn, err := f.lis.DialContext(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The client's preface and an empty SETTINGS frame.
	if _, err := conn.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		t.Fatal(err)
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	if hdr[3] != 4 || n%6 != 0 {
		t.Fatalf("first frame of type %d, %d bytes: not SETTINGS", hdr[3], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(conn, payload); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 6 {
		if id := binary.BigEndian.Uint16(payload[i:]); id == 3 { // SETTINGS_MAX_CONCURRENT_STREAMS
			if v := binary.BigEndian.Uint32(payload[i+2:]); v != 1024 {
				t.Errorf("MAX_CONCURRENT_STREAMS %d, want 1024", v)
			}
			return
		}
	}
	t.Error("no MAX_CONCURRENT_STREAMS setting: streams unlimited")
}
