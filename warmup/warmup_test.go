package warmup_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

// TestZeroData checks zero_data for every type, with and without batching.
func TestZeroData(t *testing.T) {
	for _, dt := range allTypes {
		for _, mbs := range []int{0, 4} {
			name := dt.String() + map[bool]string{false: "/no-batching", true: "/batching"}[mbs > 0]
			t.Run(name, func(t *testing.T) {
				bs := 1
				if mbs > 0 {
					bs = 3
				}
				s, in := only(t, parse(t, oneInput(dt, mbs, "[2, 3]", bs, "zero_data: true")), nil)
				if s.BatchSize != int64(bs) || in.DataType != dt || in.Name != "IN" {
					t.Fatalf("sample %+v input %s %v, want batch %d type %v", s, in.Name, in.DataType, bs, dt)
				}
				wantShape := tensor.Shape{2, 3}
				if mbs > 0 {
					wantShape = tensor.Shape{int64(bs), 2, 3}
				}
				if !in.Shape.Equal(wantShape) {
					t.Fatalf("shape %v, want %v", in.Shape, wantShape)
				}
				elems := 6 * bs
				size := dt.Size()
				if dt == tensor.Bytes {
					size = 4
				}
				if len(in.Data) != elems*size || slices.ContainsFunc(in.Data, func(b byte) bool { return b != 0 }) {
					t.Fatalf("data % x, want %d zero bytes", in.Data, elems*size)
				}
				if dt == tensor.Bytes {
					ss, err := tensor.Strings(in)
					if err != nil || len(ss) != elems || slices.ContainsFunc(ss, func(s string) bool { return s != "" }) {
						t.Fatalf("Strings = %q, %v; want %d empty strings", ss, err, elems)
					}
				}
			})
		}
	}
}

// checkRandom checks that row holds valid, not all-zero values of dt.
func checkRandom(t *testing.T, dt tensor.DataType, row []byte) {
	t.Helper()
	in := tensor.Tensor{Name: "row", DataType: dt, Shape: tensor.Shape{int64(len(row) / max(dt.Size(), 1))}, Data: row}
	floats := func(fs []float64) {
		t.Helper()
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, f := range fs {
			if math.IsNaN(f) || f < -1 || f >= 1 {
				t.Fatalf("element %d is %v, want a finite value in [-1, 1)", i, f)
			}
			lo, hi = min(lo, f), max(hi, f)
		}
		if lo > -0.5 || hi < 0.5 {
			t.Fatalf("values span [%v, %v]; want them spread over [-1, 1)", lo, hi)
		}
	}
	switch dt {
	case tensor.Bool:
		// View rejects any byte other than 0 and 1.
		bs, err := tensor.View[bool](in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(bs, true) || !slices.Contains(bs, false) {
			t.Fatalf("bools %v: want both values", bs)
		}
	case tensor.FP16:
		var fs []float64
		for i := 0; i < len(row); i += 2 {
			fs = append(fs, float64(tensor.Float16(binary.LittleEndian.Uint16(row[i:])).Float32()))
		}
		floats(fs)
	case tensor.BF16:
		var fs []float64
		for i := 0; i < len(row); i += 2 {
			fs = append(fs, float64(tensor.BFloat16(binary.LittleEndian.Uint16(row[i:])).Float32()))
		}
		floats(fs)
	case tensor.FP32:
		var fs []float64
		for i := 0; i < len(row); i += 4 {
			fs = append(fs, float64(math.Float32frombits(binary.LittleEndian.Uint32(row[i:]))))
		}
		floats(fs)
	case tensor.FP64:
		var fs []float64
		for i := 0; i < len(row); i += 8 {
			fs = append(fs, math.Float64frombits(binary.LittleEndian.Uint64(row[i:])))
		}
		floats(fs)
	default:
		if !slices.ContainsFunc(row, func(b byte) bool { return b != 0 }) {
			t.Fatalf("integer data is all zero: % x", row)
		}
	}
}

// TestRandomData checks random_data for every type: valid values, rows
// repeated across the batch, the same data on every call, and BYTES
// falling back to zero data.
func TestRandomData(t *testing.T) {
	for _, dt := range allTypes {
		t.Run(dt.String(), func(t *testing.T) {
			cfg := parse(t, oneInput(dt, 8, "[4, 16]", 5, "random_data: true"))
			_, in := only(t, cfg, nil)
			row := checkRows(t, in, 5, tensor.Shape{4, 16})
			if dt == tensor.Bytes {
				if !bytes.Equal(row, make([]byte, 64*4)) {
					t.Fatalf("BYTES random_data is % x, want zero data (64 empty elements)", row)
				}
			} else {
				checkRandom(t, dt, row)
			}
			_, again := only(t, cfg, nil)
			if !bytes.Equal(again.Data, in.Data) {
				t.Fatal("random_data differs between two calls on the same config")
			}
		})
	}
}

// TestRandomDataPerInput checks that two inputs of one sample, and the
// same input in two samples, get different random data, and that a
// sample's data does not depend on the samples around it.
func TestRandomDataPerInput(t *testing.T) {
	const two = `
name: "m" max_batch_size: 0
input { name: "A" data_type: TYPE_FP32 dims: [8] }
input { name: "B" data_type: TYPE_FP32 dims: [8] }
`
	sample := func(name string) string {
		return `model_warmup { name: "` + name + `" batch_size: 1
  inputs { key: "A" value { data_type: TYPE_FP32 dims: [8] random_data: true } }
  inputs { key: "B" value { data_type: TYPE_FP32 dims: [8] random_data: true } } }
`
	}
	ss, err := warmup.Samples(parse(t, two+sample("s1")+sample("s2")), nil)
	if err != nil {
		t.Fatal(err)
	}
	a1, b1, a2 := ss[0].Inputs[0], ss[0].Inputs[1], ss[1].Inputs[0]
	if a1.Name != "A" || b1.Name != "B" {
		t.Fatalf("inputs %q, %q; want A, B (sorted)", a1.Name, b1.Name)
	}
	if bytes.Equal(a1.Data, b1.Data) || bytes.Equal(a1.Data, a2.Data) {
		t.Fatal("random data repeats across inputs or samples")
	}
	alone, err := warmup.Samples(parse(t, two+sample("s2")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(alone[0].Inputs[0].Data, a2.Data) {
		t.Fatal("a sample's random data changes when another sample is removed")
	}
}

// fileRow returns one row of test data for n elements of dt, valid for
// the type, and differing from byte to byte.
func fileRow(dt tensor.DataType, n int) []byte {
	if dt == tensor.Bytes {
		var b []byte
		for i := range n {
			b = tensor.AppendElement(b, bytes.Repeat([]byte{byte(i), 0, 0xff}, i%3))
		}
		return b
	}
	b := make([]byte, n*dt.Size())
	for i := range b {
		if dt == tensor.Bool {
			b[i] = byte(i % 3 % 2)
		} else {
			b[i] = byte(i*37 + 1)
		}
	}
	return b
}

// TestFileData checks input_data_file for every type: the data comes back
// byte for byte, repeated for each row of the batch.
func TestFileData(t *testing.T) {
	for _, dt := range allTypes {
		for _, bs := range []int{1, 3} {
			t.Run(dt.String()+"/batch"+strconv.Itoa(bs), func(t *testing.T) {
				want := fileRow(dt, 6)
				dir := fstest.MapFS{"warmup/sub/in.bin": {Data: want}}
				s, in := only(t, parse(t, oneInput(dt, 4, "[2, 3]", bs, `input_data_file: "sub/in.bin"`)), dir)
				if s.BatchSize != int64(bs) {
					t.Fatalf("BatchSize %d, want %d", s.BatchSize, bs)
				}
				if got := checkRows(t, in, int64(bs), tensor.Shape{2, 3}); !bytes.Equal(got, want) {
					t.Fatalf("row data\n% x\nwant\n% x", got, want)
				}
				if bs == 1 && &in.Data[0] == &dir["warmup/sub/in.bin"].Data[0] {
					t.Fatal("input aliases the file system's buffer")
				}
			})
		}
	}
}

// TestNonBatching checks that a model without batching gets the sample's
// dims as the shape and no batch dimension, for every data source.
func TestNonBatching(t *testing.T) {
	dir := fstest.MapFS{"warmup/in.bin": {Data: fileRow(tensor.Int32, 6)}}
	for _, src := range []string{"zero_data: true", "random_data: true", `input_data_file: "in.bin"`} {
		t.Run(src, func(t *testing.T) {
			s, in := only(t, parse(t, oneInput(tensor.Int32, 0, "[2, 3]", 1, src)), dir)
			if s.BatchSize != 1 || !in.Shape.Equal(tensor.Shape{2, 3}) || len(in.Data) != 24 {
				t.Fatalf("batch %d shape %v len %d, want 1, [2,3], 24", s.BatchSize, in.Shape, len(in.Data))
			}
		})
	}
}

// TestWildcardDims checks that a config -1 accepts the sample's concrete
// size, and a zero-sized dimension gives an empty tensor.
func TestWildcardDims(t *testing.T) {
	cfg := parse(t, `name: "m" max_batch_size: 2
input { name: "IN" data_type: TYPE_FP32 dims: [-1, 3] }
model_warmup { name: "s" batch_size: 2
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [7, 3] zero_data: true } } }
model_warmup { name: "empty" batch_size: 2
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [0, 3] random_data: true } } }`)
	ss, err := warmup.Samples(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in := ss[0].Inputs[0]; !in.Shape.Equal(tensor.Shape{2, 7, 3}) || len(in.Data) != 2*7*3*4 {
		t.Fatalf("shape %v len %d, want [2,7,3] and 168 bytes", in.Shape, len(in.Data))
	}
	if in := ss[1].Inputs[0]; !in.Shape.Equal(tensor.Shape{2, 0, 3}) || len(in.Data) != 0 {
		t.Fatalf("shape %v len %d, want [2,0,3] and no data", in.Shape, len(in.Data))
	}
}

// TestCountAndOrder checks Count (0 means 1), names, config order of the
// samples and the name order of inputs.
func TestCountAndOrder(t *testing.T) {
	cfg := parse(t, `name: "m" max_batch_size: 0
input { name: "Z" data_type: TYPE_INT8 dims: [1] }
input { name: "A" data_type: TYPE_INT8 dims: [1] }
model_warmup { name: "second" batch_size: 1 count: 5
  inputs { key: "Z" value { data_type: TYPE_INT8 dims: [1] zero_data: true } }
  inputs { key: "A" value { data_type: TYPE_INT8 dims: [1] zero_data: true } } }
model_warmup { name: "first" batch_size: 1
  inputs { key: "A" value { data_type: TYPE_INT8 dims: [1] zero_data: true } }
  inputs { key: "Z" value { data_type: TYPE_INT8 dims: [1] zero_data: true } } }`)
	ss, err := warmup.Samples(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].Name != "second" || ss[1].Name != "first" {
		t.Fatalf("samples %+v, want second, first", ss)
	}
	if ss[0].Count != 5 || ss[1].Count != 1 {
		t.Fatalf("counts %d, %d; want 5, 1 (count 0 runs once)", ss[0].Count, ss[1].Count)
	}
	for _, s := range ss {
		if len(s.Inputs) != 2 || s.Inputs[0].Name != "A" || s.Inputs[1].Name != "Z" {
			t.Fatalf("sample %q inputs %v, want A then Z", s.Name, s.Inputs)
		}
	}
	// Every input has a buffer of its own.
	ss[0].Inputs[0].Data[0] = 9
	if ss[0].Inputs[1].Data[0] != 0 || ss[1].Inputs[0].Data[0] != 0 {
		t.Fatal("inputs share memory")
	}
}

// TestNoWarmup checks configs without samples.
func TestNoWarmup(t *testing.T) {
	for name, cfg := range map[string]string{
		"nil":      "",
		"none":     `name: "m" max_batch_size: 4 input { name: "IN" data_type: TYPE_FP32 dims: [1] }`,
		"ensemble": `name: "e" platform: "ensemble" ensemble_scheduling { step { model_name: "m" } }`,
	} {
		t.Run(name, func(t *testing.T) {
			c := parse(t, cfg)
			if name == "nil" {
				c = nil
			}
			ss, err := warmup.Samples(c, nil)
			if ss != nil || err != nil {
				t.Fatalf("Samples = %v, %v; want nil, nil", ss, err)
			}
		})
	}
}

// TestOptionalInput checks that optional inputs may be left out.
func TestOptionalInput(t *testing.T) {
	cfg := parse(t, `name: "m" max_batch_size: 0
input { name: "IN" data_type: TYPE_FP32 dims: [1] }
input { name: "OPT" data_type: TYPE_FP32 dims: [1] optional: true }
model_warmup { name: "s" batch_size: 1
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1] zero_data: true } } }`)
	s, in := only(t, cfg, nil)
	if in.Name != "IN" || s.Name != "s" {
		t.Fatalf("got input %q", in.Name)
	}
}

// sequence is a sequence model with controls and an implicit state; the
// sample is appended by the tests.
const sequence = `name: "seq" max_batch_size: 4
input { name: "IN" data_type: TYPE_FP32 dims: [3] }
sequence_batching {
  control_input { name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } }
  control_input { name: "READY" control { kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] } }
  control_input { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
  state { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP16 dims: [-1, 2] }
}
`

// TestSequenceInputs checks that sequence models may warm up their
// control and implicit state inputs, with the shapes and types the
// sequence batcher would give them, and that those inputs are optional.
func TestSequenceInputs(t *testing.T) {
	cfg := parse(t, sequence+`model_warmup { name: "s" batch_size: 2
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3] zero_data: true } }
  inputs { key: "START" value { data_type: TYPE_INT32 dims: [1] random_data: true } }
  inputs { key: "READY" value { data_type: TYPE_BOOL dims: [1] random_data: true } }
  inputs { key: "CORRID" value { data_type: TYPE_UINT64 dims: [1] zero_data: true } }
  inputs { key: "STATE_IN" value { data_type: TYPE_FP16 dims: [5, 2] zero_data: true } } }
model_warmup { name: "plain" batch_size: 1
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3] zero_data: true } } }`)
	ss, err := warmup.Samples(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tensor.Shape{"CORRID": {2, 1}, "IN": {2, 3}, "READY": {2, 1}, "START": {2, 1}, "STATE_IN": {2, 5, 2}}
	if len(ss[0].Inputs) != len(want) {
		t.Fatalf("inputs %v", ss[0].Inputs)
	}
	for _, in := range ss[0].Inputs {
		if !in.Shape.Equal(want[in.Name]) {
			t.Errorf("%s: shape %v, want %v", in.Name, in.Shape, want[in.Name])
		}
		if err := in.Validate(); err != nil {
			t.Error(err)
		}
	}
	if len(ss[1].Inputs) != 1 {
		t.Fatalf("sample without controls: inputs %v", ss[1].Inputs)
	}
}

// TestErrors checks every rejected sample: the error names the sample and
// (where there is one) the input, says what is wrong, and wraps the
// sentinel callers branch on.
func TestErrors(t *testing.T) {
	fp32 := func(mbs, bs int, dims, src string) string { return oneInput(tensor.FP32, mbs, dims, bs, src) }
	bytesIn := func(src string) string { return oneInput(tensor.Bytes, 0, "[2]", 1, src) }
	dir := fstest.MapFS{
		"warmup/short.bin": {Data: make([]byte, 7)},
		"warmup/long.bin":  {Data: make([]byte, 9)},
		"warmup/few.bin":   {Data: tensor.AppendElement(nil, []byte("a"))},
		"warmup/many.bin":  {Data: tensor.AppendElement(tensor.AppendElement(tensor.AppendElement(nil, nil), nil), nil)},
		"warmup/trail.bin": {Data: append(tensor.AppendElement(tensor.AppendElement(nil, nil), nil), 0)},
		"warmup/frame.bin": {Data: append(tensor.AppendElement(nil, []byte("a")), 9, 0, 0, 0, 'b')},
		"warmup/bool.bin":  {Data: []byte{1, 2}},
		"warmup/dir/f":     {Data: nil},
	}
	seq := func(name, dt, dims string) string {
		return sequence + `model_warmup { name: "s" batch_size: 1
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3] zero_data: true } }
  inputs { key: "` + name + `" value { data_type: ` + dt + ` dims: ` + dims + ` zero_data: true } } }`
	}
	tests := []struct {
		name   string
		cfg    string
		dir    fs.FS
		want   string // substring of the error, after the sample and input names
		input  bool   // the error names input "IN"
		target error  // wrapped, when set
	}{
		{"batch_size 0", fp32(4, 0, "[2]", "zero_data: true"), nil, "batch_size must be >= 1, got 0", false, nil},
		{"batch_size 2 without batching", fp32(0, 2, "[2]", "zero_data: true"), nil, "batch_size must be 1 because the model does not support batching", false, nil},
		{"batch_size over max", fp32(4, 5, "[2]", "zero_data: true"), nil, "batch_size must be <= max_batch_size 4, got 5", false, nil},
		{"missing input", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
input { name: "IN2" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1] zero_data: true } } }`,
			nil, `required input "IN2" is missing`, false, nil},
		{"unknown input", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "s" batch_size: 1
  inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1] zero_data: true } }
  inputs { key: "EXTRA" value { data_type: TYPE_FP32 dims: [1] zero_data: true } } }`,
			nil, `input "EXTRA" is not an input of the model (expected one of "IN")`, false, nil},
		{"unknown input of a sequence model", seq("NOPE", "TYPE_INT32", "[1]"), nil, `input "NOPE" is not an input of the model (expected one of "CORRID", "READY", "START", "IN", "STATE_IN")`, false, nil},
		{"control data_type", seq("START", "TYPE_FP32", "[1]"), nil, `input "START": data_type is TYPE_FP32, but the model's control input expects TYPE_INT32`, false, nil},
		{"corrid data_type", seq("CORRID", "TYPE_INT64", "[1]"), nil, "control input expects TYPE_UINT64", false, nil},
		{"control dims", seq("READY", "TYPE_BOOL", "[2]"), nil, `input "READY": dims [2] do not match the model's control input dims [1]`, false, nil},
		{"state data_type", seq("STATE_IN", "TYPE_FP32", "[1, 2]"), nil, "state input expects TYPE_FP16", false, nil},
		{"state dims", seq("STATE_IN", "TYPE_FP16", "[1, 3]"), nil, "dims [1,3] do not match the model's state input dims [-1,2]", false, nil},
		{"-1 in dims", fp32(4, 1, "[-1]", "zero_data: true"), nil, "dims [-1]: dimension 0 is -1; warm-up data needs a concrete shape", true, nil},
		{"negative dims", oneInput(tensor.FP32, 0, "[2, -1]", 1, "zero_data: true") + "\n", nil, "dimension 1 is -1", true, nil},
		{"invalid data_type", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { dims: [1] zero_data: true } } }`,
			nil, "data_type TYPE_INVALID is not a valid type", true, nil},
		{"mismatched data_type", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP16 dims: [1] zero_data: true } } }`,
			nil, "data_type is TYPE_FP16, but the model's input expects TYPE_FP32", true, nil},
		{"mismatched dims value", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [2, 3] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [2, 4] zero_data: true } } }`,
			nil, "dims [2,4] do not match the model's input dims [2,3]", true, nil},
		{"mismatched dims rank", `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [-1] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1, 2] zero_data: true } } }`,
			nil, "dims [1,2] do not match the model's input dims [-1]", true, nil},
		{"no data source", fp32(0, 1, "[2]", ""), nil, "must set one of zero_data, random_data or input_data_file", true, nil},
		{"file missing", fp32(0, 1, "[2]", `input_data_file: "nope.bin"`), dir, `open warmup/nope.bin`, true, fs.ErrNotExist},
		{"no model folder", fp32(0, 1, "[2]", `input_data_file: "short.bin"`), nil, "no model folder to read it from", true, fs.ErrNotExist},
		{"file too short", fp32(0, 1, "[2]", `input_data_file: "short.bin"`), dir, `file "warmup/short.bin" has 7 bytes, want 8 (one row: 2 FP32 elements)`, true, nil},
		{"file too long", fp32(4, 3, "[2]", `input_data_file: "long.bin"`), dir, `file "warmup/long.bin" has 9 bytes, want 8`, true, nil},
		{"file is a folder", fp32(0, 1, "[2]", `input_data_file: "dir"`), dir, `input_data_file "warmup/dir" is a folder, not a file`, true, nil},
		{"BOOL file value", oneInput(tensor.Bool, 0, "[2]", 1, `input_data_file: "bool.bin"`), dir, "BOOL element 1 is 2, not 0 or 1", true, tensor.ErrInvalid},
		{"BYTES file too few elements", bytesIn(`input_data_file: "few.bin"`), dir, `file "warmup/few.bin" must hold exactly 2 length-prefixed BYTES elements (one row)`, true, tensor.ErrInvalid},
		{"BYTES file too many elements", bytesIn(`input_data_file: "many.bin"`), dir, "4 trailing bytes after 2 elements", true, tensor.ErrInvalid},
		{"BYTES file trailing byte", bytesIn(`input_data_file: "trail.bin"`), dir, "1 trailing bytes after 2 elements", true, tensor.ErrInvalid},
		{"BYTES file bad framing", bytesIn(`input_data_file: "frame.bin"`), dir, "length 9 runs past the end", true, tensor.ErrInvalid},
		{"too much data", fp32(0, 1, "[1073741824, 2]", "zero_data: true"), nil, "exceed the 4294967296-byte limit on warm-up data", true, nil},
		{"too much data with the batch", fp32(65, 65, "[16777216]", "zero_data: true"), nil, "65 rows of 67108864 bytes exceed the 4294967296-byte limit", true, nil},
		{"dims overflow", fp32(0, 1, "[4294967296, 4294967296]", "zero_data: true"), nil, "element count overflows int64", true, tensor.ErrOverflow},
		{"ensemble", `name: "e" platform: "ensemble" ensemble_scheduling { step { model_name: "m" } }
model_warmup { name: "s" batch_size: 1 }`, nil, `model_warmup can not be specified for ensemble "e"`, false, nil},
		{"negative max_batch_size", fp32(-1, 1, "[2]", "zero_data: true"), nil, "max_batch_size must be non-negative, got -1", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := warmup.Samples(parse(t, tt.cfg), tt.dir)
			if err == nil {
				t.Fatalf("Samples = %+v, want an error containing %q", ss, tt.want)
			}
			if ss != nil {
				t.Errorf("Samples returned samples with an error: %+v", ss)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "warmup: ") {
				t.Errorf("error %q does not start with \"warmup: \"", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
			if tt.name != "ensemble" && tt.name != "negative max_batch_size" && !strings.Contains(msg, `sample "s"`) {
				t.Errorf("error %q does not name the sample", msg)
			}
			if tt.input && !strings.Contains(msg, `sample "s": input "IN": `) {
				t.Errorf("error %q does not name the input", msg)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %q does not wrap %v", msg, tt.target)
			}
		})
	}
}

// TestFilePaths checks that input_data_file names cannot leave the
// warmup/ folder: every escaping name is rejected before anything is
// opened, although the trap folder holds files that would satisfy them.
func TestFilePaths(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"../x", `contains ".."`},
		{"/etc/passwd", "is absolute"},
		{"warmup/../../x", `contains ".."`},
		{"a/../../x", `contains ".."`},
		{"..", `contains ".."`},
		{`..\x`, "contains a backslash"},
		{"./ok.bin", "is not a valid fs.FS path"},
		{"sub//ok.bin", "is not a valid fs.FS path"},
		{"ok.bin/", "is not a valid fs.FS path"},
		{"", "is empty"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			dir := &recordFS{FS: trap()}
			_, err := warmup.Samples(parse(t, oneInput(tensor.FP32, 0, "[2]", 1, "input_data_file: \""+strings.ReplaceAll(tt.file, `\`, `\\`)+"\"")), dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "must be a relative path inside the model's warmup/ folder") {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if len(dir.opened) > 0 {
				t.Fatalf("opened %q", dir.opened)
			}
		})
	}
	t.Run("inside", func(t *testing.T) {
		dir := &recordFS{FS: trap()}
		_, in := only(t, parse(t, oneInput(tensor.FP32, 0, "[2]", 1, `input_data_file: "ok.bin"`)), dir)
		if !slices.Equal(dir.opened, []string{"warmup/ok.bin"}) || len(in.Data) != 8 {
			t.Fatalf("opened %q, read %d bytes; want warmup/ok.bin, 8", dir.opened, len(in.Data))
		}
	})
}

// TestUnnamedSample checks how errors name a sample without a name.
func TestUnnamedSample(t *testing.T) {
	cfg := parse(t, `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "ok" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1] zero_data: true } } }
model_warmup { batch_size: 0 }`)
	_, err := warmup.Samples(cfg, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "warmup: sample #1 (unnamed): batch_size") {
		t.Fatalf("error %v, want it to name sample #1", err)
	}
}

// faultFS serves one file, "warmup/in.bin", whose Stat or Read fails on
// demand (io/fs implementations need not support Stat meaningfully).
type faultFS struct {
	data             []byte
	statErr, readErr error
}

func (f faultFS) Open(name string) (fs.File, error) {
	if name != "warmup/in.bin" {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &faultFile{r: bytes.NewReader(f.data), fs: f}, nil
}

type faultFile struct {
	r  *bytes.Reader
	fs faultFS
}

func (f *faultFile) Stat() (fs.FileInfo, error) { return nil, f.fs.statErr }
func (f *faultFile) Close() error               { return nil }
func (f *faultFile) Read(p []byte) (int, error) {
	if f.fs.readErr != nil {
		return 0, f.fs.readErr
	}
	return f.r.Read(p)
}

// TestFileFaults checks files whose Stat or Read fails: a failing Stat
// only loses the early size check, a failing Read fails the sample with
// the cause wrapped.
func TestFileFaults(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name    string
		fsys    faultFS
		dt      tensor.DataType
		wantErr string
	}{
		{"stat fails, right size", faultFS{data: make([]byte, 8), statErr: boom}, tensor.FP32, ""},
		{"stat fails, too long", faultFS{data: make([]byte, 12), statErr: boom}, tensor.FP32, "has more than 8 bytes, want 8"},
		{"stat fails, too short", faultFS{data: make([]byte, 4), statErr: boom}, tensor.FP32, "has 4 bytes, want 8"},
		{"stat fails, BYTES", faultFS{data: make([]byte, 8), statErr: boom}, tensor.Bytes, ""},
		{"read fails", faultFS{readErr: boom}, tensor.FP32, `reading "warmup/in.bin": boom`},
		{"read fails, BYTES", faultFS{readErr: boom}, tensor.Bytes, `reading "warmup/in.bin": boom`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := warmup.Samples(parse(t, oneInput(tt.dt, 0, "[2]", 1, `input_data_file: "in.bin"`)), tt.fsys)
			if tt.wantErr == "" {
				if err != nil || !bytes.Equal(ss[0].Inputs[0].Data, tt.fsys.data) {
					t.Fatalf("Samples = %+v, %v; want the file's data", ss, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.fsys.readErr != nil && !errors.Is(err, boom) {
				t.Fatalf("error %v does not wrap the read error", err)
			}
		})
	}
}

// TestControlTypes checks the data type each kind of control input
// expects, and that a control input whose controls disagree is not
// type-checked here (the config validator reports it).
func TestControlTypes(t *testing.T) {
	for _, tt := range []struct {
		control, dt string
		ok          bool
	}{
		{"control { kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }", "TYPE_FP32", true},
		{"control { kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }", "TYPE_INT32", false},
		{"control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }", "TYPE_INT32", true},
		{"control { kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }", "TYPE_BOOL", true},
		{"control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING }", "TYPE_STRING", true},
		{"control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING }", "TYPE_UINT64", false},
		{"control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } control { kind: CONTROL_SEQUENCE_END bool_false_true: [false, true] }", "TYPE_FP64", true},
		{"", "TYPE_INT8", true},
	} {
		t.Run(tt.control+"/"+tt.dt, func(t *testing.T) {
			cfg := parse(t, `name: "m" max_batch_size: 0 sequence_batching { control_input { name: "C" `+tt.control+` } }
model_warmup { name: "s" batch_size: 1 inputs { key: "C" value { data_type: `+tt.dt+` dims: [1] zero_data: true } } }`)
			_, err := warmup.Samples(cfg, nil)
			if (err == nil) != tt.ok {
				t.Fatalf("error %v, want ok %v", err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "but the model's control input expects") {
				t.Fatalf("error %v", err)
			}
		})
	}
}

// TestOddConfigs checks data types outside the enum and models without
// inputs.
func TestOddConfigs(t *testing.T) {
	_, err := warmup.Samples(parse(t, `name: "m" max_batch_size: 0 input { name: "IN" data_type: TYPE_FP32 dims: [1] }
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: 300 dims: [1] zero_data: true } } }`), nil)
	if err == nil || !strings.Contains(err.Error(), `input "IN": data_type 300 is not a valid type`) {
		t.Fatalf("error %v", err)
	}
	_, err = warmup.Samples(parse(t, `name: "m" max_batch_size: 0
model_warmup { name: "s" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [1] zero_data: true } } }`), nil)
	if err == nil || !strings.Contains(err.Error(), `input "IN" is not an input of the model (it has none)`) {
		t.Fatalf("error %v", err)
	}
}
