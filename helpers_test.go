package triton_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Test backends shared with the adapters' tests.
var (
	mirror    = testmodels.Mirror
	mapFS     = testmodels.MapFS
	newServer = testmodels.NewServer
)

// simpleConfig is Triton's classic "simple" model: two INT32 [16] inputs,
// their sum and difference as outputs.
const simpleConfig = `
name: "simple"
backend: "gofunc"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
instance_group [ { count: 2 kind: KIND_CPU } ]
`

// addSub computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1
// over the whole batch.
var addSub = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	in0, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	in1, err := b.Input("INPUT1")
	if err != nil {
		return err
	}
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
	for name, vals := range map[string][]int32{"OUTPUT0": sum, "OUTPUT1": diff} {
		t, err := tensor.From(name, in0.Shape, vals)
		if err != nil {
			return err
		}
		if err := b.SetOutput(t); err != nil {
			return err
		}
	}
	return nil
})

func int32s(t testing.TB, name string, shape tensor.Shape, vals ...int32) tensor.Tensor {
	t.Helper()
	ts, err := tensor.From(name, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func seq(n int, f func(i int) int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func outputInt32(t testing.TB, resp *triton.InferResponse, name string) []int32 {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Fatalf("response has no output %q (has %v)", name, outputNames(resp))
	}
	vals, err := tensor.View[int32](out)
	if err != nil {
		t.Fatalf("output %q: %v", name, err)
	}
	return vals
}

func outputNames(resp *triton.InferResponse) []string {
	var names []string
	for _, o := range resp.Outputs {
		names = append(names, o.Name)
	}
	return names
}

// wantError checks an error's code and that its message holds every part.
func wantError(t testing.TB, err error, code triton.Code, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	if got := triton.CodeOf(err); got != code {
		t.Errorf("code = %v, want %v (error: %v)", got, code, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func simpleRepo(extra ...string) map[string]string {
	files := map[string]string{"simple/config.pbtxt": simpleConfig, "simple/1/model.txt": ""}
	for i := 0; i+1 < len(extra); i += 2 {
		files[extra[i]] = extra[i+1]
	}
	return files
}

func simpleRequest(t testing.TB, batch int) *triton.InferRequest {
	n := batch * 16
	return &triton.InferRequest{
		Model: "simple",
		ID:    fmt.Sprintf("req-%d", batch),
		Inputs: []tensor.Tensor{
			int32s(t, "INPUT0", tensor.Shape{int64(batch), 16}, seq(n, func(i int) int32 { return int32(i) })...),
			int32s(t, "INPUT1", tensor.Shape{int64(batch), 16}, seq(n, func(i int) int32 { return 1 })...),
		},
	}
}

// oneInput is the config of a model with one INT32 [1] input INPUT0 and one
// output OUTPUT0, served by the named backend with count instances, plus
// extra config text.
func oneInput(backendName string, count int, extra string) string {
	return fmt.Sprintf(`backend: "%s"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: %d kind: KIND_CPU } ]
%s`, backendName, count, extra)
}

// oneInputRequest is a request for such a model.
func oneInputRequest(t testing.TB, model, id string, v int32) *triton.InferRequest {
	return &triton.InferRequest{Model: model, ID: id, Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1}, v)}}
}
