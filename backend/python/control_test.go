package python_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// managerModel runs the model loading API on the request's parameters:
// an action (load, unload, or none) on a model, then is_model_ready of it.
// Its initialize loads add_sub when add_sub is not ready, as the example
// of Triton's documentation does.
const managerModel = `
import json
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        if not pb_utils.is_model_ready(model_name="add_sub", model_version="1"):
            pb_utils.load_model(model_name="add_sub")

    def execute(self, requests):
        responses = []
        for request in requests:
            p = json.loads(request.parameters())
            err, ready = "", False
            try:
                action = p.get("action", "")
                if action == "unload":
                    pb_utils.unload_model(model_name=p["model"], unload_dependents=p.get("dependents", False))
                elif action == "load":
                    files = json.loads(p["files"]) if "files" in p else None
                    if isinstance(files, dict):
                        files = {k: v.encode() for k, v in files.items()}
                    pb_utils.load_model(model_name=p["model"], config=p.get("config", ""), files=files)
                ready = pb_utils.is_model_ready(model_name=p["model"], model_version=p.get("version", ""))
            except pb_utils.TritonModelException as e:
                err = str(e)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("READY", np.array([ready], dtype=np.int32)),
                pb_utils.Tensor("ERR", np.array([err.encode()], dtype=np.object_))]))
        return responses
`

const managerConfig = `backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [
  { name: "READY" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "ERR" data_type: TYPE_STRING dims: [ 1 ] }
]
`

// manage runs managerModel with params and returns what it reported.
func manage(t *testing.T, srv *triton.Server, params map[string]any) (ready bool, errText string) {
	t.Helper()
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "manager", Parameters: params,
		Inputs: []tensor.Tensor{must(tensor.From("X", tensor.Shape{1}, []int32{0}))}})
	if err != nil {
		t.Fatalf("manager %v: %v", params, err)
	}
	r, _ := resp.Output("READY")
	e, _ := resp.Output("ERR")
	return must(tensor.View[int32](r))[0] == 1, string(must(tensor.Strings(e))[0])
}

func explicit() []triton.Option {
	return []triton.Option{triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels("manager")}
}

func TestModelLoadingAPI(t *testing.T) {
	source := must(os.ReadFile("testdata/add_sub/1/model.py"))
	srv := newRepo(t).copy("add_sub").model("manager", managerConfig, managerModel).Serve(explicit()...)
	tmp := t.TempDir() // where the copy of a model's files goes
	t.Setenv("TMPDIR", tmp)
	ctx := context.Background()
	if !srv.ModelReady(ctx, "add_sub", 0) {
		t.Fatal("add_sub is not ready: manager's initialize did not load it")
	}
	if ready, e := manage(t, srv, map[string]any{"model": "add_sub", "version": "2"}); ready || e != "" {
		t.Errorf("is_model_ready(add_sub, 2) = %v, %q; want false (there is no version 2)", ready, e)
	}

	if ready, e := manage(t, srv, map[string]any{"action": "unload", "model": "add_sub"}); ready || e != "" {
		t.Fatalf("after unload_model: ready %v, error %q; want not ready, no error", ready, e)
	}
	if srv.ModelReady(ctx, "add_sub", 0) {
		t.Error("add_sub still ready after unload_model returned")
	}
	if _, err := infer(t, srv, "add_sub", must(tensor.From("INPUT0", tensor.Shape{1, 4}, make([]float32, 4))),
		must(tensor.From("INPUT1", tensor.Shape{1, 4}, make([]float32, 4)))); err == nil {
		t.Error("add_sub still serves after unload_model")
	}

	// A load from files and a config of the model's own, which differ from
	// the repository's: max_batch_size 0.
	cfg := `{"backend": "python", "max_batch_size": 0,
	  "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]}, {"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]}],
	  "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]}, {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [4]}]}`
	files := string(must(json.Marshal(map[string]string{"file:1/model.py": string(source)})))
	if ready, e := manage(t, srv, map[string]any{"action": "load", "model": "add_sub", "config": cfg, "files": files}); !ready || e != "" {
		t.Fatalf("after load_model with config and files: ready %v, error %q", ready, e)
	}
	if mc, err := srv.ModelConfig("add_sub", 0); err != nil || mc.GetMaxBatchSize() != 0 {
		t.Errorf("add_sub's config after the load: max_batch_size %d (%v), want the override's 0", mc.GetMaxBatchSize(), err)
	}
	a, b := []float32{1, 2, 3, 4}, []float32{10, 20, 30, 40}
	resp, err := infer(t, srv, "add_sub", must(tensor.From("INPUT0", tensor.Shape{4}, a)), must(tensor.From("INPUT1", tensor.Shape{4}, b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "OUTPUT0"); got[3] != 44 {
		t.Errorf("OUTPUT0 %v, want a+b", got)
	}
	if copies := must(filepath.Glob(filepath.Join(tmp, "triton-python-add_sub-*", "1", "model.py"))); len(copies) != 1 {
		t.Errorf("copies of the loaded files: %v, want one", copies)
	}

	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"model": "add_sub", "version": "abc"}, "Failed to check model readiness: failed to get model version from specified version string 'abc' (details: stol), version should be an integral value > 0"},
		{map[string]any{"model": "add_sub", "version": "-1"}, "Failed to check model readiness: failed to get model version from specified version string '-1', version should be an integral value > 0"},
		{map[string]any{"action": "load", "model": "add_sub", "config": cfg, "files": "[1]"}, "failed to load model 'add_sub', files should be a dictionary of file paths and file contents"},
		{map[string]any{"action": "load", "model": "nope"}, "Failed to load model: failed to load 'nope'"},
		{map[string]any{"action": "load", "model": "add_sub", "config": "{", "files": files}, "Failed to load model: failed to load 'add_sub': malformed config override"},
		{map[string]any{"action": "load", "model": "add_sub", "config": cfg, "files": `{"1/model.py": "x"}`}, "Failed to load model: unrecognized load parameter '1/model.py'."},
	} {
		if ready, e := manage(t, srv, c.params); !strings.HasPrefix(e, c.want) || ready {
			t.Errorf("%v: ready %v, error %q; want an error starting %q", c.params, ready, e, c.want)
		}
	}
	if !srv.ModelReady(ctx, "add_sub", 0) {
		t.Error("a failed load_model took down the add_sub that served")
	}

	if err := srv.Unload(ctx, "add_sub", nil); err != nil {
		t.Fatal(err)
	}
	if left := must(os.ReadDir(tmp)); len(left) != 0 {
		t.Errorf("left in %s after the unload: %v", tmp, left)
	}

	// A model unloads itself from its execute: the call returns (it does
	// not wait for the request that makes it), the request is answered.
	if ready, e := manage(t, srv, map[string]any{"action": "unload", "model": "manager"}); ready || e != "" {
		t.Errorf("manager unloading itself: ready %v, error %q; want not ready, no error", ready, e)
	}
	if srv.ModelReady(ctx, "manager", 0) {
		t.Error("manager still ready after unloading itself")
	}
}

func TestModelLoadingAPIRefused(t *testing.T) {
	r := newRepo(t).copy("add_sub").model("manager", managerConfig, managerModel)
	// A model's initialize that loads the model itself: the load waits for
	// that initialize, so the call fails at once instead of deadlocking.
	r.model("selfish", managerConfig, `
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        pb_utils.load_model(model_name="selfish")
    def execute(self, requests):
        return []
`)
	r.model("eager", "backend: \"python\"\n", `
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        pb_utils.load_model(model_name="add_sub")
        return config
    def execute(self, requests):
        return []
`)
	srv := r.Serve(explicit()...)
	ctx := context.Background()
	for model, want := range map[string]string{
		"selfish": "Failed to load model: failed to load 'selfish' from model 'selfish': the load of 'selfish' is waiting for this call",
		"eager":   "Failed to load model: the model loading API is not supported in auto_complete_config",
	} {
		if err := srv.Load(ctx, model, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loading %s: %v; want an error with %q", model, err, want)
		}
	}

	// Without explicit model control, the server's own rule (and a manager
	// whose initialize loads nothing: add_sub loads beside it at start).
	noInit := strings.Replace(managerModel, "def initialize(", "def not_initialize(", 1)
	srv = newRepo(t).copy("add_sub").model("manager", managerConfig, noInit).Serve()
	_, e := manage(t, srv, map[string]any{"action": "unload", "model": "add_sub"})
	if want := "Failed to unload model: explicit model load / unload is not allowed if polling is enabled"; e != want {
		t.Errorf("unload_model without explicit model control: %q, want %q", e, want)
	}
	if !srv.ModelReady(ctx, "add_sub", 0) {
		t.Error("add_sub unloaded without explicit model control")
	}
}

// TestIsReadyAsksTheServer: a model whose is_ready asks whether the model
// it depends on is ready (is_ready runs beside the stub's reader of the
// server's replies, which must go on for is_model_ready's answer).
func TestIsReadyAsksTheServer(t *testing.T) {
	r := newRepo(t).copy("add_sub").model("front", managerConfig, `
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def is_ready(self):
        return pb_utils.is_model_ready(model_name="add_sub")
    def execute(self, requests):
        return []
`)
	srv := r.Serve(triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("add_sub", "front"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !srv.ModelReady(ctx, "front", 0) {
		t.Fatal("front not ready while add_sub is")
	}
	if err := srv.Unload(ctx, "add_sub", nil); err != nil {
		t.Fatal(err)
	}
	if srv.ModelReady(ctx, "front", 0) {
		t.Fatal("front ready after add_sub was unloaded")
	}
	if ctx.Err() != nil {
		t.Fatal("the readiness checks did not answer")
	}
}
