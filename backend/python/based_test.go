package python_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testrepo"
	"github.com/triton-go/triton/tensor"
)

// affineBackend is a Python-based backend: one model.py for every model
// that names it, each scaled by its own parameters. It imports a module of
// its folder, completes the config, and says what it was imported as.
const affineBackend = `import json
import numpy as np
import triton_python_backend_utils as pb_utils
import affine_math


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [-1]})
        config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [-1]})
        config.add_output({"name": "INFO", "data_type": "TYPE_STRING", "dims": [1]})
        config.set_max_batch_size(0)
        return config

    def initialize(self, args):
        params = json.loads(args["model_config"])["parameters"]
        self.scale = float(params["scale"]["string_value"])
        self.offset = float(params["offset"]["string_value"])
        self.info = json.dumps({"module": __name__, "repository": args["model_repository"],
                                "version": args["model_version"], "runtime": json.loads(args["model_config"]).get("runtime")})

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            y = affine_math.affine(x, self.scale, self.offset).astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", y),
                                                   pb_utils.Tensor("INFO", np.array([self.info.encode()], dtype=object))]))
        return out
`

// TestPythonBasedBackend serves two models on one Python-based backend of
// the backend directory, as Triton serves vLLM's: the backend's model.py
// runs (not a model.py of the model's own folder), imported as "model"
// with its folder on the path, its auto_complete_config completes each
// model, each model gets its own parameters and folder, and the configs'
// runtime reads "model.py".
func TestPythonBasedBackend(t *testing.T) {
	r := newRepo(t)
	backends := testrepo.New(t)
	backends.Write("affine/model.py", []byte(affineBackend))
	backends.Write("affine/affine_math.py", []byte("def affine(x, a, b):\n    return x * a + b\n"))
	params := func(scale, offset string) string {
		return `backend: "affine"
parameters { key: "scale" value { string_value: "` + scale + `" } }
parameters { key: "offset" value { string_value: "` + offset + `" } }
`
	}
	// A model.py of the model's own is not what runs.
	r.model("c2f", params("1.8", "32"), "raise RuntimeError(\"the model folder's model.py ran\")\n")
	r.write("f2c/config.pbtxt", params("0.5", "-16"))
	r.write("f2c/1/notes.txt", "the version folder: no model file of its own\n")
	srv := r.Serve(triton.WithBackendDirectory(backends.Dir))

	for _, c := range []struct {
		model string
		want  []float32
	}{{"c2f", []float32{32, 212, -40}}, {"f2c", []float32{-16, 34, -36}}} {
		in := []float32{0, 100, -40}
		resp, err := infer(t, srv, c.model, must(tensor.From("X", tensor.Shape{3}, in)))
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		if got := floats(t, resp, "Y"); !equal(got, c.want) {
			t.Errorf("%s: Y = %v, want %v", c.model, got, c.want)
		}
		var info map[string]any
		if err := json.Unmarshal([]byte(stringsOut(t, resp, "INFO")[0]), &info); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"module": "model", "repository": filepath.Join(r.Dir, c.model), "version": "1", "runtime": "model.py"}
		for k, v := range want {
			if info[k] != v {
				t.Errorf("%s: initialize saw %s = %v, want %v", c.model, k, info[k], v)
			}
		}
		cfg, err := srv.ModelConfig(c.model, 0)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.GetRuntime() != "model.py" || cfg.GetBackend() != "affine" || len(cfg.GetInput()) != 1 || cfg.GetInput()[0].GetName() != "X" {
			t.Errorf("%s: config runtime %q backend %q inputs %v, want model.py, affine and the completed X",
				c.model, cfg.GetRuntime(), cfg.GetBackend(), cfg.GetInput())
		}
	}
}

// TestPythonBasedBackendErrors: what fails to load, and says why.
func TestPythonBasedBackendErrors(t *testing.T) {
	needPython(t)
	backends := testrepo.New(t)
	backends.Write("affine/model.py", []byte(affineBackend))
	backends.Write("affine/affine_math.py", []byte("def affine(x, a, b):\n    return x * a + b\n"))
	backends.Write("packed/model.py", []byte(affineBackend))
	backends.Write("packed/pb_exec_env_model.py.tar.gz", []byte("not unpacked"))
	for _, c := range []struct {
		name, config string
		opts         []triton.Option
		want         []string
	}{
		{"runtime model.py, no folder", `backend: "missing" runtime: "model.py"`, []triton.Option{triton.WithBackendDirectory(backends.Dir)},
			[]string{"unable to find Python backend based backend library 'model.py' for model 'm', searched: '" + filepath.Join(backends.Dir, "missing", "model.py") + "'"}},
		{"runtime model.py, no backend directory", `backend: "affine" runtime: "model.py"`, nil,
			[]string{"unable to find Python backend based backend library 'model.py' for model 'm'", "no backend directory"}},
		{"unknown backend", `backend: "nope"`, []triton.Option{triton.WithBackendDirectory(backends.Dir)},
			[]string{"unknown backend 'nope' for model 'm'", "searched: '" + filepath.Join(backends.Dir, "nope", "model.py") + "'"}},
		{"no backend directory", `backend: "affine"`, nil, []string{"unknown backend 'affine' for model 'm'"}},
		{"a path for a name", `backend: "../` + filepath.Base(backends.Dir) + `/affine"`, []triton.Option{triton.WithBackendDirectory(backends.Dir)},
			[]string{"unknown backend"}},
		{"packed environment", `backend: "packed" parameters { key: "scale" value { string_value: "1" } } parameters { key: "offset" value { string_value: "0" } }`,
			[]triton.Option{triton.WithBackendDirectory(backends.Dir)},
			[]string{"EXECUTION_ENV_PATH", "pb_exec_env_model.py.tar.gz", "not a gzipped tar file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRepo(t)
			r.write("m/config.pbtxt", c.config)
			r.write("m/1/notes.txt", "")
			err := r.Load(c.opts...)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}
