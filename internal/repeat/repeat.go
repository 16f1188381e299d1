package repeat

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Config is the configuration of a decoupled model served by [Backend]
// under the backend name "repeat", with the inputs and outputs of Triton's
// repeat_int32 example model (no name: callers add it).
const Config = `
backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
`

// Backend is a decoupled backend with the semantics of Triton's
// repeat_int32 example model: for every element of IN (INT32 [-1]) it
// waits the matching element of DELAY (UINT32 [-1], milliseconds) and
// sends a response with OUT = that element and IDX = its index, then a
// final response without outputs. Execute returns (the request is
// released, the instance free) after WAIT (UINT32 [1]) milliseconds,
// while the responses go on from a goroutine of the instance. For a
// batching model (max_batch_size > 0) each request's IN and DELAY are
// read flat (a request of batch size 1 is expected), and Execute waits the
// longest WAIT of the batch.
//
// The responses' goroutines stop when their request is cancelled; the
// instance's Close waits for them. Sent and Running let tests watch the
// producers. A Repeat is safe for concurrent use.
type Backend struct {
	sent    atomic.Int64
	running atomic.Int64
}

// Sent returns how many responses with outputs the producers have handed
// to the server so far.
func (rp *Backend) Sent() int64 { return rp.sent.Load() }

// Running returns how many requests' producers are still running.
func (rp *Backend) Running() int64 { return rp.running.Load() }

// Load returns a model whose instances repeat.
func (rp *Backend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return repeatModel{rp, spec.Name}, nil
}

type repeatModel struct {
	rp   *Backend
	name string
}

func (m repeatModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return &repeatInstance{rp: m.rp, model: m.name}, nil
}

func (repeatModel) Close() error { return nil }

type repeatInstance struct {
	rp    *Backend
	model string
	wg    sync.WaitGroup // the producers
}

func (in *repeatInstance) Execute(ctx context.Context, b *backend.Batch) error {
	var wait uint32
	batched := b.Batched()
	for _, r := range b.Requests {
		vals, delays, w, err := repeatInputs(in.model, r)
		if err != nil {
			r.Fail(err)
			continue
		}
		s := r.Sender()
		if s == nil {
			r.Fail(fmt.Errorf("repeat: model %q is not decoupled; set model_transaction_policy { decoupled: true }: %w", in.model, backend.ErrInvalidInput))
			continue
		}
		wait = max(wait, w)
		in.rp.running.Add(1)
		in.wg.Go(func() {
			defer in.rp.running.Add(-1)
			in.produce(s, vals, delays, batched)
		})
	}
	if wait == 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(wait) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// repeatInputs copies a request's inputs, which are borrowed only until
// Execute returns: the producer outlives it.
func repeatInputs(model string, r *backend.Request) (vals []int32, delays []uint32, wait uint32, err error) {
	tin, ok1 := r.Input("IN")
	tdelay, ok2 := r.Input("DELAY")
	twait, ok3 := r.Input("WAIT")
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, 0, fmt.Errorf("repeat: model %q, request %q needs inputs IN, DELAY and WAIT: %w", model, r.ID, backend.ErrInvalidInput)
	}
	v, err := tensor.View[int32](tin)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("repeat: model %q, input IN: %w", model, err)
	}
	d, err := tensor.View[uint32](tdelay)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("repeat: model %q, input DELAY: %w", model, err)
	}
	w, err := tensor.View[uint32](twait)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("repeat: model %q, input WAIT: %w", model, err)
	}
	if len(v) != len(d) {
		return nil, nil, 0, fmt.Errorf("repeat: model %q, request %q: IN has %d elements, DELAY %d; they must match: %w", model, r.ID, len(v), len(d), backend.ErrInvalidInput)
	}
	if len(w) > 0 {
		wait = w[0]
	}
	return slices.Clone(v), slices.Clone(d), wait, nil
}

// produce sends one response per value after its delay, then the final
// flag; it stops when the request is cancelled.
func (in *repeatInstance) produce(s *backend.Sender, vals []int32, delays []uint32, batched bool) {
	shape := tensor.Shape{1}
	if batched {
		shape = tensor.Shape{1, 1} // one row: a request of batch size 1
	}
	ctx := context.Background() // Send and the timers below stop on s.Done()
	for i, v := range vals {
		if d := delays[i]; d > 0 {
			t := time.NewTimer(time.Duration(d) * time.Millisecond)
			select {
			case <-t.C:
			case <-s.Done():
				t.Stop()
				return
			}
		}
		out, _ := tensor.From("OUT", shape, []int32{v})
		idx, _ := tensor.From("IDX", shape, []uint32{uint32(i)})
		if s.Send(ctx, backend.Response{Outputs: []tensor.Tensor{out, idx}}) != nil {
			return // cancelled
		}
		in.rp.sent.Add(1)
	}
	_ = s.Send(ctx, backend.Response{Final: true})
}

// Close waits for the producers, which end with their requests' streams.
func (in *repeatInstance) Close() error {
	in.wg.Wait()
	return nil
}
