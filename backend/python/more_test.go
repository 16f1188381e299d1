package python_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// TestResponseSenderDefaultModel: a default (not decoupled) model may
// answer through the response sender, in execute or from a thread after
// it returned; Triton's rules for such a sender hold.
func TestResponseSenderDefaultModel(t *testing.T) {
	logged := make(chan string, 1)
	hook := zap.Hooks(func(e zapcore.Entry) error {
		if strings.HasPrefix(e.Message, "sender errors: ") {
			logged <- e.Message
		}
		return nil
	})
	core, _ := observer.New(zapcore.InfoLevel)
	srv := newRepo(t).model("late", blsConfig, `
import threading
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "A").as_numpy().copy()
            s = r.get_response_sender()
            if a[0] > 0:
                threading.Thread(target=self.later, args=(s, a)).start()
            else:
                s.send(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", a + 1)]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return [None] * len(requests)
    def later(self, s, a):
        errors = []
        try:
            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except pb_utils.TritonModelException as e:
            errors.append(str(e))
        s.send(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", a * 2)]))
        try:
            s.send(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", a)]))
        except pb_utils.TritonModelException as e:
            errors.append(str(e))
        s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        try:
            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except pb_utils.TritonModelException as e:
            errors.append(str(e))
        pb_utils.Logger.log_info("sender errors: " + " | ".join(errors))
`).Serve(triton.WithLogger(zap.New(core).WithOptions(hook)))
	for _, c := range []struct{ in, want float32 }{{0, 1}, {3, 6}} {
		resp, err := infer(t, srv, "late", must(tensor.From("A", tensor.Shape{4}, []float32{c.in, 0, 0, 0})))
		if err != nil {
			t.Fatal(err)
		}
		if got := floats(t, resp, "SUM"); got[0] != c.want {
			t.Errorf("A=%v: SUM %v, want %v", c.in, got, c.want)
		}
	}
	want := "sender errors: Unable to send response. Non-decoupled model cannot send complete final before sending a response." +
		" | Unable to send response. Non-decoupled model cannot send more than one response." +
		" | Unable to send response. Response sender has been closed."
	if got := <-logged; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

// TestDLPack: tensors to and from DLPack, numpy's protocol.
func TestDLPack(t *testing.T) {
	srv := newRepo(t).model("dl", blsConfig, `
import numpy as np
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "A")
            a = np.from_dlpack(t)              # the tensor's __dlpack__
            b = pb_utils.Tensor.from_dlpack("SUM", a * 3)
            out.append(pb_utils.InferenceResponse([b]))
        return out
`).Serve()
	resp, err := infer(t, srv, "dl", must(tensor.From("A", tensor.Shape{4}, []float32{1, 2, 3, 4})))
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "SUM"); !equal(got, []float32{3, 6, 9, 12}) {
		t.Fatalf("SUM %v", got)
	}
}

// TestBackendConfig: tritonserver's --backend-config=python,... settings,
// with Triton's checks and messages.
func TestBackendConfig(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		want string // "" for no error
	}{
		{map[string]string{"shm-default-byte-size": "4194304", "shm-growth-byte-size": "1048576", "stub-timeout-seconds": "5",
			"thread-pool-size": "4", "shm_message_queue_size": "100", "shm-region-prefix-name": "p", "interpreter": "/usr/bin/python3",
			"shm-max-byte-size": "1073741824"}, ""},
		{map[string]string{"shm-default-byte-size": "1000"}, "shm-default-byte-size can't be smaller than 4 MiBs"},
		{map[string]string{"shm-growth-byte-size": "0"}, "shm-growth-byte-size can't be smaller than or equal to zero."},
		{map[string]string{"stub-timeout-seconds": "0"}, "stub-timeout-seconds can't be smaller than or equal to zero."},
		{map[string]string{"thread-pool-size": "0"}, "thread-pool-size can't be less than 1."},
		{map[string]string{"shm-region-prefix-name": ""}, "shm-region-prefix-name must at least contain one character."},
		{map[string]string{"stub-timeout-seconds": "x"}, "not an integer"},
		{map[string]string{"shm-max-byte-size": "1048575"}, "is below shm-default-byte-size"},
		{map[string]string{"bogus": "x"}, ""}, // ignored, as in Triton (logged: TestBackendConfigIgnored)
	} {
		_, err := python.BackendConfig(c.set)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.set, err, c.want)
		}
	}
	// The settings act (the interpreter here; the others through the
	// options TestStubHangs and TestSharedMemoryLimit test).
	opts, err := python.BackendConfig(map[string]string{"interpreter": "/nonexistent/python3"})
	if err != nil {
		t.Fatal(err)
	}
	err = newRepo(t).copy("add_sub").Load(triton.WithBackend(python.Name, python.New(opts...)))
	if err == nil || !strings.Contains(err.Error(), "starting the Python stub process with /nonexistent/python3") {
		t.Fatalf("error %v", err)
	}
}

// TestForceCPUOnly: FORCE_CPU_ONLY_INPUT_TENSORS takes yes or no, as in
// Triton (inputs are in CPU memory either way here).
func TestForceCPUOnly(t *testing.T) {
	for v, want := range map[string]string{"yes": "", "no": "", "maybe": "Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: maybe'"} {
		config := blsConfig + `parameters { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value { string_value: "` + v + `" } }`
		err := newRepo(t).model("m", config, "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n").Load()
		if (err == nil) != (want == "") || err != nil && !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: error %v, want one ending in Triton's %q", v, err, want)
		}
		if err != nil && triton.CodeOf(err) != triton.Unsupported {
			t.Errorf("%s: code %v, want Unsupported", v, triton.CodeOf(err))
		}
	}
}

// TestModelFileNotPython: a default_model_filename that is not a .py file
// fails the load with Triton's text, nothing after it, as InvalidArgument.
func TestModelFileNotPython(t *testing.T) {
	r := newRepo(t)
	r.write("m/config.pbtxt", blsConfig+`default_model_filename: "model.txt"`)
	r.write("m/1/model.txt", "")
	err := r.Load()
	if want := `Model name must end with '.py'. Model name is "model.txt".`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("error %v, want one ending in %q", err, want)
	}
	if code := triton.CodeOf(err); code != triton.InvalidArgument {
		t.Errorf("code %v, want InvalidArgument", code)
	}
}

// TestBackendConfigIgnored: a --backend-config=python key the backend does
// not know is ignored, as Triton's backend ignores it, and logged once when
// the first model loads.
func TestBackendConfigIgnored(t *testing.T) {
	opts, err := python.BackendConfig(map[string]string{"bogus": "x", "stub-timeout-seconds": "5"})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	srv := newRepo(t).copy("add_sub").model("second", `backend: "python"`, "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n").
		Serve(triton.WithBackend(python.Name, python.New(opts...)), triton.WithLogger(zap.New(core)))
	if !srv.ModelReady(context.Background(), "add_sub", 0) {
		t.Fatal("add_sub not ready")
	}
	if got := logs.FilterMessageSnippet("--backend-config=python,bogus is not a setting of the python backend").Len(); got != 1 {
		t.Errorf("%d warnings about bogus, want 1 (of two models loaded)", got)
	}
}

// TestNoExecute: a model without execute loads, and each request fails
// with Triton's text naming the model file.
func TestNoExecute(t *testing.T) {
	r := newRepo(t).model("noexec", blsConfig, "class TritonPythonModel:\n    pass\n")
	srv := r.Serve()
	_, err := infer(t, srv, "noexec", must(tensor.From("A", tensor.Shape{4}, []float32{1, 2, 3, 4})))
	if want := "Python model " + filepath.Join(r.Dir, "noexec", "1", "model.py") + " does not implement `execute` method."; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}
