package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/triton-go/triton/internal/testenv"
)

// fraudReference computes, with Debian's python3-xgboost and the
// generator's own functions, P(fraud) of each row of raw features: the
// embedding in numpy, the trees of the committed xgboost.json.
const fraudReference = `
import importlib.util, json, sys
import numpy as np, xgboost as xgb
spec = importlib.util.spec_from_file_location("gen", "../../scripts/gen-fraud-example.py")
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
raw = np.array(json.load(sys.stdin), dtype=np.float32)
w, b = gen.embedding_weights()
booster = xgb.Booster(model_file="../../examples/model_repository/fraud_trees/1/xgboost.json")
print(json.dumps([float(p) for p in booster.predict(xgb.DMatrix(gen.features(raw, w, b)))]))
`

// TestFraudExample: the example repository's mixed ensemble over HTTP
// (ONNX features and embedding, then XGBoost trees through the FIL
// backend) answers what python3-xgboost answers for the same rows.
func TestFraudExample(t *testing.T) {
	testenv.NeedLibrary(t)
	raw := [][]float32{
		{0.5, -1, 2, 0.1, 0, 1.5, -0.3, 0.8},
		{2, 0.2, -0.5, -1.5, 1, 0, 0.4, -2},
		{-0.7, 0.9, 0.3, 2.2, -1.1, 0.6, 1.2, 0},
	}
	in, _ := json.Marshal(raw)
	cmd := exec.Command("/usr/bin/python3", "-c", fraudReference)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3-xgboost reference: %v (%s)", err, out)
	}
	var want []float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	s := startBinary(t, "--model-repository=../../examples/model_repository", "--model-control-mode=explicit", "--load-model=fraud")
	var data []string
	for _, r := range raw {
		for _, x := range r {
			data = append(data, fmt.Sprint(x))
		}
	}
	body := fmt.Sprintf(`{"inputs":[{"name":"RAW","datatype":"FP32","shape":[3,8],"data":[%s]}]}`, strings.Join(data, ","))
	code, _, resp := s.do(http.MethodPost, "/v2/models/fraud/infer", "application/json", []byte(body), nil)
	if code != http.StatusOK {
		t.Fatalf("infer: %d %s", code, resp)
	}
	var got struct {
		Outputs []struct {
			Name  string
			Shape []int
			Data  []float64
		}
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Outputs) != 1 || got.Outputs[0].Name != "P_FRAUD" || len(got.Outputs[0].Data) != len(want) {
		t.Fatalf("response %s", resp)
	}
	for i, p := range got.Outputs[0].Data {
		// The embedding's tanh in ONNX Runtime and in numpy may differ in
		// the last bit of a float32; the trees' answer moves by as little.
		if math.Abs(p-want[i]) > 1e-5 {
			t.Errorf("row %d: P_FRAUD %v, python3-xgboost %v", i, p, want[i])
		}
	}
}
