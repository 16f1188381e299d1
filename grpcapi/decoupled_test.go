package grpcapi_test

import (
	"encoding/binary"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
)

// repeatRequest asks the repeat model for one response per value of in,
// with no delays, WAIT 0.
func repeatRequest(id string, emptyFinal bool, in ...int32) *inferencepb.ModelInferRequest {
	vals, delays := make([]byte, 4*len(in)), make([]byte, 4*len(in))
	for i, v := range in {
		binary.LittleEndian.PutUint32(vals[4*i:], uint32(v))
	}
	req := &inferencepb.ModelInferRequest{
		ModelName: "repeat", Id: id,
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "IN", Datatype: "INT32", Shape: []int64{int64(len(in))}},
			{Name: "DELAY", Datatype: "UINT32", Shape: []int64{int64(len(in))}},
			{Name: "WAIT", Datatype: "UINT32", Shape: []int64{1}},
		},
		RawInputContents: [][]byte{vals, delays, make([]byte, 4)},
	}
	if emptyFinal {
		req.Parameters = map[string]*inferencepb.InferParameter{
			"triton_enable_empty_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}}}
	}
	return req
}

// TestStreamDecoupled: ModelStreamInfer streams a decoupled model's
// responses, each with the request id and triton_final_response false, then
// the final flag as an empty response only when the request enabled it;
// ModelInfer refuses the model with Triton's message.
func TestStreamDecoupled(t *testing.T) {
	files := repo()
	files["repeat/config.pbtxt"] = `name: "repeat"` + testmodels.RepeatConfig
	files["repeat/1/model"] = ""
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("repeat", &testmodels.Repeat{})}})

	_, err := f.client.ModelInfer(t.Context(), repeatRequest("u", false, 1))
	wantStatus(t, err, codes.Unimplemented, "ModelInfer RPC doesn't support models with decoupled transaction policy")

	for _, emptyFinal := range []bool{false, true} {
		stream, err := f.client.ModelStreamInfer(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(repeatRequest("r", emptyFinal, 7, 8, 9)); err != nil {
			t.Fatal(err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var got []int32
		finals := 0
		for {
			m, err := stream.Recv()
			if err != nil {
				break
			}
			if m.GetErrorMessage() != "" {
				t.Fatalf("error in band: %s", m.GetErrorMessage())
			}
			r := m.GetInferResponse()
			if r.GetId() != "r" || r.GetModelName() != "repeat" {
				t.Errorf("response id %q model %q", r.GetId(), r.GetModelName())
			}
			final := r.GetParameters()["triton_final_response"].GetBoolParam()
			if final {
				finals++
				if len(r.GetOutputs()) != 0 {
					t.Errorf("final response with outputs %v", r.GetOutputs())
				}
				continue
			}
			if finals > 0 {
				t.Errorf("a response after the final one")
			}
			for i, o := range r.GetOutputs() {
				if o.GetName() == "OUT" {
					got = append(got, int32(binary.LittleEndian.Uint32(r.GetRawOutputContents()[i])))
				}
			}
		}
		if len(got) != 3 || got[0] != 7 || got[1] != 8 || got[2] != 9 {
			t.Errorf("emptyFinal %v: OUT values %v, want [7 8 9]", emptyFinal, got)
		}
		if want := map[bool]int{false: 0, true: 1}[emptyFinal]; finals != want {
			t.Errorf("emptyFinal %v: %d final responses, want %d", emptyFinal, finals, want)
		}
	}
}

// TestStreamDecoupledFailure: a decoupled request that fails is answered
// once, in band, by its error flagged final, even when the request asks
// for the empty final response.
func TestStreamDecoupledFailure(t *testing.T) {
	files := repo()
	files["repeat/config.pbtxt"] = `name: "repeat"` + testmodels.RepeatConfig
	files["repeat/1/model"] = ""
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("repeat", &testmodels.Repeat{})}})
	req := repeatRequest("bad", true, 1, 2)
	req.Inputs[1].Shape = []int64{1} // DELAY shorter than IN: the model's error
	req.RawInputContents[1] = req.RawInputContents[1][:4]
	stream, err := f.client.ModelStreamInfer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var msgs []*inferencepb.ModelStreamInferResponse
	for {
		m, err := stream.Recv()
		if err != nil {
			break
		}
		msgs = append(msgs, m)
	}
	if len(msgs) != 1 || msgs[0].GetErrorMessage() == "" || !msgs[0].GetInferResponse().GetParameters()["triton_final_response"].GetBoolParam() {
		t.Fatalf("answers %v; want one error flagged final", msgs)
	}
}
