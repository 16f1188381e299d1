package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// addSubFile is the 16-element add/sub model every comparison serves:
// OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, FP32 [batch, 16].
var addSubFile = filepath.Join("..", "..", "backend", "onnxruntime", "testdata", "models", "add_sub.onnx")

// addSubConfig is its configuration in our server: batching allowed (a
// client sends [1, 16]), no dynamic batcher, instances as given.
func addSubConfig(instances int) string {
	return fmt.Sprintf(`name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
instance_group [ { count: %d kind: KIND_CPU } ]
`, instances)
}

// addSubServer serves add_sub with the ONNX Runtime backend. Starting it
// also initializes the ONNX Runtime environment that raw sessions need.
func addSubServer(tb testing.TB, config string) *triton.Server {
	tb.Helper()
	testenv.NeedLibrary(tb)
	dir := tb.TempDir()
	vdir := filepath.Join(dir, "add_sub", "1")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		tb.Fatal(err)
	}
	abs, err := filepath.Abs(addSubFile)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(vdir, "model.onnx")); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "add_sub", "config.pbtxt"), []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	srv, err := triton.New(triton.WithModelRepository(dir), triton.WithBackend("onnxruntime", onnxruntime.New()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Error(err)
		}
	})
	return srv
}

// addSubInputs returns the two [1, 16] inputs of request i and the outputs
// add_sub must answer with.
func addSubInputs(i int) (in0, in1, sum, diff []float32) {
	in0, in1 = make([]float32, 16), make([]float32, 16)
	sum, diff = make([]float32, 16), make([]float32, 16)
	for k := range in0 {
		in0[k], in1[k] = float32(i+k), float32(2*k)
		sum[k], diff[k] = in0[k]+in1[k], in0[k]-in1[k]
	}
	return in0, in1, sum, diff
}

// addSubRequest is request i as our server takes it.
func addSubRequest(tb testing.TB, i int) *triton.InferRequest {
	tb.Helper()
	a, b, _, _ := addSubInputs(i)
	t0, err := tensor.From("INPUT0", tensor.Shape{1, 16}, a)
	if err != nil {
		tb.Fatal(err)
	}
	t1, err := tensor.From("INPUT1", tensor.Shape{1, 16}, b)
	if err != nil {
		tb.Fatal(err)
	}
	return &triton.InferRequest{Model: "add_sub", Inputs: []tensor.Tensor{t0, t1}}
}

// rawSession is add_sub in a bare onnxruntime_go session, as a minimal
// server would hold it: one intra-op and one inter-op thread unless
// threads says otherwise. The ONNX Runtime environment must be up
// (addSubServer).
func rawSession(tb testing.TB, threads int) *ort.DynamicAdvancedSession {
	tb.Helper()
	opts, err := ort.NewSessionOptions()
	if err != nil {
		tb.Fatal(err)
	}
	defer opts.Destroy()
	if threads > 0 {
		if err := opts.SetIntraOpNumThreads(threads); err != nil {
			tb.Fatal(err)
		}
		if err := opts.SetInterOpNumThreads(threads); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := ort.NewDynamicAdvancedSession(addSubFile, []string{"INPUT0", "INPUT1"}, []string{"OUTPUT0", "OUTPUT1"}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Destroy(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// rawAddSub runs add_sub on a raw session as a minimal server does per
// request: tensors over the caller's data, outputs allocated by ONNX
// Runtime, copied out, everything released.
func rawAddSub(s *ort.DynamicAdvancedSession, in0, in1 []float32) (sum, diff []float32, err error) {
	shape := ort.NewShape(1, int64(len(in0)))
	a, err := ort.NewTensor(shape, in0)
	if err != nil {
		return nil, nil, err
	}
	defer a.Destroy()
	b, err := ort.NewTensor(shape, in1)
	if err != nil {
		return nil, nil, err
	}
	defer b.Destroy()
	outs := []ort.Value{nil, nil}
	if err := s.Run([]ort.Value{a, b}, outs); err != nil {
		return nil, nil, err
	}
	defer outs[0].Destroy()
	defer outs[1].Destroy()
	return slices.Clone(outs[0].(*ort.Tensor[float32]).GetData()), slices.Clone(outs[1].(*ort.Tensor[float32]).GetData()), nil
}

// load is what a closed-loop run measured.
type load struct {
	rps      float64
	p50, p99 time.Duration
	errs     int64
}

// closedLoop runs do from c goroutines (g is the goroutine's number) for
// d, each calling again as soon as its call returns, and measures.
func closedLoop(c int, d time.Duration, do func(g int) error) load {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		lat   []time.Duration
		errs  atomic.Int64
		n     atomic.Int64
		start = time.Now()
		stop  = start.Add(d)
	)
	for g := range c {
		wg.Go(func() {
			var mine []time.Duration
			for {
				t := time.Now()
				if !t.Before(stop) {
					break
				}
				if err := do(g); err != nil {
					errs.Add(1)
				}
				mine = append(mine, time.Since(t))
				n.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	l := load{rps: float64(n.Load()) / elapsed.Seconds(), errs: errs.Load()}
	if len(lat) > 0 {
		l.p50, l.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return l
}

// contender is one side of a comparison: run measures it once, under the
// given concurrency, for the given time.
type contender struct {
	name string
	run  func(c int, d time.Duration) load
}

// paired runs the contenders at each concurrency in rounds (one per b.N)
// in an order that rotates from round to round, each for slice, and
// reports per contender and concurrency the median req/s and p50, and the
// median and range of the rounds' own ratios against contenders[0] (the
// baseline), as "<name>/c<c>-ratio", "-ratio-min" and "-ratio-max". A
// contender whose requests fail fails the benchmark.
func paired(b *testing.B, slice time.Duration, concurrency []int, contenders ...contender) {
	type key struct {
		name string
		c    int
	}
	rps, p50, ratio := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	round := 0
	for b.Loop() {
		for _, c := range concurrency {
			got := make([]load, len(contenders))
			for k := range contenders {
				i := (k + round) % len(contenders)
				got[i] = contenders[i].run(c, slice)
				if got[i].errs > 0 {
					b.Fatalf("%s at c%d: %d requests failed", contenders[i].name, c, got[i].errs)
				}
			}
			for i, x := range contenders {
				k := key{x.name, c}
				rps[k] = append(rps[k], got[i].rps)
				p50[k] = append(p50[k], float64(got[i].p50.Microseconds()))
				if i > 0 {
					ratio[k] = append(ratio[k], got[i].rps/got[0].rps)
				}
			}
		}
		round++
	}
	for _, c := range concurrency {
		for i, x := range contenders {
			k := key{x.name, c}
			prefix := fmt.Sprintf("%s/c%d-", x.name, c)
			b.ReportMetric(median(rps[k]), prefix+"req/s")
			b.ReportMetric(median(p50[k]), prefix+"p50-µs")
			if i > 0 {
				b.ReportMetric(median(ratio[k]), prefix+"ratio")
				b.ReportMetric(slices.Min(ratio[k]), prefix+"ratio-min")
				b.ReportMetric(slices.Max(ratio[k]), prefix+"ratio-max")
			}
		}
	}
	b.ReportMetric(0, "ns/op") // an op is a round; its time is meaningless
}

// median is the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// checkAddSub checks an answer to request i.
func checkAddSub(i int, sum, diff []float32) error {
	_, _, wantSum, wantDiff := addSubInputs(i)
	if !slices.Equal(sum, wantSum) || !slices.Equal(diff, wantDiff) {
		return fmt.Errorf("request %d: got %v %v, want %v %v", i, sum, diff, wantSum, wantDiff)
	}
	return nil
}

// TestRawSession: the raw-session baseline answers add_sub correctly.
func TestRawSession(t *testing.T) {
	addSubServer(t, addSubConfig(1))
	s := rawSession(t, 1)
	for i := range 3 {
		a, b, _, _ := addSubInputs(i)
		sum, diff, err := rawAddSub(s, a, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkAddSub(i, sum, diff); err != nil {
			t.Error(err)
		}
	}
	srv := addSubServer(t, addSubConfig(1))
	resp, err := srv.Infer(context.Background(), addSubRequest(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	o0, _ := resp.Output("OUTPUT0")
	o1, _ := resp.Output("OUTPUT1")
	sum, _ := tensor.View[float32](o0)
	diff, _ := tensor.View[float32](o1)
	if err := checkAddSub(2, sum, diff); err != nil {
		t.Error(err)
	}
}
