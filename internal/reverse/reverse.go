package reverse

import (
	"context"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Name is the backend's name in config.pbtxt.
const Name = "reverse"

// Backend reverses each string of the TEXT input into the REVERSED output.
var Backend = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, ok := r.Input("TEXT")
		if !ok {
			return fmt.Errorf("no input TEXT: %w", backend.ErrInvalidInput)
		}
		elems, err := tensor.ByteSlices(in)
		if err != nil {
			return err
		}
		out := make([][]byte, len(elems))
		for i, e := range elems {
			rev := make([]byte, len(e))
			for j := range e {
				rev[len(e)-1-j] = e[j]
			}
			out[i] = rev
		}
		t, err := tensor.FromByteSlices("REVERSED", in.Shape, out)
		if err != nil {
			return err
		}
		r.SetOutput(t)
	}
	return nil
})
