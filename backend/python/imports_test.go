package python_test

import (
	"testing"

	"github.com/triton-go/triton/tensor"
)

// TestModelFoldersAfterTheStandardLibrary: the model's folders come after
// the interpreter's own paths on sys.path, as Triton appends them: a file
// of the version folder named like a standard module (fractions.py here)
// does not shadow it, and a module of the folder's own is still found.
func TestModelFoldersAfterTheStandardLibrary(t *testing.T) {
	r := newRepo(t).model("paths", `backend: "python"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]`, `
import fractions

import numpy as np
import triton_python_backend_utils as pb_utils
from helper import half


class TritonPythonModel:
    def execute(self, requests):
        f = fractions.Fraction(3, 4)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([half(float(f))], np.float32))]) for _ in requests]
`)
	r.write("paths/1/fractions.py", "raise ImportError('the model folder shadowed the standard library')\n")
	r.write("paths/1/helper.py", "def half(x):\n    return x / 2\n")
	srv := r.Serve()
	resp, err := infer(t, srv, "paths", must(tensor.From("IN", tensor.Shape{1}, []float32{0})))
	if err != nil {
		t.Fatal(err)
	}
	if got := floats(t, resp, "OUT"); len(got) != 1 || got[0] != 0.375 {
		t.Errorf("OUT = %v, want [0.375]", got)
	}
}
