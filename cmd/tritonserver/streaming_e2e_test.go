package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// startStreamingModels runs the binary on the example repository with its
// two decoupled models loaded.
func startStreamingModels(t *testing.T) *binaryServer {
	t.Helper()
	return startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit",
		"--load-model=repeat_int32", "--load-model=tokens")
}

// TestRepeatInt32Stream streams the example repeat_int32 model over gRPC
// ModelStreamInfer as Triton's streaming clients do: one response per
// element of IN, in order, with OUT and IDX and triton_final_response
// false, then the empty final response the request asked for; a request
// whose IN and DELAY differ in length fails in band, naming the model, and
// the stream goes on.
func TestRepeatInt32Stream(t *testing.T) {
	s := startStreamingModels(t)
	stream := s.streamClient()

	u32 := func(vs ...uint32) []byte {
		b := make([]byte, 0, 4*len(vs))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	request := func(id string, in []int32, delay []uint32) *inferencepb.ModelInferRequest {
		raw := make([]uint32, len(in))
		for i, v := range in {
			raw[i] = uint32(v)
		}
		return &inferencepb.ModelInferRequest{ModelName: "repeat_int32", Id: id,
			Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
				{Name: "IN", Datatype: "INT32", Shape: []int64{int64(len(in))}},
				{Name: "DELAY", Datatype: "UINT32", Shape: []int64{int64(len(delay))}},
				{Name: "WAIT", Datatype: "UINT32", Shape: []int64{1}},
			},
			RawInputContents: [][]byte{u32(raw...), u32(delay...), u32(5)},
			Parameters: map[string]*inferencepb.InferParameter{
				"triton_enable_empty_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
			},
		}
	}
	in := []int32{7, -3, 42, 0}
	if err := stream.Send(request("r1", in, []uint32{0, 10, 0, 5})); err != nil {
		t.Fatal(err)
	}
	for i, want := range in {
		sr, err := stream.Recv()
		if err != nil || sr.GetErrorMessage() != "" {
			t.Fatalf("response %d: %v, %v", i, sr, err)
		}
		r := sr.GetInferResponse()
		if r.GetId() != "r1" || r.GetModelName() != "repeat_int32" || r.GetParameters()["triton_final_response"].GetBoolParam() {
			t.Fatalf("response %d: %v", i, r)
		}
		got := map[string]uint32{}
		for j, o := range r.GetOutputs() {
			if len(o.GetShape()) != 1 || o.GetShape()[0] != 1 || len(r.GetRawOutputContents()[j]) != 4 {
				t.Fatalf("response %d: output %v, %d bytes", i, o, len(r.GetRawOutputContents()[j]))
			}
			got[o.GetName()+"/"+o.GetDatatype()] = binary.LittleEndian.Uint32(r.GetRawOutputContents()[j])
		}
		if len(got) != 2 || int32(got["OUT/INT32"]) != want || got["IDX/UINT32"] != uint32(i) {
			t.Fatalf("response %d: outputs %v, want OUT %d IDX %d", i, got, want, i)
		}
	}
	sr, err := stream.Recv()
	if err != nil || sr.GetErrorMessage() != "" {
		t.Fatalf("final response: %v, %v", sr, err)
	}
	if r := sr.GetInferResponse(); r.GetId() != "r1" || len(r.GetOutputs()) != 0 || !r.GetParameters()["triton_final_response"].GetBoolParam() {
		t.Fatalf("final response: %v", r)
	}

	// Without triton_enable_empty_final_response: the error alone.
	bad := request("bad", []int32{1, 2}, []uint32{0})
	bad.Parameters = nil
	if err := stream.Send(bad); err != nil {
		t.Fatal(err)
	}
	sr, err = stream.Recv()
	if err != nil || !strings.Contains(sr.GetErrorMessage(), `"repeat_int32"`) || !strings.Contains(sr.GetErrorMessage(), "IN has 2 elements, DELAY 1") {
		t.Fatalf("mismatched inputs: %v, %v", sr, err)
	}
	if err := stream.Send(request("r2", []int32{9}, []uint32{0})); err != nil {
		t.Fatal(err)
	}
	sr, err = stream.Recv()
	if err != nil || sr.GetInferResponse().GetId() != "r2" || len(sr.GetInferResponse().GetRawOutputContents()) != 2 ||
		binary.LittleEndian.Uint32(sr.GetInferResponse().GetRawOutputContents()[0]) != 9 {
		t.Fatalf("after the error: %v, %v", sr, err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
}

// TestRepeatInt32Cancel: a client that goes away in the middle of a long
// repeat stops its producer, so the binary exits cleanly on SIGTERM well
// within --exit-timeout-secs (a producer left waiting its 10-minute delay
// would hold the shutdown past it, and the exit would be an error).
func TestRepeatInt32Cancel(t *testing.T) {
	s := startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit",
		"--load-model=repeat_int32", "--exit-timeout-secs=20")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := inferencepb.NewGRPCInferenceServiceClient(conn).ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	err = stream.Send(&inferencepb.ModelInferRequest{ModelName: "repeat_int32",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "IN", Datatype: "INT32", Shape: []int64{2}},
			{Name: "DELAY", Datatype: "UINT32", Shape: []int64{2}},
			{Name: "WAIT", Datatype: "UINT32", Shape: []int64{1}},
		},
		RawInputContents: [][]byte{append(raw(1), raw(2)...), append(raw(0), raw(600_000)...), raw(0)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sr, err := stream.Recv(); err != nil || len(sr.GetInferResponse().GetRawOutputContents()) != 2 {
		t.Fatalf("first response: %v, %v", sr, err)
	}
	cancel() // the client goes away while the second waits its delay
	s.terminate(60 * time.Second)
}

// TestTokensGenerateStream posts the README's generate_stream request to
// the example tokens model: one server-sent event per word of the prompt,
// in order (each after the config's delay_ms; no timing is asserted).
func TestTokensGenerateStream(t *testing.T) {
	s := startStreamingModels(t)
	resp, err := http.Post(s.http+"/v2/models/tokens/generate_stream", "application/json", strings.NewReader(`{"text_input":"a b c"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("generate_stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var words []string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if line == "" {
			continue // between events
		}
		data, ok := strings.CutPrefix(line, "data: ")
		var ev struct {
			Model      string `json:"model_name"`
			Version    string `json:"model_version"`
			TextOutput string `json:"text_output"`
			Error      string `json:"error"`
		}
		if !ok || json.Unmarshal([]byte(data), &ev) != nil || ev.Error != "" || ev.Model != "tokens" || ev.Version != "1" {
			t.Fatalf("event %d: %q", len(words), line)
		}
		words = append(words, ev.TextOutput)
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(words, "|") != "a|b|c" {
		t.Fatalf("events carry %q, want one per word: a, b, c", words)
	}
}
