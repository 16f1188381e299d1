package python

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"reflect"
	"testing"
)

// TestMarshalWithPython: what enc writes, Python's marshal reads; what
// Python's marshal.dumps(v, 2) writes, dec reads.
func TestMarshalWithPython(t *testing.T) {
	if _, err := os.Stat(DefaultInterpreter); err != nil {
		t.Skip("no " + DefaultInterpreter)
	}
	var e enc
	e.value(map[string]any{"s": "héllo", "i": int64(-7), "big": int64(math.MaxInt64), "u": uint64(math.MaxUint64),
		"neg": int64(math.MinInt64), "f": 2.5, "t": true, "n": nil, "l": []any{int64(1), "x"}})
	py := `import marshal, sys
v = marshal.loads(sys.stdin.buffer.read())
want = {"s": "héllo", "i": -7, "big": 2**63 - 1, "u": 2**64 - 1, "neg": -2**63, "f": 2.5, "t": True, "n": None, "l": [1, "x"]}
assert v == want, v
sys.stdout.buffer.write(marshal.dumps({"op": "send", "id": 2**40, "neg": -5, "huge": 2**70, "f": -0.5, "b": b"\x00\x01",
    "ok": False, "t": (1, 2), "response": ([("OUT", "FP32", [2, 3], 4096, 24)], None, None), "none": None}, 2))`
	cmd := exec.Command(DefaultInterpreter, "-c", py)
	cmd.Stdin = bytes.NewReader(e.b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	d := &dec{b: out}
	v, err := d.value()
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["id"] != int64(1<<40) || m["neg"] != int64(-5) || m["f"] != -0.5 || !bytes.Equal(m["b"].([]byte), []byte{0, 1}) ||
		m["ok"] != false || m["none"] != nil || !reflect.DeepEqual(m["t"], []any{int64(1), int64(2)}) {
		t.Errorf("decoded %v", m)
	}
	if h := m["huge"]; h == nil || reflect.TypeOf(h).String() != "*big.Int" {
		t.Errorf("2**70 decoded as %T", h)
	}
	var sm stubMsg
	if err := sm.decode(&dec{b: out}); err != nil {
		t.Fatal(err)
	}
	want := wireTensor{Name: "OUT", Type: "FP32", Shape: []int64{2, 3}, Off: 4096, Bytes: 24}
	if sm.Op != "send" || sm.ID != 1<<40 || sm.Response == nil || len(sm.Response.Outputs) != 1 || !reflect.DeepEqual(sm.Response.Outputs[0], want) {
		t.Errorf("stubMsg %+v", sm)
	}
}

// TestExecuteWire: the execute command as the stub unpacks it, and its
// answer, as the stub writes it, as the server reads it.
func TestExecuteWire(t *testing.T) {
	if _, err := os.Stat(DefaultInterpreter); err != nil {
		t.Skip("no " + DefaultInterpreter)
	}
	var e enc
	(&executeMsg{ID: 7, Flags: 64, Requests: []wireRequest{
		{ID: "r1", Corr: uint64(5), Flags: 3, Timeout: 100, Params: map[string]any{"k": "v"}, Outputs: []string{"OUT"},
			Inputs: []wireTensor{{Name: "IN", Type: "FP32", Shape: []int64{1, 4}, Off: 128, Bytes: 16}}},
		{Corr: "seq-a", Outputs: []string{}},
	}}).encode(&e)
	py := `import marshal, sys
_, id, flags, reqs = marshal.loads(sys.stdin.buffer.read())
assert (id, flags) == (7, 64), (id, flags)
assert reqs == [["r1", 5, 3, 100, {"k": "v"}, ["OUT"], [["IN", "FP32", [1, 4], 128, 16]]],
                ["", "seq-a", 0, 0, None, [], []]], reqs
sys.stdout.buffer.write(marshal.dumps(("done", 7, 2, 4096, None, [None, (None, ("bad input", 3), {"p": 1}),
    ([("OUT", "FP32", [1, 4], 4096, 16)], None, None)]), 2))`
	cmd := exec.Command(DefaultInterpreter, "-c", py)
	cmd.Stdin = bytes.NewReader(e.b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var m stubMsg
	if err := m.decode(&dec{b: out}); err != nil {
		t.Fatal(err)
	}
	if m.Op != "done" || m.ID != 7 || m.Seq != 2 || m.Block == nil || *m.Block != 4096 || m.Fail != nil || len(m.Responses) != 3 {
		t.Fatalf("done %+v", m)
	}
	if r := m.Responses[1]; m.Responses[0] != nil || r.Outputs != nil || r.Error == nil || *r.Error != (wireError{"bad input", 3}) || r.Params["p"] != int64(1) {
		t.Errorf("responses 0 and 1: %+v, %+v", m.Responses[0], r)
	}
	want := []wireTensor{{Name: "OUT", Type: "FP32", Shape: []int64{1, 4}, Off: 4096, Bytes: 16}}
	if r := m.Responses[2]; !reflect.DeepEqual(r.Outputs, want) || r.Error != nil || r.Params != nil {
		t.Errorf("response 2: %+v", r)
	}
}

// FuzzDecode: no input makes the decoder crash or loop.
func FuzzDecode(f *testing.F) {
	var e enc
	e.value(map[string]any{"op": "send", "response": []any{nil, []any{"x", int64(1)}, nil}, "id": int64(3)})
	f.Add(e.b)
	e.b = nil
	e.value([]any{"done", int64(3), int64(0), nil, "failed", []any{nil, []any{nil, nil, nil}}})
	f.Add(e.b)
	f.Add([]byte("{u\x02\x00\x00\x00op[\xff\xff\xff\x7f"))
	f.Add([]byte("l\x00\x00\x00\x80"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m stubMsg
		_ = m.decode(&dec{b: b})
		_, _ = (&dec{b: b}).value()
	})
}
