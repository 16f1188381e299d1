package backendtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// The kit asserts the server's promises on itself. These tests break
// them on purpose, through the wrappers, and check the assertions fire:
// a bug in the kit shows as a "backendtest bug", not as a backend's
// fault.

func guardModel(t *testing.T, f backend.Func) *loaded {
	t.Helper()
	in, err := tensor.From("IN", tensor.Shape{1}, []float32{1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := compile(&Model{
		Config: &modelconfig.ModelConfig{
			Name:   "guard",
			Input:  []*modelconfig.ModelInput{{Name: "IN", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{1}}},
			Output: []*modelconfig.ModelOutput{{Name: "OUT", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{1}}},
		},
		Requests: []Request{{Inputs: []tensor.Tensor{in}}},
		Timeout:  time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{b: f, models: []*model{m}}
	lm, problem, err := s.load(context.Background(), m, 1)
	if err != nil || problem != "" {
		t.Fatal(err, problem)
	}
	return lm
}

func wantLine(t *testing.T, r *report, want string) {
	t.Helper()
	for _, l := range r.lines() {
		if strings.Contains(l, want) {
			return
		}
	}
	t.Errorf("no %q in %q", want, r.lines())
}

func TestGuardConcurrentExecute(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	lm := guardModel(t, func(ctx context.Context, b *backend.Batch) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	inst, problem, err := lm.newInstance(context.Background(), lm.m.specs[0])
	if inst == nil {
		t.Fatal(err, problem)
	}
	done := make(chan string)
	go func() {
		b, _ := lm.m.newBatch(lm.m.good)
		p, _ := inst.execute(context.Background(), b)
		done <- p
	}()
	<-entered
	b, _ := lm.m.newBatch(lm.m.good)
	if p, _ := inst.execute(context.Background(), b); !strings.Contains(p, "backendtest bug: 2 concurrent Execute calls on one instance") {
		t.Errorf("second Execute: %q", p)
	}
	close(release)
	if p := <-done; p != "" {
		t.Errorf("first Execute: %q", p)
	}
	r := new(report)
	lm.close(r)
	if l := r.lines(); len(l) != 0 {
		t.Errorf("close: %q", l)
	}
}

func TestGuardAfterClose(t *testing.T) {
	lm := guardModel(t, func(ctx context.Context, b *backend.Batch) error { return nil })
	inst, problem, err := lm.newInstance(context.Background(), lm.m.specs[0])
	if inst == nil {
		t.Fatal(err, problem)
	}
	r := new(report)
	inst.close(r)
	b, _ := lm.m.newBatch(lm.m.good)
	if p, _ := inst.execute(context.Background(), b); p != "backendtest bug: Execute after Close" {
		t.Errorf("Execute after Close: %q", p)
	}
	inst.close(r)
	wantLine(t, r, `model "guard" version 1, instance guard_0: backendtest bug: Close called twice`)
	lm.close(r)
	lm.close(r)
	wantLine(t, r, `model "guard" version 1: backendtest bug: model closed twice`)
	if _, p, _ := lm.newInstance(context.Background(), lm.m.specs[0]); p != "backendtest bug: NewInstance after the model's Close" {
		t.Errorf("NewInstance after Close: %q", p)
	}
}

func TestCall(t *testing.T) {
	if o := call(time.Minute, func() error { panic("boom") }); !strings.HasPrefix(o.panic, "boom (at github.com/triton-go/triton/backend/backendtest.TestCall") {
		t.Errorf("panic: %q", o.panic)
	}
	release := make(chan struct{})
	o := call(time.Millisecond, func() error { <-release; return nil })
	if o.hung == nil || o.problem("Execute", time.Millisecond) != "Execute did not return within 1ms" {
		t.Errorf("hang: %+v", o)
	}
	close(release)
	<-o.hung
}
