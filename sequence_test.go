package triton_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// accConfig is a stateful model: OUTPUT0 = X + the running sum of the
// sequence's X (implicit state ACC), reset by START.
const accConfig = `
backend: "acc"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
  oldest { max_candidate_sequences: 16 max_queue_delay_microseconds: 200 }
}
`

// accumulator runs accConfig's model over the whole batch, recording the
// batch sizes it saw.
type accumulator struct {
	mu      sync.Mutex
	batches []int
}

func (a *accumulator) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		a.mu.Lock()
		a.batches = append(a.batches, len(b.Requests))
		a.mu.Unlock()
		get := func(name string) []int32 {
			t, err := b.Input(name)
			if err != nil {
				panic(err)
			}
			v, err := tensor.View[int32](t)
			if err != nil {
				panic(err)
			}
			return v
		}
		x, acc, start := get("X"), get("ACC_IN"), get("START")
		sum := make([]int32, len(x))
		for i := range x {
			if start[i] == 0 {
				sum[i] = acc[i]
			}
			sum[i] += x[i]
		}
		for _, name := range []string{"SUM", "ACC_OUT"} {
			t, _ := tensor.From(name, tensor.Shape{int64(len(x)), 1}, sum)
			if err := b.SetOutput(t); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestSequenceSmoke(t *testing.T) {
	acc := &accumulator{}
	srv := newServer(t, map[string]string{"acc/config.pbtxt": accConfig, "acc/1/m": ""}, triton.WithBackend("acc", acc.backend()))
	var g errgroup.Group
	for s := range 8 {
		g.Go(func() error {
			want := int32(0)
			for i := range 20 {
				x := int32(s*100 + i)
				want += x
				req := &triton.InferRequest{Model: "acc", SequenceID: uint64(s + 1), SequenceStart: i == 0, SequenceEnd: i == 19,
					Inputs: []tensor.Tensor{int32s(t, "X", tensor.Shape{1, 1}, x)}}
				resp, err := srv.Infer(context.Background(), req)
				if err != nil {
					return err
				}
				if len(resp.Outputs) != 1 {
					return fmt.Errorf("outputs %v", outputNames(resp))
				}
				if got := outputInt32(t, resp, "SUM")[0]; got != want {
					return fmt.Errorf("sequence %d step %d: SUM %d, want %d", s, i, got, want)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("batches: %v", acc.batches)
}

// Helpers for the sequence tests.

// seqRequest is a request of numeric sequence id with the one input X = x
// of shape shape ([1, 1] for a batching model, [1] otherwise).
func seqRequest(t testing.TB, model string, id uint64, start, end bool, shape tensor.Shape, x int32) *triton.InferRequest {
	return &triton.InferRequest{Model: model, ID: fmt.Sprintf("%d:%d", id, x), SequenceID: id, SequenceStart: start, SequenceEnd: end,
		Inputs: []tensor.Tensor{int32s(t, "X", shape, x)}}
}

var row = tensor.Shape{1, 1} // one request's X for a batching model

// reqInput views a request's input.
func reqInput[T tensor.Element](r *backend.Request, name string) ([]T, tensor.Shape, error) {
	t, ok := r.Input(name)
	if !ok {
		return nil, nil, fmt.Errorf("request %q has no input %q", r.ID, name)
	}
	v, err := tensor.View[T](t)
	return v, t.Shape, err
}

// batchInput views a whole-batch input.
func batchInput[T tensor.Element](b *backend.Batch, name string) ([]T, tensor.Shape, error) {
	t, err := b.Input(name)
	if err != nil {
		return nil, nil, err
	}
	v, err := tensor.View[T](t)
	return v, t.Shape, err
}

// seqResult is an Infer call's outcome, for calls made on other goroutines.
type seqResult struct {
	resp *triton.InferResponse
	err  error
}

func inferAsync(ctx context.Context, srv *triton.Server, req *triton.InferRequest) <-chan seqResult {
	ch := make(chan seqResult, 1)
	go func() {
		resp, err := srv.Infer(ctx, req)
		ch <- seqResult{resp, err}
	}()
	return ch
}

// waitBlocked waits, inside a synctest bubble, until every goroutine of the
// bubble is blocked, and checks that the calls have not returned: they
// wait inside the server (for room for their sequence, or for their turn).
func waitBlocked(t *testing.T, calls ...<-chan seqResult) {
	t.Helper()
	synctest.Wait()
	for i, ch := range calls {
		select {
		case r := <-ch:
			t.Fatalf("call %d returned (%v) instead of waiting", i, r.err)
		default:
		}
	}
}

// sumModel is the config of a model with input X, output SUM and implicit
// state ACC (INT32 [1] each) and controls START and CORRID (UINT64).
type sumModel struct {
	mbs     int
	count   int    // instances (default 1)
	idle    uint64 // max_sequence_idle_microseconds (default a minute)
	seq     string // more sequence_batching fields: strategy
	state   string // more fields of the state: initial_state
	outputs string // more outputs
	extra   string // more top-level fields: parameters
	backend string // default "sum"
}

func (m sumModel) config() string {
	if m.count == 0 {
		m.count = 1
	}
	if m.backend == "" {
		m.backend = "sum"
	}
	if m.idle == 0 {
		m.idle = 60_000_000 // slow test machines must not free sequences
	}
	return fmt.Sprintf(`backend: %q
max_batch_size: %d
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] } %s ]
instance_group [ { count: %d kind: KIND_CPU } ]
sequence_batching {
  max_sequence_idle_microseconds: %d
  %s
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] %s } ]
}
%s
`, m.backend, m.mbs, m.outputs, m.count, m.idle, m.seq, m.state, m.extra)
}

// repo is a repository of the one model "m".
func (m sumModel) repo(files ...string) map[string]string {
	r := map[string]string{"m/config.pbtxt": m.config(), "m/1/model": ""}
	for i := 0; i+1 < len(files); i += 2 {
		r[files[i]] = files[i+1]
	}
	return r
}

// stateSum serves sumModel per request: SUM = ACC_OUT = ACC_IN + X. It does
// not reset on START: a sequence's first request sees the server's initial
// state. hook, when not nil, runs first; an error from it fails the request
// (after setting garbage outputs, which the server must drop).
func stateSum(hook func(r *backend.Request, x int32) error) backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			x, shape, err := reqInput[int32](r, "X")
			if err != nil {
				return err
			}
			acc, accShape, err := reqInput[int32](r, "ACC_IN")
			if err != nil {
				return err
			}
			if !accShape.Equal(shape) {
				r.Fail(fmt.Errorf("ACC_IN has shape %v, X %v", accShape, shape))
				continue
			}
			sum := acc[0] + x[0]
			var failure error
			if hook != nil {
				if failure = hook(r, x[0]); failure != nil {
					sum = -999_999
				}
			}
			for _, name := range []string{"SUM", "ACC_OUT"} {
				t, err := tensor.From(name, shape.Clone(), []int32{sum})
				if err != nil {
					return err
				}
				r.SetOutput(t)
			}
			if failure != nil {
				r.Fail(failure)
			}
		}
		return nil
	}
}

// sumOf runs one request on sumModel's model and returns its SUM.
func sumOf(t *testing.T, srv *triton.Server, req *triton.InferRequest) int32 {
	t.Helper()
	resp, err := srv.Infer(context.Background(), req)
	if err != nil {
		t.Fatalf("request %s: %v", req.ID, err)
	}
	return outputInt32(t, resp, "SUM")[0]
}

// TestSequenceControls: every control kind and datatype reaches the backend
// with Triton's values, as [1, 1] per request for a batching model and [1]
// for max_batch_size 0.
func TestSequenceControls(t *testing.T) {
	le32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	lef := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	type flag struct {
		name, kind, values string
		dt                 tensor.DataType
		f, t               []byte
	}
	cases := []struct {
		name   string
		flags  []flag
		corrid string // CORRID data_type
		id     uint64
		ids    string
		dt     tensor.DataType
		want   []byte // the CORRID element (numeric IDs)
	}{
		{
			name: "int32 flags, UINT64 ID",
			flags: []flag{
				{"S", "CONTROL_SEQUENCE_START", "int32_false_true: [ 0, 1 ]", tensor.Int32, le32(0), le32(1)},
				{"E", "CONTROL_SEQUENCE_END", "int32_false_true: [ -1, 9 ]", tensor.Int32, le32(-1), le32(9)},
				{"R", "CONTROL_SEQUENCE_READY", "int32_false_true: [ 2, 3 ]", tensor.Int32, le32(2), le32(3)},
			},
			corrid: "TYPE_UINT64", id: 0x1_0000_0007, dt: tensor.Uint64, want: le64(0x1_0000_0007),
		},
		{
			name: "fp32 flags, INT64 ID",
			flags: []flag{
				{"S", "CONTROL_SEQUENCE_START", "fp32_false_true: [ 0.5, 1.5 ]", tensor.FP32, lef(0.5), lef(1.5)},
				{"E", "CONTROL_SEQUENCE_END", "fp32_false_true: [ 0, 1 ]", tensor.FP32, lef(0), lef(1)},
				{"R", "CONTROL_SEQUENCE_READY", "fp32_false_true: [ -1, 1 ]", tensor.FP32, lef(-1), lef(1)},
			},
			corrid: "TYPE_INT64", id: 1<<63 + 5, dt: tensor.Int64, want: le64(1<<63 + 5),
		},
		{
			name: "bool flags, UINT32 ID",
			flags: []flag{
				{"S", "CONTROL_SEQUENCE_START", "bool_false_true: [ false, true ]", tensor.Bool, []byte{0}, []byte{1}},
				{"E", "CONTROL_SEQUENCE_END", "bool_false_true: [ true, false ]", tensor.Bool, []byte{1}, []byte{0}},
				{"R", "CONTROL_SEQUENCE_READY", "bool_false_true: [ false, true ]", tensor.Bool, []byte{0}, []byte{1}},
			},
			corrid: "TYPE_UINT32", id: 0x1_0000_0007, dt: tensor.Uint32, want: le32(7), // the low 32 bits
		},
		{
			name: "mixed flags, INT32 ID",
			flags: []flag{
				{"S", "CONTROL_SEQUENCE_START", "bool_false_true: [ false, true ]", tensor.Bool, []byte{0}, []byte{1}},
				{"R", "CONTROL_SEQUENCE_READY", "int32_false_true: [ 0, 1 ]", tensor.Int32, le32(0), le32(1)},
			},
			corrid: "TYPE_INT32", id: 0xffff_ffff_ffff_fffe, dt: tensor.Int32, want: le32(-2),
		},
		{
			name: "STRING ID",
			flags: []flag{
				{"S", "CONTROL_SEQUENCE_START", "int32_false_true: [ 0, 1 ]", tensor.Int32, le32(0), le32(1)},
				{"E", "CONTROL_SEQUENCE_END", "fp32_false_true: [ 0, 1 ]", tensor.FP32, lef(0), lef(1)},
			},
			corrid: "TYPE_STRING", ids: "séquence-42", dt: tensor.Bytes,
		},
	}
	for _, c := range cases {
		for _, mbs := range []int{4, 0} {
			t.Run(fmt.Sprintf("%s/max_batch_size_%d", c.name, mbs), func(t *testing.T) {
				var controls []string
				for _, f := range c.flags {
					controls = append(controls, fmt.Sprintf(`{ name: %q control [ { kind: %s %s } ] }`, f.name, f.kind, f.values))
				}
				controls = append(controls, fmt.Sprintf(`{ name: "ID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: %s } ] }`, c.corrid))
				cfg := fmt.Sprintf(`backend: "rec"
max_batch_size: %d
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching { max_sequence_idle_microseconds: 60000000 control_input [ %s ] }
`, mbs, strings.Join(controls, ",\n"))
				var (
					mu   sync.Mutex
					seen []map[string]tensor.Tensor // the inputs of each request, in order
				)
				rec := backend.Func(func(ctx context.Context, b *backend.Batch) error {
					for _, r := range b.Requests {
						in := map[string]tensor.Tensor{}
						for _, x := range r.Inputs {
							x.Shape, x.Data = x.Shape.Clone(), bytes.Clone(x.Data)
							in[x.Name] = x
						}
						mu.Lock()
						seen = append(seen, in)
						mu.Unlock()
						y := in["X"]
						y.Name = "Y"
						r.SetOutput(y)
					}
					return nil
				})
				srv := newServer(t, map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""}, triton.WithBackend("rec", rec))
				shape := tensor.Shape{1}
				if mbs > 0 {
					shape = row
				}
				steps := []struct{ start, end bool }{{true, false}, {false, false}, {false, true}, {true, true}}
				for i, s := range steps {
					req := seqRequest(t, "m", c.id, s.start, s.end, shape, int32(i))
					if c.ids != "" {
						req.SequenceID, req.SequenceIDString = 0, c.ids
					}
					resp, err := srv.Infer(context.Background(), req)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if names := outputNames(resp); !slices.Equal(names, []string{"Y"}) {
						t.Errorf("step %d: outputs %v, want only Y", i, names)
					}
				}
				if len(seen) != len(steps) {
					t.Fatalf("the backend saw %d requests, want %d", len(seen), len(steps))
				}
				for i, s := range steps {
					in := seen[i]
					if len(in) != 2+len(c.flags) {
						t.Errorf("step %d: the backend got inputs %v", i, slices.Sorted(maps.Keys(in)))
					}
					for _, f := range c.flags {
						on := map[string]bool{"CONTROL_SEQUENCE_START": s.start, "CONTROL_SEQUENCE_END": s.end, "CONTROL_SEQUENCE_READY": true}[f.kind]
						want := f.f
						if on {
							want = f.t
						}
						got, ok := in[f.name]
						switch {
						case !ok:
							t.Errorf("step %d: no control %s", i, f.name)
						case got.DataType != f.dt || !got.Shape.Equal(shape) || !bytes.Equal(got.Data, want):
							t.Errorf("step %d: control %s is %v %v %v, want %v %v %v", i, f.name, got.DataType, got.Shape, got.Data, f.dt, shape, want)
						}
					}
					id, ok := in["ID"]
					if !ok {
						t.Fatalf("step %d: no CORRID control", i)
					}
					if id.DataType != c.dt || !id.Shape.Equal(shape) {
						t.Errorf("step %d: CORRID is %v %v, want %v %v", i, id.DataType, id.Shape, c.dt, shape)
					}
					if c.ids != "" {
						if got, err := tensor.Strings(id); err != nil || !slices.Equal(got, []string{c.ids}) {
							t.Errorf("step %d: CORRID %q (%v), want %q", i, got, err, c.ids)
						}
					} else if !bytes.Equal(id.Data, c.want) {
						t.Errorf("step %d: CORRID data %v, want %v", i, id.Data, c.want)
					}
				}
			})
		}
	}
}

// vecModel is a model whose state has a variable dimension: SUM = ACC_OUT
// = ACC_IN + X·(k+1) for its k-th element.
func vecModel(mbs int, initial string) string {
	return fmt.Sprintf(`backend: "vec"
max_batch_size: %d
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ -1 ] %s } ]
}
`, mbs, initial)
}

var vecSum = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		x, _, err := reqInput[int32](r, "X")
		if err != nil {
			return err
		}
		acc, shape, err := reqInput[int32](r, "ACC_IN")
		if err != nil {
			return err
		}
		next := make([]int32, len(acc))
		for k := range acc {
			next[k] = acc[k] + x[0]*int32(k+1)
		}
		for _, name := range []string{"SUM", "ACC_OUT"} {
			t, err := tensor.From(name, shape.Clone(), next)
			if err != nil {
				return err
			}
			r.SetOutput(t)
		}
	}
	return nil
})

// TestSequenceInitialState: the state starts zero (variable dimensions as
// 1), as zero_data, or from an initial_state data_file, with the initial
// state's dims; a START on a live sequence restarts from it; after END only
// a START is accepted.
func TestSequenceInitialState(t *testing.T) {
	le := func(vals ...int32) string {
		var b []byte
		for _, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		return string(b)
	}
	for _, mbs := range []int{4, 0} {
		shape := tensor.Shape{1}
		if mbs > 0 {
			shape = row
		}
		for _, c := range []struct {
			name, initial string
			first         []int32 // SUM of a first request with X = 1
		}{
			{"uninitialized", "", []int32{1}},
			{"zero_data", `initial_state { name: "z" data_type: TYPE_INT32 dims: [ 3 ] zero_data: true }`, []int32{1, 2, 3}},
			{"data_file", `initial_state { name: "f" data_type: TYPE_INT32 dims: [ 2 ] data_file: "acc.bin" }`, []int32{101, 202}},
		} {
			t.Run(fmt.Sprintf("%s/max_batch_size_%d", c.name, mbs), func(t *testing.T) {
				srv := newServer(t, map[string]string{"m/config.pbtxt": vecModel(mbs, c.initial), "m/1/model": "",
					"m/initial_state/acc.bin": le(100, 200)}, triton.WithBackend("vec", vecSum))
				step := func(id uint64, start, end bool, x int32) ([]int32, error) {
					resp, err := srv.Infer(context.Background(), seqRequest(t, "m", id, start, end, shape, x))
					if err != nil {
						return nil, err
					}
					return slices.Clone(outputInt32(t, resp, "SUM")), nil
				}
				must := func(id uint64, start, end bool, x int32, want []int32) {
					t.Helper()
					got, err := step(id, start, end, x)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("sequence %d, X %d: SUM %v, want %v", id, x, got, want)
					}
				}
				// plus(n) is the initial state after adding X's that sum to n.
				plus := func(n int32) []int32 {
					out := slices.Clone(c.first)
					for k := range out {
						out[k] += (n - 1) * int32(k+1)
					}
					return out
				}
				must(1, true, false, 1, plus(1))
				must(2, true, false, 5, plus(5)) // another sequence, its own state
				must(1, false, false, 2, plus(3))
				must(1, true, false, 4, plus(4)) // START on a live sequence: restart
				must(1, false, true, 1, plus(5)) // END
				_, err := step(1, false, false, 1)
				wantError(t, err, triton.InvalidArgument, "sequence 1", "must specify the START flag on the first request of the sequence")
				must(1, true, true, 7, plus(7)) // a new sequence of one request
				must(2, false, true, 1, plus(6))
			})
		}
	}
}

// TestSequenceStateOutput: a state output the config also lists in
// `output` is returned when asked for (or when all outputs are); otherwise
// it stays hidden, and the state advances either way.
func TestSequenceStateOutput(t *testing.T) {
	listed := sumModel{mbs: 4, outputs: `, { name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] }`}
	srv := newServer(t, listed.repo(), triton.WithBackend("sum", stateSum(nil)))
	ctx := context.Background()
	for i, c := range []struct {
		outputs []string
		want    map[string]int32
	}{
		{nil, map[string]int32{"SUM": 1, "ACC_OUT": 1}},
		{[]string{"SUM"}, map[string]int32{"SUM": 3}},
		{[]string{"ACC_OUT"}, map[string]int32{"ACC_OUT": 6}},
		{[]string{"ACC_OUT", "SUM"}, map[string]int32{"SUM": 10, "ACC_OUT": 10}},
	} {
		req := seqRequest(t, "m", 9, i == 0, false, row, int32(i+1))
		req.Outputs = c.outputs
		resp, err := srv.Infer(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if names := outputNames(resp); len(names) != len(c.want) {
			t.Errorf("outputs %v: got %v", c.outputs, names)
		}
		for name, want := range c.want {
			if got := outputInt32(t, resp, name)[0]; got != want {
				t.Errorf("outputs %v: %s = %d, want %d", c.outputs, name, got, want)
			}
		}
	}

	hidden := newServer(t, sumModel{mbs: 4}.repo(), triton.WithBackend("sum", stateSum(nil)))
	req := seqRequest(t, "m", 9, true, false, row, 1)
	req.Outputs = []string{"ACC_OUT"}
	_, err := hidden.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "unexpected inference output 'ACC_OUT'")
	for i, outputs := range [][]string{nil, {"SUM"}} {
		req := seqRequest(t, "m", 9, i == 0, false, row, 1)
		req.Outputs = outputs
		resp, err := hidden.Infer(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if names := outputNames(resp); !slices.Equal(names, []string{"SUM"}) || outputInt32(t, resp, "SUM")[0] != int32(i+1) {
			t.Errorf("outputs %v: got %v %v", outputs, names, resp.Outputs)
		}
	}
}

// TestSequenceBatchAxis: a state laid out [2, batch, 3] (batch_axis 1,
// given under either name of the state or both) is gathered along its
// batch axis for a batch of several sequences and scattered back per
// sequence.
func TestSequenceBatchAxis(t *testing.T) {
	enc := func(id uint64, step int32, l, j int) int32 { return int32(id)*10_000 + step*100 + int32(l*10+j) }
	for name, params := range map[string]string{
		"input name":  `parameters { key: "batch_axis:H_IN" value: { string_value: "1" } }`,
		"output name": `parameters { key: "batch_axis:H_OUT" value: { string_value: "1" } }`,
		"both names":  `parameters [ { key: "batch_axis:H_IN" value: { string_value: "1" } }, { key: "batch_axis:H_OUT" value: { string_value: "1" } } ]`,
	} {
		t.Run(name, func(t *testing.T) {
			const sequences, steps = 4, 8
			cfg := fmt.Sprintf(`backend: "axis"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000000 }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [ { input_name: "H_IN" output_name: "H_OUT" data_type: TYPE_INT32 dims: [ 2, 3 ] } ]
}
%s
`, params)
			var mu sync.Mutex
			var sizes []int
			axis := backend.Func(func(ctx context.Context, b *backend.Batch) error {
				n := len(b.Requests)
				mu.Lock()
				sizes = append(sizes, n)
				mu.Unlock()
				if l := b.Layout("H_IN"); l.Axis != 1 {
					return fmt.Errorf("layout of H_IN: %+v", l)
				}
				h, shape, err := batchInput[int32](b, "H_IN")
				if err != nil {
					return err
				}
				if want := (tensor.Shape{2, int64(n), 3}); !shape.Equal(want) {
					return fmt.Errorf("H_IN gathered as %v, want %v", shape, want)
				}
				start, _, err := batchInput[int32](b, "START")
				if err != nil {
					return err
				}
				ids, _, err := batchInput[uint64](b, "CORRID")
				if err != nil {
					return err
				}
				x, _, err := batchInput[int32](b, "X")
				if err != nil {
					return err
				}
				out := make([]int32, len(h))
				for i, r := range b.Requests {
					if in, ok := r.Input("H_IN"); !ok || !in.Shape.Equal(tensor.Shape{2, 1, 3}) {
						r.Fail(fmt.Errorf("request's H_IN is %v", in.Shape))
					}
					for l := range 2 {
						for j := range 3 {
							k := (l*n+i)*3 + j
							want := int32(0)
							if start[i] == 0 {
								want = enc(ids[i], x[i]-1, l, j)
							}
							if h[k] != want {
								r.Fail(fmt.Errorf("sequence %d step %d: H_IN[%d][%d][%d] = %d, want %d", ids[i], x[i], l, i, j, h[k], want))
							}
							out[k] = enc(ids[i], x[i], l, j)
						}
					}
				}
				hOut, err := tensor.From("H_OUT", tensor.Shape{2, int64(n), 3}, out)
				if err != nil {
					return err
				}
				if err := b.SetOutput(hOut); err != nil {
					return err
				}
				y, err := tensor.From("Y", tensor.Shape{int64(n), 1}, slices.Clone(x))
				if err != nil {
					return err
				}
				return b.SetOutput(y)
			})
			srv := newServer(t, map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""}, triton.WithBackend("axis", axis))
			var g errgroup.Group
			for s := range sequences {
				g.Go(func() error {
					for step := range int32(steps) {
						req := seqRequest(t, "m", uint64(s+1), step == 0, step == steps-1, row, step)
						resp, err := srv.Infer(context.Background(), req)
						if err != nil {
							return err
						}
						if y, ok := resp.Output("Y"); !ok || len(resp.Outputs) != 1 || !bytes.Equal(y.Data, req.Inputs[0].Data) {
							return fmt.Errorf("sequence %d step %d: outputs %v", s+1, step, resp.Outputs)
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if slices.Max(sizes) != sequences {
				t.Errorf("batch sizes %v: the sequences never ran in one batch", sizes)
			}
		})
	}
}

// TestSequenceGrowingState: a time-major state [steps, batch, 2] that grows
// by a step per request: sequences batch together only while their states
// have the same length (otherwise the state could not be gathered). It runs
// in a synctest bubble: requests sent together all reach the queue within
// the queue delay, which passes on the bubble's clock, so the batches are
// known exactly.
func TestSequenceGrowingState(t *testing.T) { synctest.Test(t, testSequenceGrowingState) }

func testSequenceGrowingState(t *testing.T) {
	cfg := `backend: "grow"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 100000 }
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "KV_IN" output_name: "KV_OUT" data_type: TYPE_INT32 dims: [ -1, 2 ] } ]
}
parameters { key: "batch_axis:KV_IN" value: { string_value: "1" } }
`
	var mu sync.Mutex
	var sizes []int
	// Y is the length of the state the request saw; KV_OUT appends [X, X].
	grow := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		n := len(b.Requests)
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
		kv, shape, err := batchInput[int32](b, "KV_IN")
		if err != nil {
			return err
		}
		steps := int(shape[0])
		for i, r := range b.Requests {
			x, xs, err := reqInput[int32](r, "X")
			if err != nil {
				return err
			}
			out := make([]int32, 0, 2*(steps+1))
			for l := range steps {
				out = append(out, kv[(l*n+i)*2:(l*n+i)*2+2]...)
			}
			out = append(out, x[0], x[0])
			next, _ := tensor.From("KV_OUT", tensor.Shape{int64(steps + 1), 1, 2}, out)
			y, _ := tensor.From("Y", xs.Clone(), []int32{int32(steps)})
			r.SetOutput(next)
			r.SetOutput(y)
		}
		return nil
	})
	srv := newServer(t, map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""}, triton.WithBackend("grow", grow))
	// together runs one request of each sequence at once, and checks the
	// lengths of state they saw.
	together := func(ids []uint64, start bool, want []int32) {
		t.Helper()
		var g errgroup.Group
		for k, id := range ids {
			g.Go(func() error {
				resp, err := srv.Infer(context.Background(), seqRequest(t, "m", id, start, false, row, int32(id)))
				if err != nil {
					return err
				}
				if got, _ := tensor.View[int32](resp.Outputs[0]); got[0] != want[k] {
					return fmt.Errorf("sequence %d saw a state of %d steps, want %d", id, got[0], want[k])
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	together([]uint64{1}, true, []int32{1})
	together([]uint64{1}, false, []int32{2})
	together([]uint64{2}, true, []int32{1})
	together([]uint64{1, 2}, false, []int32{3, 2})
	together([]uint64{1, 2}, false, []int32{4, 3})
	// Equal lengths batch.
	together([]uint64{3, 4}, true, []int32{1, 1})
	together([]uint64{3, 4}, false, []int32{2, 2})
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, 1, 1, 1, 1, 1, 1, 2, 2}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v, want %v: only the sequences of equal state length batch", sizes, want)
	}
}

// TestSequenceErrors: the request errors of a sequence model, with Triton's
// codes and messages.
func TestSequenceErrors(t *testing.T) {
	srv := newServer(t, map[string]string{
		"num/config.pbtxt": sumModel{mbs: 4}.config(),
		"num/1/model":      "",
		"str/config.pbtxt": strings.Replace(sumModel{mbs: 4}.config(), "TYPE_UINT64", "TYPE_STRING", 1),
		"str/1/model":      "",
	}, triton.WithBackend("sum", stateSum(nil)))
	ctx := context.Background()

	_, err := srv.Infer(ctx, seqRequest(t, "num", 0, true, false, row, 1))
	wantError(t, err, triton.InvalidArgument, "inference request to model 'num' must specify a non-zero or non-empty correlation ID")

	req := seqRequest(t, "num", 1, true, false, row, 1)
	req.Inputs[0] = int32s(t, "X", tensor.Shape{2, 1}, 1, 2)
	_, err = srv.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "inference request to model 'num' must specify batch-size 1 due to requirements of sequence batcher")

	_, err = srv.Infer(ctx, seqRequest(t, "num", 1, false, false, row, 1))
	wantError(t, err, triton.InvalidArgument, "inference request for sequence 1 to model 'num' must specify the START flag on the first request of the sequence")

	req = seqRequest(t, "num", 0, true, false, row, 1)
	req.SequenceIDString = "abc"
	_, err = srv.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "model 'num'", "string correlation ID")

	_, err = srv.Infer(ctx, seqRequest(t, "str", 7, true, false, row, 1))
	wantError(t, err, triton.InvalidArgument, "model 'str'", "numeric correlation ID", "TYPE_STRING")

	req.Model = "str"
	_, err = srv.Infer(ctx, req)
	if err != nil {
		t.Fatalf("a string ID for a TYPE_STRING model: %v", err)
	}
	req.SequenceStart = false
	req.SequenceIDString = "abd"
	_, err = srv.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "sequence abd to model 'str' must specify the START flag")

	// None of it opened a sequence.
	_, err = srv.Infer(ctx, seqRequest(t, "num", 1, false, false, row, 1))
	wantError(t, err, triton.InvalidArgument, "must specify the START flag")
}

// TestSequenceBacklog: beyond the model's capacity of live sequences a
// START is refused (sequence_backlog reject) or waits for an END (the
// default), until its deadline, or until the server closes.
func TestSequenceBacklog(t *testing.T) {
	ctx := context.Background()
	t.Run("reject", func(t *testing.T) {
		m := sumModel{mbs: 4, seq: `oldest { max_candidate_sequences: 2 }`,
			extra: `parameters { key: "sequence_backlog" value: { string_value: "reject" } }`}
		srv := newServer(t, m.repo(), triton.WithBackend("sum", stateSum(nil)))
		sumOf(t, srv, seqRequest(t, "m", 1, true, false, row, 1))
		sumOf(t, srv, seqRequest(t, "m", 2, true, false, row, 2))
		_, err := srv.Infer(ctx, seqRequest(t, "m", 3, true, false, row, 3))
		wantError(t, err, triton.Unavailable, "model 'm' has 2 live sequences, its capacity", "sequence 3 cannot start now")
		if got := sumOf(t, srv, seqRequest(t, "m", 2, true, false, row, 5)); got != 5 { // a restart needs no room
			t.Errorf("restart: SUM %d", got)
		}
		sumOf(t, srv, seqRequest(t, "m", 1, false, true, row, 1))
		if got := sumOf(t, srv, seqRequest(t, "m", 3, true, false, row, 3)); got != 3 {
			t.Errorf("after an END: SUM %d", got)
		}
		_, err = srv.Infer(ctx, seqRequest(t, "m", 4, true, false, row, 3))
		wantError(t, err, triton.Unavailable, "capacity")
	})
	// max_batch_size 0, one instance: one live sequence.
	m := sumModel{}
	t.Run("wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t, m.repo(), triton.WithBackend("sum", stateSum(nil)))
			one := tensor.Shape{1}
			sumOf(t, srv, seqRequest(t, "m", 1, true, false, one, 1))
			waiting := inferAsync(ctx, srv, seqRequest(t, "m", 2, true, false, one, 20))
			waitBlocked(t, waiting) // waiting for room
			dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
			begun := time.Now()
			_, err := srv.Infer(dctx, seqRequest(t, "m", 3, true, false, one, 30))
			wantError(t, err, triton.DeadlineExceeded, "waiting for room for sequence 3", "1 live sequences")
			if d := time.Since(begun); d != 30*time.Millisecond {
				t.Errorf("sequence 3 gave up after %v, want its deadline, 30ms", d)
			}
			select {
			case r := <-waiting:
				t.Fatalf("sequence 2 started while sequence 1 was live: %v", r.err)
			default:
			}
			if got := sumOf(t, srv, seqRequest(t, "m", 1, false, false, one, 1)); got != 2 {
				t.Errorf("sequence 1: SUM %d, want 2", got)
			}
			if got := sumOf(t, srv, seqRequest(t, "m", 1, false, true, one, 1)); got != 3 {
				t.Errorf("sequence 1: SUM %d, want 3", got)
			}
			r := <-waiting
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := outputInt32(t, r.resp, "SUM")[0]; got != 20 {
				t.Errorf("sequence 2: SUM %d, want 20", got)
			}
		})
	})
	t.Run("close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(t, m.repo(), triton.WithBackend("sum", stateSum(nil)))
			one := tensor.Shape{1}
			sumOf(t, srv, seqRequest(t, "m", 1, true, false, one, 1))
			waiting := inferAsync(ctx, srv, seqRequest(t, "m", 2, true, false, one, 20))
			waitBlocked(t, waiting) // waiting for room
			closed := make(chan error, 1)
			go func() { closed <- srv.Close() }()
			select {
			case r := <-waiting:
				wantError(t, r.err, triton.Unavailable, "waiting for room for sequence 2")
			case <-time.After(10 * time.Second):
				t.Fatal("a START waiting for room holds up Close")
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
		})
	})
}

// TestSequenceFailingRequest: a request the backend fails changes neither
// its sequence's state nor that of the sequences in its batch. It runs in a
// synctest bubble, so that the two requests of each step reach the queue
// within its delay and batch, however slow the machine.
func TestSequenceFailingRequest(t *testing.T) { synctest.Test(t, testSequenceFailingRequest) }

func testSequenceFailingRequest(t *testing.T) {
	var mu sync.Mutex
	var failedBatch int // the size of the batch that held the failing request
	m := sumModel{mbs: 4, seq: `oldest { max_candidate_sequences: 2 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 2000000 }`}
	srv := newServer(t, m.repo(), triton.WithBackend("sum", backend.Func(func(ctx context.Context, b *backend.Batch) error {
		return stateSum(func(r *backend.Request, x int32) error {
			if x < 0 {
				mu.Lock()
				failedBatch = len(b.Requests)
				mu.Unlock()
				return fmt.Errorf("negative X %d", x)
			}
			return nil
		})(ctx, b)
	})))
	steps := []struct{ a, b int32 }{{1, 10}, {-1, 5}, {2, 1}, {-3, -4}, {4, 2}}
	wantA, wantB := []int32{1, 0, 3, 0, 7}, []int32{10, 15, 16, 0, 18}
	for i, s := range steps {
		var g errgroup.Group
		var gotA, gotB int32
		var errA, errB error
		g.Go(func() error {
			resp, err := srv.Infer(context.Background(), seqRequest(t, "m", 1, i == 0, false, row, s.a))
			if errA = err; err == nil {
				gotA = outputInt32(t, resp, "SUM")[0]
			}
			return nil
		})
		g.Go(func() error {
			resp, err := srv.Infer(context.Background(), seqRequest(t, "m", 2, i == 0, false, row, s.b))
			if errB = err; err == nil {
				gotB = outputInt32(t, resp, "SUM")[0]
			}
			return nil
		})
		_ = g.Wait()
		for _, c := range []struct {
			x, got, want int32
			err          error
		}{{s.a, gotA, wantA[i], errA}, {s.b, gotB, wantB[i], errB}} {
			if c.x < 0 {
				wantError(t, c.err, triton.Internal, fmt.Sprintf("negative X %d", c.x))
				continue
			}
			if c.err != nil || c.got != c.want {
				t.Errorf("step %d, X %d: SUM %d (%v), want %d", i, c.x, c.got, c.err, c.want)
			}
		}
	}
	if failedBatch != 2 {
		t.Errorf("the failing requests ran in batches of %d, want 2 (with the other sequence)", failedBatch)
	}
}

// TestSequenceCancelWhileWaiting: a request cancelled while it waits for its
// turn behind a slow request leaves; the later requests of its sequence
// still run, in order, without it.
func TestSequenceCancelWhileWaiting(t *testing.T) {
	for _, mbs := range []int{0, 4} {
		t.Run(fmt.Sprintf("max_batch_size_%d", mbs), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				entered, release := make(chan struct{}), make(chan struct{})
				var mu sync.Mutex
				var seen []int32
				hook := func(r *backend.Request, x int32) error {
					mu.Lock()
					seen = append(seen, x)
					mu.Unlock()
					if x == 1 {
						entered <- struct{}{}
						<-release
					}
					return nil
				}
				shape := tensor.Shape{1}
				if mbs > 0 {
					shape = row
				}
				srv := newServer(t, sumModel{mbs: mbs}.repo(), triton.WithBackend("sum", stateSum(hook)))
				ctx := context.Background()
				first := inferAsync(ctx, srv, seqRequest(t, "m", 5, true, false, shape, 1))
				<-entered
				cctx, cancel := context.WithCancel(ctx)
				second := inferAsync(cctx, srv, seqRequest(t, "m", 5, false, false, shape, 2))
				waitBlocked(t, second) // waiting for its turn
				third := inferAsync(ctx, srv, seqRequest(t, "m", 5, false, false, shape, 4))
				waitBlocked(t, third)
				cancel()
				r := <-second
				wantError(t, r.err, triton.Cancelled, "context canceled")
				close(release)
				// As in Triton, the cancellation also cancels the request admitted
				// before it that had not run (third); the running one finishes.
				if r := <-first; r.err != nil || outputInt32(t, r.resp, "SUM")[0] != 1 {
					t.Fatalf("first: %v", r.err)
				}
				r = <-third
				wantError(t, r.err, triton.Cancelled, "was cancelled, so this one is cancelled too")
				// A request admitted after the cancellation runs on the state the
				// last request that ran left.
				if got := sumOf(t, srv, seqRequest(t, "m", 5, false, true, shape, 8)); got != 9 {
					t.Errorf("last SUM %d, want 9", got)
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(seen, []int32{1, 8}) {
					t.Errorf("the backend ran X %v, want [1 8]", seen)
				}
			})
		})
	}
}

// TestSequenceOrder: the requests of a sequence run one at a time in the
// order they were admitted, however many are sent at once.
func TestSequenceOrder(t *testing.T) {
	t.Run("admission order", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// ACC = ACC·10 + X: the result spells the order the requests ran in.
			entered, release := make(chan struct{}), make(chan struct{})
			be := backend.Func(func(ctx context.Context, b *backend.Batch) error {
				for _, r := range b.Requests {
					x, _, _ := reqInput[int32](r, "X")
					acc, _, _ := reqInput[int32](r, "ACC_IN")
					if x[0] == 1 {
						entered <- struct{}{}
						<-release
					}
					for _, name := range []string{"SUM", "ACC_OUT"} {
						t, _ := tensor.From(name, tensor.Shape{1, 1}, []int32{acc[0]*10 + x[0]})
						r.SetOutput(t)
					}
				}
				return nil
			})
			srv := newServer(t, sumModel{mbs: 4, count: 2, backend: "order"}.repo(), triton.WithBackend("order", be))
			ctx := context.Background()
			const n = 8
			var results [n]<-chan seqResult
			results[0] = inferAsync(ctx, srv, seqRequest(t, "m", 3, true, false, row, 1))
			<-entered
			for k := 1; k < n; k++ {
				results[k] = inferAsync(ctx, srv, seqRequest(t, "m", 3, false, k == n-1, row, int32(k+1)))
				waitBlocked(t, results[k]) // admitted, waiting for its turn
			}
			close(release)
			want := int32(0)
			for k := range n {
				want = want*10 + int32(k+1)
				r := <-results[k]
				if r.err != nil {
					t.Fatal(r.err)
				}
				if got := outputInt32(t, r.resp, "SUM")[0]; got != want {
					t.Errorf("request %d: SUM %d, want %d", k+1, got, want)
				}
			}
		})
	})
	t.Run("concurrent senders", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// A commutative sum, and a backend that catches two requests of one
			// sequence running at once, on four instances. In a synctest
			// bubble, a request's sleep lasts until every other goroutine
			// waits: any other request of its sequence that could run meets it
			// running.
			var mu sync.Mutex
			running := map[uint64]bool{}
			hook := func(r *backend.Request, x int32) error {
				mu.Lock()
				busy := running[r.SequenceID]
				running[r.SequenceID] = true
				mu.Unlock()
				if busy {
					return fmt.Errorf("two requests of sequence %d run at once", r.SequenceID)
				}
				time.Sleep(50 * time.Microsecond)
				mu.Lock()
				running[r.SequenceID] = false
				mu.Unlock()
				return nil
			}
			srv := newServer(t, sumModel{mbs: 4, count: 4}.repo(), triton.WithBackend("sum", stateSum(hook)))
			const senders, each = 16, 8
			var g errgroup.Group
			for id := uint64(1); id <= 2; id++ {
				sumOf(t, srv, seqRequest(t, "m", id, true, false, row, 0))
				for s := range senders {
					g.Go(func() error {
						for i := range each {
							if _, err := srv.Infer(context.Background(), seqRequest(t, "m", id, false, false, row, int32(s*each+i))); err != nil {
								return err
							}
						}
						return nil
					})
				}
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			const total = senders * each * (senders*each - 1) / 2
			for id := uint64(1); id <= 2; id++ {
				if got := sumOf(t, srv, seqRequest(t, "m", id, false, true, row, 0)); got != total {
					t.Errorf("sequence %d: SUM %d, want %d", id, got, total)
				}
			}
		})
	})
}

// seqObserver is a backend whose models implement backend.SequenceObserver:
// they record the sequences that end, by model, and catch SequenceEnded
// calls that overlap.
type seqObserver struct {
	mu      sync.Mutex
	events  map[string][]backend.SequenceEnd
	inside  atomic.Int32
	overlap atomic.Bool
}

func (o *seqObserver) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return &observedModel{o: o, name: spec.Name}, nil
}

func (o *seqObserver) ended(model string) []backend.SequenceEnd {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events[model])
}

func (o *seqObserver) has(model string, e backend.SequenceEnd) bool {
	return slices.Contains(o.ended(model), e)
}

type observedModel struct {
	o    *seqObserver
	name string
}

var _ backend.SequenceObserver = (*observedModel)(nil)

func (m *observedModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return stateSum(nil), nil
}

func (m *observedModel) Close() error { return nil }

func (m *observedModel) SequenceEnded(e backend.SequenceEnd) {
	if m.o.inside.Add(1) > 1 {
		m.o.overlap.Store(true)
	}
	time.Sleep(200 * time.Microsecond) // fake time: an overlapping call would meet this one
	m.o.mu.Lock()
	if m.o.events == nil {
		m.o.events = map[string][]backend.SequenceEnd{}
	}
	m.o.events[m.name] = append(m.o.events[m.name], e)
	m.o.mu.Unlock()
	m.o.inside.Add(-1)
}

// TestSequenceObserver: idle sequences are freed (and the backend told),
// END and closing the server end sequences with their reasons, and
// SequenceEnded is called once per sequence, never concurrently. It runs in
// a synctest bubble: idleness is measured on the bubble's clock.
func TestSequenceObserver(t *testing.T) { synctest.Test(t, testSequenceObserver) }

func testSequenceObserver(t *testing.T) {
	obs := &seqObserver{}
	short := sumModel{mbs: 4, idle: 20000, backend: "obs"}
	long := sumModel{mbs: 4, seq: `oldest { max_candidate_sequences: 64 }`, backend: "obs"}
	srv := newServer(t, map[string]string{
		"short/config.pbtxt": short.config(),
		"short/1/model":      "",
		"long/config.pbtxt":  strings.Replace(long.config(), "TYPE_UINT64", "TYPE_STRING", 1),
		"long/1/model":       "",
	}, triton.WithBackend("obs", obs))
	ctx := context.Background()

	// Idle: freed by the first sweep after 20ms without requests (sweeps
	// come every 5ms, a quarter of the idle time).
	sumOf(t, srv, seqRequest(t, "short", 1, true, false, row, 1))
	idle := backend.SequenceEnd{ID: 1, Reason: backend.SequenceIdle}
	time.Sleep(17 * time.Millisecond)
	if got := obs.ended("short"); len(got) != 0 {
		t.Fatalf("after 17ms idle: events %v, want none before 20ms", got)
	}
	time.Sleep(5 * time.Millisecond)
	if got := obs.ended("short"); !slices.Equal(got, []backend.SequenceEnd{idle}) {
		t.Fatalf("after 22ms idle: events %v, want %v", got, idle)
	}
	_, err := srv.Infer(ctx, seqRequest(t, "short", 1, false, false, row, 2))
	wantError(t, err, triton.InvalidArgument, "inference request for sequence 1 to model 'short' must specify the START flag")

	// END (here a sequence of one request, so that idleness cannot come
	// first): told before Infer returns, and only once.
	sumOf(t, srv, seqRequest(t, "short", 2, true, true, row, 1))
	if !obs.has("short", backend.SequenceEnd{ID: 2, Reason: backend.SequenceEndFlag}) {
		t.Errorf("after END: events %v", obs.ended("short"))
	}
	time.Sleep(60 * time.Millisecond) // three idle periods
	if got := obs.ended("short"); !slices.Equal(got, []backend.SequenceEnd{idle, {ID: 2, Reason: backend.SequenceEndFlag}}) {
		t.Errorf("events %v", got)
	}

	// Many sequences ending at once: string IDs, no overlapping calls.
	var g errgroup.Group
	for i := range 16 {
		g.Go(func() error {
			id := fmt.Sprintf("s-%02d", i)
			for step := range 3 {
				req := seqRequest(t, "long", 0, step == 0, step == 2, row, 1)
				req.SequenceID, req.SequenceIDString = 0, id
				if _, err := srv.Infer(ctx, req); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	got := obs.ended("long")
	if len(got) != 16 {
		t.Errorf("%d events for 16 sequences: %v", len(got), got)
	}
	for i := range 16 {
		if e := (backend.SequenceEnd{IDString: fmt.Sprintf("s-%02d", i), Reason: backend.SequenceEndFlag}); !slices.Contains(got, e) {
			t.Errorf("no %+v in %v", e, got)
		}
	}

	// Closing with live sequences.
	for _, id := range []string{"live-1", "live-2"} {
		req := seqRequest(t, "long", 0, true, false, row, 1)
		req.SequenceID, req.SequenceIDString = 0, id
		if _, err := srv.Infer(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	got = obs.ended("long")
	for _, id := range []string{"live-1", "live-2"} {
		if e := (backend.SequenceEnd{IDString: id, Reason: backend.SequenceClosed}); !slices.Contains(got, e) {
			t.Errorf("no %+v in %v", e, got)
		}
	}
	if len(got) != 18 {
		t.Errorf("%d events, want 18: %v", len(got), got)
	}
	if obs.overlap.Load() {
		t.Error("SequenceEnded was called concurrently with itself")
	}
	for _, r := range []backend.SequenceEndReason{backend.SequenceEndFlag, backend.SequenceIdle, backend.SequenceClosed} {
		if r.String() == "unknown" {
			t.Errorf("reason %d has no name", r)
		}
	}
}

// TestSequenceIdleNever: a max_sequence_idle_microseconds too large for a
// time.Duration means a very long time, not a negative one. In a synctest
// bubble, the sleep is 20ms of the bubble's clock, during which a sweeper
// that took the idle time for negative would free the sequence.
func TestSequenceIdleNever(t *testing.T) { synctest.Test(t, testSequenceIdleNever) }

func testSequenceIdleNever(t *testing.T) {
	m := sumModel{mbs: 4, idle: math.MaxUint64}
	srv := newServer(t, m.repo(), triton.WithBackend("sum", stateSum(nil)))
	sumOf(t, srv, seqRequest(t, "m", 1, true, false, row, 1))
	time.Sleep(20 * time.Millisecond)
	if got := sumOf(t, srv, seqRequest(t, "m", 1, false, true, row, 2)); got != 3 {
		t.Errorf("SUM %d, want 3", got)
	}
}

// loggingObserver is a backend whose models log, in one list, the requests
// they run and the SequenceEnded calls they get, which take a while. A
// request with X = 1 waits for release.
type loggingObserver struct {
	mu      sync.Mutex
	log     []string
	began   chan string // a SequenceEnded call began (model/id reason)
	entered chan struct{}
	release chan struct{}
}

func (o *loggingObserver) add(e string) {
	o.mu.Lock()
	o.log = append(o.log, e)
	o.mu.Unlock()
}

func (o *loggingObserver) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("%q", o.log)
}

// index returns the position of entry e in the log, or -1.
func (o *loggingObserver) index(e string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Index(o.log, e)
}

func (o *loggingObserver) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return &loggingModel{o: o, name: spec.Name}, nil
}

type loggingModel struct {
	o    *loggingObserver
	name string
}

func (m *loggingModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return stateSum(func(r *backend.Request, x int32) error {
		m.o.add(fmt.Sprintf("%s/%d run %d", m.name, r.SequenceID, x))
		if x == 1 {
			m.o.entered <- struct{}{}
			<-m.o.release
		}
		return nil
	}), nil
}

func (m *loggingModel) Close() error { return nil }

func (m *loggingModel) SequenceEnded(e backend.SequenceEnd) {
	what := fmt.Sprintf("%s/%d %v", m.name, e.ID, e.Reason)
	select {
	case m.o.began <- what:
	default:
	}
	time.Sleep(20 * time.Millisecond)
	m.o.add("told " + what)
}

// TestSequenceObserverBeforeRestart: a sequence's end reaches the observer
// before a new sequence of the same ID runs, after END and after idleness
// (a backend that frees its per-sequence state on SequenceEnded must not
// free the new sequence's). It runs in a synctest bubble: SequenceEnded's
// 20ms and the idle time pass on the bubble's clock.
func TestSequenceObserverBeforeRestart(t *testing.T) {
	synctest.Test(t, testSequenceObserverBeforeRestart)
}

func testSequenceObserverBeforeRestart(t *testing.T) {
	obs := &loggingObserver{began: make(chan string, 1), entered: make(chan struct{}), release: make(chan struct{})}
	srv := newServer(t, map[string]string{
		"endm/config.pbtxt":  sumModel{mbs: 4, backend: "log"}.config(),
		"endm/1/model":       "",
		"idlem/config.pbtxt": sumModel{mbs: 4, idle: 20000, backend: "log"}.config(),
		"idlem/1/model":      "",
	}, triton.WithBackend("log", obs))
	ctx := context.Background()

	sumOf(t, srv, seqRequest(t, "endm", 1, true, false, row, 5))
	end := inferAsync(ctx, srv, seqRequest(t, "endm", 1, false, true, row, 1))
	<-obs.entered
	restart := inferAsync(ctx, srv, seqRequest(t, "endm", 1, true, false, row, 7))
	waitBlocked(t, restart, end) // restart waits for its turn, behind end
	close(obs.release)
	for _, ch := range []<-chan seqResult{end, restart} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if told, run := obs.index("told endm/1 end"), obs.index("endm/1 run 7"); told < 0 || run < told {
		t.Errorf("the restart ran before the observer was told of the END: %v", obs)
	}
	if what := <-obs.began; what != "endm/1 end" {
		t.Errorf("SequenceEnded(%s), want endm/1 end", what)
	}

	sumOf(t, srv, seqRequest(t, "idlem", 2, true, false, row, 3))
	if what := <-obs.began; what != "idlem/2 idle" {
		t.Fatalf("SequenceEnded(%s), want idlem/2 idle", what)
	}
	if got := sumOf(t, srv, seqRequest(t, "idlem", 2, true, false, row, 9)); got != 9 {
		t.Errorf("restart after idleness: SUM %d, want 9", got)
	}
	if told, run := obs.index("told idlem/2 idle"), obs.index("idlem/2 run 9"); told < 0 || run < told {
		t.Errorf("the restart ran before the observer was told of the idleness: %v", obs)
	}
}

// TestSequenceBatchShared: an input marked batch_shared has no batch
// dimension; requests batch only with requests that give the same value,
// and the backend sees it once for the batch. It runs in a synctest bubble,
// so that requests sent together reach the queue within its delay: the
// batches of equal values are known exactly.
func TestSequenceBatchShared(t *testing.T) { synctest.Test(t, testSequenceBatchShared) }

func testSequenceBatchShared(t *testing.T) {
	// Model "same" waits long for full batches, "mixed" does not.
	cfg := `backend: "shared"
max_batch_size: 4
input [
  { name: "X" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "SR" data_type: TYPE_INT32 dims: [ 1 ] }
]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] max_queue_delay_microseconds: %d }
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
}
parameters { key: "batch_shared:SR" value: { string_value: "true" } }
`
	type batchRec struct {
		size int
		sr   int32
	}
	var mu sync.Mutex
	var batches []batchRec
	be := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		sr, shape, err := batchInput[int32](b, "SR")
		if err != nil {
			return err
		}
		if !shape.Equal(tensor.Shape{1}) {
			return fmt.Errorf("SR has shape %v", shape)
		}
		for _, r := range b.Requests {
			if v, _, err := reqInput[int32](r, "SR"); err != nil || v[0] != sr[0] {
				return fmt.Errorf("a batch of SR %d holds a request of SR %v (%v)", sr[0], v, err)
			}
		}
		x, xs, err := batchInput[int32](b, "X")
		if err != nil {
			return err
		}
		y := make([]int32, len(x))
		for i := range x {
			y[i] = x[i]*1000 + sr[0]
		}
		out, err := tensor.From("Y", xs.Clone(), y)
		if err != nil {
			return err
		}
		mu.Lock()
		batches = append(batches, batchRec{len(b.Requests), sr[0]})
		mu.Unlock()
		return b.SetOutput(out)
	})
	srv := newServer(t, map[string]string{
		"same/config.pbtxt":  fmt.Sprintf(cfg, 2_000_000),
		"same/1/model":       "",
		"mixed/config.pbtxt": fmt.Sprintf(cfg, 1000),
		"mixed/1/model":      "",
	}, triton.WithBackend("shared", be))
	ctx := context.Background()

	md, err := srv.ModelMetadata("same", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range md.Inputs {
		want := map[string][]int64{"X": {-1, 1}, "SR": {1}}[in.Name]
		if !slices.Equal(in.Shape, want) {
			t.Errorf("metadata: input %s has shape %v, want %v", in.Name, in.Shape, want)
		}
	}

	request := func(model string, id uint64, start bool, x, sr int32) *triton.InferRequest {
		req := seqRequest(t, model, id, start, false, row, x)
		req.Inputs = append(req.Inputs, int32s(t, "SR", tensor.Shape{1}, sr))
		return req
	}
	bad := request("same", 1, true, 1, 16)
	bad.Inputs[1] = int32s(t, "SR", tensor.Shape{1, 1}, 16)
	_, err = srv.Infer(ctx, bad)
	wantError(t, err, triton.InvalidArgument, "unexpected shape for input 'SR'", "Expected [1]")

	run := func(model string, step int, srOf func(id uint64) int32) {
		t.Helper()
		var g errgroup.Group
		for id := uint64(1); id <= 4; id++ {
			g.Go(func() error {
				x, sr := int32(step*10+int(id)), srOf(id)
				resp, err := srv.Infer(ctx, request(model, id, step == 0 || step == 3, x, sr))
				if err != nil {
					return err
				}
				if got, ok := resp.Output("Y"); !ok || !bytes.Equal(got.Data, int32s(t, "Y", row, x*1000+sr).Data) {
					return fmt.Errorf("sequence %d step %d: Y %v", id, step, got)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for step := range 3 { // equal values batch together
		run("same", step, func(uint64) int32 { return 16 })
	}
	mu.Lock()
	if want := []batchRec{{4, 16}, {4, 16}, {4, 16}}; !slices.Equal(batches, want) {
		t.Errorf("batches %v, want %v: the four requests of equal SR run as one batch at every step", batches, want)
	}
	batches = nil
	mu.Unlock()
	for step := 3; step < 8; step++ { // different values never share a batch
		run("mixed", step, func(id uint64) int32 { return 8 * int32(1+id%2) })
	}
	mu.Lock()
	defer mu.Unlock()
	rows := 0
	for _, b := range batches {
		rows += b.size
	}
	if rows != 5*4 {
		t.Errorf("batches %v hold %d requests, want 20", batches, rows)
	}
}

// TestSequenceConfigErrors: configurations the sequence batcher cannot run
// fail the load with errors that say why.
func TestSequenceConfigErrors(t *testing.T) {
	param := func(key, value string) string {
		return fmt.Sprintf(`parameters { key: %q value: { string_value: %q } }`, key, value)
	}
	cases := []struct {
		name  string
		model sumModel
		files []string
		want  []string
	}{
		{"batch_axis on an input", sumModel{mbs: 4, extra: param("batch_axis:X", "1")},
			nil, []string{`"batch_axis:X"`, "'X' is not a sequence_batching state tensor"}},
		{"batch_axis out of range", sumModel{mbs: 4, extra: param("batch_axis:ACC_IN", "2")},
			nil, []string{`"batch_axis:ACC_IN"`, "from 0 to 1", `got "2"`}},
		{"batch_axis negative", sumModel{mbs: 4, extra: param("batch_axis:ACC_OUT", "-1")},
			nil, []string{`"batch_axis:ACC_OUT"`, "from 0 to 1"}},
		{"batch_axis not a number", sumModel{mbs: 4, extra: param("batch_axis:ACC_IN", "one")},
			nil, []string{`got "one"`}},
		{"batch_shared on an unknown input", sumModel{mbs: 4, extra: param("batch_shared:SR", "true")},
			nil, []string{`"batch_shared:SR"`, "has no input 'SR'"}},
		{"batch_shared not a bool", sumModel{mbs: 4, extra: param("batch_shared:X", "sometimes")},
			nil, []string{`"batch_shared:X"`, "want true or false"}},
		{"batch_axis without batching", sumModel{extra: param("batch_axis:ACC_IN", "1")},
			nil, []string{`"batch_axis:ACC_IN"`, "does not batch (max_batch_size 0)"}},
		{"batch_shared without batching", sumModel{extra: param("batch_shared:X", "true")},
			nil, []string{`"batch_shared:X"`, "does not batch (max_batch_size 0)"}},
		{"control with one value", sumModel{mbs: 4, seq: `control_input [ { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 1 ] } ] } ]`},
			nil, []string{"CONTROL_SEQUENCE_END", "exactly 2 entries"}},
		{"control without values", sumModel{mbs: 4, seq: `control_input [ { name: "END" control [ { kind: CONTROL_SEQUENCE_END } ] } ]`},
			nil, []string{"CONTROL_SEQUENCE_END", "int32_false_true"}},
		{"initial_state data_file of the wrong size",
			sumModel{mbs: 4, state: `initial_state { name: "i" data_type: TYPE_INT32 dims: [ 1 ] data_file: "acc.bin" }`},
			[]string{"m/initial_state/acc.bin", "abc"}, []string{"state 'ACC_IN'", "data_file acc.bin has 3 bytes, want 4"}},
		{"initial_state data_file missing",
			sumModel{mbs: 4, state: `initial_state { name: "i" data_type: TYPE_INT32 dims: [ 1 ] data_file: "nope.bin" }`},
			nil, []string{"state 'ACC_IN'", "initial_state data_file", "nope.bin"}},
		{"initial_state dims", sumModel{mbs: 4, state: `initial_state { name: "i" data_type: TYPE_INT32 dims: [ 2 ] zero_data: true }`},
			nil, []string{"state 'ACC_IN'", "initial_state dims [2] do not match the state's dims [1]"}},
		{"sequence_backlog=bogus", sumModel{mbs: 4, extra: param("sequence_backlog", "bogus")},
			nil, []string{`"sequence_backlog"`, `want wait or reject, got "bogus"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := triton.New(triton.WithRepository(mapFS(c.model.repo(c.files...))), triton.WithBackend("sum", stateSum(nil)))
			wantError(t, err, triton.InvalidArgument, c.want...)
		})
	}
	// A CORRID of TYPE_FP32 (the sum model's CORRID retyped), and a state
	// whose two names are given different batch axes.
	cfg := strings.Replace(sumModel{mbs: 4}.config(), "TYPE_UINT64", "TYPE_FP32", 1)
	_, err := triton.New(triton.WithRepository(mapFS(map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""})), triton.WithBackend("sum", stateSum(nil)))
	wantError(t, err, triton.InvalidArgument, "CONTROL_SEQUENCE_CORRID", "TYPE_FP32")
	cfg = strings.Replace(sumModel{mbs: 4}.config(), `output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ]`, `output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 2, 3 ]`, 1) +
		param("batch_axis:ACC_IN", "1") + "\n" + param("batch_axis:ACC_OUT", "2")
	_, err = triton.New(triton.WithRepository(mapFS(map[string]string{"m/config.pbtxt": cfg, "m/1/model": ""})), triton.WithBackend("sum", stateSum(nil)))
	wantError(t, err, triton.InvalidArgument, "ACC_IN", "ACC_OUT", "batch ax")
}

// TestSequenceStress: 32 sequences of 50 requests each from 32 goroutines,
// restarted and ended at random, over two instances with room for 16 live
// sequences, two states (one batched along dimension 1) and every control,
// checked against a reference computed here.
func TestSequenceStress(t *testing.T) {
	const (
		sequences = 32
		steps     = 50
	)
	h0 := []int32{1, 2, 3, 4} // the initial state of H, [2, 2]
	var h0File []byte
	for _, v := range h0 {
		h0File = binary.LittleEndian.AppendUint32(h0File, uint32(v))
	}
	cfg := `backend: "stress"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  direct { max_queue_delay_microseconds: 100 }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  state [
    { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] },
    { input_name: "H_IN" output_name: "H_OUT" data_type: TYPE_INT32 dims: [ 2, 2 ]
      initial_state { name: "h0" data_type: TYPE_INT32 dims: [ 2, 2 ] data_file: "h0.bin" } }
  ]
}
parameters { key: "batch_axis:H_IN" value: { string_value: "1" } }
`
	// step is the model: ACC' = 3·ACC + X; H'[l][j] = 2·H[l][j] + X + 2l + j;
	// Y = ACC' + ΣH'.
	step := func(acc int32, h []int32, x int32) (int32, []int32, int32) {
		acc = 3*acc + x
		next := make([]int32, 4)
		y := acc
		for k := range next {
			next[k] = 2*h[k] + x + int32(k)
			y += next[k]
		}
		return acc, next, y
	}
	var maxBatch atomic.Int32
	be := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		n := len(b.Requests)
		if int32(n) > maxBatch.Load() {
			maxBatch.Store(int32(n)) // one scheduler per instance: a rough maximum is enough
		}
		ids := map[uint64]bool{}
		for _, r := range b.Requests {
			if ids[r.SequenceID] {
				return fmt.Errorf("two requests of sequence %d in one batch", r.SequenceID)
			}
			ids[r.SequenceID] = true
		}
		x, _, err := batchInput[int32](b, "X")
		if err != nil {
			return err
		}
		acc, _, err := batchInput[int32](b, "ACC_IN")
		if err != nil {
			return err
		}
		h, hs, err := batchInput[int32](b, "H_IN")
		if err != nil {
			return err
		}
		if !hs.Equal(tensor.Shape{2, int64(n), 2}) {
			return fmt.Errorf("H_IN has shape %v for %d requests", hs, n)
		}
		start, _, err := batchInput[int32](b, "START")
		if err != nil {
			return err
		}
		end, _, err := batchInput[bool](b, "END")
		if err != nil {
			return err
		}
		ready, _, err := batchInput[float32](b, "READY")
		if err != nil {
			return err
		}
		corrid, _, err := batchInput[uint64](b, "CORRID")
		if err != nil {
			return err
		}
		accOut, hOut, y := make([]int32, n), make([]int32, 4*n), make([]int32, n)
		for i, r := range b.Requests {
			if corrid[i] != r.SequenceID || (start[i] == 1) != r.SequenceStart || end[i] != r.SequenceEnd || ready[i] != 1 {
				r.Fail(fmt.Errorf("row %d: controls %d %v %v %v for request %+v", i, corrid[i], start[i], end[i], ready[i], r))
				continue
			}
			hi := make([]int32, 4)
			for l := range 2 {
				for j := range 2 {
					hi[l*2+j] = h[(l*n+i)*2+j]
				}
			}
			a, hn, yi := step(acc[i], hi, x[i])
			accOut[i], y[i] = a, yi
			for l := range 2 {
				for j := range 2 {
					hOut[(l*n+i)*2+j] = hn[l*2+j]
				}
			}
		}
		for _, o := range []struct {
			name  string
			shape tensor.Shape
			vals  []int32
		}{{"ACC_OUT", tensor.Shape{int64(n), 1}, accOut}, {"H_OUT", tensor.Shape{2, int64(n), 2}, hOut}, {"Y", tensor.Shape{int64(n), 1}, y}} {
			t, err := tensor.From(o.name, o.shape, o.vals)
			if err != nil {
				return err
			}
			if err := b.SetOutput(t); err != nil {
				return err
			}
		}
		return nil
	})
	srv := newServer(t, map[string]string{"m/config.pbtxt": cfg, "m/1/model": "", "m/initial_state/h0.bin": string(h0File)},
		triton.WithBackend("stress", be))
	var g errgroup.Group
	for s := range sequences {
		g.Go(func() error {
			rng := rand.New(rand.NewPCG(uint64(s), 7))
			id := uint64(s + 1)
			var acc int32
			var h []int32
			live := false
			for i := range steps {
				start := !live || rng.IntN(10) == 0
				end := i == steps-1 || rng.IntN(10) == 0
				x := int32(rng.IntN(100))
				if start {
					acc, h = 0, h0
				}
				var want int32
				acc, h, want = step(acc, h, x)
				resp, err := srv.Infer(context.Background(), seqRequest(t, "m", id, start, end, row, x))
				if err != nil {
					return fmt.Errorf("sequence %d step %d: %w", id, i, err)
				}
				y, ok := resp.Output("Y")
				if !ok || len(resp.Outputs) != 1 {
					return fmt.Errorf("sequence %d step %d: outputs %v", id, i, outputNames(resp))
				}
				if got, err := tensor.View[int32](y); err != nil || got[0] != want {
					return fmt.Errorf("sequence %d step %d (start %v): Y %v (%v), want %d", id, i, start, got, err, want)
				}
				live = !end
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("largest batch: %d", maxBatch.Load())
}
