package fil

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// fake is a Forest whose row i of outputs is a function of the row's sum
// s: a regressor gives s, a binary classifier sigmoid(s), a k-class one
// softmax over (s, 2s, ..., ks) scaled: it tells the backend's shaping
// apart from the model's arithmetic.
type fake struct{ features, outputs int }

func (f fake) Features() int { return f.features }
func (f fake) Outputs() int  { return f.outputs }
func (f fake) Predict(rows []float32, n int, out []float32) error {
	for i := range n {
		var s float64
		for _, x := range rows[i*f.features : (i+1)*f.features] {
			if x == x {
				s += float64(x)
			}
		}
		switch {
		case f.outputs == 1:
			out[i] = float32(s)
		default:
			var z float64
			for c := range f.outputs {
				z += math.Exp(s * float64(c+1))
			}
			for c := range f.outputs {
				out[i*f.outputs+c] = float32(math.Exp(s*float64(c+1)) / z)
			}
		}
	}
	return nil
}
func (f fake) SHAP(rows []float32, n int, out []float32) error {
	for i := range out {
		out[i] = float32(i)
	}
	return nil
}
func (fake) Close() error { return nil }

func withFake(t *testing.T, f fake) {
	old := openForest
	openForest = func(params, string, []byte) (Forest, error) { return f, nil }
	t.Cleanup(func() { openForest = old })
}

func spec(t *testing.T, cfgText string) *backend.ModelSpec {
	t.Helper()
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(cfgText), cfg); err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"1/xgboost.model": {Data: []byte("x")}, "1/model.txt": {Data: []byte("x")}, "1/xgboost.json": {Data: []byte("{}")}}
	return &backend.ModelSpec{Name: "m", Version: 1, Config: cfg, FS: fsys, Logger: zap.NewNop()}
}

func config(features int, outDims string, params ...string) string {
	var ps []string
	for i := 0; i+1 < len(params); i += 2 {
		ps = append(ps, fmt.Sprintf(`{ key: "%s" value: { string_value: "%s" } }`, params[i], params[i+1]))
	}
	return fmt.Sprintf(`name: "m" backend: "fil" max_batch_size: 8
input [ { name: "input__0" data_type: TYPE_FP32 dims: [ %d ] } ]
output [ { name: "output__0" data_type: TYPE_FP32 dims: [ %s ] } ]
parameters [ %s ]`, features, outDims, strings.Join(ps, ", "))
}

// TestParams: FIL's parameter rules and messages.
func TestParams(t *testing.T) {
	withFake(t, fake{features: 3, outputs: 1})
	for _, tt := range []struct {
		name   string
		params []string
		err    string
	}{
		{"no is_classifier", nil, "Required parameter is_classifier not found in config"},
		{"classifier without threshold", []string{"is_classifier", "true"}, "Required parameter threshold not found in config"},
		{"bad bool", []string{"is_classifier", "True"}, "Expected 'true' or 'false' for parameter 'is_classifier', got: 'True'"},
		{"bad threshold", []string{"is_classifier", "true", "threshold", "half"}, "Bad input for parameter threshold"},
		{"unknown type", []string{"model_type", "catboost", "is_classifier", "false"}, "catboost not recognized as a valid serialization format."},
		{"checkpoint", []string{"model_type", "treelite_checkpoint", "is_classifier", "false"}, "Treelite checkpoints are not supported"},
		{"bad layout", []string{"is_classifier", "false", "layout", "sideways"}, "Unknown nvForest layout name: sideways"},
		{"regressor", []string{"is_classifier", "false"}, ""},
		{"threshold with prefix", []string{"is_classifier", "true", "threshold", "0.3xyz"}, ""},
		{"output_class still honoured", []string{"output_class", "false"}, ""},
		{"gpu parameters accepted", []string{"is_classifier", "false", "layout", "layered", "chunk_size", "0", "transfer_threshold", "4", "use_experimental_optimizations", "true"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New().Load(context.Background(), spec(t, config(3, "1", tt.params...)))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				_ = m.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
	p, err := readParams(spec(t, config(3, "1", "is_classifier", "true", "threshold", "0.3xyz")).Config, zap.NewNop())
	if err != nil || p.threshold != 0.3 {
		t.Errorf("threshold read as istream >> would: %v %v", p.threshold, err)
	}
	_, err = New().Load(context.Background(), spec(t, config(3, "1", "model_type", "treelite_checkpoint", "is_classifier", "false")))
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("a checkpoint is Unsupported: %v", err)
	}
}

// TestShapes: the config's dims are held to the model.
func TestShapes(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    fake
		cfg  string
		err  string
	}{
		{"features", fake{4, 1}, config(3, "1", "is_classifier", "false"), "input input__0 has dims [ 3 ] but the model takes 4 features"},
		{"multi-class regressor", fake{3, 3}, config(3, "1", "is_classifier", "false"), "the model has 3 classes but is_classifier is false"},
		{"proba of 3 classes", fake{3, 3}, config(3, "1", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true"), "gives [[3]]"},
		{"binary proba of 2", fake{3, 1}, config(3, "2", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true"), ""},
		{"binary proba of 3", fake{3, 1}, config(3, "3", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true"), "gives [[1] [2]]"},
		{"shap dims", fake{3, 1}, config(3, "1", "is_classifier", "false") + `
output [ { name: "treeshap_output" data_type: TYPE_FP32 dims: [ 3 ] } ]`, "output treeshap_output must be TYPE_FP32 with dims [4]"},
		{"unbatched", fake{3, 1}, strings.Replace(config(3, "1", "is_classifier", "false"), "max_batch_size: 8", "max_batch_size: 0", 1), "max_batch_size must be set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withFake(t, tt.f)
			m, err := New().Load(context.Background(), spec(t, tt.cfg))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				_ = m.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}

// run executes one batch of requests (each a set of rows) on a model.
func run(t *testing.T, cfg string, f fake, rows ...[]float32) []*backend.Request {
	t.Helper()
	withFake(t, f)
	m, err := New().Load(context.Background(), spec(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*backend.Request
	for _, r := range rows {
		in, err := tensor.From(InputName, tensor.Shape{int64(len(r) / f.features), int64(f.features)}, r)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, &backend.Request{Inputs: []tensor.Tensor{in}, BatchSize: int64(len(r) / f.features)})
	}
	b := &backend.Batch{}
	b.Reset(true, reqs)
	if err := inst.Execute(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return reqs
}

func output(t *testing.T, r *backend.Request, name string) ([]float32, tensor.Shape) {
	t.Helper()
	if r.Err() != nil {
		t.Fatalf("request failed: %v", r.Err())
	}
	for _, o := range r.Outputs() {
		if o.Name == name {
			v, err := tensor.View[float32](o)
			if err != nil {
				t.Fatal(err)
			}
			return v, o.Shape
		}
	}
	t.Fatalf("no output %s", name)
	return nil, nil
}

// TestOutputs: output__0 as FIL shapes it, per kind of model.
func TestOutputs(t *testing.T) {
	rows := []float32{0.1, 0.2, 0.3, -1, -1, -1, float32(math.NaN()), 2, 0}
	reg := run(t, config(3, "1", "is_classifier", "false"), fake{3, 1}, rows)
	if v, s := output(t, reg[0], OutputName); fmt.Sprint(s) != "[3,1]" || math.Abs(float64(v[0])-0.6) > 1e-6 || v[1] != -3 || v[2] != 2 {
		t.Errorf("regressor %v %v", v, s)
	}
	// Binary: the fake's "probability" is the sum: 0.6, -3, 2.
	cls := run(t, config(3, "1", "is_classifier", "true", "threshold", "0.6"), fake{3, 1}, rows)
	if v, _ := output(t, cls[0], OutputName); fmt.Sprint(v) != "[0 0 1]" { // 0.6 > 0.6 is false: strictly greater
		t.Errorf("binary classes %v", v)
	}
	two := run(t, config(3, "2", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true"), fake{3, 1}, []float32{0.1, 0.1, 0.05})
	if v, s := output(t, two[0], OutputName); fmt.Sprint(s) != "[1,2]" || math.Abs(float64(v[0])-0.75) > 1e-6 || math.Abs(float64(v[1])-0.25) > 1e-6 {
		t.Errorf("binary [1-p, p] %v %v", v, s)
	}
	multi := run(t, config(3, "1", "is_classifier", "true", "threshold", "0.5"), fake{3, 3}, rows)
	if v, _ := output(t, multi[0], OutputName); fmt.Sprint(v) != "[2 0 2]" {
		t.Errorf("multi-class argmax %v", v)
	}
	proba := run(t, config(3, "3", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true"), fake{3, 3}, rows)
	if v, s := output(t, proba[0], OutputName); fmt.Sprint(s) != "[3,3]" || math.Abs(float64(v[0]+v[1]+v[2])-1) > 1e-6 {
		t.Errorf("multi-class probabilities %v %v", v, s)
	}
}

// TestInfinity: a request with an infinity fails alone, naming the row
// and feature; the others in its batch are answered.
func TestInfinity(t *testing.T) {
	reqs := run(t, config(3, "1", "is_classifier", "false"), fake{3, 1},
		[]float32{1, 2, 3}, []float32{1, 1, 1, 0, float32(math.Inf(-1)), 0}, []float32{float32(math.NaN()), 5, 5})
	if err := reqs[1].Err(); err == nil || !errors.Is(err, backend.ErrInvalidInput) || !strings.Contains(err.Error(), "row 1 feature 1 is -Inf") {
		t.Errorf("the infinite request: %v", err)
	}
	if v, _ := output(t, reqs[0], OutputName); v[0] != 6 {
		t.Errorf("first request %v", v)
	}
	if v, _ := output(t, reqs[2], OutputName); v[0] != 10 {
		t.Errorf("third request (NaN missing) %v", v)
	}
}

// TestSHAP: treeshap_output, when declared and asked for.
func TestSHAP(t *testing.T) {
	cfg := config(3, "3", "is_classifier", "true", "threshold", "0.5", "predict_proba", "true") + `
output [ { name: "treeshap_output" data_type: TYPE_FP32 dims: [ 3, 4 ] } ]`
	reqs := run(t, cfg, fake{3, 3}, []float32{1, 2, 3, 4, 5, 6})
	v, s := output(t, reqs[0], SHAPName)
	if fmt.Sprint(s) != "[2,3,4]" || len(v) != 24 || v[23] != 23 {
		t.Errorf("shap %v %v", s, v)
	}
}
