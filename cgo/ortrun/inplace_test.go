//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/triton-go/triton/cgo/ortrun"
)

// known is the Output for index i with a known shape.
func known(i int, shape ...int64) ortrun.Output {
	return ortrun.Output{Index: i, Known: true, Shape: shape}
}

// runOutputs calls s.RunOutputs with a background context and fails t on
// error.
func runOutputs(t testing.TB, s *ortrun.Session, in []ortrun.Tensor, outs ...ortrun.Output) []ortrun.Tensor {
	t.Helper()
	got, err := s.RunOutputs(context.Background(), in, outs)
	if err != nil {
		t.Fatalf("RunOutputs: %v", err)
	}
	if len(got) != len(outs) {
		t.Fatalf("RunOutputs returned %d tensors, want %d", len(got), len(outs))
	}
	return got
}

// TestInPlaceTypes sends every supported element type through an Identity
// model with the output's shape known: ORT writes into Go memory, and the
// result equals Run's, byte for byte, for empty, scalar-like and larger
// shapes. STRING outputs, whose size is unknown, are copied out as by Run.
func TestInPlaceTypes(t *testing.T) {
	checkLive(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range allTypes {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, identityModel(tc.typ))
			for _, shape := range [][]int64{{2, 3}, {1, 1}, {0, 3}, {3, 0}, {7, 129}} {
				n := int(shape[0] * shape[1])
				var data []byte
				if tc.typ == tString {
					elems := make([]string, n)
					for i := range elems {
						elems[i] = fmt.Sprintf("e\x00%d", i)
					}
					data = frame(elems...)
				} else {
					data = randomData(r, tc.typ, n)
				}
				in := ortrun.Tensor{Type: tc.typ, Shape: shape, Data: data}
				out := runOutputs(t, f.run, []ortrun.Tensor{in}, known(0, shape...))
				checkTensor(t, fmt.Sprintf("Identity %v", shape), out[0], in)
				if out[0].Data == nil || &out[0].Shape[0] == &shape[0] {
					t.Errorf("output for %v aliases the caller's shape or has nil Data", shape)
				}
				if tc.typ != tString && len(out[0].Data) > 0 && uintptr(unsafe.Pointer(&out[0].Data[0]))%8 != 0 {
					t.Errorf("output for %v is not 8-byte aligned", shape)
				}
			}
		})
	}
}

// TestInPlaceScalar writes rank-0 outputs (INT64 and FLOAT16) in place.
func TestInPlaceScalar(t *testing.T) {
	checkLive(t)
	f := newFixture(t, scalarModel())
	half := []byte{0x00, 0x3c}
	in := []ortrun.Tensor{{Type: tInt64, Data: i64s(21)}, {Type: tFloat16, Shape: []int64{}, Data: half}}
	out := runOutputs(t, f.run, in, known(1), known(0))
	checkTensor(t, "HALF", out[0], ortrun.Tensor{Type: tFloat16, Shape: []int64{}, Data: half})
	checkTensor(t, "SUM", out[1], ortrun.Tensor{Type: tInt64, Shape: []int64{}, Data: i64s(42)})
}

// TestInPlaceMixed asks for outputs written in place and outputs ORT
// allocates in one run, in an order of our choice.
func TestInPlaceMixed(t *testing.T) {
	checkLive(t)
	f := newFixture(t, multiIOModel())
	in, scaled, shifted, text := multiIORequest()
	out := runOutputs(t, f.run, in, ortrun.Output{Index: 1}, known(2, 2), known(0, 2, 4))
	checkTensor(t, "SHIFTED (ORT's)", out[0], shifted)
	checkTensor(t, "TEXT_OUT (a string: ORT's)", out[1], text)
	checkTensor(t, "SCALED (in place)", out[2], scaled)
	out = runOutputs(t, f.run, in, known(1, 2, 2), known(0, 2, 4))
	checkTensor(t, "SHIFTED (in place)", out[0], shifted)
	checkTensor(t, "SCALED (in place)", out[1], scaled)
}

// TestInPlaceAliases covers graph outputs whose value ORT may take from
// elsewhere instead of computing it into the caller's memory: an
// initializer (copied in), the output of a Reshape (a kernel that may
// alias its input), and a graph input that is also an output (ORT returns
// the input's own value, so the shim copies it out instead).
func TestInPlaceAliases(t *testing.T) {
	checkLive(t)
	f := newFixture(t, model(13, []node{{op: "Reshape", in: []string{"X", "flat"}, out: []string{"R"}}},
		[]value{{"X", tFloat, []any{"n", 2}, false}},
		[]value{{"X", tFloat, []any{"n", 2}, false}, {"C", tInt64, []any{2}, false}, {"R", tFloat, []any{"m"}, false}},
		initializer{"C", tInt64, []int64{2}, i64s(7, -7)},
		initializer{"flat", tInt64, []int64{1}, i64s(-1)}))
	x := ortrun.Tensor{Type: tFloat, Shape: []int64{3, 2}, Data: f32s(1, 2, 3, 4, 5, 6)}
	out := runOutputs(t, f.run, []ortrun.Tensor{x}, known(0, 3, 2), known(1, 2), known(2, 6))
	checkTensor(t, "X passed through", out[0], x)
	checkTensor(t, "the initializer C", out[1], ortrun.Tensor{Type: tInt64, Shape: []int64{2}, Data: i64s(7, -7)})
	checkTensor(t, "R = Reshape(X)", out[2], ortrun.Tensor{Type: tFloat, Shape: []int64{6}, Data: x.Data})
	if &out[0].Data[0] == &x.Data[0] {
		t.Error("the passed-through output aliases the input")
	}
}

// TestInPlaceWrongShape: a known shape the output does not have fails the
// run with ORT's error, releases everything, and leaves the Session usable.
func TestInPlaceWrongShape(t *testing.T) {
	checkLive(t)
	f := newFixture(t, addSubModel())
	in := []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{2, 16}, Data: make([]byte, 128)},
		{Type: tFloat, Shape: []int64{2, 16}, Data: make([]byte, 128)},
	}
	for _, shape := range [][]int64{{1, 16}, {2, 15}, {32}, {2, 16, 1}, {}} {
		_, err := f.run.RunOutputs(context.Background(), in, []ortrun.Output{{Index: 0}, known(1, shape...)})
		var e *ortrun.Error
		if !errors.As(err, &e) || e.Op != "Run" {
			t.Errorf("RunOutputs with OUTPUT1 known as %v = %v, want an ORT Run error", shape, err)
		} else {
			t.Logf("known as %v: %v", shape, err)
		}
	}
	out := runOutputs(t, f.run, in, known(0, 2, 16), known(1, 2, 16))
	checkTensor(t, "OUTPUT0", out[0], ortrun.Tensor{Type: tFloat, Shape: []int64{2, 16}, Data: make([]byte, 128)})
}

// TestInPlaceErrors: shapes Run refuses before calling ORT, and outputs the
// shim cannot return, whose known shape changes nothing.
func TestInPlaceErrors(t *testing.T) {
	checkLive(t)
	f := newFixture(t, addSubModel())
	in := []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
	}
	for _, tc := range []struct {
		outs  []ortrun.Output
		wants string
	}{
		{[]ortrun.Output{known(0, 1, -16)}, `output 0 ("OUTPUT0"): shape [1 -16] has a negative dimension`},
		{[]ortrun.Output{known(0, math.MaxInt64, 2)}, `output 0 ("OUTPUT0"): shape [9223372036854775807 2] has too many elements`},
		{[]ortrun.Output{known(0, math.MaxInt64/4)}, `output 0 ("OUTPUT0"): shape [2305843009213693951] has too many elements`},
		{[]ortrun.Output{known(1, 1, 16), known(1, 1, 16)}, `output 1 ("OUTPUT1") is asked for twice`},
	} {
		out, err := f.run.RunOutputs(context.Background(), in, tc.outs)
		if err == nil || !strings.Contains(err.Error(), tc.wants) || out != nil {
			t.Errorf("RunOutputs(%v) = %v, %v; want an error containing %q", tc.outs, out, err, tc.wants)
		}
	}
	seq := newFixture(t, sequenceModel())
	x := []ortrun.Tensor{{Type: tFloat, Shape: []int64{3}, Data: f32s(1, 2, 3)}}
	_, err := seq.run.RunOutputs(context.Background(), x, []ortrun.Output{known(0, 3), known(1, 3)})
	if wants := `output 1 ("S"): the value is a sequence, not a tensor`; err == nil || !strings.Contains(err.Error(), wants) {
		t.Errorf("RunOutputs = %v, want an error containing %q", err, wants)
	}
	f8 := newFixture(t, float8Model())
	x = []ortrun.Tensor{{Type: tFloat, Shape: []int64{2}, Data: f32s(1, -2)}}
	_, err = f8.run.RunOutputs(context.Background(), x, []ortrun.Output{known(0, 2), known(1, 2)})
	if wants := `output 1 ("F8"): element type FLOAT8E4M3FN (17) is not supported`; err == nil || !strings.Contains(err.Error(), wants) {
		t.Errorf("RunOutputs = %v, want an error containing %q", err, wants)
	}
}

// TestInPlaceCancel ends a run whose output ORT writes in place: the run is
// terminated and the next one completes.
func TestInPlaceCancel(t *testing.T) {
	checkLive(t)
	f := newFixture(t, chainModel(600))
	big := ortrun.Tensor{Type: tFloat, Shape: []int64{512, 512}, Data: make([]byte, 512*512*4)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := f.run.RunOutputs(ctx, []ortrun.Tensor{big}, []ortrun.Output{known(0, 512, 512)})
	if !errors.Is(err, ortrun.ErrTerminated) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunOutputs = %v, want ErrTerminated and DeadlineExceeded", err)
	}
	small := ortrun.Tensor{Type: tFloat, Shape: []int64{2, 2}, Data: f32s(0, 1, 1, 0)}
	out := runOutputs(t, f.run, []ortrun.Tensor{small}, known(0, 2, 2))
	checkTensor(t, "after termination", out[0], small)
}

// TestInPlaceAllocations holds RunOutputs's Go allocation budget when every
// output is written in place: the result slice and one allocation for the
// outputs' shapes and data.
func TestInPlaceAllocations(t *testing.T) {
	checkLive(t)
	if instrumented {
		t.Skip("allocation counts are not meaningful under -race, -asan or -msan")
	}
	f := newFixture(t, addSubModel())
	in := []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
	}
	outs := []ortrun.Output{known(0, 1, 16), known(1, 1, 16)}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := f.run.RunOutputs(ctx, in, outs); err != nil {
			t.Fatal(err)
		}
	}); n != 2 {
		t.Errorf("RunOutputs: %v allocations, want 2", n)
	}
}
