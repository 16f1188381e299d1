package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// The decoupled Go backends compiled in for the example repository:
// "repeat" (package internal/repeat) serves repeat_int32 (the inputs,
// outputs and behaviour of Triton's repeat_int32 example model, which
// Triton's streaming clients use) and "tokens" serves tokens (a prompt's words streamed back one
// response per word, the shape of a language model's generate_stream).

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
