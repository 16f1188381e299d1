package onnxruntime_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/cgo/malloctrim"
	"github.com/triton-go/triton/tensor"
)

// The reliability figures of docs/reliability.md come from these two
// tests, with the counts given there.
var (
	reloads = flag.Int("reliability.reloads", 100, "reloads in TestReloadUnderLoad")
	cycles  = flag.Int("reliability.cycles", 1000, "load/unload cycles in TestLoadUnloadMemory")
)

// TestReloadUnderLoad: 64 goroutines call an ONNX model while it is
// reloaded again and again, alternating versions and configs; not one
// request may fail.
func TestReloadUnderLoad(t *testing.T) {
	r := newRepo(t).model("add_sub", "add_sub.onnx", "")
	model, err := os.ReadFile(filepath.Join("testdata", "models", "add_sub.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	r.file("add_sub/2/model.onnx", model)
	configs := []string{
		`backend: "onnxruntime" max_batch_size: 8 version_policy { specific { versions: [ 1 ] } } instance_group [ { count: 1 kind: KIND_CPU } ]`,
		`backend: "onnxruntime" max_batch_size: 8 version_policy { specific { versions: [ 2 ] } } instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching { max_queue_delay_microseconds: 100 }`,
	}
	r.config("add_sub", configs[0])
	srv := r.serve(triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("add_sub"))

	in := must(tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16)))
	in1 := in
	in1.Name = "INPUT1"
	ctx, stop := context.WithCancel(context.Background())
	var (
		wg         sync.WaitGroup
		ok, failed atomic.Int64
		firstErr   atomic.Value
		versions   [3]atomic.Int64
	)
	for range 64 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add_sub", Inputs: []tensor.Tensor{in, in1}})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
				versions[resp.Version].Add(1)
			}
		})
	}
	for i := range *reloads {
		r.config("add_sub", configs[(i+1)%2])
		if err := srv.Load(context.Background(), "add_sub", nil); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
	}
	stop()
	wg.Wait()
	t.Logf("%d reloads: %d requests succeeded (version 1: %d, version 2: %d), %d failed",
		*reloads, ok.Load(), versions[1].Load(), versions[2].Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed during reloads; the first: %v", failed.Load(), firstErr.Load())
	}
	if versions[1].Load() == 0 || versions[2].Load() == 0 {
		t.Errorf("requests did not reach both versions: %d and %d", versions[1].Load(), versions[2].Load())
	}
}

// TestLoadUnloadMemory loads and unloads an ONNX model many times; the
// process's resident memory must come back to within 20 MB of what it was
// after the first cycle (native memory included: ONNX Runtime sessions,
// the environment, which is released with the last model).
func TestLoadUnloadMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/statm")
	}
	r := newRepo(t).model("add_sub", "add_sub.onnx", `backend: "onnxruntime" max_batch_size: 8`)
	srv := r.serve(triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithBackend("onnxruntime", onnxruntime.New()))
	in := must(tensor.From("INPUT0", tensor.Shape{1, 16}, make([]float32, 16)))
	in1 := in
	in1.Name = "INPUT1"
	cycle := func() {
		if err := srv.Load(context.Background(), "add_sub", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "add_sub", Inputs: []tensor.Tensor{in, in1}}); err != nil {
			t.Fatal(err)
		}
		if err := srv.Unload(context.Background(), "add_sub", nil); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	first := rss(t)
	for range *cycles - 1 {
		cycle()
	}
	last := rss(t)
	t.Logf("%d load/unload cycles: resident memory %.1f MB after the first, %.1f MB after the last (%+.1f MB)",
		*cycles, first/1e6, last/1e6, (last-first)/1e6)
	if last-first > 20e6 {
		t.Errorf("resident memory grew by %.1f MB over %d cycles", (last-first)/1e6, *cycles)
	}
}

// rss returns the process's resident memory in bytes, after a GC that
// returns freed memory to the system, Go's and the C heap's.
func rss(t *testing.T) float64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	malloctrim.Trim()
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data))
	pages, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		t.Fatal(fmt.Errorf("statm %q: %w", data, err))
	}
	return pages * float64(os.Getpagesize())
}
