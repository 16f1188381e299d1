package fil_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/backend/fil"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

// fixture is a data set of the tree libraries' own predictions: the
// held-out rows (features only) and, per model, its predictions.
type fixture struct {
	rows     [][]float32
	features int
}

// readTSV reads a file of tab-separated numbers ("nan" included), a row
// a line.
func readTSV(t *testing.T, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row []float64
		for _, s := range strings.Split(strings.TrimRight(sc.Text(), "\t\r"), "\t") {
			if s == "" {
				row = append(row, math.NaN()) // LightGBM's TSV leaves a missing value empty
				continue
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			row = append(row, x)
		}
		out = append(out, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// lightgbmFixture reads testdata of package lightgbm: set/input.tsv (the
// label first) of features features.
func lightgbmFixture(t *testing.T, set string, features int) fixture {
	t.Helper()
	var fx fixture
	fx.features = features
	for _, r := range readTSV(t, filepath.Join("lightgbm", "testdata", set, "input.tsv")) {
		row := make([]float32, features)
		for j := range row {
			row[j] = float32(math.NaN())
			if j+1 < len(r) {
				row[j] = float32(r[j+1])
			}
		}
		fx.rows = append(fx.rows, row)
	}
	return fx
}

// filModel is a backendtest model of the FIL backend over one model file,
// its config made of the given parameters and output dims.
func filModel(t *testing.T, name, file, target string, features int, outDims string, params map[string]string, reqs ...backendtest.Request) backendtest.Model {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ps []string
	for k, v := range params {
		ps = append(ps, fmt.Sprintf(`{ key: %q value: { string_value: %q } }`, k, v))
	}
	text := fmt.Sprintf(`name: %q
backend: "fil"
max_batch_size: 16
input [ { name: "input__0" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "output__0" data_type: TYPE_FP32 dims: [ %s ] } ]
parameters [ %s ]`, name, features, outDims, strings.Join(ps, ", "))
	cfg, err := repository.ParseConfig(name+"/config.pbtxt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(name+"/config.pbtxt", cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		t.Fatal(err)
	}
	return backendtest.Model{Config: cfg, FS: fstest.MapFS{"1/" + target: {Data: data}}, Requests: reqs}
}

// rowsRequest sends rows [from, to) of fx and checks output__0 against
// want(i) for each row i, within tol.
func rowsRequest(t *testing.T, fx fixture, from, to int, want func(i int) []float32, tol float64) backendtest.Request {
	t.Helper()
	var xs []float32
	for _, r := range fx.rows[from:to] {
		xs = append(xs, r...)
	}
	in, err := tensor.From(fil.InputName, tensor.Shape{int64(to - from), int64(fx.features)}, xs)
	if err != nil {
		t.Fatal(err)
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{in},
		Check: func(outs []tensor.Tensor) error {
			v, err := tensor.View[float32](outs[0])
			if err != nil {
				return err
			}
			per := len(v) / (to - from)
			for i := from; i < to; i++ {
				w := want(i)
				for c := range per {
					got := v[(i-from)*per+c]
					if math.Abs(float64(got)-float64(w[c])) > tol*max(1, math.Abs(float64(w[c]))) {
						return fmt.Errorf("row %d value %d: %v, want %v", i, c, got, w[c])
					}
				}
			}
			return nil
		},
	}
}

// column reads a predictions file into per-row values.
func column(t *testing.T, path string) [][]float32 {
	var out [][]float32
	for _, r := range readTSV(t, path) {
		row := make([]float32, len(r))
		for j, x := range r {
			row[j] = float32(x)
		}
		out = append(out, row)
	}
	return out
}

// TestConformanceLightGBM runs the conformance kit on LightGBM models of
// package lightgbm's fixtures: a regressor, a binary classifier (class by
// threshold, and P(class 1) as [1-p, p]), and a 5-class classifier (class,
// and probabilities), every answer checked against LightGBM's own, with
// NaN rows, and a request with an infinity that fails alone.
func TestConformanceLightGBM(t *testing.T) {
	lgb := func(set, model string) string { return filepath.Join("lightgbm", "testdata", set, model, "model.txt") }
	pred := func(set, model string) [][]float32 {
		return column(t, filepath.Join("lightgbm", "testdata", set, model, "predict.tsv"))
	}
	reg, bin, multi := lightgbmFixture(t, "regression", 28), lightgbmFixture(t, "binary", 28), lightgbmFixture(t, "multiclass", 28)
	regP, binP, multiP := pred("regression", "l2"), pred("binary", "binary"), pred("multiclass", "softmax")
	infinite := func(fx fixture) backendtest.Request {
		row := append([]float32(nil), fx.rows[0]...)
		row[1] = float32(math.Inf(1))
		in, _ := tensor.From(fil.InputName, tensor.Shape{1, int64(fx.features)}, row)
		return backendtest.Request{Inputs: []tensor.Tensor{in}}
	}
	const tol = 1e-6
	regModel := filModel(t, "regression", lgb("regression", "l2"), "model.txt", reg.features, "1",
		map[string]string{"model_type": "lightgbm", "is_classifier": "false"},
		rowsRequest(t, reg, 0, 16, func(i int) []float32 { return regP[i] }, tol),
		rowsRequest(t, reg, 16, 19, func(i int) []float32 { return regP[i] }, tol))
	regModel.Failing = []backendtest.Request{infinite(reg)}
	backendtest.Run(t, fil.New(),
		regModel,
		filModel(t, "binary_class", lgb("binary", "binary"), "model.txt", bin.features, "1",
			map[string]string{"model_type": "lightgbm", "is_classifier": "true", "threshold": "0.5"},
			rowsRequest(t, bin, 0, 10, func(i int) []float32 {
				if binP[i][0] > 0.5 {
					return []float32{1}
				}
				return []float32{0}
			}, 0)),
		filModel(t, "binary_proba", lgb("binary", "binary"), "model.txt", bin.features, "2",
			map[string]string{"model_type": "lightgbm", "is_classifier": "true", "threshold": "0.5", "predict_proba": "true"},
			rowsRequest(t, bin, 3, 12, func(i int) []float32 { return []float32{1 - binP[i][0], binP[i][0]} }, tol)),
		filModel(t, "multi_class", lgb("multiclass", "softmax"), "model.txt", multi.features, "1",
			map[string]string{"model_type": "lightgbm", "is_classifier": "true", "threshold": "0.5"},
			rowsRequest(t, multi, 0, 8, func(i int) []float32 {
				best := 0
				for c, p := range multiP[i] {
					if p > multiP[i][best] {
						best = c
					}
				}
				return []float32{float32(best)}
			}, 0)),
		filModel(t, "multi_proba", lgb("multiclass", "softmax"), "model.txt", multi.features, "5",
			map[string]string{"model_type": "lightgbm", "is_classifier": "true", "threshold": "0.5", "predict_proba": "true"},
			rowsRequest(t, multi, 0, 16, func(i int) []float32 { return multiP[i] }, tol)),
	)
}

// xgbExpect is an expect.json of package xgboost's fixtures: held-out
// rows (null for a missing value) and XGBoost's own predict and
// pred_contribs.
type xgbExpect struct {
	Features, Outputs, Rows int
	Input                   []*float64
	Predict, Contribs       []float64
}

func readExpect(t *testing.T, name string) (fixture, xgbExpect) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("xgboost", "testdata", name+".expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e xgbExpect
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	fx := fixture{features: e.Features}
	for i := range e.Rows {
		row := make([]float32, e.Features)
		for j := range row {
			row[j] = float32(math.NaN())
			if v := e.Input[i*e.Features+j]; v != nil {
				row[j] = float32(*v)
			}
		}
		fx.rows = append(fx.rows, row)
	}
	return fx, e
}

// TestConformanceXGBoost runs the kit on XGBoost models in the three
// formats (a regressor, a binary and a 3-class classifier with
// treeshap_output), each answer checked against XGBoost's own predict and
// pred_contribs, NaN rows included.
func TestConformanceXGBoost(t *testing.T) {
	file := func(name, ext string) string { return filepath.Join("xgboost", "testdata", name+"."+ext) }
	reg, regE := readExpect(t, "regression")
	bin, binE := readExpect(t, "binary")
	multi, multiE := readExpect(t, "softprob")
	per := func(e xgbExpect) func(i int) []float32 {
		return func(i int) []float32 {
			out := make([]float32, e.Outputs)
			for c := range out {
				out[c] = float32(e.Predict[i*e.Outputs+c])
			}
			return out
		}
	}
	const tol = 1e-6
	withSHAP := filModel(t, "softprob_ubj", file("softprob", "ubj"), "xgboost.ubj", multi.features, "3",
		map[string]string{"model_type": "xgboost_ubj", "is_classifier": "true", "threshold": "0.5", "predict_proba": "true"})
	withSHAP.Config.Output = append(withSHAP.Config.Output, &modelconfig.ModelOutput{Name: fil.SHAPName, DataType: modelconfig.DataType_TYPE_FP32,
		Dims: []int64{int64(multiE.Outputs), int64(multi.features + 1)}})
	shapReq := rowsRequest(t, multi, 0, 8, per(multiE), tol)
	check := shapReq.Check
	shapReq.Check = func(outs []tensor.Tensor) error {
		for _, o := range outs {
			v, err := tensor.View[float32](o)
			if err != nil {
				return err
			}
			switch o.Name {
			case fil.OutputName:
				if err := check([]tensor.Tensor{o}); err != nil {
					return err
				}
			case fil.SHAPName:
				for i, got := range v {
					if want := multiE.Contribs[i]; math.Abs(float64(got)-want) > 1e-5*max(1, math.Abs(want)) {
						return fmt.Errorf("%s value %d: %v, want %v", fil.SHAPName, i, got, want)
					}
				}
			}
		}
		return nil
	}
	withSHAP.Requests = []backendtest.Request{shapReq}
	backendtest.Run(t, fil.New(),
		filModel(t, "regression_legacy", file("regression", "model"), "xgboost.model", reg.features, "1",
			map[string]string{"is_classifier": "false"},
			rowsRequest(t, reg, 0, 16, per(regE), tol), rowsRequest(t, reg, 16, regE.Rows, per(regE), tol)),
		filModel(t, "binary_json", file("binary", "json"), "xgboost.json", bin.features, "1",
			map[string]string{"model_type": "xgboost_json", "is_classifier": "true", "threshold": "0.5", "predict_proba": "true"},
			rowsRequest(t, bin, 0, 16, per(binE), tol)),
		withSHAP,
	)
}
