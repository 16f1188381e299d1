package pytorch_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// stateConfig serves state.pt (forward(x, state) -> (x + state,
// x + state)) as an accumulator: the state's input and output are
// forward's argument 1 and output 1.
const stateConfig = `backend: "pytorch"
max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 60000000
  state [ { input_name: "STATE__1" output_name: "STATE_OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
}
`

// TestSequenceState runs two interleaved sequences on state.pt: each
// request's OUTPUT__0 is the running sum of its sequence's inputs, the
// server writing the state output back as the next state input; a new
// sequence on the same correlation ID starts from zero again.
func TestSequenceState(t *testing.T) {
	srv := newRepo(t).model("acc", "state.pt", stateConfig).Serve()
	step := func(id uint64, start, end bool, x []float32) []float32 {
		t.Helper()
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{
			Model: "acc", SequenceID: id, SequenceStart: start, SequenceEnd: end,
			Inputs: []tensor.Tensor{must(tensor.From("INPUT__0", tensor.Shape{1, 4}, x))},
		})
		if err != nil {
			t.Fatalf("sequence %d: %v", id, err)
		}
		for _, o := range resp.Outputs {
			if o.Name == "STATE_OUT__1" {
				t.Errorf("sequence %d: the state output reached the client", id)
			}
		}
		return floats(t, resp, "OUTPUT__0")
	}
	sums := map[uint64][]float32{1: make([]float32, 4), 2: make([]float32, 4)}
	for i := range 4 {
		for _, id := range []uint64{1, 2} {
			x := []float32{float32(i), float32(id), -1, 0.5}
			for k := range x {
				sums[id][k] += x[k]
			}
			if got := step(id, i == 0, i == 3, x); !slices.Equal(got, sums[id]) {
				t.Fatalf("sequence %d step %d: %v, want the running sum %v", id, i, got, sums[id])
			}
		}
	}
	if got := step(1, true, true, []float32{1, 1, 1, 1}); !slices.Equal(got, []float32{1, 1, 1, 1}) {
		t.Errorf("a new sequence on id 1: %v, want its first input (the state starts at zero)", got)
	}
}

// TestSequenceControls feeds the START and CORRID controls to forward at
// their <name>__<index> argument: addsub_args.pt computes x + control.
func TestSequenceControls(t *testing.T) {
	for _, c := range []struct {
		name, control string
		id            uint64
		start         bool
		want          float32
	}{
		{"start", `{ name: "START__1" control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ] }`, 5, true, 11},
		{"corrid", `{ name: "CORRID__1" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] }`, 42, true, 52},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newRepo(t).model(c.name, "addsub_args.pt", `backend: "pytorch"
max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "SUM__0" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "DIFF__1" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching { control_input [ `+c.control+` ] }`).Serve()
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{
				Model: c.name, SequenceID: c.id, SequenceStart: c.start,
				Inputs: []tensor.Tensor{must(tensor.From("INPUT__0", tensor.Shape{1, 1}, []float32{10}))},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := floats(t, resp, "SUM__0"); got[0] != c.want {
				t.Errorf("SUM__0 = %v, want %v (INPUT__0 + the control)", got, c.want)
			}
		})
	}
}

// TestSequenceControlErrors: controls count as forward arguments and must
// be named <name>__<index>.
func TestSequenceControlErrors(t *testing.T) {
	for _, c := range []struct{ name, control, want string }{
		{"count", `{ name: "START__2" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }`,
			"unable to load model 'count', configuration expects 3 inputs, model provides 2"},
		{"naming", `{ name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }`,
			"input 'START' does not follow <name>__<index> naming convention."},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := newRepo(t).model(c.name, "state.pt", `backend: "pytorch"
max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  control_input [ `+c.control+` ]
  state [ { input_name: "STATE__1" output_name: "STATE_OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
}`).Load(triton.WithStartupModels(c.name), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
