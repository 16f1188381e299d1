//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/cgo/ortrun"
)

// Example runs a model with two FLOAT inputs and two outputs, asking for
// only the second output (OUTPUT1 = INPUT0 - INPUT1).
func Example() {
	// Before this, onnxruntime_go is set up from the same library (TestMain
	// does it here): ort.SetSharedLibraryPath(lib); ort.InitializeEnvironment().
	lib, err := libraryPath() // $ONNXRUNTIME_LIB, or the checkout's .cache
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ortrun.Bind(lib); err != nil {
		fmt.Println(err)
		return
	}

	inputs, outputs := []string{"INPUT0", "INPUT1"}, []string{"OUTPUT0", "OUTPUT1"}
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(addSubModel(), inputs, outputs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Destroy()
	r, err := ortrun.NewSession(s, inputs, outputs)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	// Raw little-endian FLOAT data, [1, 16] each.
	var a, b []byte
	for i := range 16 {
		a = binary.LittleEndian.AppendUint32(a, math.Float32bits(float32(10*i)))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(i)))
	}
	const float = 1 // ONNX FLOAT
	out, err := r.Run(context.Background(), []ortrun.Tensor{
		{Type: float, Shape: []int64{1, 16}, Data: a},
		{Type: float, Shape: []int64{1, 16}, Data: b},
	}, []int{1})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := out[0]
	fmt.Println("OUTPUT1 type", o.Type, "shape", o.Shape, "bytes", len(o.Data))
	for i := range 4 {
		fmt.Print(math.Float32frombits(binary.LittleEndian.Uint32(o.Data[4*i:])), " ")
	}
	fmt.Println("...")

	// An input the model does not accept is ORT's invalid argument.
	_, err = r.Run(context.Background(), []ortrun.Tensor{
		{Type: float, Shape: []int64{1, 4}, Data: a[:16]},
		{Type: float, Shape: []int64{1, 4}, Data: b[:16]},
	}, []int{0})
	var e *ortrun.Error
	fmt.Println(errors.As(err, &e) && e.InvalidArgument())
	// Output:
	// OUTPUT1 type 1 shape [1 16] bytes 64
	// 0 9 18 27 ...
	// true
}

// Example_strings sends STRING elements with a NUL byte and invalid UTF-8
// through an Identity model, in Triton's BYTES framing.
func Example_strings() {
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(identityModel(8), []string{"INPUT0"}, []string{"OUTPUT0"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Destroy()
	r, err := ortrun.NewSession(s, []string{"INPUT0"}, []string{"OUTPUT0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	var data []byte // a 4-byte little-endian length before each element
	for _, e := range []string{"he\x00llo", "\xff\xfe"} {
		data = binary.LittleEndian.AppendUint32(data, uint32(len(e)))
		data = append(data, e...)
	}
	const str = 8 // ONNX STRING
	out, err := r.Run(context.Background(), []ortrun.Tensor{{Type: str, Shape: []int64{1, 2}, Data: data}}, []int{0})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v %q\n", out[0].Shape, out[0].Data)

	_, err = r.Run(context.Background(), []ortrun.Tensor{{Type: str, Shape: []int64{1, 2}, Data: data[:len(data)-1]}}, []int{0})
	fmt.Println(err)
	// Output:
	// [1 2] "\x06\x00\x00\x00he\x00llo\x02\x00\x00\x00\xff\xfe"
	// ortrun: Run: input 0 ("INPUT0"): malformed BYTES data: element 1 at offset 10: length 2 runs past the end of the data (1 bytes left)
}
