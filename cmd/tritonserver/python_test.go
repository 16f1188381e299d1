package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testenv"
)

// TestPythonModels reaches the example repository's Python models in the
// binary as Triton's clients do: KServe v2 JSON over HTTP (the tokenizer,
// the BLS model, the ensemble mixing Python and ONNX) and gRPC (ModelInfer
// on the ensemble, a ModelStreamInfer stream on the decoupled repeat_py).
func TestPythonModels(t *testing.T) {
	testenv.NeedLibrary(t)
	testenv.Need(t, python.DefaultInterpreter, "run make deps (scripts/deps.sh installs python3-numpy)")
	s := startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit",
		"--load-model=preprocess", "--load-model=text_classify", "--load-model=detector", "--load-model=classifier",
		"--load-model=detect_classify", "--load-model=repeat_py")

	// infer posts a JSON request and returns its outputs by name.
	type output struct {
		Datatype string            `json:"datatype"`
		Shape    []int64           `json:"shape"`
		Data     []json.RawMessage `json:"data"`
	}
	infer := func(model, body string) map[string]output {
		t.Helper()
		code, _, resp := s.do("POST", "/v2/models/"+model+"/infer", "application/json", []byte(body), nil)
		if code != 200 {
			t.Fatalf("%s: %d %s", model, code, resp)
		}
		var r struct {
			ModelName string `json:"model_name"`
			Outputs   []struct {
				Name string `json:"name"`
				output
			} `json:"outputs"`
		}
		if err := json.Unmarshal(resp, &r); err != nil || r.ModelName != model {
			t.Fatalf("%s: %v: %s", model, err, resp)
		}
		out := map[string]output{}
		for _, o := range r.Outputs {
			out[o.Name] = o.output
		}
		return out
	}
	data := func(o output) string {
		var parts []string
		for _, d := range o.Data {
			parts = append(parts, string(d))
		}
		return o.Datatype + fmt.Sprint(o.Shape) + " " + strings.Join(parts, ",")
	}

	// The tokenizer: ids of the vocabulary file's lines, padded with [PAD].
	vocab, err := os.ReadFile("../../examples/model_repository/preprocess/vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(vocab), "\n")
	var ids []string
	for _, tok := range []string{"[CLS]", "good", "movie", "!", "[SEP]"} {
		ids = append(ids, fmt.Sprint(slices.Index(lines, tok)))
	}
	mask := slices.Repeat([]string{"1"}, len(ids))
	for len(ids) < 16 {
		ids, mask = append(ids, "0"), append(mask, "0")
	}
	out := infer("preprocess", `{"inputs":[{"name":"TEXT","datatype":"BYTES","shape":[1,1],"data":["Good movie!"]}]}`)
	if got, want := data(out["INPUT_IDS"]), "INT64[1 16] "+strings.Join(ids, ","); got != want {
		t.Errorf("INPUT_IDS %s, want %s", got, want)
	}
	if got, want := data(out["ATTENTION_MASK"]), "INT64[1 16] "+strings.Join(mask, ","); got != want {
		t.Errorf("ATTENTION_MASK %s, want %s", got, want)
	}

	// The BLS model: a 4x4 image bright in column 2 (mean 1) scores
	// sigmoid(1), above the threshold 0.6: the classifier names its column.
	img := make([]string, 16)
	for i := range img {
		img[i] = map[bool]string{true: "4", false: "0"}[i%4 == 2]
	}
	out = infer("detect_classify", `{"inputs":[{"name":"INPUT","datatype":"FP32","shape":[2,16],"data":[`+
		strings.Join(img, ",")+","+strings.Repeat("0,", 15)+`0]}]}`)
	if got := data(out["CLASS"]); got != `BYTES[2 1] "middle_right","none"` {
		t.Errorf("CLASS %s", got)
	}
	var scores []float64
	for _, d := range out["SCORE"].Data {
		var f float64
		_ = json.Unmarshal(d, &f)
		scores = append(scores, f)
	}
	if len(scores) != 2 || math.Abs(scores[0]-1/(1+math.Exp(-1))) > 1e-6 || math.Abs(scores[1]-0.5) > 1e-6 {
		t.Errorf("SCORE %v, want [sigmoid(1) 0.5]", scores)
	}

	// The ensemble: one positive word gives logits [0, 0.5, 1].
	positive := math.Exp(1) / (1 + math.Exp(0.5) + math.Exp(1))
	out = infer("text_classify", `{"inputs":[{"name":"TEXT","datatype":"BYTES","shape":[1,1],"data":["What a great movie"]}]}`)
	var score float64
	if len(out["SCORE"].Data) == 1 {
		_ = json.Unmarshal(out["SCORE"].Data[0], &score)
	}
	if got := data(out["LABEL"]); got != `BYTES[1 1] "positive"` || math.Abs(score-positive) > 1e-6 {
		t.Errorf("LABEL %s SCORE %v, want positive %v", got, score, positive)
	}

	// gRPC ModelInfer on the ensemble, raw contents both ways.
	text := "terrible service"
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := inferencepb.NewGRPCInferenceServiceClient(conn)
	resp, err := client.ModelInfer(t.Context(), &inferencepb.ModelInferRequest{
		ModelName: "text_classify", Id: "g1",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "TEXT", Datatype: "BYTES", Shape: []int64{1, 1}}},
		RawInputContents: [][]byte{append(binary.LittleEndian.AppendUint32(nil, uint32(len(text))), text...)},
		Outputs:          []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "LABEL"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if raw := resp.GetRawOutputContents(); resp.GetId() != "g1" || len(raw) != 1 || string(raw[0]) != "\x08\x00\x00\x00negative" {
		t.Errorf("ModelInfer text_classify: %v", resp)
	}

	// gRPC streaming on the decoupled Python model: a response per element
	// of IN, then the empty final response the request asks for.
	stream := s.streamClient()
	u32 := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	in := []uint32{7, 0xfffffffd, 42} // int32 7, -3, 42
	if err := stream.Send(&inferencepb.ModelInferRequest{ModelName: "repeat_py", Id: "r1",
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "IN", Datatype: "INT32", Shape: []int64{3}},
			{Name: "DELAY", Datatype: "UINT32", Shape: []int64{3}},
			{Name: "WAIT", Datatype: "UINT32", Shape: []int64{1}},
		},
		RawInputContents: [][]byte{u32(in...), u32(0, 5, 0), u32(0)},
		Parameters: map[string]*inferencepb.InferParameter{
			"triton_enable_empty_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	for i, want := range in {
		sr, err := stream.Recv()
		if err != nil || sr.GetErrorMessage() != "" {
			t.Fatalf("response %d: %v, %v", i, sr, err)
		}
		r := sr.GetInferResponse()
		got := map[string]uint32{}
		for j, o := range r.GetOutputs() {
			if raw := r.GetRawOutputContents(); j < len(raw) && len(raw[j]) == 4 {
				got[o.GetName()+"/"+o.GetDatatype()] = binary.LittleEndian.Uint32(raw[j])
			}
		}
		if r.GetId() != "r1" || r.GetParameters()["triton_final_response"].GetBoolParam() ||
			len(got) != 2 || got["OUT/INT32"] != want || got["IDX/UINT32"] != uint32(i) {
			t.Fatalf("response %d: %v, want OUT %d IDX %d", i, r, int32(want), i)
		}
	}
	sr, err := stream.Recv()
	if r := sr.GetInferResponse(); err != nil || r.GetId() != "r1" || len(r.GetOutputs()) != 0 || !r.GetParameters()["triton_final_response"].GetBoolParam() {
		t.Fatalf("final response: %v, %v", sr, err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
}

// TestPythonCustomMetrics: the counters, gauges and histograms a Python
// model makes with pb_utils.MetricFamily are on the binary's metrics
// endpoint, beside the server's nv_* families.
func TestPythonCustomMetrics(t *testing.T) {
	testenv.NeedLibrary(t)
	testenv.Need(t, python.DefaultInterpreter, "run make deps (scripts/deps.sh installs python3-numpy)")
	s := startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit", "--load-model=counted")
	for _, body := range []string{
		`{"inputs":[{"name":"INPUT","datatype":"FP32","shape":[3],"data":[1,2,3]}]}`,
		`{"inputs":[{"name":"INPUT","datatype":"FP32","shape":[10],"data":[0,0,0,0,0,0,0,0,0,1]}]}`,
	} {
		if code, _, resp := s.do("POST", "/v2/models/counted/infer", "application/json", []byte(body), nil); code != 200 {
			t.Fatalf("infer: %d %s", code, resp)
		}
	}
	resp, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Two requests of 3 and 10 elements; buckets 1, 4, 16, 64, 256.
	for _, want := range []string{
		"# TYPE counted_requests_total counter\n",
		`counted_requests_total{model="counted",version="1"} 2` + "\n",
		"# TYPE counted_last_size gauge\n",
		`counted_last_size{model="counted",version="1"} 10` + "\n",
		"# TYPE counted_input_size histogram\n",
		`counted_input_size_bucket{model="counted",version="1",le="1"} 0` + "\n",
		`counted_input_size_bucket{model="counted",version="1",le="4"} 1` + "\n",
		`counted_input_size_bucket{model="counted",version="1",le="16"} 2` + "\n",
		`counted_input_size_sum{model="counted",version="1"} 13` + "\n",
		`counted_input_size_count{model="counted",version="1"} 2` + "\n",
		`nv_inference_count{model="counted",version="1"} 2` + "\n",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestPythonBasedBackendFlag: --backend-directory gives the binary Triton's
// Python-based backends, the example repository's unit converters among
// them, reached over HTTP; without the flag, tritonserver's default
// directory is searched, and the load error names the file it looked for.
func TestPythonBasedBackendFlag(t *testing.T) {
	testenv.Need(t, python.DefaultInterpreter, "run make deps (scripts/deps.sh installs python3-numpy)")
	s := startBinary(t, "--model-repository=../../examples/model_repository", exampleBackends, "--model-control-mode=explicit",
		"--load-model=celsius_to_fahrenheit")
	code, _, body := s.do("POST", "/v2/models/celsius_to_fahrenheit/infer", "application/json",
		[]byte(`{"inputs":[{"name":"IN","datatype":"FP64","shape":[1,2],"data":[100,-40]}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"data":[212.0,-40.0]`) {
		t.Errorf("infer: %d %s", code, body)
	}
	if code, _, body := s.do("GET", "/v2/models/celsius_to_fahrenheit/config", "", nil, nil); code != 200 || !strings.Contains(string(body), `"runtime":"model.py"`) {
		t.Errorf("config: %d %s", code, body)
	}
	s.terminate(60 * time.Second)

	s = startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit")
	code, _, body = s.do("POST", "/v2/repository/models/miles_to_km/load", "application/json", []byte(`{}`), nil)
	if want := "searched: '/opt/tritonserver/backends/units/model.py'"; code != 400 || !strings.Contains(string(body), want) {
		t.Errorf("load without --backend-directory: %d %s; want 400 and %q", code, body, want)
	}
}
