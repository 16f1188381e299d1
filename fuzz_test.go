package triton_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
)

// FuzzInfer sends arbitrary tensors (datatype, shape, bytes) to models with
// fixed, variable and BYTES inputs. The server must never panic, every
// error must be InvalidArgument, and every success must return outputs
// that are themselves valid.
func FuzzInfer(f *testing.F) {
	files := map[string]string{
		"fixed/config.pbtxt": `backend: "mirror" max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]`,
		"fixed/1/x": "",
		"text/config.pbtxt": `backend: "mirror"
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`,
		"text/1/x": "",
	}
	srv := newServer(f, files, triton.WithBackend("mirror", mirror))
	f.Add(false, uint8(tensor.FP32), []byte{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add(true, uint8(tensor.Bytes), []byte{2, 0, 0, 0, 0, 0, 0, 0}, []byte{1, 0, 0, 0, 'a', 0, 0, 0, 0})
	f.Add(true, uint8(tensor.Bytes), []byte{1, 0, 0, 0, 0, 0, 0, 0}, []byte{255, 255, 255, 255})
	f.Add(false, uint8(tensor.Int8), []byte{255, 255, 255, 255, 255, 255, 255, 127}, []byte{1})
	f.Fuzz(func(t *testing.T, text bool, dt uint8, shapeBytes, data []byte) {
		var shape tensor.Shape
		for i := 0; i+8 <= len(shapeBytes) && len(shape) < 5; i += 8 {
			shape = append(shape, int64(binary.LittleEndian.Uint64(shapeBytes[i:])))
		}
		model := "fixed"
		if text {
			model = "text"
		}
		in := tensor.Tensor{Name: "INPUT0", DataType: tensor.DataType(dt), Shape: shape, Data: data}
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}})
		if err != nil {
			if c := triton.CodeOf(err); c != triton.InvalidArgument {
				t.Fatalf("code %v for bad input: %v", c, err)
			}
			return
		}
		for _, out := range resp.Outputs {
			if err := out.Validate(); err != nil {
				t.Fatalf("accepted input produced an invalid output: %v", err)
			}
		}
	})
}
