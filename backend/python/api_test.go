package python_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

const echoConfig = `backend: "python"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] }, { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "greeting" value { string_value: "hello" } }
`

// echoModel upper-cases TEXT and describes the request and its args in INFO.
const echoModel = `
import json, os, sys
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.args = args
        pb_utils.Logger.log_warn("initialized " + args["model_instance_name"])

    def execute(self, requests):
        out = []
        for r in requests:
            text = pb_utils.get_input_tensor_by_name(r, "TEXT").as_numpy()
            upper = np.array([t.upper() for t in text], dtype=np.object_)
            info = {"id": r.request_id(), "corr": r.correlation_id(), "flags": r.flags(),
                    "params": json.loads(r.parameters()), "outputs": sorted(r.requested_output_names()),
                    "args": {k: v for k, v in self.args.items() if k != "model_config"},
                    "config": json.loads(self.args["model_config"]), "types": [type(t).__name__ for t in text],
                    "cancelled": r.is_cancelled(), "python": sys.executable,
                    "env": {k: os.environ.get(k) for k in ("VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME")}}
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("UPPER", upper),
                pb_utils.Tensor("INFO", np.array([json.dumps(info)], dtype=np.object_))]))
        return out
`

func info(t *testing.T, resp *triton.InferResponse) map[string]any {
	t.Helper()
	out, ok := resp.Output("INFO")
	if !ok {
		t.Fatal("no INFO")
	}
	items, err := tensor.Strings(out)
	if err != nil || len(items) != 1 {
		t.Fatalf("INFO %v %v", items, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(items[0]), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRequestAccessors: BYTES tensors as bytes objects, the request's id,
// correlation id, flags and parameters, initialize's args, and the log.
func TestRequestAccessors(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	srv := newRepo(t).model("echo", echoConfig, echoModel).Serve(triton.WithLogger(zap.New(core)))
	text := must(tensor.FromStrings("TEXT", tensor.Shape{2}, []string{"abc", "Ünï"}))
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "echo", ID: "req-7", Inputs: []tensor.Tensor{text},
		SequenceID: 42, SequenceStart: true, Parameters: map[string]any{"k": "v", "n": int64(3), "b": true}})
	if err != nil {
		t.Fatal(err)
	}
	upper, err := tensor.Strings(must(outputTensor(resp, "UPPER")))
	if err != nil || len(upper) != 2 || upper[0] != "ABC" || upper[1] != "ÜNï" { // bytes.upper: ASCII letters only
		t.Fatalf("UPPER %q %v", upper, err)
	}
	m := info(t, resp)
	if m["id"] != "req-7" || m["corr"] != float64(42) || m["flags"] != float64(1) || m["cancelled"] != false {
		t.Errorf("request %v", m)
	}
	if p := m["params"].(map[string]any); p["k"] != "v" || p["n"] != float64(3) || p["b"] != true {
		t.Errorf("parameters %v", p)
	}
	if o := m["outputs"].([]any); len(o) != 2 {
		t.Errorf("requested outputs %v, want both", o)
	}
	if ty := m["types"].([]any); ty[0] != "bytes" {
		t.Errorf("BYTES items are %v, want bytes", ty)
	}
	args := m["args"].(map[string]any)
	for k, want := range map[string]string{"model_name": "echo", "model_version": "1", "model_instance_kind": "CPU",
		"model_instance_name": "echo_0", "model_instance_device_id": "0"} {
		if args[k] != want {
			t.Errorf("args[%q] = %v, want %q", k, args[k], want)
		}
	}
	if !strings.HasSuffix(args["model_repository"].(string), string(filepath.Separator)+"echo") {
		t.Errorf("model_repository %v", args["model_repository"])
	}
	cfg := m["config"].(map[string]any)
	if cfg["parameters"].(map[string]any)["greeting"].(map[string]any)["string_value"] != "hello" || cfg["max_batch_size"] != float64(0) {
		t.Errorf("model_config %v", cfg)
	}
	if dims := cfg["input"].([]any)[0].(map[string]any)["dims"].([]any); dims[0] != float64(-1) {
		t.Errorf("dims %v, want numbers as Triton prints them", dims)
	}
	found := logs.FilterMessage("initialized echo_0").All()
	if len(found) != 1 || found[0].Level != zapcore.WarnLevel || found[0].ContextMap()["instance"] != "echo_0" ||
		!strings.HasPrefix(found[0].ContextMap()["file"].(string), "model.py:") {
		t.Errorf("log %v", found)
	}
	// Only the requested output is returned.
	resp, err = srv.Infer(context.Background(), &triton.InferRequest{Model: "echo", Inputs: []tensor.Tensor{text}, Outputs: []string{"UPPER"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.Output("INFO"); ok || len(resp.Outputs) != 1 {
		t.Errorf("outputs %v, want UPPER alone", resp.Outputs)
	}
}

func outputTensor(resp *triton.InferResponse, name string) (tensor.Tensor, error) {
	if t, ok := resp.Output(name); ok {
		return t, nil
	}
	return tensor.Tensor{}, &triton.Error{Code: triton.NotFound}
}

// TestErrorResponses: an error response fails its request alone, with the
// code of its TritonError.
func TestErrorResponses(t *testing.T) {
	srv := newRepo(t).model("codes", `backend: "python"
max_batch_size: 4
input [ { name: "CODE" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OK" data_type: TYPE_INT32 dims: [ 1 ] } ]
`, `
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            code = int(pb_utils.get_input_tensor_by_name(r, "CODE").as_numpy()[0][0])
            if code < 0:
                out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OK", np.array([[1]], dtype=np.int32))]))
            else:
                out.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("code %d" % code, code)))
        return out
`).Serve()
	for code, want := range map[int32]triton.Code{-1: 0, 0: triton.Unknown, 1: triton.Internal, 2: triton.NotFound, 3: triton.InvalidArgument,
		4: triton.Unavailable, 5: triton.Unsupported, 6: triton.AlreadyExists, 7: triton.Cancelled} {
		_, err := infer(t, srv, "codes", must(tensor.From("CODE", tensor.Shape{1, 1}, []int32{code})))
		if code < 0 {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err == nil || triton.CodeOf(err) != want || !strings.Contains(err.Error(), "code ") {
			t.Errorf("code %d: error %v (%v), want %v", code, err, triton.CodeOf(err), want)
		}
	}
}

// TestInitializeRaises: the load fails with the exception and the model's
// traceback.
func TestInitializeRaises(t *testing.T) {
	err := newRepo(t).model("m", blsConfig, `
class TritonPythonModel:
    def initialize(self, args):
        self.setup()
    def setup(self):
        raise KeyError("missing weights")
    def execute(self, requests):
        return []
`).Load()
	if err == nil || !strings.Contains(err.Error(), "KeyError: 'missing weights'") || !strings.Contains(err.Error(), "in setup") ||
		strings.Contains(err.Error(), "stub.py") {
		t.Fatalf("error %v", err)
	}
}

// TestIsReady: a model's is_ready decides its readiness.
func TestIsReady(t *testing.T) {
	r := newRepo(t).model("m", blsConfig, `
import os
class TritonPythonModel:
    def is_ready(self):
        return not os.path.exists(os.path.join(os.path.dirname(__file__), "down"))
    def execute(self, requests):
        return []
`)
	srv := r.Serve()
	ctx := context.Background()
	if !srv.ModelReady(ctx, "m", 0) {
		t.Fatal("not ready")
	}
	r.write("m/1/down", "")
	if srv.ModelReady(ctx, "m", 0) {
		t.Fatal("ready though is_ready says False")
	}
}

// TestExecutionEnv runs a model in an environment folder, and says so
// clearly when the interpreter has no numpy (packed ones: env_test.go).
func TestExecutionEnv(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, site string }{{"with", "--system-site-packages"}, {"without", ""}} {
		args := []string{"-m", "venv", "--without-pip"}
		if c.site != "" {
			args = append(args, c.site)
		}
		if out, err := exec.Command("/usr/bin/python3", append(args, filepath.Join(dir, c.name))...).CombinedOutput(); err != nil {
			t.Fatalf("venv: %v\n%s", err, out)
		}
	}
	config := echoConfig + `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "` + filepath.Join(dir, "with") + `" } }`
	t.Setenv("PYTHONHOME", "/nonexistent") // the server's: an environment's interpreter must not get it, as in Triton
	srv := newRepo(t).model("echo", config, echoModel).Serve()
	resp, err := infer(t, srv, "echo", must(tensor.FromStrings("TEXT", tensor.Shape{1}, []string{"x"})))
	if err != nil {
		t.Fatal(err)
	}
	got := info(t, resp)
	if py := got["python"].(string); !strings.HasPrefix(py, filepath.Join(dir, "with")) {
		t.Errorf("ran with %s, want the environment's python", py)
	}
	env := filepath.Join(dir, "with")
	if want := map[string]any{"VIRTUAL_ENV": env, "VIRTUAL_ENV_PROMPT": "(" + env + ")", "PYTHONHOME": nil}; !maps.Equal(got["env"].(map[string]any), want) {
		t.Errorf("the stub's environment %v, want %v (as Triton sets it)", got["env"], want)
	}
	config = echoConfig + `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "` + filepath.Join(dir, "without") + `" } }`
	err = newRepo(t).model("echo", config, echoModel).Load()
	if err == nil || !strings.Contains(err.Error(), "cannot import numpy") || !strings.Contains(err.Error(), "python3-numpy") {
		t.Errorf("error %v, want a clear numpy error", err)
	}
	config = echoConfig + `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }`
	err = newRepo(t).model("echo", config, echoModel).Load()
	if err == nil || !strings.HasSuffix(err.Error(), "/echo/env/bin/activate does not exist. The Python environment should contain an 'activate' script.") {
		t.Errorf("error %v, want one ending in Triton's text", err)
	}
}

// TestPythonResponseParameters: InferenceResponse(parameters=...) reaches
// the client, from execute's list and from a decoupled model's sender, and
// a BLS caller reads the called model's parameters.
func TestPythonResponseParameters(t *testing.T) {
	const io = `input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`
	srv := newRepo(t).model("annotated", `backend: "python"`+"\n"+io, `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())],
                                           parameters={"n": 3, "ok": True, "s": "x"}) for r in requests]
`).model("stream", `backend: "python" model_transaction_policy { decoupled: true }`+"\n"+io, `
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            s = r.get_response_sender()
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            for i in range(2):
                s.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", x)], parameters={"i": i}))
            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
`).model("caller", `backend: "python"`+"\n"+io, `
import json
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            resp = pb_utils.InferenceRequest(model_name="annotated", requested_output_names=["OUT"],
                                             inputs=[pb_utils.get_input_tensor_by_name(r, "IN")]).exec()
            params = json.loads(resp.parameters())
            params["via"] = "bls"
            out.append(pb_utils.InferenceResponse(resp.output_tensors(), parameters=params))
        return out
`).Serve()
	in := must(tensor.From("IN", tensor.Shape{1}, []float32{2}))
	want := map[string]any{"n": int64(3), "ok": true, "s": "x"}
	resp, err := infer(t, srv, "annotated", in)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(resp.Parameters, want) {
		t.Errorf("annotated: parameters %v, want %v", resp.Parameters, want)
	}
	resp, err = infer(t, srv, "caller", in)
	if err != nil {
		t.Fatal(err)
	}
	want["via"] = "bls"
	if !maps.Equal(resp.Parameters, want) {
		t.Errorf("caller: parameters %v, want %v", resp.Parameters, want)
	}
	var got []any
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "stream", Inputs: []tensor.Tensor{in}}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Outputs) > 0 {
			got = append(got, resp.Parameters["i"])
		}
	}
	if len(got) != 2 || got[0] != int64(0) || got[1] != int64(1) {
		t.Errorf("stream: parameters i %v, want [0 1]", got)
	}
}

// TestIsReadyShared: concurrent readiness checks share one call of the
// model's is_ready (as Triton's do), so a flood of checks costs the stub
// one thread: 20 checks join the call, which waits on a pipe the test
// opens once all have joined, and is_ready runs once.
func TestIsReadyShared(t *testing.T) {
	joined := make(chan struct{}, 64)
	python.SetReadyJoinHook(func() { joined <- struct{}{} })
	defer python.SetReadyJoinHook(nil)
	r := newRepo(t).model("m", blsConfig, `
import os
class TritonPythonModel:
    def is_ready(self):
        here = os.path.dirname(__file__)
        with open(os.path.join(here, "calls"), "a") as f:
            f.write("x")
        with open(os.path.join(here, "gate")) as g:  # a pipe: waits for the test
            g.read()
        return True
    def execute(self, requests):
        return []
`)
	gate := filepath.Join(r.Dir, "m", "1", "gate")
	if err := unix.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := r.Serve()
	const checks = 20
	results := make(chan bool, checks)
	for range checks {
		go func() { results <- srv.ModelReady(context.Background(), "m", 0) }()
	}
	for range checks {
		<-joined
	}
	w, err := os.OpenFile(gate, os.O_WRONLY, 0) // once is_ready has it open
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.WriteString("go")
	_ = w.Close()
	for range checks {
		if !<-results {
			t.Error("a check found the model not ready")
		}
	}
	calls, err := os.ReadFile(filepath.Join(r.Dir, "m", "1", "calls"))
	if err != nil || string(calls) != "x" {
		t.Errorf("is_ready ran %q times (%v), want once for %d checks", calls, err, checks)
	}
}
