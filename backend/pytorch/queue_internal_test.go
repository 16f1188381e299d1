package pytorch

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// TestQueue: an instance runs forwards on the caller's thread until the
// server asks it to queue; then on a worker thread of its own, with
// several Executes in progress at once, each getting its own batch's
// results; Close ends the worker.
func TestQueue(t *testing.T) {
	spec := internalSpec(t, "m", "addsub.pt", `name: "m" backend: "pytorch" max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { }`)
	bm, err := New().Load(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer bm.Close()
	bi, err := bm.NewInstance(context.Background(), backend.InstanceSpec{Name: "m_0", Kind: modelconfig.ModelInstanceGroup_KIND_CPU, DeviceID: -1})
	if err != nil {
		t.Fatal(err)
	}
	inst := bi.(*instance)
	run := func(k int) error {
		a := make([]float32, 32)
		b := make([]float32, 32)
		for i := range a {
			a[i], b[i] = float32(k*100+i), float32(i)
		}
		in0, err := tensor.From("INPUT0", tensor.Shape{2, 16}, a)
		if err != nil {
			return err
		}
		in1, err := tensor.From("INPUT1", tensor.Shape{2, 16}, b)
		if err != nil {
			return err
		}
		r0 := &backend.Request{ID: "r0", BatchSize: 2, Inputs: []tensor.Tensor{in0, in1}}
		batch := backend.NewBatch(true, r0)
		batch.SetBehind(k%2 == 1)
		if err := inst.Execute(context.Background(), batch); err != nil {
			return err
		}
		if err := r0.Err(); err != nil {
			return err
		}
		sum, err := tensor.View[float32](r0.Outputs()[0])
		if err != nil {
			return err
		}
		for i := range a {
			if sum[i] != a[i]+b[i] {
				return fmt.Errorf("batch %d: element %d is %v, want %v", k, i, sum[i], a[i]+b[i])
			}
		}
		if batch.Queued() < 0 {
			return fmt.Errorf("batch %d waited %v", k, batch.Queued())
		}
		return nil
	}
	if err := run(0); err != nil || inst.worker != nil {
		t.Fatalf("before Queue: %v, worker %v", err, inst.worker)
	}
	if !backend.Queue(inst) || inst.worker == nil {
		t.Fatal("Queue did not start a worker")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*20)
	for g := range 3 {
		wg.Go(func() {
			for k := range 20 {
				errs <- run(g*20 + k)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	w := inst.worker
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Forward(context.Background(), inst.mod, torchrun.Queued, nil); err == nil {
		t.Error("the worker still runs forwards after Close")
	}
}
