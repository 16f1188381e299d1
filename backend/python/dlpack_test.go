package python_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// bf16 returns the little-endian bytes of bfloat16 bit patterns.
func bf16(bits ...uint16) []byte {
	b := make([]byte, 0, 2*len(bits))
	for _, v := range bits {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

// TestBF16ThroughDLPack: a BF16 tensor, which numpy has no type for, goes
// to torch and back through DLPack (to_dlpack, Tensor.from_dlpack), as
// Triton's documentation tells models to do.
func TestBF16ThroughDLPack(t *testing.T) {
	testenv.Need(t, "/usr/lib/python3/dist-packages/torch/__init__.py", "scripts/deps.sh installs python3-torch")
	srv := newRepo(t).model("bf16", `backend: "python"
input [ { name: "IN" data_type: TYPE_BF16 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_BF16 dims: [ 3 ] } ]`, `
import torch
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = torch.from_dlpack(pb_utils.get_input_tensor_by_name(r, "IN").to_dlpack())
            assert x.dtype == torch.bfloat16, x.dtype
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor.from_dlpack("OUT", x * 2)]))
        return out
`).Serve()
	in := tensor.Tensor{Name: "IN", DataType: tensor.BF16, Shape: tensor.Shape{3}, Data: bf16(0x3FC0, 0xC000, 0x4050)} // 1.5, -2, 3.25
	resp, err := infer(t, srv, "bf16", in)
	if err != nil {
		t.Fatal(err)
	}
	out, ok := resp.Output("OUT")
	if want := bf16(0x4040, 0xC080, 0x40D0); !ok || out.DataType != tensor.BF16 || !slices.Equal(out.Data, want) { // 3, -4, 6.5
		t.Errorf("OUT %v %x, want BF16 %x", out.DataType, out.Data, want)
	}
}
