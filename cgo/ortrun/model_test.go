//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/triton-go/triton/cgo/ortrun"
)

// ONNX element types (TensorProto.DataType), as ortrun.Tensor.Type.
const (
	tFloat    = 1
	tUint8    = 2
	tInt8     = 3
	tUint16   = 4
	tInt16    = 5
	tInt32    = 6
	tInt64    = 7
	tString   = 8
	tBool     = 9
	tFloat16  = 10
	tDouble   = 11
	tUint32   = 12
	tUint64   = 13
	tComplex  = 14
	tBfloat16 = 16
	tFloat8   = 17 // FLOAT8E4M3FN
)

// Tiny ONNX models, written field by field from onnx.proto with protowire
// (no generated code, nothing on disk).

func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func str(num protowire.Number, s string) []byte { return field(num, []byte(s)) }

func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func msg(fields ...[]byte) []byte { return bytes.Join(fields, nil) }

// value describes a graph input or output: a tensor of elem with dims, each
// an int (fixed) or a string (symbolic); no dims is rank 0. seq makes it a
// sequence of such tensors.
type value struct {
	name string
	elem int32
	dims []any
	seq  bool
}

func (v value) proto() []byte {
	var dims [][]byte
	for _, d := range v.dims {
		switch d := d.(type) {
		case int:
			dims = append(dims, field(1, varint(1, uint64(d)))) // Dimension { dim_value }
		case string:
			dims = append(dims, field(1, str(2, d))) // Dimension { dim_param }
		}
	}
	// TypeProto { tensor_type: Tensor { elem_type, shape } }; an empty shape
	// field means rank 0, an absent one unknown rank.
	typ := field(1, msg(varint(1, uint64(v.elem)), field(2, msg(dims...))))
	if v.seq {
		typ = field(4, field(1, typ)) // TypeProto { sequence_type: Sequence { elem_type } }
	}
	return msg(str(1, v.name), field(2, typ)) // ValueInfoProto { name, type }
}

// node is a NodeProto with integer attributes.
type node struct {
	op      string
	in, out []string
	attrs   map[string]int64
}

func (n node) proto() []byte {
	var b []byte
	for _, s := range n.in {
		b = append(b, str(1, s)...)
	}
	for _, s := range n.out {
		b = append(b, str(2, s)...)
	}
	b = append(b, str(4, n.op)...)
	for k, v := range n.attrs {
		b = append(b, field(5, msg(str(1, k), varint(3, uint64(v)), varint(20, 2)))...) // AttributeProto INT
	}
	return b
}

// initializer is a constant TensorProto with raw little-endian data.
type initializer struct {
	name string
	elem int32
	dims []int64
	raw  []byte
}

func (c initializer) proto() []byte {
	var b []byte
	for _, d := range c.dims {
		b = append(b, varint(1, uint64(d))...)
	}
	return msg(b, varint(2, uint64(c.elem)), str(8, c.name), field(9, c.raw))
}

// model returns a serialized ModelProto (IR version 8) with one graph.
func model(opset int, nodes []node, inputs, outputs []value, inits ...initializer) []byte {
	var g []byte
	for _, n := range nodes {
		g = append(g, field(1, n.proto())...)
	}
	g = append(g, str(2, "ortrun_test")...)
	for _, c := range inits {
		g = append(g, field(5, c.proto())...)
	}
	for _, v := range inputs {
		g = append(g, field(11, v.proto())...)
	}
	for _, v := range outputs {
		g = append(g, field(12, v.proto())...)
	}
	opsetID := msg(str(1, ""), varint(2, uint64(opset)))
	return msg(varint(1, 8), str(2, "ortrun_test"), field(7, g), field(8, opsetID))
}

// identityModel is INPUT0 → Identity → OUTPUT0 of elem, [batch, n].
func identityModel(elem int32) []byte {
	dims := []any{"batch", "n"}
	return model(13, []node{{op: "Identity", in: []string{"INPUT0"}, out: []string{"OUTPUT0"}}},
		[]value{{"INPUT0", elem, dims, false}}, []value{{"OUTPUT0", elem, dims, false}})
}

// addSubModel is OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, FLOAT
// [batch, 16] (the shape of the backend's add_sub.onnx).
func addSubModel() []byte {
	dims := []any{"batch", 16}
	return model(13, []node{
		{op: "Add", in: []string{"INPUT0", "INPUT1"}, out: []string{"OUTPUT0"}},
		{op: "Sub", in: []string{"INPUT0", "INPUT1"}, out: []string{"OUTPUT1"}},
	}, []value{{"INPUT0", tFloat, dims, false}, {"INPUT1", tFloat, dims, false}},
		[]value{{"OUTPUT0", tFloat, dims, false}, {"OUTPUT1", tFloat, dims, false}})
}

// multiIOModel is SCALED = FLOATS * 2 (FLOAT [batch, 4]), SHIFTED = INTS + 1
// (INT64 [batch, 2]), TEXT_OUT = TEXT (STRING [batch]).
func multiIOModel() []byte {
	return model(13, []node{
		{op: "Mul", in: []string{"FLOATS", "two"}, out: []string{"SCALED"}},
		{op: "Add", in: []string{"INTS", "one"}, out: []string{"SHIFTED"}},
		{op: "Identity", in: []string{"TEXT"}, out: []string{"TEXT_OUT"}},
	}, []value{
		{"FLOATS", tFloat, []any{"batch", 4}, false},
		{"INTS", tInt64, []any{"batch", 2}, false},
		{"TEXT", tString, []any{"batch"}, false},
	}, []value{
		{"SCALED", tFloat, []any{"batch", 4}, false},
		{"SHIFTED", tInt64, []any{"batch", 2}, false},
		{"TEXT_OUT", tString, []any{"batch"}, false},
	},
		initializer{"two", tFloat, nil, f32s(2)},
		initializer{"one", tInt64, nil, i64s(1)})
}

// multiIORequest is a request of two rows to multiIOModel and its three
// answers.
func multiIORequest() (in []ortrun.Tensor, scaled, shifted, text ortrun.Tensor) {
	in = []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{2, 4}, Data: f32s(1, 2, 3, 4, 5, 6, 7, 8)},
		{Type: tInt64, Shape: []int64{2, 2}, Data: i64s(-1, 0, 41, math.MaxInt64-1)},
		{Type: tString, Shape: []int64{2}, Data: frame("he\x00llo", "\xff")},
	}
	scaled = ortrun.Tensor{Type: tFloat, Shape: []int64{2, 4}, Data: f32s(2, 4, 6, 8, 10, 12, 14, 16)}
	shifted = ortrun.Tensor{Type: tInt64, Shape: []int64{2, 2}, Data: i64s(0, 1, 42, math.MaxInt64)}
	text = ortrun.Tensor{Type: tString, Shape: []int64{2}, Data: frame("he\x00llo", "\xff")}
	return in, scaled, shifted, text
}

// matmulFixedModel is Y = X · W with X FLOAT [2, 3] (fixed) and W = [[1, 2],
// [3, 4], [5, 6]].
func matmulFixedModel() []byte {
	return model(13, []node{{op: "MatMul", in: []string{"X", "W"}, out: []string{"Y"}}},
		[]value{{"X", tFloat, []any{2, 3}, false}}, []value{{"Y", tFloat, []any{2, 2}, false}},
		initializer{"W", tFloat, []int64{3, 2}, f32s(1, 2, 3, 4, 5, 6)})
}

// scalarModel has rank-0 inputs and outputs: SUM = A + A (INT64) and
// HALF = Identity(H) (FLOAT16).
func scalarModel() []byte {
	return model(13, []node{
		{op: "Add", in: []string{"A", "A"}, out: []string{"SUM"}},
		{op: "Identity", in: []string{"H"}, out: []string{"HALF"}},
	}, []value{{"A", tInt64, nil, false}, {"H", tFloat16, nil, false}},
		[]value{{"SUM", tInt64, nil, false}, {"HALF", tFloat16, nil, false}})
}

// chainModel multiplies X (FLOAT [n, n]) by itself k times, one MatMul node
// after another: slow enough to cancel mid-run, since ORT checks the
// terminate flag between kernels.
func chainModel(k int) []byte {
	nodes := []node{{op: "MatMul", in: []string{"X", "X"}, out: []string{"y0"}}}
	for i := 1; i < k; i++ {
		nodes = append(nodes, node{op: "MatMul", in: []string{nodes[i-1].out[0], "X"}, out: []string{"y" + strconv.Itoa(i)}})
	}
	nodes = append(nodes, node{op: "Identity", in: []string{nodes[k-1].out[0]}, out: []string{"Y"}})
	dims := []any{"n", "n"}
	return model(13, nodes, []value{{"X", tFloat, dims, false}}, []value{{"Y", tFloat, dims, false}})
}

// sequenceModel has a tensor output Y = Identity(X) and a sequence output
// S = SequenceConstruct(X), with X FLOAT [n].
func sequenceModel() []byte {
	return model(13, []node{
		{op: "Identity", in: []string{"X"}, out: []string{"Y"}},
		{op: "SequenceConstruct", in: []string{"X"}, out: []string{"S"}},
	}, []value{{"X", tFloat, []any{"n"}, false}},
		[]value{{"Y", tFloat, []any{"n"}, false}, {"S", tFloat, []any{"n"}, true}})
}

// float8Model casts X (FLOAT [n]) to F8 (FLOAT8E4M3FN), which the shim does
// not return, and to Y (FLOAT16), which it does.
func float8Model() []byte {
	return model(19, []node{
		{op: "Cast", in: []string{"X"}, out: []string{"Y"}, attrs: map[string]int64{"to": tFloat16}},
		{op: "Cast", in: []string{"X"}, out: []string{"F8"}, attrs: map[string]int64{"to": tFloat8}},
	}, []value{{"X", tFloat, []any{"n"}, false}},
		[]value{{"Y", tFloat16, []any{"n"}, false}, {"F8", tFloat8, []any{"n"}, false}})
}

func f32s(v ...float32) []byte {
	var b []byte
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func i64s(v ...int64) []byte {
	var b []byte
	for _, i := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(i))
	}
	return b
}

// frame encodes elems in Triton's BYTES framing.
func frame(elems ...string) []byte {
	var b []byte
	for _, e := range elems {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// fixture is an onnxruntime_go session and an ortrun Session over it.
type fixture struct {
	ort     *ort.DynamicAdvancedSession
	run     *ortrun.Session
	inputs  []string
	outputs []string
}

// newFixture creates a session for onnx with onnxruntime_go (names taken
// from the model) and wraps it; both are closed when tb ends.
func newFixture(tb testing.TB, onnx []byte) *fixture {
	tb.Helper()
	needORT(tb)
	ins, outs, err := ort.GetInputOutputInfoWithONNXData(onnx)
	if err != nil {
		tb.Fatalf("GetInputOutputInfo: %v", err)
	}
	f := &fixture{}
	for _, i := range ins {
		f.inputs = append(f.inputs, i.Name)
	}
	for _, o := range outs {
		f.outputs = append(f.outputs, o.Name)
	}
	f.ort, err = ort.NewDynamicAdvancedSessionWithONNXData(onnx, f.inputs, f.outputs, nil)
	if err != nil {
		tb.Fatalf("NewDynamicAdvancedSession: %v", err)
	}
	f.run, err = ortrun.NewSession(f.ort, f.inputs, f.outputs)
	if err != nil {
		_ = f.ort.Destroy()
		tb.Fatalf("NewSession: %v", err)
	}
	tb.Cleanup(func() {
		if err := f.run.Close(); err != nil {
			tb.Error(err)
		}
		_ = f.ort.Destroy()
	})
	return f
}

// session adds another ortrun Session over f's ort session.
func (f *fixture) session(tb testing.TB) *ortrun.Session {
	tb.Helper()
	s, err := ortrun.NewSession(f.ort, f.inputs, f.outputs)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
