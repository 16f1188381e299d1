package onnxruntime_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/tensor"
)

// chainModel is an ONNX model (IR 8, opset 13) whose output Y is X (FLOAT
// [n, n]) to the power k+1: k MatMul nodes, one after another. On a large
// X that is seconds of work, which ONNX Runtime can stop between any two
// kernels. Written field by field from onnx.proto.
func chainModel(k int) []byte {
	field := func(num protowire.Number, b ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(b, nil))
	}
	str := func(num protowire.Number, s string) []byte { return field(num, []byte(s)) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	value := func(name string) []byte { // ValueInfoProto { name, type: FLOAT [n, n] }
		dim := field(1, str(2, "n")) // TensorShapeProto.Dimension { dim_param }
		return bytes.Join([][]byte{str(1, name), field(2, field(1, varint(1, 1), field(2, dim, dim)))}, nil)
	}
	var graph [][]byte
	prev := "X"
	for i := range k {
		out := "Y"
		if i < k-1 {
			out = "p" + strconv.Itoa(i)
		}
		graph = append(graph, field(1, str(1, prev), str(1, "X"), str(2, out), str(4, "MatMul"))) // NodeProto
		prev = out
	}
	graph = append(graph, str(2, "chain"), field(11, value("X")), field(12, value("Y")))
	return bytes.Join([][]byte{varint(1, 8), str(2, "deadline_test"), field(7, graph...), field(8, str(1, ""), varint(2, 13))}, nil)
}

// watched is a backend that runs another's models, showing the test each
// Execute of their instances: the ctx's deadline when it starts, its error
// when it returns.
type watched struct {
	backend.Backend
	execs chan *execution
}

// execution is one Execute of a watched instance.
type execution struct {
	deadline    time.Time
	hasDeadline bool
	ended       chan error // Execute's error
}

type watchedModel struct {
	backend.Model
	execs chan *execution
}

type watchedInstance struct {
	backend.Instance
	execs chan *execution
}

var (
	_ backend.Backend  = (*watched)(nil)
	_ backend.Model    = (*watchedModel)(nil)
	_ backend.Instance = (*watchedInstance)(nil)
)

func (w *watched) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	m, err := w.Backend.Load(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &watchedModel{m, w.execs}, nil
}

func (m *watchedModel) NewInstance(ctx context.Context, spec backend.InstanceSpec) (backend.Instance, error) {
	i, err := m.Model.NewInstance(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &watchedInstance{i, m.execs}, nil
}

func (i *watchedInstance) Execute(ctx context.Context, b *backend.Batch) error {
	e := &execution{ended: make(chan error, 1)}
	e.deadline, e.hasDeadline = ctx.Deadline()
	i.execs <- e
	err := i.Instance.Execute(ctx, b)
	e.ended <- err
	return err
}

// Unwrap returns the watched instance.
func (i *watchedInstance) Unwrap() backend.Instance { return i.Instance }

// TestExecuteCtxStopsRun: when the ctx of Execute ends during a long run
// (the request cancelled, or past its deadline), the run's terminate flag
// stops ONNX Runtime between kernels: Execute returns the ctx's error and
// the request fails with Cancelled or DeadlineExceeded, long before the
// run could have finished (were the flag not set, the request would
// succeed, seconds later); the next run on the instance is not stopped.
func TestExecuteCtxStopsRun(t *testing.T) {
	const k = 1500 // MatMuls of [512, 512]: 400 GFLOP, far more than the test waits
	w := &watched{Backend: onnxruntime.New(), execs: make(chan *execution, 4)}
	srv := newRepo(t).file("chain/1/model.onnx", chainModel(k)).config("chain", `backend: "onnxruntime" max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]`).serve(triton.WithBackend("onnxruntime", w))
	big := must(tensor.From("X", tensor.Shape{512, 512}, make([]float32, 512*512)))
	goInfer := func(ctx context.Context, x tensor.Tensor) <-chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := srv.Infer(ctx, &triton.InferRequest{Model: "chain", Inputs: []tensor.Tensor{x}})
			errc <- err
		}()
		return errc
	}

	// Cancelled while it runs.
	ctx, cancel := context.WithCancel(context.Background())
	errc := goInfer(ctx, big)
	var e *execution
	select {
	case e = <-w.execs:
	case <-time.After(30 * time.Second):
		t.Fatal("Execute never started")
	}
	cancel()
	if err := <-e.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("Execute returned %v, want context.Canceled", err)
	}
	if err := <-errc; triton.CodeOf(err) != triton.Cancelled {
		t.Errorf("the cancelled request: %v, want Cancelled", err)
	}

	// Past its deadline while it runs (or, on a busy machine, before it
	// starts: either way it stops).
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := <-goInfer(ctx, big); triton.CodeOf(err) != triton.DeadlineExceeded {
		t.Errorf("the late request: %v, want DeadlineExceeded", err)
	}
	select {
	case e := <-w.execs:
		want, _ := ctx.Deadline()
		if !e.hasDeadline || !e.deadline.Equal(want) {
			t.Errorf("Execute's ctx has deadline %v (%v), want the request's, %v", e.deadline, e.hasDeadline, want)
		}
		if err := <-e.ended; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Execute returned %v, want context.DeadlineExceeded", err)
		}
	default:
		t.Log("the deadline passed before Execute")
	}

	// The next run is not stopped: the swap matrix to the power k+1.
	swap := []float32{0, 1, 1, 0}
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "chain", Inputs: []tensor.Tensor{must(tensor.From("X", tensor.Shape{2, 2}, swap))}})
	if err != nil {
		t.Fatal(err)
	}
	<-w.execs
	want := swap
	if k%2 == 1 {
		want = []float32{1, 0, 0, 1}
	}
	if got := must(tensor.View[float32](output(t, resp, "Y"))); !slices.Equal(got, want) {
		t.Errorf("Y = %v, want %v", got, want)
	}
}
