package triton_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// gated is a backend whose Load waits for a release, counting the loads in
// progress: a test sees how many models load at once.
type gated struct {
	release           chan struct{}
	inflight, maxSeen atomic.Int32
}

func (g *gated) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	n := g.inflight.Add(1)
	defer g.inflight.Add(-1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return (&counting{}).Load(ctx, spec)
}

// TestModelLoadThreads runs in a synctest bubble: with every Load blocked,
// synctest.Wait returns, and the number blocked is the number of models
// loading at once. Builds that did not run concurrently would never reach
// the count (and deadlock the bubble, which fails the test).
func TestModelLoadThreads(t *testing.T) {
	for _, tc := range []struct {
		threads int // 0: the default
		want    int32
	}{{1, 1}, {3, 3}, {0, 4}} {
		t.Run(fmt.Sprint(tc.threads), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testModelLoadThreads(t, tc.threads, tc.want) })
		})
	}
}

func testModelLoadThreads(t *testing.T, threads int, want int32) {
	const models = 7
	files := map[string]string{}
	for i := range models {
		files[fmt.Sprintf("m%d/config.pbtxt", i)] = oneInput("gated", 1, "")
		files[fmt.Sprintf("m%d/1/x", i)] = ""
	}
	g := &gated{release: make(chan struct{})}
	opts := []triton.Option{triton.WithRepository(mapFS(files)), triton.WithBackend("gated", g)}
	if threads > 0 {
		opts = append(opts, triton.WithModelLoadThreads(threads))
	}
	var (
		srv *triton.Server
		err error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv, err = triton.New(opts...)
	}()
	for left := int32(models); left > 0; {
		synctest.Wait() // every Load started is blocked
		n := g.inflight.Load()
		if n != min(want, left) {
			t.Fatalf("%d models loading at once with %d left, want %d", n, left, min(want, left))
		}
		for range n {
			g.release <- struct{}{}
		}
		left -= n
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if g.maxSeen.Load() != want {
		t.Errorf("at most %d loads at once, want %d", g.maxSeen.Load(), want)
	}
	for i := range models {
		servesVersion(t, srv, fmt.Sprintf("m%d", i), 1)
	}
}

// TestModelLoadThreadsRace loads many models on many workers for the race
// detector: the table, the logs and the per-model locks are shared.
func TestModelLoadThreadsRace(t *testing.T) {
	files := map[string]string{}
	for i := range 24 {
		files[fmt.Sprintf("m%d/config.pbtxt", i)] = oneInput("counting", 2, "max_batch_size: 4 dynamic_batching {}")
		files[fmt.Sprintf("m%d/1/x", i)] = ""
		files[fmt.Sprintf("m%d/2/x", i)] = ""
	}
	c := &counting{}
	core, logs := observer.New(zapcore.DebugLevel)
	srv := newServer(t, files, triton.WithBackend("counting", c), triton.WithModelLoadThreads(8), triton.WithLogger(zap.New(core)))
	if c.loads.Load() != 24 {
		t.Errorf("%d loads, want 24", c.loads.Load())
	}
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			model := fmt.Sprintf("m%d", i)
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1, 1}, 0)}})
			if err != nil || resp.Version != 2 {
				t.Errorf("%s: %v, %v", model, resp, err)
			}
		})
	}
	wg.Wait()
	if n := logs.FilterMessage("model loaded").Len(); n != 24 {
		t.Errorf("%d models logged as loaded, want 24", n)
	}
}

func TestLoadOptionErrors(t *testing.T) {
	repo := triton.WithRepository(mapFS(simpleRepo()))
	for _, tc := range []struct {
		opt  triton.Option
		want string
	}{
		{triton.WithModelLoadThreads(0), "need at least one thread"},
		{triton.WithModelLoadRetries(-1), "negative retry count"},
		{triton.WithModelConfigName("../x"), "is not a file name"},
		{triton.WithModelConfigName(".."), "is not a file name"},
	} {
		_, err := triton.New(repo, tc.opt)
		wantError(t, err, triton.InvalidArgument, tc.want)
	}
}

// flaky fails the first failures loads of each model version.
type flaky struct {
	failures int32
	mu       sync.Mutex
	tries    map[string]int32 // by model and version
}

func (f *flaky) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	f.mu.Lock()
	key := fmt.Sprintf("%s/%d", spec.Name, spec.Version)
	f.tries[key]++
	n := f.tries[key]
	f.mu.Unlock()
	if n <= f.failures {
		return nil, fmt.Errorf("try %d fails", n)
	}
	return (&counting{}).Load(ctx, spec)
}

func TestModelLoadRetries(t *testing.T) {
	files := map[string]string{"m/config.pbtxt": oneInput("flaky", 1, "version_policy: { all: {} }"), "m/1/x": "", "m/2/x": ""}
	for _, tc := range []struct {
		retries, failures int32
		ok                bool
	}{
		{0, 0, true},
		{0, 1, false}, // Triton's default: no retry
		{2, 2, true},  // the third try of each version succeeds
		{2, 3, false},
	} {
		t.Run(fmt.Sprintf("%d retries, %d failures", tc.retries, tc.failures), func(t *testing.T) {
			f := &flaky{failures: tc.failures, tries: map[string]int32{}}
			core, logs := observer.New(zapcore.DebugLevel)
			srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("flaky", f),
				triton.WithModelLoadRetries(int(tc.retries)), triton.WithLogger(zap.New(core)))
			wantTries := min(tc.failures+1, tc.retries+1)
			for _, key := range []string{"m/1", "m/2"} {
				if f.tries[key] != wantTries {
					t.Errorf("%s tried %d times, want %d", key, f.tries[key], wantTries)
				}
			}
			if retried := logs.FilterMessage("model version failed to load; trying again").Len(); retried != int(2*(wantTries-1)) {
				t.Errorf("%d retries logged, want %d", retried, 2*(wantTries-1))
			}
			if !tc.ok {
				wantError(t, err, triton.Internal, fmt.Sprintf("try %d fails", tc.failures))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			servesVersion(t, srv, "m", 2)
		})
	}
}

func TestModelConfigName(t *testing.T) {
	files := map[string]string{
		// a: its configs/h100.pbtxt is chosen over config.pbtxt.
		"a/config.pbtxt":       oneInput("counting", 1, ""),
		"a/configs/h100.pbtxt": oneInput("counting", 1, "max_batch_size: 7"),
		"a/1/x":                "",
		// b: no configs/h100.pbtxt, so config.pbtxt.
		"b/config.pbtxt":       oneInput("counting", 1, "max_batch_size: 3"),
		"b/configs/a100.pbtxt": "broken",
		"b/1/x":                "",
		// c: only configs/h100.pbtxt.
		"c/configs/h100.pbtxt": oneInput("counting", 1, "max_batch_size: 5"),
		"c/1/x":                "",
	}
	c := &counting{}
	srv := newServer(t, files, triton.WithBackend("counting", c), triton.WithModelConfigName("h100"))
	for model, want := range map[string]int32{"a": 7, "b": 3, "c": 5} {
		cfg, err := srv.ModelConfig(model, 0)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.GetMaxBatchSize() != want {
			t.Errorf("%s: max_batch_size %d, want %d (from the chosen config file)", model, cfg.GetMaxBatchSize(), want)
		}
	}
	// Without the option, config.pbtxt; errors name the file read.
	files["a/configs/h100.pbtxt"] = oneInput("counting", 1, "max_batch_size: -1")
	_, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("counting", c), triton.WithModelConfigName("h100"), triton.WithStartupModels("a"))
	wantError(t, err, triton.InvalidArgument, "a/configs/h100.pbtxt")
	plain := newServer(t, files, triton.WithBackend("counting", c), triton.WithStartupModels("a"))
	if cfg, _ := plain.ModelConfig("a", 0); cfg.GetMaxBatchSize() != 0 {
		t.Errorf("without a config name: max_batch_size %d, want config.pbtxt's 0", cfg.GetMaxBatchSize())
	}
}

// TestCompleteBackend checks that a model's backend comes from its files
// or its name whenever its config names none: a missing config.pbtxt, a
// config.pbtxt without backend, and a load's config override.
func TestCompleteBackend(t *testing.T) {
	io := `"input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
	  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]`
	repo := newDiskRepo(t)
	repo.write("onnx/1/model.onnx", "")
	repo.write("onnx/config.pbtxt", oneInput("onnxruntime", 1, ""))
	repo.write("named.counting/1/x", "")
	repo.write("named.counting/config.pbtxt", strings.Replace(oneInput("", 1, ""), `backend: ""`, "", 1))
	repo.write("nothing/1/weights.bin", "")
	c := &counting{}
	srv, err := triton.NewFromDir(repo.dir, explicit(triton.WithBackend("counting", c), triton.WithBackend("onnxruntime", c))...)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()

	// A config.pbtxt without backend, in a folder <name>.<backend>.
	if err := srv.Load(ctx, "named.counting", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "named.counting", 1)
	if cfg, _ := srv.ModelConfig("named.counting", 0); cfg.GetBackend() != "counting" || cfg.GetDefaultModelFilename() != "model.counting" {
		t.Errorf("named.counting completed to backend %q file %q", cfg.GetBackend(), cfg.GetDefaultModelFilename())
	}
	// An override without backend: completed from model.onnx.
	if err := srv.Load(ctx, "onnx", &triton.LoadOptions{Config: `{` + io + `}`}); err != nil {
		t.Fatalf("override without backend: %v", err)
	}
	cfg, _ := srv.ModelConfig("onnx", 0)
	if cfg.GetBackend() != "onnxruntime" || cfg.GetPlatform() != "onnxruntime_onnx" {
		t.Errorf("override completed to backend %q platform %q", cfg.GetBackend(), cfg.GetPlatform())
	}
	// An override with files and without backend: completed from the
	// override's files.
	err = srv.Load(ctx, "nothing", &triton.LoadOptions{Config: `{` + io + `}`, Files: map[string][]byte{"4/model.onnx": []byte("x")}})
	if err != nil {
		t.Fatalf("override with files: %v", err)
	}
	servesVersion(t, srv, "nothing", 4)
	// Nothing to go by: Triton's error.
	err = srv.Load(ctx, "nothing", &triton.LoadOptions{Config: `{` + io + `}`, Files: map[string][]byte{"4/weights.bin": []byte("x")}})
	wantError(t, err, triton.InvalidArgument, "Invalid model name: Could not determine backend for model 'nothing' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.")
	servesVersion(t, srv, "nothing", 4)
}

func TestRuntimeField(t *testing.T) {
	c := &counting{}
	for _, tc := range []struct {
		name, runtime string
		code          triton.Code
		parts         []string
	}{
		{"the backend's own library", "libtriton_counting.so", triton.Unknown, nil},
		{"escapes", "../../libtriton_counting.so", triton.InvalidArgument,
			[]string{"backend library name '../../libtriton_counting.so' escapes backend directory", "for model 'm', check model config runtime field"}},
		{"absolute", "/usr/lib/libtriton_x.so", triton.InvalidArgument, []string{"escapes backend directory"}},
		{"missing", "libtriton_other.so", triton.InvalidArgument,
			[]string{"unable to find backend library 'libtriton_other.so' for model 'm', searched: 'm/1' 'm' "}},
		{"a library in the model folder", "libcustom.so", triton.Unsupported, []string{"runtime 'libcustom.so' of model 'm' is a backend library in the model folder (m/1/libcustom.so)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"m/config.pbtxt": oneInput("counting", 1, fmt.Sprintf("runtime: %q", tc.runtime)), "m/1/x": "", "m/1/libcustom.so": ""}
			srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("counting", c))
			if tc.code == triton.Unknown {
				if err != nil {
					t.Fatal(err)
				}
				srv.Close()
				return
			}
			wantError(t, err, tc.code, tc.parts...)
		})
	}
}

// allocated returns the bytes f allocated (process-wide: the tests of this
// package do not run in parallel).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestConfigNumbersBounded loads configs whose numbers could make the
// server allocate without bound: each fails fast with a clear error, or
// loads in little memory.
func TestConfigNumbersBounded(t *testing.T) {
	const budget = 64 << 20
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c, "m")
	ctx := context.Background()
	override := func(extra string) *triton.LoadOptions {
		return &triton.LoadOptions{Config: `{"backend": "counting", "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
		  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]` + extra + `}`}
	}
	for _, tc := range []struct {
		name  string
		extra string
		parts []string // none: loads
	}{
		{"instances in an override", `, "instance_group": [{"count": 100000000, "kind": "KIND_CPU"}]`,
			[]string{"instance_group[0].count", "100000000 instances in all is above the limit of 1024 instances per model"}},
		{"instances over groups", `, "instance_group": [{"count": 1000, "kind": "KIND_CPU"}, {"count": 1000, "kind": "KIND_CPU"}]`,
			[]string{"instance_group[1].count", "2000 instances in all is above the limit of 1024"}},
		{"priority levels", `, "max_batch_size": 4, "dynamic_batching": {"priority_levels": "18446744073709551615", "default_priority_level": "1"}`,
			[]string{"priority_levels 18446744073709551615 of m is above the limit of 10000"}},
		{"implicit state", `, "max_batch_size": 4, "sequence_batching": {"state": [{"input_name": "S", "output_name": "S_OUT", "data_type": "TYPE_FP32", "dims": ["1000000", "1000000"]}]}`,
			[]string{"sequence_batching state 'S'", "above the limit of 1073741824 bytes per sequence"}},
		{"largest max_batch_size", `, "max_batch_size": 2147483647, "dynamic_batching": {}`, nil},
		{"largest delays", `, "max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": "18446744073709551615",
		  "default_queue_policy": {"default_timeout_microseconds": "18446744073709551615"}}`, nil},
		{"largest sequence numbers", `, "max_batch_size": 4, "sequence_batching": {"max_sequence_idle_microseconds": "18446744073709551615",
		  "oldest": {"max_candidate_sequences": 2147483647, "max_queue_delay_microseconds": "18446744073709551615"}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { err = srv.Load(ctx, "m", override(tc.extra)) })
			if n > budget {
				t.Errorf("the load allocated %d MiB", n>>20)
			}
			if len(tc.parts) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if !srv.ModelReady(ctx, "m", 1) {
					t.Errorf("not ready: %v", srv.Index(ctx))
				}
				return
			}
			wantError(t, err, triton.InvalidArgument, tc.parts...)
		})
	}
}

// TestLoadFailureLogs checks the log of a failed load: one Error line per
// failure, naming the model and the version that failed, without a Go
// stack trace even with a logger that adds them at Error level (zap's
// production configuration); and that the startup finds each model once.
func TestLoadFailureLogs(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt":   oneInput("counting", 1, "version_policy: { all: {} }"),
		"m/1/x":            "",
		"m/3/fail":         "",
		"bad/config.pbtxt": "not a config",
		"bad/1/x":          "",
	}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel))
	srv := newServer(t, files, triton.WithBackend("counting", &counting{}), triton.WithLogger(log), triton.WithExitOnError(false))
	servesVersion(t, srv, "m", 1)
	failed := logs.FilterMessage("failed to load").All()
	if len(failed) != 2 {
		t.Fatalf("%d failures logged, want 2: %v", len(failed), failed)
	}
	versions := map[string]any{}
	for _, e := range failed {
		if e.Level != zapcore.ErrorLevel || e.Stack != "" {
			t.Errorf("failure logged at %v with stack %q", e.Level, e.Stack)
		}
		f := e.ContextMap()
		versions[f["model"].(string)] = f["version"]
		if !strings.Contains(f["error"].(string), "failed to load") {
			t.Errorf("logged error %v", f["error"])
		}
	}
	if versions["m"] != int64(3) || versions["bad"] != nil {
		t.Errorf("versions logged: %v, want m version 3 and bad without a version", versions)
	}
	for _, model := range []string{"m", "bad"} {
		if n := logs.FilterMessage("found model").FilterField(zap.String("model", model)).Len(); n != 1 {
			t.Errorf("model %s found %d times at start, want once", model, n)
		}
	}
}

// TestFileOverrideNames checks the file overrides Triton accepts: a path
// is relative to the model folder even with a leading '/', "." and ".."
// resolve inside it, and a name may be as long as a real file's.
func TestFileOverrideNames(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c)
	ctx := context.Background()
	cfg := `{"backend": "counting", "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
	  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]}`
	for _, tc := range []struct {
		file    string
		version int32
	}{
		{"/3/weights.txt", 3},
		{"3/../5/./weights.txt", 5},
		{"6//weights.txt", 6},
		{"7/a\\b", 7}, // a backslash is a plain character of a name
		{"8/" + strings.Repeat("n", 255), 8},
	} {
		files := map[string][]byte{tc.file: []byte(tc.file), fmt.Sprintf("%d/weights.txt", tc.version): []byte(tc.file)}
		if err := srv.Load(ctx, "m", &triton.LoadOptions{Config: cfg, Files: files}); err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		servesVersion(t, srv, "m", tc.version)
		if got, _ := c.seen.Load("m"); got != tc.file {
			t.Errorf("%q: the backend saw %q", tc.file, got)
		}
	}
}

// TestLargeBatchStats checks the statistics of batch sizes above the ones
// counted up front: they are counted when they first run, and listed in
// order after the small ones.
func TestLargeBatchStats(t *testing.T) {
	files := map[string]string{"m/config.pbtxt": oneInput("counting", 1, "max_batch_size: 2147483647"), "m/1/x": ""}
	srv := newServer(t, files, triton.WithBackend("counting", &counting{}))
	for _, rows := range []int{3000, 2, 1500, 3000} {
		req := &triton.InferRequest{Model: "m", Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{int64(rows), 1}, make([]int32, rows)...)}}
		if _, err := srv.Infer(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := srv.Stats("m", 1)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, b := range stats[0].Batches {
		sizes = append(sizes, b.BatchSize)
		if b.BatchSize == 3000 && b.ComputeInfer.Count != 2 {
			t.Errorf("batch size 3000 ran %d times, want 2", b.ComputeInfer.Count)
		}
	}
	if fmt.Sprint(sizes) != "[2 1500 3000]" {
		t.Errorf("batch sizes %v, want [2 1500 3000]", sizes)
	}
}

// specs records the ModelSpec of each load, then loads as counting does.
type specs struct {
	mu  sync.Mutex
	got []*backend.ModelSpec
}

func (s *specs) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	s.mu.Lock()
	s.got = append(s.got, spec)
	s.mu.Unlock()
	return (&counting{}).Load(ctx, spec)
}

// TestPythonBasedResolution: a backend the server lacks whose folder in the
// backend directory has a model.py goes to the python backend with that
// folder and runtime "model.py"; a backend the server has comes first
// (unless runtime says model.py); without the python backend the error
// says what to import.
func TestPythonBasedResolution(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"vllm", "counting"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "model.py"), []byte("class TritonPythonModel: pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	py, c := &specs{}, &counting{}
	files := map[string]string{
		"llm/config.pbtxt":    oneInput("vllm", 1, ""),
		"llm/1/x":             "",
		"go/config.pbtxt":     oneInput("counting", 1, ""),
		"go/1/x":              "",
		"forced/config.pbtxt": oneInput("counting", 1, `runtime: "model.py"`),
		"forced/1/x":          "",
	}
	srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackendDirectory(dir),
		triton.WithBackend("python", py), triton.WithBackend("counting", c))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	byName := map[string]*backend.ModelSpec{}
	for _, s := range py.got {
		byName[s.Name] = s
	}
	for model, backendName := range map[string]string{"llm": "vllm", "forced": "counting"} {
		s := byName[model]
		if s == nil {
			t.Errorf("%s: not loaded by the python backend", model)
			continue
		}
		if want := filepath.Join(dir, backendName); s.BackendDir != want || s.Config.GetRuntime() != "model.py" || s.Config.GetBackend() != backendName {
			t.Errorf("%s: BackendDir %q runtime %q backend %q, want %q, model.py, %s", model, s.BackendDir, s.Config.GetRuntime(), s.Config.GetBackend(), want, backendName)
		}
	}
	if byName["go"] != nil || len(py.got) != 2 {
		t.Errorf("the python backend loaded %d models, go among them: %v", len(py.got), byName["go"] != nil)
	}
	cfg, err := srv.ModelConfig("llm", 0)
	if err != nil || cfg.GetRuntime() != "model.py" {
		t.Errorf("llm's config: runtime %q, %v", cfg.GetRuntime(), err)
	}

	_, err = triton.New(triton.WithRepository(mapFS(map[string]string{"llm/config.pbtxt": oneInput("vllm", 1, ""), "llm/1/x": ""})),
		triton.WithBackendDirectory(dir))
	wantError(t, err, triton.InvalidArgument, "model 'llm' uses the Python-based backend 'vllm' ("+filepath.Join(dir, "vllm", "model.py")+
		"), which runs on the python backend; is the package github.com/triton-go/triton/backend/python imported?")
}
