package perf

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

// dataModel is a batching model with a fixed FP32 input, a variable INT32
// input, an optional BYTES input and one output.
func dataModel() *modelInfo {
	return &modelInfo{
		name:     "m",
		maxBatch: 8,
		inputs: []tensorInfo{
			{name: "A", dtype: tensor.FP32, shape: []int64{2}},
			{name: "B", dtype: tensor.Int32, shape: []int64{-1}},
			{name: "S", dtype: tensor.Bytes, shape: []int64{1}, optional: true},
		},
		outputs: []tensorInfo{{name: "OUT", dtype: tensor.FP32, shape: []int64{2}}},
	}
}

func writeJSON(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadJSON(t *testing.T, m *modelInfo, bodies ...string) (*dataSet, error) {
	t.Helper()
	cfg := defaultConfig()
	for _, b := range bodies {
		cfg.UserData = append(cfg.UserData, writeJSON(t, b))
	}
	shapes, err := defaultShapes(&cfg, m)
	if err != nil {
		return nil, err
	}
	return loadData(&cfg, m, shapes)
}

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"data": [`, "failed to parse the specified json file for reading provided data"},
		{"no data field", `{"dat": []}`, "The json file doesn't contain data field"},
		{"not an object", `[1]`, "The json file doesn't contain data field"},
		{"mixed streams", `{"data": [[{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}}], {"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}}]}`, "Inconsistency in input-data provided. Can not have a combination of objects and arrays inside of the Data array"},
		{"missing tensor", `{"data": [{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}}, {"A": [1.0, 2.0]}]}`, "missing tensor B ( Location stream id: 0, step id: 1)"},
		{"missing content", `{"data": [{"A": {"shape": [2]}, "B": {"content": [1], "shape": [1]}}]}`, "missing content field. ( Location stream id: 0, step id: 0)"},
		{"size mismatch", `{"data": [{"A": [1.0], "B": {"content": [1], "shape": [1]}}]}`, "mismatch in the data provided for A. Expected: 8 bytes, Got: 4 bytes"},
		{"unknown input", `{"data": [{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}, "parallel": [1]}]}`, "The input or output 'parallel' is not found in the model configuration"},
		{"shape not integers", `{"data": [{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1.5]}}]}`, "shape values must be integers."},
		{"validation misaligned", `{"data": [{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}}], "validation_data": []}`, "The 'validation_data' field doesn't align with 'data' field in the json file"},
		{"tensor not array or object", `{"data": [{"A": 3, "B": {"content": [1], "shape": [1]}}]}`, "Input data file is malformed."},
		{"b64 not a string", `{"data": [{"A": {"content": {"b64": 3}}, "B": {"content": [1], "shape": [1]}}]}`, "the value of b64 field should be of type string ( Location stream id: 0, step id: 0)"},
		{"wrong element type", `{"data": [{"A": ["x", "y"], "B": {"content": [1], "shape": [1]}}]}`, "unable to find float data in json"},
		{"int out of range", `{"data": [{"A": [1.0, 2.0], "B": {"content": [3000000000], "shape": [1]}}]}`, "unable to find int32_t data in json"},
		{"shape against the model", `{"data": [{"A": {"content": [1.0, 2.0, 3.0], "shape": [3]}, "B": {"content": [1], "shape": [1]}}]}`, "The supplied shape of [3] for input \"A\" is incompatible with the model's input shape of [2]"},
		{"variable shape unknown", `{"data": [{"A": [1.0, 2.0], "B": {"content": [1, 2]}}]}`, "The variable-sized tensor \"B\" with model shape [-1] needs to have its shape fully defined. See the --shape option."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadJSON(t, dataModel(), tt.body)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n got %q\nwant %q", err, tt.want)
			}
		})
	}
}

func TestJSONData(t *testing.T) {
	m := dataModel()
	b64 := base64.StdEncoding.EncodeToString(le32(7, 8, 9))
	str := base64.StdEncoding.EncodeToString(tensor.AppendElement(nil, []byte("hi")))
	ds, err := loadJSON(t, m, `{"data": [
		{"A": [1.5, 2], "B": {"content": [4, 5], "shape": [2]}, "S": ["hello"], "model": "ignored"},
		{"A": {"b64": "`+base64.StdEncoding.EncodeToString(f32(3, 4))+`"}, "B": {"content": {"b64": "`+b64+`"}, "shape": [3]}, "S": {"b64": "`+str+`"}}
	], "validation_data": [{"OUT": [1.5, 2.0]}, {"OUT": [3.0, 4.0]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.streams) != 1 || len(ds.streams[0]) != 2 || !ds.fromFile {
		t.Fatalf("streams %+v", ds.streams)
	}
	s0, s1 := ds.streams[0][0], ds.streams[0][1]
	if got := s0.inputs["A"].data; string(got) != string(f32(1.5, 2)) {
		t.Errorf("A step 0 = %v", got)
	}
	if got := s0.inputs["B"]; string(got.data) != string(le32(4, 5)) || !equalShape(got.shape, []int64{2}) {
		t.Errorf("B step 0 = %+v", got)
	}
	if got := s1.inputs["B"]; string(got.data) != string(le32(7, 8, 9)) || !equalShape(got.shape, []int64{3}) {
		t.Errorf("B step 1 (b64, shape override) = %+v", got)
	}
	if got, _ := tensor.Strings(tensor.Tensor{Name: "S", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: s0.inputs["S"].data}); len(got) != 1 || got[0] != "hello" {
		t.Errorf("S step 0 = %q", got)
	}
	if got := s1.inputs["S"].data; string(got) != string(tensor.AppendElement(nil, []byte("hi"))) {
		t.Errorf("S step 1 (b64 BYTES) = %q", got)
	}
	if got := s1.outputs["OUT"].data; string(got) != string(f32(3, 4)) {
		t.Errorf("validation data = %v", got)
	}
	// Step 1's B has another shape than step 0's: they cannot share a batch.
	shapes, _ := defaultShapes(&Config{}, m)
	if _, err := prepareRequests(ds, m, shapes, 2); err == nil || !strings.HasPrefix(err.Error(), "can not batch tensors with different shapes together (input 'B' expected shape [2] and received [3]") {
		t.Errorf("batching different shapes: %v", err)
	}
	rs, err := prepareRequests(ds, m, shapes, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.cycle) != 2 || !equalShape(rs.cycle[1].inputs[1].Shape, []int64{1, 3}) || len(rs.cycle[0].expected) != 1 {
		t.Errorf("requests %+v", rs.cycle)
	}
}

func TestJSONStreamsAndFiles(t *testing.T) {
	m := dataModel()
	step := `{"A": [1.0, 2.0], "B": {"content": [1], "shape": [1]}}`
	ds, err := loadJSON(t, m, `{"data": [[`+step+`, `+step+`], [`+step+`]]}`, `{"data": [[`+step+`]]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.streams) != 3 || len(ds.streams[0]) != 2 || len(ds.streams[2]) != 1 {
		t.Errorf("streams: %d", len(ds.streams))
	}
	ds, err = loadJSON(t, m, `{"data": [`+step+`]}`, `{"data": [`+step+`, `+step+`]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.streams) != 1 || len(ds.streams[0]) != 3 {
		t.Errorf("flat files should append steps to stream 0: %d streams", len(ds.streams))
	}
	_, err = loadJSON(t, m, `{"data": [`+step+`]}`, `{"data": [{"A": [1.0, 2.0]}]}`)
	if err == nil || err.Error() != "missing tensor B ( Location stream id: 0, step id: 1)" {
		t.Errorf("second file's step numbered after the first's: %v", err)
	}
}

func TestShapes(t *testing.T) {
	m := dataModel()
	cfg := defaultConfig()
	cfg.Shapes["B"] = []int64{3}
	shapes, err := defaultShapes(&cfg, m)
	if err != nil || !equalShape(shapes["B"], []int64{3}) {
		t.Fatalf("--shape B:3: %v %v", shapes, err)
	}
	cfg.Shapes["A"] = []int64{5}
	if _, err := defaultShapes(&cfg, m); err == nil || err.Error() != `The supplied shape of [5] for input "A" is incompatible with the model's input shape of [2]` {
		t.Errorf("fixed dimension contradicted: %v", err)
	}
	delete(cfg.Shapes, "A")
	cfg.Shapes["C"] = []int64{1}
	if _, err := defaultShapes(&cfg, m); err == nil || !strings.Contains(err.Error(), "has no input named 'C'") {
		t.Errorf("unknown input: %v", err)
	}
	cfg = defaultConfig()
	shapes, _ = defaultShapes(&cfg, m)
	if _, err := generateData(&cfg, m, shapes); err == nil || err.Error() != "input B contains dynamic shape, provide shapes to send along with the request" {
		t.Errorf("generated data for a variable shape: %v", err)
	}
}

func TestGeneratedData(t *testing.T) {
	m := dataModel()
	for _, zero := range []bool{true, false} {
		cfg := defaultConfig()
		cfg.ZeroInput = zero
		cfg.StringLength = 5
		cfg.Shapes["B"] = []int64{4}
		shapes, _ := defaultShapes(&cfg, m)
		ds, err := generateData(&cfg, m, shapes)
		if err != nil {
			t.Fatal(err)
		}
		st := ds.streams[0][0]
		if len(st.inputs["A"].data) != 8 || len(st.inputs["B"].data) != 16 {
			t.Errorf("sizes %d %d", len(st.inputs["A"].data), len(st.inputs["B"].data))
		}
		allZero := true
		for _, b := range st.inputs["B"].data {
			allZero = allZero && b == 0
		}
		if allZero != zero {
			t.Errorf("zero=%v: data %v", zero, st.inputs["B"].data)
		}
		strs, err := tensor.Strings(tensor.Tensor{Name: "S", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: st.inputs["S"].data})
		if err != nil || len(strs) != 1 || len(strs[0]) != 5 {
			t.Errorf("random string %q %v", strs, err)
		}
		rs, err := prepareRequests(ds, m, shapes, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs.cycle) != 1 || !equalShape(rs.cycle[0].inputs[0].Shape, []int64{3, 2}) || len(rs.cycle[0].inputs[0].Data) != 24 {
			t.Errorf("batch of 3: %+v", rs.cycle[0].inputs[0])
		}
	}
}

func TestDirectoryData(t *testing.T) {
	m := &modelInfo{name: "m", inputs: []tensorInfo{
		{name: "X", dtype: tensor.Int32, shape: []int64{2}},
		{name: "T", dtype: tensor.Bytes, shape: []int64{2}},
	}}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "X"), le32(1, 2), 0o644)
	os.WriteFile(filepath.Join(dir, "T"), []byte("a\nbc\n"), 0o644)
	cfg := defaultConfig()
	cfg.UserData = []string{dir}
	shapes, _ := defaultShapes(&cfg, m)
	ds, err := loadData(&cfg, m, shapes)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.streams[0][0].inputs["T"].data; string(got) != string(tensor.AppendElement(tensor.AppendElement(nil, []byte("a")), []byte("bc"))) {
		t.Errorf("T = %q", got)
	}
	os.WriteFile(filepath.Join(dir, "X"), le32(1), 0o644)
	if _, err := loadData(&cfg, m, shapes); err == nil || err.Error() != "provided data for input X has byte size 4, expect 8" {
		t.Errorf("short file: %v", err)
	}
}

func le32(vals ...int32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func f32(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
