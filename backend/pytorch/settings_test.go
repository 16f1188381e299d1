package pytorch_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/pytorch"
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
			srv := newRepo(t).model("modes", "modes.pt", modesConfig+c.param).serve()
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

// TestExecutionParameters: the JIT, fuser and optimization switches and
// the GPU-only ones are accepted, logged as Triton logs them, and the
// model serves.
func TestExecutionParameters(t *testing.T) {
	params := ""
	for k, v := range map[string]string{
		pytorch.ParamDisableOptimizedExecution: "true", pytorch.ParamEnableJITExecutor: "false", pytorch.ParamEnableJITProfiling: "false",
		pytorch.ParamEnableTensorFuser: "false", pytorch.ParamEnableCacheCleaning: "true", pytorch.ParamDisableCUDNN: "true",
	} {
		params += fmt.Sprintf(`parameters { key: %q value: { string_value: %q } } `, k, v)
	}
	core, logs := observer.New(zap.InfoLevel)
	srv := newRepo(t).model("modes", "modes.pt", modesConfig+params).serve(triton.WithLogger(zap.New(core)))
	resp := infer(t, srv, "modes", must(tensor.From("x", tensor.Shape{2}, []float32{1, 2})))
	if y := floats(t, resp, "Y__0"); !slices.Equal(y, []float32{2, 3}) {
		t.Errorf("Y__0 = %v, want x+1", y)
	}
	for _, want := range []string{
		"Optimized execution is disabled for model instance 'modes'", "Cache Cleaning is enabled for model instance 'modes'",
		"cuDNN is disabled for model instance 'modes'", "Tensor fuser is disabled for model instance 'modes'",
		"Jit profiling is disabled for model instance 'modes'", "Jit executor is disabled for model instance 'modes'",
		"ENABLE_CACHE_CLEANING and DISABLE_CUDNN only act on GPU instances",
	} {
		if logs.FilterMessageSnippet(want).Len() == 0 {
			t.Errorf("no log line %q", want)
		}
	}
}

// TestThreadCountsOncePerProcess: libtorch's thread pools are sized once
// per process, so a later model asking for other counts is told, in the
// log, that its values are not applied.
func TestThreadCountsOncePerProcess(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	n := runtime.NumCPU()
	r := newRepo(t)
	for i, name := range []string{"first", "second"} {
		r.model(name, "raises.pt", fmt.Sprintf(`backend: "pytorch"
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
parameters { key: "INTRA_OP_THREAD_COUNT" value: { string_value: "%d" } }
parameters { key: "INTER_OP_THREAD_COUNT" value: { string_value: "%d" } }`, n+i, 1+i))
	}
	srv := r.serve(triton.WithLogger(zap.New(core)), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("first"))
	if err := srv.Load(t.Context(), "second", nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("INTRA_OP_THREAD_COUNT %d of model 'second' is not applied: libtorch's intra-op thread count is set once per process", n+1),
		"INTER_OP_THREAD_COUNT 2 of model 'second' is not applied",
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
	dir := t.TempDir()
	r := &repo{t: t, dir: dir}
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
			err := r.load(triton.WithBackend(pytorch.Name, c.b), triton.WithStartupModels("m"), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
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
