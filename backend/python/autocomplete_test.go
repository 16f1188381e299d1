package python_test

import (
	"strings"
	"testing"

	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// autoModel declares its tensors and batching itself.
const autoModel = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [2]})
        auto_complete_model_config.add_output({"name": "Y", "data_type": "TYPE_FP32", "dims": [2]})
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * 2)]) for r in requests]
`

// TestAutoComplete: the config comes from auto_complete_config.
func TestAutoComplete(t *testing.T) {
	srv := newRepo(t).model("auto", `backend: "python"`, autoModel).Serve()
	cfg, err := srv.ModelConfig("auto", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() != 4 || len(cfg.GetInput()) != 1 || cfg.GetInput()[0].GetName() != "X" || cfg.GetDynamicBatching() == nil {
		t.Fatalf("config %v", cfg)
	}
	resp, err := infer(t, srv, "auto", must(tensor.From("X", tensor.Shape{1, 2}, []float32{1.5, -2})))
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "Y"); !equal(got, []float32{3, -4}) {
		t.Fatalf("Y %v", got)
	}
}

// TestAutoCompleteInherited: an auto_complete_config that TritonPythonModel
// inherits from a class of another module runs too (model.py does not name
// it).
func TestAutoCompleteInherited(t *testing.T) {
	r := newRepo(t).model("auto", `backend: "python"`, `
import numpy as np
import triton_python_backend_utils as pb_utils
from common_model import Declared


class TritonPythonModel(Declared):
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy() * 2)]) for r in requests]
`)
	r.write("auto/1/common_model.py", strings.Replace(autoModel, "class TritonPythonModel:", "class Declared:", 1))
	cfg, err := r.Serve().ModelConfig("auto", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() != 4 || len(cfg.GetInput()) != 1 || cfg.GetInput()[0].GetName() != "X" {
		t.Fatalf("config %v, want auto_complete_config's", cfg)
	}
}

func TestMayAutoComplete(t *testing.T) {
	for src, want := range map[string]bool{
		"class TritonPythonModel:\n    def auto_complete_config(c): pass\n": true,
		"class TritonPythonModel:\n    pass\n":                              false,
		"class TritonPythonModel(object):\n    pass\n":                      false,
		"class TritonPythonModel(Base):\n    pass\n":                        true,
		"class TritonPythonModel (base.Model, Mixin):\n    pass\n":          true,
		"from shared import TritonPythonModel\n":                            true,
		"TritonPythonModel = make_model()\n":                                true,
	} {
		if got := python.MayAutoComplete([]byte(src)); got != want {
			t.Errorf("%q: %v, want %v", src, got, want)
		}
	}
}

// TestAutoCompleteErrors: Triton's texts for a config auto_complete_config
// contradicts, and for one that returns nothing.
func TestAutoCompleteErrors(t *testing.T) {
	for _, c := range []struct{ name, config, body, want string }{{
		"max_batch_size", "backend: \"python\"\nmax_batch_size: 8",
		"c.set_max_batch_size(4)\n        return c",
		"configuration specified max_batch_size 8, but in auto-complete-config function for model 'm' specified max_batch_size 4",
	}, {
		"no_return", `backend: "python"`, "pass",
		"auto_complete_config function in model 'm' must return a valid pb.ModelConfig object.",
	}, {
		"raises", `backend: "python"`, "raise RuntimeError('cannot complete')",
		"RuntimeError: cannot complete",
	}} {
		t.Run(c.name, func(t *testing.T) {
			src := "import triton_python_backend_utils as pb_utils\nclass TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n        " + c.body + "\n    def execute(self, requests):\n        return []\n"
			err := newRepo(t).model("m", c.config, src).Load()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
