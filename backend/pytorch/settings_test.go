package pytorch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/internal/testrepo"
	"github.com/triton-go/triton/tensor"
)

const modesConfig = `backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "Y__0" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "MODES__1" data_type: TYPE_BOOL dims: [ 2 ] } ]
`

// TestInferenceModeParameter runs modes.pt, which reports whether a tensor
// made inside forward is an inference tensor and whether grad mode is on:
// INFERENCE_MODE (default true) runs forward under torch::InferenceMode,
// false under torch::NoGradGuard (no inference tensors, still no grad).
func TestInferenceModeParameter(t *testing.T) {
	for _, c := range []struct {
		name, param string
		want        []bool // [is_inference, is_grad_enabled]
	}{
		{"default", "", []bool{true, false}},
		{"on", `parameters { key: "INFERENCE_MODE" value: { string_value: "On" } }`, []bool{true, false}},
		{"off", `parameters { key: "INFERENCE_MODE" value: { string_value: "false" } }`, []bool{false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newRepo(t).model("modes", "modes.pt", modesConfig+c.param).Serve()
			resp := infer(t, srv, "modes", must(tensor.From("x", tensor.Shape{2}, []float32{1, 2})))
			got, err := tensor.View[bool](output(t, resp, "MODES__1"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("[is_inference, is_grad_enabled] = %v, want %v", got, c.want)
			}
			if y := floats(t, resp, "Y__0"); !slices.Equal(y, []float32{2, 3}) {
				t.Errorf("Y__0 = %v, want x+1", y)
			}
		})
	}
}

// params returns config.pbtxt parameters for the key, value pairs kv.
func params(kv ...string) string {
	out := ""
	for i := 0; i+1 < len(kv); i += 2 {
		out += fmt.Sprintf(`parameters { key: %q value: { string_value: %q } } `, kv[i], kv[i+1])
	}
	return out
}

// switches reads libtorch's four JIT switches: [optimize, executor,
// profiling, fuser].
func switches(t *testing.T) [4]bool {
	t.Helper()
	s, err := torchrun.Settings()
	if err != nil {
		t.Fatal(err)
	}
	return [4]bool{s.GraphExecutorOptimize, s.ExecutorMode, s.ProfilingMode, s.TensorExprFuser}
}

// TestExecutionParameters: DISABLE_OPTIMIZED_EXECUTION, ENABLE_JIT_EXECUTOR,
// ENABLE_JIT_PROFILING and ENABLE_TENSOR_FUSER are libtorch's switches
// after a forward of the model (process-wide, as in Triton: set before
// every forward); an unset one keeps the value the previous forward left,
// and a model without DISABLE_OPTIMIZED_EXECUTION runs optimized again.
// The parameters are logged as Triton logs them, and the GPU-only ones
// are said to have no effect on the CPU.
func TestExecutionParameters(t *testing.T) {
	const (
		opt, exec, prof, fuser = pytorch.ParamDisableOptimizedExecution, pytorch.ParamEnableJITExecutor,
			pytorch.ParamEnableJITProfiling, pytorch.ParamEnableTensorFuser
	)
	r := newRepo(t)
	steps := []struct {
		model, params string
		want          [4]bool // optimize, executor, profiling, fuser
	}{
		{"off", params(opt, "true", exec, "false", prof, "false", fuser, "false",
			pytorch.ParamEnableCacheCleaning, "true", pytorch.ParamDisableCUDNN, "true"), [4]bool{false, false, false, false}},
		{"none", "", [4]bool{true, false, false, false}},
		{"mixed", params(opt, "1", exec, "On", fuser, "0"), [4]bool{false, true, false, false}},
		{"on", params(opt, "false", exec, "true", prof, "true", fuser, "true"), [4]bool{true, true, true, true}}, // libtorch's defaults, left for the other tests
		{"none", "", [4]bool{true, true, true, true}},
	}
	for _, s := range steps {
		r.model(s.model, "modes.pt", modesConfig+s.params)
	}
	core, logs := observer.New(zap.InfoLevel)
	srv := r.Serve(triton.WithLogger(zap.New(core)))
	for _, s := range steps {
		resp := infer(t, srv, s.model, must(tensor.From("x", tensor.Shape{2}, []float32{1, 2})))
		if y := floats(t, resp, "Y__0"); !slices.Equal(y, []float32{2, 3}) {
			t.Errorf("%s: Y__0 = %v, want x+1", s.model, y)
		}
		if got := switches(t); got != s.want {
			t.Errorf("after a forward of model '%s': [optimize, executor, profiling, fuser] = %v, want %v", s.model, got, s.want)
		}
	}
	for _, want := range []string{
		"Optimized execution is disabled for model instance 'off'", "Cache Cleaning is enabled for model instance 'off'",
		"cuDNN is disabled for model instance 'off'", "Tensor fuser is disabled for model instance 'off'",
		"Jit profiling is disabled for model instance 'off'", "Jit executor is disabled for model instance 'off'",
		"ENABLE_CACHE_CLEANING and DISABLE_CUDNN only act on GPU instances; model 'off' runs on the CPU",
		"Optimized execution is enabled for model instance 'on'", "Jit executor is enabled for model instance 'mixed'",
	} {
		if logs.FilterMessageSnippet(want).Len() == 0 {
			t.Errorf("no log line %q", want)
		}
	}
	if n := logs.FilterMessageSnippet("Jit profiling is").FilterMessageSnippet("'mixed'").Len(); n != 0 {
		t.Errorf("%d log lines about Jit profiling of model 'mixed', which leaves it unset", n)
	}
}

// threadsChildEnv selects TestThreadCountsOncePerProcess's child.
const threadsChildEnv = "PYTORCH_THREADS_CHILD"

// TestThreadCountsOncePerProcess: libtorch's thread pools are sized once
// per process, by the first model that sets a count. In a child process
// (this process may have set them already), model 'first' is loaded and
// run, then 'second' with other counts: libtorch's counts are the first's
// after both forwards, and the second is told, in the log, that its values
// are not applied.
func TestThreadCountsOncePerProcess(t *testing.T) {
	if os.Getenv(threadsChildEnv) == "" {
		needShim(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestThreadCountsOncePerProcess$", "-test.v")
		cmd.Env = append(os.Environ(), threadsChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestThreadCountsOncePerProcess") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	core, logs := observer.New(zap.InfoLevel)
	n := runtime.NumCPU() // above libtorch's defaults, which are at most the CPU count
	counts := map[string][2]int{"first": {n + 1, n + 2}, "second": {n + 3, n + 4}}
	r := newRepo(t)
	for name, c := range counts {
		r.model(name, "raises.pt", fmt.Sprintf(`backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
%s`, params(pytorch.ParamIntraOpThreadCount, fmt.Sprint(c[0]), pytorch.ParamInterOpThreadCount, fmt.Sprint(c[1]))))
	}
	srv := r.Serve(triton.WithLogger(zap.New(core)), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("first"))
	x := must(tensor.From("x", tensor.Shape{4}, []float32{1, 2, 3, 4}))
	infer(t, srv, "first", x)
	if err := srv.Load(t.Context(), "second", nil); err != nil {
		t.Fatal(err)
	}
	infer(t, srv, "second", x)
	s, err := torchrun.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if want := counts["first"]; s.IntraOpThreads != want[0] || s.InterOpThreads != want[1] {
		t.Errorf("libtorch runs %d intra-op and %d inter-op threads; want %d and %d, model 'first''s", s.IntraOpThreads, s.InterOpThreads, want[0], want[1])
	}
	for _, want := range []string{
		fmt.Sprintf("Intra op thread count is set to %d for model instance 'first'", n+1),
		fmt.Sprintf("Inter op thread count is set to %d for model instance 'first'", n+2),
		fmt.Sprintf("INTRA_OP_THREAD_COUNT %d of model 'second' is not applied: libtorch's intra-op thread count is set once per process", n+3),
		fmt.Sprintf("INTER_OP_THREAD_COUNT %d of model 'second' is not applied", n+4),
	} {
		if logs.FilterMessageSnippet(want).Len() != 1 {
			var all []string
			for _, e := range logs.All() {
				all = append(all, e.Message)
			}
			t.Errorf("no log line %q in\n%s", want, strings.Join(all, "\n"))
		}
	}
}

// TestShimMissing: without the shim a PyTorch model fails to load with a
// message that names the places searched and says how to enable it.
func TestShimMissing(t *testing.T) {
	r := &repo{testrepo.New(t)}
	dir := r.Dir
	r.model("m", "raises.pt", `backend: "pytorch" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`)
	howTo := []string{"make deps", "scripts/build-torch-shim.sh", pytorch.ShimEnv, "pytorch.WithShim", "--backend-directory DIR (DIR/pytorch/libtriton_pytorch.so)"}
	for _, c := range []struct {
		name  string
		b     *pytorch.Backend
		setup func(t *testing.T)
		want  []string
	}{
		{"option", pytorch.New(pytorch.WithShim(filepath.Join(dir, "nope.so"))), nil, []string{filepath.Join(dir, "nope.so") + " (named by pytorch.WithShim) is missing"}},
		{"env", pytorch.New(), func(t *testing.T) { t.Setenv(pytorch.ShimEnv, filepath.Join(dir, "env.so")) }, []string{filepath.Join(dir, "env.so") + " (named by $" + pytorch.ShimEnv + ") is missing"}},
		{"backend directory", pytorch.New(pytorch.WithBackendDirectory(dir)), func(t *testing.T) { t.Setenv(pytorch.ShimEnv, "") },
			[]string{filepath.Join(dir, "pytorch", "libtriton_pytorch.so") + " (named by the backend directory " + dir + ") is missing"}},
		{"search", pytorch.New(), func(t *testing.T) {
			t.Setenv(pytorch.ShimEnv, "")
			t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg"))
			t.Chdir(t.TempDir()) // no checkout above: nothing to find
		}, []string{"libtriton_pytorch.so was not found (searched .cache/backends/pytorch/libtriton_pytorch.so in the working directory and its parents, " + filepath.Join(dir, "xdg", "triton-go", "backends", "pytorch", "libtriton_pytorch.so") + ")"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			err := r.Load(triton.WithBackend(pytorch.Name, c.b), triton.WithStartupModels("m"), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
			if err == nil {
				t.Fatal("the model loaded without a shim")
			}
			for _, w := range append(c.want, howTo...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
