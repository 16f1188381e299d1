package onnxruntime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

// The sequence batcher's tensors as the server adds them: START is the
// CONTROL_SEQUENCE_START control (INT32, [1, 1] per request of a batching
// model), STATE_IN/STATE_OUT the implicit state. accumulate.onnx computes
// OUTPUT = INPUT + STATE_IN * (1 - START) and STATE_OUT = OUTPUT.
const accumulateConfig = `name: "accumulate"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
}
instance_group [ { kind: KIND_CPU count: 1 } ]
`

// accumulate_axis1.onnx keeps its state as [2, batch, 4]: OUTPUT = INPUT +
// STATE_IN[0] * (1 - START), STATE_OUT[j] = OUTPUT for j = 0, 1.
const accumulateAxis1Config = `name: "accumulate_axis1"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 2, 4 ] } ]
}
parameters { key: "batch_axis:STATE_IN" value: { string_value: "1" } }
instance_group [ { kind: KIND_CPU count: 1 } ]
`

// seqSpec writes <tmp>/<name>/1/model.onnx (a copy of testdata/models/file)
// and returns the spec of that model version with config parsed,
// normalized and validated as the server does. It needs the ONNX Runtime
// library (testenv.NeedLibrary).
func seqSpec(t *testing.T, name, file, config string) *backend.ModelSpec {
	t.Helper()
	testenv.NeedLibrary(t)
	data, err := os.ReadFile(filepath.Join("testdata", "models", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1", "model.onnx"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.pbtxt")
	cfg, err := repository.ParseConfig(path, []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name}); err != nil {
		t.Fatalf("config: %v", err)
	}
	return &backend.ModelSpec{Name: name, Version: 1, Config: cfg, FS: os.DirFS(dir), Dir: dir, Logger: zap.NewNop()}
}

// loadInstance loads spec with a fresh onnxruntime backend and creates one
// CPU instance; both are closed when the test ends.
func loadInstance(t *testing.T, spec *backend.ModelSpec) backend.Instance {
	t.Helper()
	m, err := onnxruntime.New().Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	inst, err := m.NewInstance(context.Background(), backend.InstanceSpec{
		Name: spec.Name + "_0", Group: spec.Config.GetInstanceGroup()[0], Kind: modelconfig.ModelInstanceGroup_KIND_CPU, DeviceID: -1,
	})
	if err != nil {
		_ = m.Close()
		t.Fatalf("NewInstance: %v", err)
	}
	t.Cleanup(func() {
		if err := errors.Join(inst.Close(), m.Close()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return inst
}

// seqRequest is one request of a sequence as the server hands it to the
// backend: the client's INPUT plus START [1, 1] and STATE_IN (stateShape,
// the batch dimension of size 1 included).
func seqRequest(t *testing.T, id string, start bool, input []float32, state []float32, stateShape tensor.Shape, requested ...string) *backend.Request {
	t.Helper()
	s := int32(0)
	if start {
		s = 1
	}
	return &backend.Request{
		ID:               id,
		BatchSize:        1,
		SequenceStart:    start,
		RequestedOutputs: requested,
		Inputs: []tensor.Tensor{
			must(tensor.From("INPUT", tensor.Shape{1, 4}, input)),
			must(tensor.From("STATE_IN", stateShape, state)),
			must(tensor.From("START", tensor.Shape{1, 1}, []int32{s})),
		},
	}
}

// seqOutput returns the FP32 output name of r with its shape, failing the test
// when r has no such output.
func seqOutput(t *testing.T, r *backend.Request, name string) ([]float32, tensor.Shape) {
	t.Helper()
	for _, o := range r.Outputs() {
		if o.Name == name {
			if o.DataType != tensor.FP32 {
				t.Fatalf("request %s: output %s is %v, want FP32", r.ID, name, o.DataType)
			}
			v, err := tensor.View[float32](o)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(v), o.Shape
		}
	}
	var names []string
	for _, o := range r.Outputs() {
		names = append(names, o.Name)
	}
	t.Fatalf("request %s: no output %s (has %v)", r.ID, name, names)
	return nil, nil
}

func executeBatch(t *testing.T, inst backend.Instance, b *backend.Batch) {
	t.Helper()
	if err := inst.Execute(context.Background(), b); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	for _, r := range b.Requests {
		if err := r.Err(); err != nil {
			t.Fatalf("request %s: %v", r.ID, err)
		}
	}
}

func addFloats(a, b []float32) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// TestSequenceStateBatchOfOne runs one sequence request by request, feeding
// each STATE_OUT back as the next STATE_IN as the server will: OUTPUT is the
// running sum since START, whatever the state holds at START, and the state
// output reaches the request even when its client asked for OUTPUT only.
func TestSequenceStateBatchOfOne(t *testing.T) {
	inst := loadInstance(t, seqSpec(t, "accumulate", "accumulate.onnx", accumulateConfig))
	state := []float32{1e6, -1e6, 42, 7} // uninitialized state: START ignores it
	sum := make([]float32, 4)
	for step := range 4 {
		in := []float32{float32(step), 1, -2, 0.5}
		sum = addFloats(sum, in)
		requested := []string(nil)
		if step%2 == 1 {
			requested = []string{"OUTPUT"}
		}
		r := seqRequest(t, fmt.Sprint("step", step), step == 0, in, state, tensor.Shape{1, 4}, requested...)
		executeBatch(t, inst, backend.NewBatch(true, r))
		out, shape := seqOutput(t, r, "OUTPUT")
		if !slices.Equal(out, sum) || !shape.Equal(tensor.Shape{1, 4}) {
			t.Fatalf("step %d: OUTPUT %v %v, want %v [1 4]", step, shape, out, sum)
		}
		st, shape := seqOutput(t, r, "STATE_OUT")
		if !slices.Equal(st, sum) || !shape.Equal(tensor.Shape{1, 4}) {
			t.Fatalf("step %d: STATE_OUT %v %v, want %v [1 4]", step, shape, st, sum)
		}
		state = st
	}
}

// TestSequenceStateBatchOfThree batches three sequences at different points
// (one starting, two continuing) into one execution: each request gets its
// own rows of OUTPUT and of the state output, and feeding the states back
// keeps the three sums apart.
func TestSequenceStateBatchOfThree(t *testing.T) {
	inst := loadInstance(t, seqSpec(t, "accumulate", "accumulate.onnx", accumulateConfig))
	states := [][]float32{{9, 9, 9, 9}, {1, 2, 3, 4}, {-10, 0, 10, 20}}
	sums := [][]float32{{0, 0, 0, 0}, {1, 2, 3, 4}, {-10, 0, 10, 20}}
	b := new(backend.Batch)
	for step := range 3 {
		var reqs []*backend.Request
		var ins [][]float32
		for k := range 3 {
			in := []float32{float32(k), float32(step), 1, float32(10*k + step)}
			ins = append(ins, in)
			reqs = append(reqs, seqRequest(t, fmt.Sprintf("seq%d/step%d", k, step), step == 0 && k == 0, in, states[k], tensor.Shape{1, 4}))
		}
		b.Reset(true, reqs)
		executeBatch(t, inst, b)
		for k, r := range reqs {
			sums[k] = addFloats(sums[k], ins[k])
			out, shape := seqOutput(t, r, "OUTPUT")
			if !slices.Equal(out, sums[k]) || !shape.Equal(tensor.Shape{1, 4}) {
				t.Fatalf("step %d, sequence %d: OUTPUT %v %v, want %v [1 4]", step, k, shape, out, sums[k])
			}
			st, shape := seqOutput(t, r, "STATE_OUT")
			if !slices.Equal(st, sums[k]) || !shape.Equal(tensor.Shape{1, 4}) {
				t.Fatalf("step %d, sequence %d: STATE_OUT %v %v, want %v [1 4]", step, k, shape, st, sums[k])
			}
			states[k] = st
		}
	}
}

// TestSequenceStateBatchAxis serves a state whose batch is its second
// dimension (parameter batch_axis:STATE_IN): the per-request state is
// [2, 1, 4], and the state output comes back in that layout.
func TestSequenceStateBatchAxis(t *testing.T) {
	inst := loadInstance(t, seqSpec(t, "accumulate_axis1", "accumulate_axis1.onnx", accumulateAxis1Config))
	state := []float32{5, 6, 7, 8, 100, 100, 100, 100} // layer 0, then layer 1
	var want []float32
	for step := range 3 {
		in := []float32{1, 2, 3, float32(step)}
		if step == 0 {
			want = in
		} else {
			want = addFloats(want, in)
		}
		r := seqRequest(t, fmt.Sprint("step", step), step == 0, in, state, tensor.Shape{2, 1, 4})
		executeBatch(t, inst, backend.NewBatch(true, r))
		if out, _ := seqOutput(t, r, "OUTPUT"); !slices.Equal(out, want) {
			t.Fatalf("step %d: OUTPUT %v, want %v", step, out, want)
		}
		st, shape := seqOutput(t, r, "STATE_OUT")
		if !shape.Equal(tensor.Shape{2, 1, 4}) || !slices.Equal(st, append(slices.Clone(want), want...)) {
			t.Fatalf("step %d: STATE_OUT %v %v, want [2 1 4] with both layers %v", step, shape, st, want)
		}
		state = st
	}
}

// TestSequenceConfigErrors loads configs whose sequence_batching does not
// fit the model: each fails with ErrInvalidInput and an error naming the
// model and the tensor.
func TestSequenceConfigErrors(t *testing.T) {
	edit := func(base string, pairs ...string) string { return strings.NewReplacer(pairs...).Replace(base) }
	for name, tc := range map[string]struct {
		file, config string
		want         []string
	}{
		"state input not in model": {"accumulate.onnx", edit(accumulateConfig, `input_name: "STATE_IN"`, `input_name: "HIDDEN"`),
			[]string{"sequence_batching state input 'HIDDEN' of model 'accumulate' is not one of the model's inputs [INPUT STATE_IN START]"}},
		"state output not in model": {"accumulate.onnx", edit(accumulateConfig, `output_name: "STATE_OUT"`, `output_name: "HIDDEN_OUT"`),
			[]string{"state output 'HIDDEN_OUT'", "not one of the model's outputs [OUTPUT STATE_OUT]"}},
		"control not in model": {"accumulate.onnx", edit(accumulateConfig, `name: "START"`, `name: "BEGIN"`),
			[]string{"control input 'BEGIN'", "not one of the model's inputs"}},
		"state datatype": {"accumulate.onnx", edit(accumulateConfig, `data_type: TYPE_FP32 dims: [ 4 ] } ]
}`, `data_type: TYPE_FP16 dims: [ 4 ] } ]
}`), []string{"state input 'STATE_IN'", "has datatype TYPE_FP16, but the model's is TYPE_FP32"}},
		"control datatype": {"accumulate.onnx", edit(accumulateConfig, `int32_false_true: [ 0, 1 ]`, `fp32_false_true: [ 0, 1 ]`),
			[]string{"control input 'START'", "has datatype TYPE_FP32, but the model's is TYPE_INT32"}},
		"state dims": {"accumulate.onnx", edit(accumulateConfig, `output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 4 ]`, `output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 8 ]`),
			[]string{"state input 'STATE_IN'", "has shape [-1 8]", "the model's is [-1 4]"}},
		"control without batching": {"accumulate.onnx", edit(accumulateConfig, "max_batch_size: 8", "max_batch_size: 0", "dims: [ 4 ]", "dims: [ 1, 4 ]"),
			[]string{"control input 'START'", "has shape [1]", "the model's is [-1 1]"}},
		"no control": {"accumulate.onnx", edit(accumulateConfig, `control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]`, ``),
			[]string{"model input 'START' is not in the configuration"}},
		"no batch axis": {"accumulate_axis1.onnx", edit(accumulateAxis1Config, `parameters { key: "batch_axis:STATE_IN" value: { string_value: "1" } }`, ``),
			[]string{"state input 'STATE_IN'", "has shape [-1 2 4]", "the model's is [2 -1 4]", `key: "batch_axis:STATE_IN" value: { string_value: "1" }`}},
		"batch axis out of range": {"accumulate_axis1.onnx", edit(accumulateAxis1Config, `string_value: "1"`, `string_value: "3"`),
			[]string{"state 'STATE_IN'", "\"batch_axis:STATE_IN\": the batch axis must be an integer from 0 to 2", `got "3"`}},
		"batch axes disagree": {"accumulate_axis1.onnx", accumulateAxis1Config + `parameters { key: "batch_axis:STATE_OUT" value: { string_value: "0" } }`,
			[]string{"state 'STATE_IN'", "give different batch axes"}},
	} {
		t.Run(name, func(t *testing.T) {
			model := strings.TrimSuffix(tc.file, ".onnx")
			spec := seqSpec(t, model, tc.file, tc.config)
			m, err := onnxruntime.New().Load(context.Background(), spec)
			if err == nil {
				_ = m.Close()
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, backend.ErrInvalidInput) {
				t.Errorf("error %v does not wrap ErrInvalidInput", err)
			}
			for _, w := range append(tc.want, filepath.Join(model, "1", "model.onnx")) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestSequenceAutoComplete completes configs that give only the
// sequence_batching part: the state and control tensors stay out of input
// and output, and a state batched on its second dimension still makes the
// model batchable.
func TestSequenceAutoComplete(t *testing.T) {
	seq := `
sequence_batching {
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ %s ] } ]
}
instance_group [ { kind: KIND_CPU count: 1 } ]
`
	for _, tc := range []struct {
		model, config string
		stateShape    tensor.Shape
	}{
		{"accumulate", fmt.Sprintf(`name: "accumulate" backend: "onnxruntime"`+seq, "4"), tensor.Shape{1, 4}},
		{"accumulate_axis1", fmt.Sprintf(`name: "accumulate_axis1" backend: "onnxruntime"`+seq, "2, 4") +
			`parameters { key: "batch_axis:STATE_OUT" value: { string_value: "1" } }`, tensor.Shape{2, 1, 4}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			spec := seqSpec(t, tc.model, tc.model+".onnx", tc.config)
			if err := onnxruntime.New().CompleteConfig(context.Background(), spec); err != nil {
				t.Fatalf("CompleteConfig: %v", err)
			}
			cfg := spec.Config
			if cfg.GetMaxBatchSize() != 4 {
				t.Errorf("max_batch_size %d, want 4", cfg.GetMaxBatchSize())
			}
			if cfg.GetDynamicBatching() != nil || cfg.GetSequenceBatching() == nil {
				t.Errorf("scheduling %v, want sequence_batching kept", cfg.GetSchedulingChoice())
			}
			var ins, outs []string
			for _, in := range cfg.GetInput() {
				ins = append(ins, in.GetName())
				if !slices.Equal(in.GetDims(), []int64{4}) {
					t.Errorf("input %s dims %v, want [4]", in.GetName(), in.GetDims())
				}
			}
			for _, out := range cfg.GetOutput() {
				outs = append(outs, out.GetName())
			}
			if !slices.Equal(ins, []string{"INPUT"}) || !slices.Equal(outs, []string{"OUTPUT"}) {
				t.Fatalf("completed inputs %v, outputs %v; want [INPUT] and [OUTPUT]", ins, outs)
			}
			repository.Normalize(cfg, repository.NormalizeOptions{})
			inst := loadInstance(t, spec)
			r := seqRequest(t, "r", true, []float32{1, 2, 3, 4}, make([]float32, tc.stateShape[0]*4), tc.stateShape)
			executeBatch(t, inst, backend.NewBatch(true, r))
			if st, shape := seqOutput(t, r, "STATE_OUT"); !shape.Equal(tc.stateShape) || st[3] != 4 {
				t.Errorf("STATE_OUT %v %v", shape, st)
			}
		})
	}
}

// TestSequenceThroughServer runs concurrent sequences through a server:
// the sequence batcher adds START and the state, batches requests of
// different sequences together, and feeds each sequence's STATE_OUT back,
// so that every OUTPUT is its own sequence's running sum. The client never
// sees the state.
func TestSequenceThroughServer(t *testing.T) {
	oldest := "sequence_batching {\n  oldest { max_candidate_sequences: 16 max_queue_delay_microseconds: 2000 }"
	axis1 := strings.Replace(accumulateAxis1Config, "sequence_batching {", oldest, 1) +
		`parameters { key: "batch_axis:STATE_OUT" value: { string_value: "1" } }`
	srv := newRepo(t).
		model("accumulate", "accumulate.onnx", strings.Replace(accumulateConfig, "sequence_batching {", oldest, 1)).
		model("accumulate_axis1", "accumulate_axis1.onnx", axis1).
		serve()
	for _, model := range []string{"accumulate", "accumulate_axis1"} {
		t.Run(model, func(t *testing.T) {
			const sequences, steps = 8, 12
			var g errgroup.Group
			for s := range sequences {
				g.Go(func() error {
					sum := make([]float32, 4)
					for i := range steps {
						in := []float32{float32(s), float32(i), 1, float32(s * i)}
						sum = addFloats(sum, in)
						var outputs []string
						if i%3 == 1 {
							outputs = []string{"OUTPUT"}
						}
						resp, err := srv.Infer(context.Background(), &triton.InferRequest{
							Model: model, SequenceID: uint64(s + 1), SequenceStart: i == 0, SequenceEnd: i == steps-1, Outputs: outputs,
							Inputs: []tensor.Tensor{must(tensor.From("INPUT", tensor.Shape{1, 4}, in))},
						})
						if err != nil {
							return fmt.Errorf("sequence %d step %d: %w", s, i, err)
						}
						if len(resp.Outputs) != 1 || resp.Outputs[0].Name != "OUTPUT" {
							return fmt.Errorf("sequence %d step %d: %d outputs, want OUTPUT only", s, i, len(resp.Outputs))
						}
						got, err := tensor.View[float32](resp.Outputs[0])
						if err != nil {
							return err
						}
						if !slices.Equal(got, sum) {
							return fmt.Errorf("sequence %d step %d: OUTPUT %v, want %v", s, i, got, sum)
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			stats, err := srv.Stats(model, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := stats[0].InferenceCount; n != sequences*steps {
				t.Errorf("%d inferences, want %d", n, sequences*steps)
			}
			t.Logf("%d executions for %d inferences; batches %+v", stats[0].ExecutionCount, stats[0].InferenceCount, stats[0].Batches)
		})
	}
}
