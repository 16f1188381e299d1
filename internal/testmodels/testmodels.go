package testmodels

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Mirror answers every input "INPUTn" with the same tensor as "OUTPUTn",
// without copying.
var Mirror = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		for _, in := range r.Inputs {
			out := in
			out.Name = strings.Replace(in.Name, "INPUT", "OUTPUT", 1)
			r.SetOutput(out)
		}
	}
	return nil
})

// AddSub computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1
// over INT32 inputs (Triton's "simple" model), request by request.
var AddSub = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in0, _ := r.Input("INPUT0")
		in1, _ := r.Input("INPUT1")
		x, err := tensor.View[int32](in0)
		if err != nil {
			return err
		}
		y, err := tensor.View[int32](in1)
		if err != nil {
			return err
		}
		sum, diff := make([]int32, len(x)), make([]int32, len(x))
		for i := range x {
			sum[i], diff[i] = x[i]+y[i], x[i]-y[i]
		}
		o0, _ := tensor.From("OUTPUT0", in0.Shape, sum)
		o1, _ := tensor.From("OUTPUT1", in0.Shape, diff)
		r.SetOutput(o0)
		r.SetOutput(o1)
	}
	return nil
})

// Double answers the whole batch's INT32 "IN" with "OUT" = 2·IN, gathered
// and scattered by the batch (so that a batch's rows must come back to
// their requests).
var Double = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	in, err := b.Input("IN")
	if err != nil {
		return err
	}
	v, err := tensor.View[int32](in)
	if err != nil {
		return err
	}
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = 2 * x
	}
	t, err := tensor.From("OUT", in.Shape, out)
	if err != nil {
		return err
	}
	return b.SetOutput(t)
})

// EchoParams answers OUTPUT0 (BYTES [1]) with the request's parameters,
// sorted, as "k=v(type)" joined by ";".
var EchoParams = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		var parts []string
		for k, v := range r.Parameters {
			parts = append(parts, fmt.Sprintf("%s=%v(%T)", k, v, v))
		}
		slices.Sort(parts)
		out, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{strings.Join(parts, ";")})
		if err != nil {
			return err
		}
		r.SetOutput(out)
	}
	return nil
})

// Blocker is a backend whose Execute waits for its request's context to
// end: it signals Started when it begins and sends the context's error to
// Ended when it returns.
type Blocker struct {
	Started chan struct{}
	Ended   chan error
}

// NewBlocker returns a Blocker with room for 16 signals of each kind.
func NewBlocker() *Blocker {
	return &Blocker{Started: make(chan struct{}, 16), Ended: make(chan error, 16)}
}

// Backend returns the blocking backend.
func (bl *Blocker) Backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		bl.Started <- struct{}{}
		<-ctx.Done()
		bl.Ended <- ctx.Err()
		return ctx.Err()
	}
}

// Dtypes are the configuration names of the datatypes and their protocol
// (wire) names.
var Dtypes = []struct{ Config, Wire string }{
	{"TYPE_BOOL", "BOOL"}, {"TYPE_UINT8", "UINT8"}, {"TYPE_UINT16", "UINT16"}, {"TYPE_UINT32", "UINT32"},
	{"TYPE_UINT64", "UINT64"}, {"TYPE_INT8", "INT8"}, {"TYPE_INT16", "INT16"}, {"TYPE_INT32", "INT32"},
	{"TYPE_INT64", "INT64"}, {"TYPE_FP16", "FP16"}, {"TYPE_FP32", "FP32"}, {"TYPE_FP64", "FP64"},
	{"TYPE_STRING", "BYTES"}, {"TYPE_BF16", "BF16"},
}

// MapFS turns file contents by path into an in-memory file system.
func MapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys
}

// NewServer starts a server over an in-memory repository (files by path)
// with opts, and closes it when the test ends.
func NewServer(t testing.TB, files map[string]string, opts ...triton.Option) *triton.Server {
	t.Helper()
	srv, err := triton.New(append([]triton.Option{triton.WithRepository(MapFS(files))}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}
