//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/cgo/ortrun"
)

// instrumented is set in -race, -asan and -msan builds.
var instrumented bool

// checkLive fails tb if the shim still holds OrtValues when tb ends.
func checkLive(tb testing.TB) {
	tb.Helper()
	tb.Cleanup(func() {
		if n := ortrun.LiveValues(); n != 0 {
			tb.Errorf("the shim holds %d OrtValues after the test", n)
		}
	})
}

// run calls s.Run with a background context and fails t on error.
func run(t testing.TB, s *ortrun.Session, in []ortrun.Tensor, want ...int) []ortrun.Tensor {
	t.Helper()
	out, err := s.Run(context.Background(), in, want)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(out) != len(want) {
		t.Fatalf("Run returned %d tensors, want %d", len(out), len(want))
	}
	return out
}

func checkTensor(t testing.TB, what string, got, want ortrun.Tensor) {
	t.Helper()
	if got.Type != want.Type || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
		t.Errorf("%s = {Type %d, Shape %v, %d bytes %.64q}, want {Type %d, Shape %v, %d bytes %.64q}",
			what, got.Type, got.Shape, len(got.Data), got.Data, want.Type, want.Shape, len(want.Data), want.Data)
	}
}

// TestSessionLayout guards the unsafe read of the OrtSession pointer (see
// the package doc): onnxruntime_go's DynamicAdvancedSession starts with a
// pointer to its AdvancedSession, which starts with the *C.OrtSession. The
// behavioural guard is every other test: ORT's Run would fail or crash on a
// wrong pointer.
func TestSessionLayout(t *testing.T) {
	dyn := reflect.TypeFor[ort.DynamicAdvancedSession]()
	f := dyn.Field(0)
	if f.Name != "s" || f.Offset != 0 || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Name() != "AdvancedSession" {
		t.Fatalf("DynamicAdvancedSession's first field is %s %v at offset %d; update ortrun", f.Name, f.Type, f.Offset)
	}
	g := f.Type.Elem().Field(0)
	if g.Name != "ortSession" || g.Offset != 0 || g.Type.Kind() != reflect.Pointer ||
		g.Type.Elem().Name() != "_Ctype_struct_OrtSession" {
		t.Fatalf("AdvancedSession's first field is %s %v at offset %d; update ortrun", g.Name, g.Type, g.Offset)
	}
}

// randomData returns n elements of type typ as bytes (BOOL as 0 or 1).
func randomData(r *rand.Rand, typ int32, n int) []byte {
	sizes := map[int32]int{tFloat: 4, tUint8: 1, tInt8: 1, tUint16: 2, tInt16: 2, tInt32: 4, tInt64: 8, tBool: 1,
		tFloat16: 2, tDouble: 8, tUint32: 4, tUint64: 8, tBfloat16: 2}
	b := make([]byte, n*sizes[typ])
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if typ == tBool {
		for i := range b {
			b[i] &= 1
		}
	}
	return b
}

var allTypes = []struct {
	name string
	typ  int32
}{
	{"FLOAT", tFloat}, {"UINT8", tUint8}, {"INT8", tInt8}, {"UINT16", tUint16}, {"INT16", tInt16},
	{"INT32", tInt32}, {"INT64", tInt64}, {"STRING", tString}, {"BOOL", tBool}, {"FLOAT16", tFloat16},
	{"DOUBLE", tDouble}, {"UINT32", tUint32}, {"UINT64", tUint64}, {"BFLOAT16", tBfloat16},
}

// TestIdentity sends every supported element type through an Identity
// model and compares the output byte for byte: FLOAT16 and BFLOAT16 (which
// onnxruntime_go cannot auto-allocate), BOOL, and STRING with NUL bytes and
// invalid UTF-8.
func TestIdentity(t *testing.T) {
	checkLive(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range allTypes {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, identityModel(tc.typ))
			shapes := [][]int64{{2, 3}, {1, 1}, {0, 3}, {3, 0}, {7, 129}}
			for _, shape := range shapes {
				n := int(shape[0] * shape[1])
				var data []byte
				if tc.typ == tString {
					elems := make([]string, n)
					samples := []string{"he\x00llo", "\xff\xfe", "", "plain", strings.Repeat("\x00", 40), "ok\xc3("}
					for i := range elems {
						elems[i] = samples[i%len(samples)] + fmt.Sprint(i)
					}
					data = frame(elems...)
				} else {
					data = randomData(r, tc.typ, n)
				}
				in := ortrun.Tensor{Type: tc.typ, Shape: shape, Data: data}
				out := run(t, f.run, []ortrun.Tensor{in}, 0)
				checkTensor(t, fmt.Sprintf("Identity %v", shape), out[0], in)
				if out[0].Data == nil || (len(out[0].Shape) > 0 && &out[0].Shape[0] == &shape[0]) {
					t.Errorf("output for %v aliases the input or has nil Data", shape)
				}
			}
		})
	}
}

// TestStringElements checks the BYTES elements ORT's C-string paths lose.
func TestStringElements(t *testing.T) {
	checkLive(t)
	f := newFixture(t, identityModel(tString))
	big := strings.Repeat("\x00\xffbig", 1<<20/5) + "x" // 1 MiB
	for _, tc := range []struct {
		name  string
		elems []string
	}{
		{"embedded NUL", []string{"he\x00llo"}},
		{"only NULs", []string{"\x00", "\x00\x00\x00"}},
		{"invalid UTF-8", []string{"\xff\xfe", "ok\xc3("}},
		{"empty strings", []string{"", "", ""}},
		{"1 MiB element", []string{"a", big, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ortrun.Tensor{Type: tString, Shape: []int64{1, int64(len(tc.elems))}, Data: frame(tc.elems...)}
			out := run(t, f.run, []ortrun.Tensor{in}, 0)
			checkTensor(t, "Identity", out[0], in)
		})
	}
}

// TestScalar runs rank-0 inputs and outputs, which onnxruntime_go's Run
// cannot return.
func TestScalar(t *testing.T) {
	checkLive(t)
	f := newFixture(t, scalarModel())
	half := []byte{0x00, 0x3c} // FLOAT16 1.0
	in := []ortrun.Tensor{
		{Type: tInt64, Shape: nil, Data: i64s(21)},
		{Type: tFloat16, Shape: []int64{}, Data: half},
	}
	out := run(t, f.run, in, 0, 1)
	checkTensor(t, "SUM", out[0], ortrun.Tensor{Type: tInt64, Data: i64s(42)})
	checkTensor(t, "HALF", out[1], ortrun.Tensor{Type: tFloat16, Data: half})
	if len(out[0].Shape) != 0 {
		t.Errorf("SUM has shape %v, want a scalar", out[0].Shape)
	}
}

func TestAddSub(t *testing.T) {
	checkLive(t)
	f := newFixture(t, addSubModel())
	a, b := make([]float32, 32), make([]float32, 32)
	for i := range a {
		a[i], b[i] = float32(i)*1.5, float32(100-i)
	}
	out := run(t, f.run, []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{2, 16}, Data: f32s(a...)},
		{Type: tFloat, Shape: []int64{2, 16}, Data: f32s(b...)},
	}, 1, 0)
	sum, diff := make([]float32, 32), make([]float32, 32)
	for i := range a {
		sum[i], diff[i] = a[i]+b[i], a[i]-b[i]
	}
	checkTensor(t, "OUTPUT1", out[0], ortrun.Tensor{Type: tFloat, Shape: []int64{2, 16}, Data: f32s(diff...)})
	checkTensor(t, "OUTPUT0", out[1], ortrun.Tensor{Type: tFloat, Shape: []int64{2, 16}, Data: f32s(sum...)})
}

// TestOutputSubsets asks for some outputs only, in an order of our choice.
func TestOutputSubsets(t *testing.T) {
	checkLive(t)
	f := newFixture(t, multiIOModel())
	in, scaled, shifted, text := multiIORequest()
	for _, tc := range []struct {
		name string
		want []int
		outs []ortrun.Tensor
	}{
		{"TEXT_OUT only", []int{2}, []ortrun.Tensor{text}},
		{"SHIFTED then SCALED", []int{1, 0}, []ortrun.Tensor{shifted, scaled}},
		{"all, reversed", []int{2, 1, 0}, []ortrun.Tensor{text, shifted, scaled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, f.run, in, tc.want...)
			for k := range out {
				checkTensor(t, f.outputs[tc.want[k]], out[k], tc.outs[k])
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		out, err := f.run.Run(context.Background(), in, nil)
		if err != nil || out != nil {
			t.Errorf("Run with no outputs = %v, %v; want nil, nil", out, err)
		}
	})
}

// TestMisaligned feeds numeric data that is not aligned for its type.
func TestMisaligned(t *testing.T) {
	checkLive(t)
	f := newFixture(t, identityModel(tDouble))
	buf := make([]byte, 8*6+1)
	want := i64s(1, -2, 3, math.MaxInt64, 5, 6)
	copy(buf[1:], want)
	in := ortrun.Tensor{Type: tDouble, Shape: []int64{2, 3}, Data: buf[1:]}
	if uintptr(unsafe.Pointer(&in.Data[0]))%8 == 0 {
		t.Fatal("the test data is aligned after all")
	}
	out := run(t, f.run, []ortrun.Tensor{in}, 0)
	checkTensor(t, "Identity", out[0], ortrun.Tensor{Type: tDouble, Shape: []int64{2, 3}, Data: want})
}

// TestInputErrors checks the arguments Run refuses before calling ORT.
func TestInputErrors(t *testing.T) {
	checkLive(t)
	f := newFixture(t, multiIOModel())
	good := func() []ortrun.Tensor {
		return []ortrun.Tensor{
			{Type: tFloat, Shape: []int64{1, 4}, Data: f32s(1, 2, 3, 4)},
			{Type: tInt64, Shape: []int64{1, 2}, Data: i64s(1, 2)},
			{Type: tString, Shape: []int64{1}, Data: frame("x")},
		}
	}
	for _, tc := range []struct {
		name    string
		edit    func(in []ortrun.Tensor) []ortrun.Tensor
		want    []int
		framing bool
		wants   string
	}{
		{"short data", func(in []ortrun.Tensor) []ortrun.Tensor { in[0].Data = in[0].Data[:15]; return in }, nil, false,
			`input 0 ("FLOATS"): shape [1 4] of FLOAT (1) needs 16 bytes, the data has 15`},
		{"long data", func(in []ortrun.Tensor) []ortrun.Tensor { in[1].Data = i64s(1, 2, 3); return in }, nil, false,
			`input 1 ("INTS"): shape [1 2] of INT64 (7) needs 16 bytes, the data has 24`},
		{"scalar shape, vector data", func(in []ortrun.Tensor) []ortrun.Tensor { in[1].Shape = nil; return in }, nil, false,
			`input 1 ("INTS"): shape [] of INT64 (7) needs 8 bytes, the data has 16`},
		{"negative dimension", func(in []ortrun.Tensor) []ortrun.Tensor { in[0].Shape = []int64{-1, 4}; return in }, nil, false,
			`input 0 ("FLOATS"): shape [-1 4] has a negative dimension`},
		{"overflowing shape", func(in []ortrun.Tensor) []ortrun.Tensor {
			in[0].Shape = []int64{math.MaxInt64, 2}
			return in
		}, nil, false, `input 0 ("FLOATS"): shape [9223372036854775807 2] has too many elements`},
		{"unsupported type", func(in []ortrun.Tensor) []ortrun.Tensor { in[0].Type = tComplex; return in }, nil, false,
			`input 0 ("FLOATS"): element type COMPLEX64 (14) is not supported`},
		{"framing", func(in []ortrun.Tensor) []ortrun.Tensor { in[2].Data = frame("x", "y"); return in }, nil, true,
			`input 2 ("TEXT"): malformed BYTES data: data holds 2 elements, the tensor has only 1`},
		{"framing truncated", func(in []ortrun.Tensor) []ortrun.Tensor { in[2].Data = []byte{5, 0, 0, 0, 'a'}; return in }, nil, true,
			`input 2 ("TEXT"): malformed BYTES data: element 0 at offset 0: length 5 runs past the end of the data (1 bytes left)`},
		{"too few inputs", func(in []ortrun.Tensor) []ortrun.Tensor { return in[:2] }, nil, false,
			"2 inputs given, the session has 3"},
		{"want out of range", nil, []int{0, 3}, false, "outputs[1].Index = 3 is not an output index (the session has 3 outputs)"},
		{"want negative", nil, []int{-1}, false, "outputs[0].Index = -1 is not an output index"},
		{"want twice", nil, []int{1, 2, 1}, false, `output 1 ("SHIFTED") is asked for twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			if tc.edit != nil {
				in = tc.edit(in)
			}
			want := tc.want
			if want == nil {
				want = []int{0, 1, 2}
			}
			out, err := f.run.Run(context.Background(), in, want)
			if err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.wants)
			}
			if out != nil {
				t.Errorf("Run returned tensors with its error")
			}
			if errors.Is(err, ortrun.ErrFraming) != tc.framing {
				t.Errorf("errors.Is(%v, ErrFraming) = %v, want %v", err, !tc.framing, tc.framing)
			}
			var e *ortrun.Error
			if errors.As(err, &e) {
				t.Errorf("a check before ORT gave an ORT error: %v", err)
			}
		})
	}
	// The session still works.
	run(t, f.run, good(), 0, 1, 2)
}

// TestInvalidArgument feeds an input ORT itself rejects.
func TestInvalidArgument(t *testing.T) {
	checkLive(t)
	f := newFixture(t, matmulFixedModel())
	_, err := f.run.Run(context.Background(), []ortrun.Tensor{{Type: tFloat, Shape: []int64{1, 3}, Data: f32s(1, 2, 3)}}, []int{0})
	var e *ortrun.Error
	if !errors.As(err, &e) {
		t.Fatalf("Run = %v, want an *ortrun.Error", err)
	}
	if !e.InvalidArgument() || e.Code != 2 || e.Op != "Run" || !strings.Contains(e.Msg, "Got invalid dimensions for input: X") {
		t.Errorf("Run error = %#v, want ORT_INVALID_ARGUMENT from Run about X's dimensions", e)
	}
	if !strings.HasPrefix(err.Error(), "ortrun: Run: ONNX Runtime Run: ORT_INVALID_ARGUMENT: ") {
		t.Errorf("Run error message = %q", err)
	}
	if errors.Is(err, ortrun.ErrTerminated) {
		t.Errorf("an invalid argument reads as a termination: %v", err)
	}
	// The right shape works.
	out := run(t, f.run, []ortrun.Tensor{{Type: tFloat, Shape: []int64{2, 3}, Data: f32s(1, 2, 3, 4, 5, 6)}}, 0)
	checkTensor(t, "Y", out[0], ortrun.Tensor{Type: tFloat, Shape: []int64{2, 2}, Data: f32s(22, 28, 49, 64)})
}

// TestWrongType feeds an input of a type the model does not take: ORT's
// CreateTensor succeeds and Run refuses it.
func TestWrongType(t *testing.T) {
	checkLive(t)
	f := newFixture(t, identityModel(tFloat))
	_, err := f.run.Run(context.Background(), []ortrun.Tensor{{Type: tInt32, Shape: []int64{1, 1}, Data: make([]byte, 4)}}, []int{0})
	var e *ortrun.Error
	if !errors.As(err, &e) || !e.InvalidArgument() {
		t.Fatalf("Run = %v, want an ORT_INVALID_ARGUMENT *ortrun.Error", err)
	}
}

// TestUnsupportedOutputs asks for outputs the shim cannot return, after one
// it can: the error names the output, and nothing leaks.
func TestUnsupportedOutputs(t *testing.T) {
	checkLive(t)
	t.Run("sequence", func(t *testing.T) {
		f := newFixture(t, sequenceModel())
		in := []ortrun.Tensor{{Type: tFloat, Shape: []int64{3}, Data: f32s(1, 2, 3)}}
		_, err := f.run.Run(context.Background(), in, []int{0, 1})
		if wants := `output 1 ("S"): the value is a sequence, not a tensor`; err == nil || !strings.Contains(err.Error(), wants) {
			t.Errorf("Run = %v, want an error containing %q", err, wants)
		}
		out := run(t, f.run, in, 0)
		checkTensor(t, "Y", out[0], in[0])
	})
	t.Run("float8", func(t *testing.T) {
		f := newFixture(t, float8Model())
		in := []ortrun.Tensor{{Type: tFloat, Shape: []int64{2}, Data: f32s(1, -2)}}
		_, err := f.run.Run(context.Background(), in, []int{0, 1})
		if wants := `output 1 ("F8"): element type FLOAT8E4M3FN (17) is not supported`; err == nil || !strings.Contains(err.Error(), wants) {
			t.Errorf("Run = %v, want an error containing %q", err, wants)
		}
		out := run(t, f.run, in, 0)
		checkTensor(t, "Y", out[0], ortrun.Tensor{Type: tFloat16, Shape: []int64{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}})
	})
}

// TestCancelBeforeRun: a context that has already ended stops Run before
// it calls ORT.
func TestCancelBeforeRun(t *testing.T) {
	checkLive(t)
	f := newFixture(t, chainModel(200))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := ortrun.Tensor{Type: tFloat, Shape: []int64{512, 512}, Data: make([]byte, 512*512*4)}
	start := time.Now()
	_, err := f.run.Run(ctx, []ortrun.Tensor{x}, []int{0})
	if !errors.Is(err, ortrun.ErrTerminated) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Run = %v, want ErrTerminated and context.Canceled, not started", err)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Run with a cancelled context took %v", d)
	}
}

// TestCancelDuringRun ends the context of a run of many MatMul kernels
// while it runs; the next run on the same Session must not be terminated.
func TestCancelDuringRun(t *testing.T) {
	checkLive(t)
	f := newFixture(t, chainModel(600))
	big := ortrun.Tensor{Type: tFloat, Shape: []int64{512, 512}, Data: make([]byte, 512*512*4)}
	small := ortrun.Tensor{Type: tFloat, Shape: []int64{2, 2}, Data: f32s(0, 1, 1, 0)}
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		start := time.Now()
		_, err := f.run.Run(ctx, []ortrun.Tensor{big}, []int{0})
		d := time.Since(start)
		cancel()
		var e *ortrun.Error
		if !errors.Is(err, ortrun.ErrTerminated) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.Op != "Run" {
			t.Fatalf("run %d: Run = %v after %v, want ErrTerminated, DeadlineExceeded and an ORT Run error", i, err, d)
		}
		t.Logf("run %d: terminated after %v (deadline 30ms): %v", i, d, err)
		if d > 2*time.Second {
			t.Errorf("run %d: termination took %v", i, d)
		}
		// The flag is cleared: a run after a terminated one completes.
		out := run(t, f.run, []ortrun.Tensor{small}, 0)
		checkTensor(t, "after termination", out[0], small) // the swap matrix to an odd power
	}
}

// TestCancelRaces ends contexts at random points around short runs; every
// run either succeeds or is terminated, and the next uncancelled run works.
func TestCancelRaces(t *testing.T) {
	checkLive(t)
	f := newFixture(t, addSubModel())
	in := []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{4, 16}, Data: f32s(make([]float32, 64)...)},
		{Type: tFloat, Shape: []int64{4, 16}, Data: f32s(make([]float32, 64)...)},
	}
	terminated := 0
	for i := range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		go func() {
			defer close(stop)
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			cancel()
		}()
		if _, err := f.run.Run(ctx, in, []int{0, 1}); err != nil {
			if !errors.Is(err, ortrun.ErrTerminated) {
				t.Fatalf("Run: %v", err)
			}
			terminated++
		}
		<-stop
		run(t, f.run, in, 0, 1)
	}
	t.Logf("%d of 300 runs terminated", terminated)
}

// TestConcurrent runs several Sessions at once, four over one ort session
// and four over sessions of their own (run with -race).
func TestConcurrent(t *testing.T) {
	checkLive(t)
	shared := newFixture(t, multiIOModel())
	var wg sync.WaitGroup
	for g := range 8 {
		s := shared.run
		switch {
		case g >= 4:
			s = newFixture(t, multiIOModel()).run
		case g > 0:
			s = shared.session(t)
		}
		wg.Go(func() {
			for i := range 200 {
				batch := int64(i%4 + 1)
				floats := make([]float32, 4*batch)
				ints := make([]int64, 2*batch)
				elems := make([]string, batch)
				for j := range floats {
					floats[j] = float32(g*1000 + i + j)
				}
				for j := range ints {
					ints[j] = int64(g<<32 + i<<8 + j)
				}
				for j := range elems {
					elems[j] = fmt.Sprintf("g%d\x00i%d\xff%d", g, i, j)
				}
				in := []ortrun.Tensor{
					{Type: tFloat, Shape: []int64{batch, 4}, Data: f32s(floats...)},
					{Type: tInt64, Shape: []int64{batch, 2}, Data: i64s(ints...)},
					{Type: tString, Shape: []int64{batch}, Data: frame(elems...)},
				}
				ctx := context.Background()
				if i%10 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				out, err := s.Run(ctx, in, []int{2, 1, 0})
				if err != nil {
					t.Errorf("goroutine %d, run %d: %v", g, i, err)
					return
				}
				for j := range ints {
					ints[j]++
				}
				for j := range floats {
					floats[j] *= 2
				}
				if !bytes.Equal(out[0].Data, in[2].Data) || !bytes.Equal(out[1].Data, i64s(ints...)) || !bytes.Equal(out[2].Data, f32s(floats...)) {
					t.Errorf("goroutine %d, run %d: wrong outputs", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// rss returns the process's resident set size in bytes (Linux), or 0.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}

// TestNoLeaks runs every path, successful and failing, many times: the
// shim's count of live OrtValues must return to zero, and the RSS must not
// keep growing.
func TestNoLeaks(t *testing.T) {
	checkLive(t)
	if testing.Short() {
		t.Skip("slow")
	}
	multi := newFixture(t, multiIOModel())
	seq := newFixture(t, sequenceModel())
	f8 := newFixture(t, float8Model())
	mm := newFixture(t, matmulFixedModel())
	elems := make([]string, 1000)
	for i := range elems {
		elems[i] = strings.Repeat("\x00x", 16)
	}
	text := frame(elems...)
	floats := make([]byte, 1000*4*4)
	ints := make([]byte, 1000*2*8)
	round := func() {
		ctx := context.Background()
		in := []ortrun.Tensor{
			{Type: tFloat, Shape: []int64{1000, 4}, Data: floats},
			{Type: tInt64, Shape: []int64{1000, 2}, Data: ints},
			{Type: tString, Shape: []int64{1000}, Data: text},
		}
		if _, err := multi.run.Run(ctx, in, []int{0, 1, 2}); err != nil {
			t.Fatal(err)
		}
		inPlace := []ortrun.Output{known(0, 1000, 4), known(1, 1000, 2), known(2, 1000)}
		if _, err := multi.run.RunOutputs(ctx, in, inPlace); err != nil {
			t.Fatal(err)
		}
		inPlace[1].Shape = []int64{2000} // ORT refuses the rank, after the outputs' values are made
		if _, err := multi.run.RunOutputs(ctx, in, inPlace); err == nil {
			t.Fatal("no shape error")
		}
		bad := slices.Clone(in)
		bad[2].Data = text[:len(text)-1] // framing error, after two inputs are described
		if _, err := multi.run.Run(ctx, bad, []int{0, 2}); err == nil {
			t.Fatal("no framing error")
		}
		x := []ortrun.Tensor{{Type: tFloat, Shape: []int64{1000}, Data: floats[:4000]}}
		if _, err := seq.run.Run(ctx, x, []int{0, 1}); err == nil { // Y described, then S refused
			t.Fatal("no sequence error")
		}
		if _, err := f8.run.Run(ctx, x, []int{0, 1}); err == nil {
			t.Fatal("no float8 error")
		}
		if _, err := mm.run.Run(ctx, []ortrun.Tensor{{Type: tFloat, Shape: []int64{1, 3}, Data: floats[:12]}}, []int{0}); err == nil {
			t.Fatal("no ORT error")
		}
		if n := ortrun.LiveValues(); n != 0 {
			t.Fatalf("%d OrtValues live after a round", n)
		}
	}
	for range 200 {
		round()
	}
	before := rss()
	const rounds = 2000
	for range rounds {
		round()
	}
	after := rss()
	t.Logf("RSS %d MiB before, %d MiB after %d more rounds", before>>20, after>>20, rounds)
	// Each round moves about 150 KB through ORT; a leak of even one output
	// per round would add hundreds of MiB.
	if instrumented {
		return // ASan's quarantine holds freed memory: the RSS says nothing
	}
	if before > 0 && after-before > 64<<20 {
		t.Errorf("RSS grew by %d MiB over %d rounds", (after-before)>>20, rounds)
	}
}

// TestAllocations holds Run's Go allocation budget with a background
// context: the result slice, one shape array for all outputs, and one Data
// slice per output.
func TestAllocations(t *testing.T) {
	checkLive(t)
	if instrumented {
		t.Skip("allocation counts are not meaningful under -race, -asan or -msan")
	}
	f := newFixture(t, addSubModel())
	in := []ortrun.Tensor{
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
		{Type: tFloat, Shape: []int64{1, 16}, Data: make([]byte, 64)},
	}
	want := []int{0, 1}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := f.run.Run(ctx, in, want); err != nil {
			t.Fatal(err)
		}
	}); n != 4 {
		t.Errorf("Run: %v allocations, want 4", n)
	}
}

func TestClosedAndDestroyed(t *testing.T) {
	checkLive(t)
	f := newFixture(t, identityModel(tUint8))
	in := []ortrun.Tensor{{Type: tUint8, Shape: []int64{1, 1}, Data: []byte{7}}}
	s := f.session(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := s.Run(context.Background(), in, []int{0}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run after Close = %v, want an error", err)
	}

	g := newFixture(t, identityModel(tUint8))
	_ = g.ort.Destroy()
	if _, err := g.run.Run(context.Background(), in, []int{0}); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("Run after the ort session's Destroy = %v, want an error", err)
	}
	if _, err := ortrun.NewSession(g.ort, g.inputs, g.outputs); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("NewSession on a destroyed session = %v, want an error", err)
	}
	if _, err := ortrun.NewSession(nil, nil, nil); err == nil {
		t.Error("NewSession(nil) succeeded")
	}
	if _, err := ortrun.NewSession(f.ort, []string{"IN\x00PUT0"}, f.outputs); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NewSession with a NUL in a name = %v", err)
	}
}

func TestBind(t *testing.T) {
	needORT(t)
	lib, err := libraryPath()
	if err != nil {
		t.Fatal(err)
	}
	if err := ortrun.Bind(lib); err != nil {
		t.Errorf("Bind again with the same path = %v, want nil", err)
	}
	link := filepath.Join(t.TempDir(), "libonnxruntime-link.so")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	if err := ortrun.Bind(link); err != nil {
		t.Errorf("Bind through a symlink to the bound library = %v, want nil", err)
	}
	for _, tc := range []struct{ name, path, wants string }{
		{"empty", "", "empty library path"},
		{"not loaded", "/nonexistent/libonnxruntime.so", "not loaded in this process"},
		{"not ONNX Runtime", "libc.so.6", "OrtGetApiBase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ortrun.Bind(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Errorf("Bind(%q) = %v, want an error containing %q", tc.path, err, tc.wants)
			}
		})
	}
	// A failed Bind does not unbind.
	f := newFixture(t, identityModel(tUint8))
	run(t, f.run, []ortrun.Tensor{{Type: tUint8, Shape: []int64{1, 1}, Data: []byte{1}}}, 0)
}

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    ortrun.Error
		want string
	}{
		{ortrun.Error{Code: 2, Op: "Run", Msg: "bad"}, "ONNX Runtime Run: ORT_INVALID_ARGUMENT: bad"},
		{ortrun.Error{Code: 1, Op: "Run", Msg: "Exiting"}, "ONNX Runtime Run: ORT_FAIL: Exiting"},
		{ortrun.Error{Code: 99, Op: "X", Msg: "m"}, "ONNX Runtime X: ORT error code 99: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if got := tc.e.InvalidArgument(); got != (tc.e.Code == 2) {
			t.Errorf("%v: InvalidArgument() = %v", tc.e, got)
		}
	}
}

// modelsDir is where the backend's committed test models live.
const modelsDir = "../../backend/onnxruntime/testdata/models"

// TestCommittedModels runs the ONNX backend's committed models (see their
// README.md) when they are there: identity for 13 types, and the
// multi-input models. The other tests build equivalent models themselves.
func TestCommittedModels(t *testing.T) {
	checkLive(t)
	if _, err := os.Stat(modelsDir); err != nil {
		t.Skipf("no committed models: %v", err)
	}
	load := func(t *testing.T, name string) *fixture {
		b, err := os.ReadFile(filepath.Join(modelsDir, name))
		if err != nil {
			t.Skip(err)
		}
		return newFixture(t, b)
	}
	r := rand.New(rand.NewPCG(3, 4))
	files := map[int32]string{tBool: "bool", tUint8: "uint8", tUint16: "uint16", tUint32: "uint32", tUint64: "uint64",
		tInt8: "int8", tInt16: "int16", tInt32: "int32", tInt64: "int64", tFloat16: "fp16", tFloat: "fp32", tDouble: "fp64", tString: "string"}
	for typ, name := range files {
		t.Run("identity_"+name, func(t *testing.T) {
			f := load(t, "identity_"+name+".onnx")
			in := ortrun.Tensor{Type: typ, Shape: []int64{2, 3}, Data: randomData(r, typ, 6)}
			if typ == tString {
				in.Data = frame("he\x00llo", "\xff\xfe", "", "a", "b", "c")
			}
			checkTensor(t, "OUTPUT0", run(t, f.run, []ortrun.Tensor{in}, 0)[0], in)
		})
	}
	t.Run("multi_io", func(t *testing.T) {
		f := load(t, "multi_io.onnx")
		out := run(t, f.run, []ortrun.Tensor{
			{Type: tFloat, Shape: []int64{1, 4}, Data: f32s(1, 2, 3, 4)},
			{Type: tInt64, Shape: []int64{1, 2}, Data: i64s(5, 6)},
			{Type: tString, Shape: []int64{1}, Data: frame("t\x00")},
		}, 1, 0)
		checkTensor(t, "SHIFTED", out[0], ortrun.Tensor{Type: tInt64, Shape: []int64{1, 2}, Data: i64s(6, 7)})
		checkTensor(t, "SCALED", out[1], ortrun.Tensor{Type: tFloat, Shape: []int64{1, 4}, Data: f32s(2, 4, 6, 8)})
	})
	t.Run("matmul_fixed", func(t *testing.T) {
		f := load(t, "matmul_fixed.onnx")
		_, err := f.run.Run(context.Background(), []ortrun.Tensor{{Type: tFloat, Shape: []int64{1, 3}, Data: f32s(1, 2, 3)}}, []int{0})
		var e *ortrun.Error
		if !errors.As(err, &e) || !e.InvalidArgument() {
			t.Errorf("Run with X [1, 3] = %v, want ORT_INVALID_ARGUMENT", err)
		}
		out := run(t, f.run, []ortrun.Tensor{{Type: tFloat, Shape: []int64{2, 3}, Data: f32s(1, 2, 3, 4, 5, 6)}}, 0)
		checkTensor(t, "Y", out[0], ortrun.Tensor{Type: tFloat, Shape: []int64{2, 2}, Data: f32s(22, 28, 49, 64)})
	})
	t.Run("reduce_dynamic", func(t *testing.T) {
		f := load(t, "reduce_dynamic.onnx")
		out := run(t, f.run, []ortrun.Tensor{{Type: tFloat, Shape: []int64{1, 2, 3}, Data: f32s(1, 2, 3, 4, 5, 6)}}, 0)
		checkTensor(t, "SUM", out[0], ortrun.Tensor{Type: tFloat, Shape: []int64{1, 2}, Data: f32s(6, 15)})
	})
	t.Run("sum_int32_nobatch", func(t *testing.T) {
		f := load(t, "sum_int32_nobatch.onnx")
		x := make([]byte, 0, 12)
		for _, v := range []int32{1, 2, 39} {
			x = binary.LittleEndian.AppendUint32(x, uint32(v))
		}
		out := run(t, f.run, []ortrun.Tensor{{Type: tInt32, Shape: []int64{3}, Data: x}}, 0)
		checkTensor(t, "TOTAL", out[0], ortrun.Tensor{Type: tInt32, Shape: []int64{1}, Data: []byte{42, 0, 0, 0}})
	})
}
