package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// The decoupled Go backends compiled in for the example repository:
// "repeat" serves repeat_int32 (the inputs, outputs and behaviour of
// Triton's repeat_int32 example model, which Triton's streaming clients
// use) and "tokens" serves tokens (a prompt's words streamed back one
// response per word, the shape of a language model's generate_stream).

// repeat is the backend of repeat_int32: for each element of IN (INT32
// [-1]) it waits the matching element of DELAY (UINT32 [-1], in
// milliseconds) and sends a response with OUT = the element and IDX = its
// index, then a final response without outputs. Execute returns after
// WAIT (UINT32 [1]) milliseconds, freeing the instance, while the
// responses go on from a goroutine that the instance's Close waits for.
type repeat struct{}

func (repeat) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	return repeatModel{name: spec.Name}, nil
}

type repeatModel struct{ name string }

func (m repeatModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return &repeatInstance{model: m.name}, nil
}

func (repeatModel) Close() error { return nil }

type repeatInstance struct {
	model string
	wg    sync.WaitGroup // the producers
}

func (in *repeatInstance) Execute(ctx context.Context, b *backend.Batch) error {
	var wait uint32
	batched := b.Batched()
	for _, r := range b.Requests {
		s := r.Sender()
		if s == nil {
			r.Fail(fmt.Errorf("repeat: model %q is not decoupled; set model_transaction_policy { decoupled: true }: %w", in.model, backend.ErrInvalidInput))
			continue
		}
		vals, delays, w, err := repeatInputs(in.model, r)
		if err != nil {
			r.Fail(err)
			continue
		}
		wait = max(wait, w)
		in.wg.Go(func() { repeatProduce(s, vals, delays, batched) })
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

// Close waits for the producers, which end with their requests' streams.
func (in *repeatInstance) Close() error {
	in.wg.Wait()
	return nil
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

// repeatProduce sends one response per value after its delay, then the
// final flag; it stops when the request's stream ends early (the client
// went away, the server closes).
func repeatProduce(s *backend.Sender, vals []int32, delays []uint32, batched bool) {
	shape := tensor.Shape{1}
	if batched {
		shape = tensor.Shape{1, 1} // one row: a request of batch size 1
	}
	ctx := context.Background() // Send and the timers stop on s.Done()
	for i, v := range vals {
		if !sleep(s.Done(), time.Duration(delays[i])*time.Millisecond) {
			return
		}
		out, _ := tensor.From("OUT", shape, []int32{v})
		idx, _ := tensor.From("IDX", shape, []uint32{uint32(i)})
		if s.Send(ctx, backend.Response{Outputs: []tensor.Tensor{out, idx}}) != nil {
			return
		}
	}
	_ = s.Send(ctx, backend.Response{Final: true})
}

// sleep waits d, or until done closes; it reports whether d passed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// tokensDelayParameter is the config parameter of a tokens model that
// sets the pause before each word, in milliseconds.
const tokensDelayParameter = "delay_ms"

// tokens is the backend of the tokens model: the prompt in text_input
// (BYTES [1]) comes back one word (split at white space) per response in
// text_output (BYTES [1]), each after the config parameter delay_ms
// (milliseconds, default 0), then a final response without outputs.
type tokens struct{}

func (tokens) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	var delay time.Duration
	if v, ok := spec.Parameter(tokensDelayParameter); ok {
		ms, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("tokens: model %q: parameter %s = %q is not a count of milliseconds: %w", spec.Name, tokensDelayParameter, v, backend.ErrInvalidInput)
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	return backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		return streamWords(ctx, spec.Name, r, delay, send)
	}), nil
}

// streamWords sends the words of r's text_input, one per response.
func streamWords(ctx context.Context, model string, r *backend.Request, delay time.Duration, send func(backend.Response) error) error {
	in, ok := r.Input("text_input")
	if !ok {
		return fmt.Errorf("tokens: model %q, request %q needs input text_input: %w", model, r.ID, backend.ErrInvalidInput)
	}
	prompts, err := tensor.ByteSlices(in)
	if err != nil {
		return fmt.Errorf("tokens: model %q, input text_input: %w", model, err)
	}
	done := ctx.Done()
	if s := r.Sender(); s != nil {
		done = s.Done() // closed when the client goes away
	}
	shape := slices.Repeat(tensor.Shape{1}, len(in.Shape)) // [1], or [1, 1] when batched
	for _, p := range prompts {
		for _, w := range strings.Fields(string(p)) {
			if !sleep(done, delay) {
				return fmt.Errorf("tokens: model %q, request %q: %w", model, r.ID, context.Canceled)
			}
			out, err := tensor.FromByteSlices("text_output", shape, [][]byte{[]byte(w)})
			if err != nil {
				return err
			}
			if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
				return err
			}
		}
	}
	return nil
}
