package responsecache_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
)

// raw returns a tensor over data, unvalidated: the cache keys whatever it
// is given.
func raw(name string, dt tensor.DataType, shape tensor.Shape, data string) tensor.Tensor {
	return tensor.Tensor{Name: name, DataType: dt, Shape: shape, Data: []byte(data)}
}

// call is the identity of one Do call.
type call struct {
	model   string
	version int64
	inputs  []tensor.Tensor
}

// simple returns a call with one UINT8 input whose data is data.
func simple(model string, data string) call {
	return call{model, 1, []tensor.Tensor{raw("IN", tensor.Uint8, tensor.Shape{int64(len(data))}, data)}}
}

// String describes c in full; distinct calls give distinct strings.
func (c call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q v%d", c.model, c.version)
	ins := slices.Clone(c.inputs)
	slices.SortStableFunc(ins, func(a, b tensor.Tensor) int { return strings.Compare(a.Name, b.Name) })
	for _, in := range ins {
		fmt.Fprintf(&b, " %q:%v%v=%q", in.Name, in.DataType, in.Shape, in.Data)
	}
	return b.String()
}

// answer is the response a fake model gives to c: an output that spells c
// out, so that a response served for the wrong call is detected, and a
// second output with a shape.
func answer(c call) []tensor.Tensor {
	s := c.String()
	return []tensor.Tensor{
		raw("OUT", tensor.Uint8, tensor.Shape{int64(len(s))}, s),
		raw("LEN", tensor.Uint8, tensor.Shape{1, 1}, string(rune(len(s)%128))),
	}
}

// model is a fake model that answers every call with answer(call) and
// counts its executions.
type model struct{ calls atomic.Int64 }

func (m *model) fn(c call) func() ([]tensor.Tensor, error) {
	return func() ([]tensor.Tensor, error) {
		m.calls.Add(1)
		return answer(c), nil
	}
}

func (c call) do(cache *responsecache.Cache, fn func() ([]tensor.Tensor, error)) ([]tensor.Tensor, responsecache.Result, error) {
	resp, res, err := cache.Do(context.Background(), c.model, c.version, c.inputs, outputsOnly(fn))
	return resp.Outputs, res, err
}

// outputsOnly makes fn a function for Cache.Do: a response of fn's
// outputs and no parameters.
func outputsOnly(fn func() ([]tensor.Tensor, error)) func() (responsecache.Response, error) {
	return func() (responsecache.Response, error) {
		outs, err := fn()
		return responsecache.Response{Outputs: outs}, err
	}
}

// entrySize is the size an entry for c with the fake model's answer has.
func (c call) entrySize() int64 {
	return responsecache.EntrySize(c.model, c.version, c.inputs, answer(c))
}

// equalTensors reports whether a and b have the same names, types, shapes
// and data.
func equalTensors(a, b []tensor.Tensor) bool {
	return slices.EqualFunc(a, b, func(x, y tensor.Tensor) bool {
		return x.Name == y.Name && x.DataType == y.DataType && x.Shape.Equal(y.Shape) && string(x.Data) == string(y.Data)
	})
}

func checkInvariants(t *testing.T, c *responsecache.Cache) {
	t.Helper()
	if err := responsecache.CheckInvariants(c); err != nil {
		t.Fatal(err)
	}
}
