package torchrun_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/triton-go/triton/cgo/torchrun"
	"github.com/triton-go/triton/tensor"
)

// f32 encodes values as little-endian FP32 bytes.
func f32(values ...float32) []byte {
	b := make([]byte, 0, 4*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// Example loads the add/sub test model, lists forward's arguments and runs
// it once.
func Example() {
	// The shim that make deps builds (scripts/build-torch-shim.sh).
	if err := torchrun.Open(shimPath()); err != nil {
		fmt.Println(err)
		return
	}
	m, err := torchrun.Load(testModel("addsub.pt"), torchrun.Options{InferenceMode: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for _, a := range m.Arguments() {
		fmt.Println("argument", a.Name, a.Type)
	}

	x := torchrun.Value{DataType: tensor.FP32, Shape: []int64{1, 2}, Data: f32(5, 7)}
	y := torchrun.Value{DataType: tensor.FP32, Shape: []int64{1, 2}, Data: f32(1, 2)}
	out, err := m.Forward(context.Background(), []torchrun.Value{x, y})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, o := range out {
		v0 := math.Float32frombits(binary.LittleEndian.Uint32(o.Data))
		v1 := math.Float32frombits(binary.LittleEndian.Uint32(o.Data[4:]))
		fmt.Println("output", i, o.DataType, o.Shape, v0, v1)
	}
	// Output:
	// argument INPUT0 Tensor
	// argument INPUT1 Tensor
	// output 0 FP32 [1 2] 6 9
	// output 1 FP32 [1 2] 4 5
}

// ExampleModule_Forward_strings runs a module that takes a List[str] and
// returns a Tensor and a List[str].
func ExampleModule_Forward_strings() {
	if err := torchrun.Open(shimPath()); err != nil {
		fmt.Println(err)
		return
	}
	m, err := torchrun.Load(testModel("strings.pt"), torchrun.Options{InferenceMode: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	in := [][]byte{[]byte("triton"), []byte("go")}
	out, err := m.Forward(context.Background(), []torchrun.Value{{DataType: tensor.Bytes, Shape: []int64{2}, Strings: in}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[0].DataType, out[0].Shape, binary.LittleEndian.Uint64(out[0].Data), binary.LittleEndian.Uint64(out[0].Data[8:]))
	fmt.Printf("%v %v %q\n", out[1].DataType, out[1].Shape, out[1].Strings)
	// Output:
	// INT64 [2] 6 2
	// BYTES [2] ["TRITON" "GO"]
}

// ExampleWorker runs forwards of several goroutines on one worker thread,
// one after another in the order they were submitted.
func ExampleWorker() {
	if err := torchrun.Open(shimPath()); err != nil {
		fmt.Println(err)
		return
	}
	m, err := torchrun.Load(testModel("addsub.pt"), torchrun.Options{InferenceMode: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	w, err := torchrun.NewWorker()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close() // waits for the forwards in progress, then ends the thread

	sums := make([]float32, 3)
	done := make(chan error, len(sums))
	for k := range sums {
		go func() {
			x := torchrun.Value{DataType: tensor.FP32, Shape: []int64{1, 1}, Data: f32(float32(k))}
			y := torchrun.Value{DataType: tensor.FP32, Shape: []int64{1, 1}, Data: f32(10)}
			out, _, err := w.Forward(context.Background(), m, torchrun.Queued, []torchrun.Value{x, y})
			if err == nil {
				sums[k] = math.Float32frombits(binary.LittleEndian.Uint32(out[0].Data))
			}
			done <- err
		}()
	}
	for range sums {
		if err := <-done; err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(sums)
	// Output:
	// [10 11 12]
}
