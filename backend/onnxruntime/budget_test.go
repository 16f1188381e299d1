package onnxruntime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/tensor"
)

// The memory budget with real models: scripts/gen-budget-models.py's
// 1024×1024 MatMul models (4 MiB of weights each), served by ONNX Runtime.
// TRITON_GO_BUDGET_SECONDS lengthens the Zipf run (default 5 s) for the
// figures in docs/reliability.md; -reliability.cycles sets the load/evict
// cycles (default 1000).

// budgetModels writes n models with the committed generator into a
// temporary folder.
func budgetModels(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	gen := filepath.Join("..", "..", "scripts", "gen-budget-models.py")
	if out, err := exec.Command("/usr/bin/python3", gen, dir, strconv.Itoa(n)).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", gen, err, out)
	}
	return dir
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// statm is the process's resident memory in bytes, read without the
// collection rss does first (for sampling while requests run).
func statm(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

func budgetRequest(t *testing.T, model string, v float32) *triton.InferRequest {
	x := make([]float32, 1024)
	x[0] = v
	in, err := tensor.From("x", tensor.Shape{1, 1024}, x)
	if err != nil {
		t.Fatal(err)
	}
	return &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}}
}

func budgetServer(t *testing.T, dir string, opts ...triton.Option) *triton.Server {
	t.Helper()
	srv, err := triton.New(append([]triton.Option{
		triton.WithModelRepository(dir),
		triton.WithBackend("onnxruntime", onnxruntime.New()),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// TestBudgetZipf: 20 models under a budget that fits 5, loaded on demand
// by 32 callers that each pick a model from a Zipf distribution for every
// request, in two rounds of a fresh server each. No request fails, the
// accounted memory never passes the budget plus one model, and, everything
// unloaded, the process's memory comes back: close to where it was
// without models (ONNX Runtime and the C heap keep a few MiB of freed
// memory mapped for reuse, which varies from run to run), and the second
// round ends no higher than the first plus the budget.
func TestBudgetZipf(t *testing.T) {
	const models, fits, callers = 20, 5, 32
	dir := budgetModels(t, models)

	// One model's size, as ONNX Runtime reports it, and the process's
	// memory with the library loaded and no model.
	probe := budgetServer(t, dir)
	if err := probe.Load(context.Background(), "model_00", nil); err != nil {
		t.Fatal(err)
	}
	size := probe.Memory().Resident
	if size < 4<<20 {
		t.Fatalf("model_00 accounted for %d bytes, less than its 4 MiB of weights", size)
	}
	// The callers' threads, which outlive the models (Go keeps the
	// threads its cgo calls ran on), belong to the baseline.
	var warm sync.WaitGroup
	for c := range callers {
		warm.Go(func() {
			for range 10 {
				if _, err := probe.Infer(context.Background(), budgetRequest(t, "model_00", float32(c))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	warm.Wait()
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	base := int64(rss(t))
	z := zipfRun{models: models, callers: callers, size: size, budget: fits * size, base: base,
		run: time.Duration(envInt(t, "TRITON_GO_BUDGET_SECONDS", 5)) * time.Second}
	first := z.round(t, dir)
	second := z.round(t, dir)
	t.Logf("process RSS with everything unloaded: %+.1f MiB after the first round, %+.1f MiB after the second, from %.1f MiB without models",
		mib(first-base), mib(second-base), mib(base))
	// What stays mapped varies from run to run by some 20 MiB (and grows
	// with the race detector's own memory): the bounds catch a leak of
	// the models, each round loading and evicting over a hundred (500
	// MiB and more).
	allowance := z.budget + raceAllowance
	for i, r := range []int64{first, second} {
		if r-base > 2*allowance {
			t.Errorf("round %d left RSS %.1f MiB over its %.1f MiB without models, more than %.1f MiB", i+1, mib(r-base), mib(base), mib(2*allowance))
		}
	}
	if second-first > allowance {
		t.Errorf("RSS grew by %.1f MiB from the first round to the second, more than the budget (%.1f MiB)", mib(second-first), mib(allowance))
	}
}

// zipfRun is TestBudgetZipf's workload.
type zipfRun struct {
	models, callers    int
	size, budget, base int64
	run                time.Duration
}

// round serves dir under the budget, runs the callers for z.run, checks
// and logs what happened, unloads everything and returns the process's
// memory then.
func (z zipfRun) round(t *testing.T, dir string) int64 {
	srv := budgetServer(t, dir, triton.WithMemoryBudget(z.budget), triton.WithLoadOnDemand(true))
	defer srv.Close()
	ctx, stop := context.WithTimeout(context.Background(), z.run)
	defer stop()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []error
		maxRes    int64
		maxRSS    int64
	)
	var wg sync.WaitGroup
	for c := range z.callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			zipf := rand.NewZipf(rng, 1.1, 1, uint64(z.models-1))
			var lat []time.Duration
			var errs []error
			for ctx.Err() == nil {
				m := fmt.Sprintf("model_%02d", zipf.Uint64())
				start := time.Now()
				rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := srv.Infer(rctx, budgetRequest(t, m, float32(c)))
				cancel()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", m, err))
					continue
				}
				lat = append(lat, time.Since(start))
			}
			mu.Lock()
			latencies, failures = append(latencies, lat...), append(failures, errs...)
			mu.Unlock()
		})
	}
	// The accounting and the process's memory, sampled every 2 ms.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for sampling := true; sampling; {
		select {
		case <-ctx.Done():
			sampling = false
		case <-tick.C:
			maxRes = max(maxRes, srv.Memory().Resident)
			maxRSS = max(maxRSS, statm(t))
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed; the first: %v", len(failures), len(failures)+len(latencies), failures[0])
	}
	if maxRes > z.budget+z.size {
		t.Errorf("accounted memory reached %d, over the budget %d plus one model (%d)", maxRes, z.budget, z.size)
	}
	u := srv.Memory()
	var loads, evictions, waits uint64
	var waitTotal time.Duration
	buckets := make([]uint64, len(triton.OnDemandWaitBounds))
	for _, c := range u.Counts {
		loads += c.Loads[triton.TriggerOnDemand]
		evictions += c.Evictions[triton.EvictedBudget]
		waits += c.Waits
		waitTotal += c.WaitTotal
		for i, n := range c.WaitBuckets {
			buckets[i] += n
		}
	}
	if evictions == 0 || loads <= uint64(z.budget/z.size) {
		t.Errorf("%d on-demand loads and %d evictions: the working set did not rotate", loads, evictions)
	}
	slices.Sort(latencies)
	n := len(latencies)
	t.Logf("%d callers, %v: %d requests, 0 failed; %.1f%% served without waiting for a load (%d waited); %d on-demand loads, %d evictions",
		z.callers, z.run, n, 100*(1-float64(waits)/float64(n)), waits, loads, evictions)
	t.Logf("request latency p50 %v p99 %v; on-demand wait mean %v, p50 ≤ %v, p99 ≤ %v",
		latencies[n/2].Round(time.Microsecond), latencies[n*99/100].Round(time.Microsecond), (waitTotal / time.Duration(max(waits, 1))).Round(time.Microsecond),
		bucketQuantile(buckets, waits, 0.5), bucketQuantile(buckets, waits, 0.99))
	t.Logf("model %.1f MiB, budget %.1f MiB; accounted at most %.1f MiB; process RSS at most %.1f MiB over its %.1f MiB without models",
		mib(z.size), mib(z.budget), mib(maxRes), mib(maxRSS-z.base), mib(z.base))

	for _, m := range u.Models {
		if err := srv.Unload(context.Background(), m.Name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := srv.Memory().Resident; r != 0 {
		t.Errorf("%d bytes accounted after unloading everything", r)
	}
	return int64(rss(t))
}

// bucketQuantile is the upper bound of the wait bucket holding quantile q.
func bucketQuantile(buckets []uint64, total uint64, q float64) string {
	want := uint64(q * float64(total))
	for i, n := range buckets {
		if n >= want {
			return triton.OnDemandWaitBounds[i].String()
		}
	}
	return "more than " + triton.OnDemandWaitBounds[len(triton.OnDemandWaitBounds)-1].String()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// cacheAllowance is what ONNX Runtime and the C heap may keep mapped
// after its models are gone, which varies from run to run (0 to 23 MiB
// measured, whatever the number of cycles): a leak of the evicted
// sessions, 4 MiB each, passes it within a few cycles.
const cacheAllowance = 24 << 20

// TestLoadEvictCycles: two models under a budget that fits one, asked
// for in turn with loads on demand, so that every request loads one and
// evicts the other, -reliability.cycles times; the process's memory after
// the last cycle is no higher than after the first tenth, but for what
// the allocators keep (ONNX Runtime gives back what an evicted session
// held).
func TestLoadEvictCycles(t *testing.T) {
	dir := budgetModels(t, 2)
	probe := budgetServer(t, dir)
	if err := probe.Load(context.Background(), "model_00", nil); err != nil {
		t.Fatal(err)
	}
	size := probe.Memory().Resident
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	srv := budgetServer(t, dir, triton.WithMemoryBudget(size), triton.WithLoadOnDemand(true))
	ctx := context.Background()
	cycle := func() {
		for _, m := range []string{"model_00", "model_01"} {
			if _, err := srv.Infer(ctx, budgetRequest(t, m, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	warm := max(1, *cycles/10)
	for range warm {
		cycle()
	}
	before := rss(t)
	start := time.Now()
	for range *cycles - warm {
		cycle()
	}
	after := rss(t)
	var evictions uint64
	for _, c := range srv.Memory().Counts {
		evictions += c.Evictions[triton.EvictedBudget]
	}
	if want := uint64(2**cycles - 1); evictions != want {
		t.Errorf("%d evictions, want %d", evictions, want)
	}
	t.Logf("%d cycles of two loads and evictions (%v a cycle): RSS %.1f MiB after %d, %.1f MiB after %d (%+.1f MiB)",
		*cycles, (time.Since(start) / time.Duration(*cycles-warm)).Round(time.Microsecond), before/(1<<20), warm, after/(1<<20), *cycles, (after-before)/(1<<20))
	if after-before > float64(cacheAllowance+raceAllowance) {
		t.Errorf("RSS grew by %.1f MiB over %d cycles, more than what ONNX Runtime and the C heap may keep mapped (%.1f MiB) and the race detector's allowance (%.1f MiB)",
			(after-before)/(1<<20), *cycles-warm, mib(cacheAllowance), mib(raceAllowance))
	}
}
