package tensor_test

import (
	"fmt"

	"github.com/triton-go/triton/tensor"
)

func ExampleFrom() {
	values := []float32{1, 2, 3, 4, 5, 6}
	in, err := tensor.From("INPUT0", tensor.Shape{2, 3}, values) // in.Data aliases values
	if err != nil {
		panic(err)
	}
	fmt.Println(in.Name, in.DataType, in.Shape, len(in.Data), "bytes")

	xs, err := tensor.View[float32](in) // xs aliases in.Data, and so values
	if err != nil {
		panic(err)
	}
	xs[0] = 10
	fmt.Println(xs, values[0])

	_, err = tensor.View[int32](in)
	fmt.Println(err)
	// Output:
	// INPUT0 FP32 [2,3] 24 bytes
	// [10 2 3 4 5 6] 10
	// tensor "INPUT0": cannot view FP32 data as INT32
}

func ExampleFromStrings() {
	t, err := tensor.FromStrings("TEXT", tensor.Shape{3}, []string{"hi", "", "a\x00b"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%v %v % x\n", t.DataType, t.Shape, t.Data[:6])

	for i, e := range t.Elements() {
		fmt.Printf("%d: %q\n", i, e)
	}
	ss, err := tensor.Strings(t)
	fmt.Printf("%q %v\n", ss, err)
	// Output:
	// BYTES [3] 02 00 00 00 68 69
	// 0: "hi"
	// 1: ""
	// 2: "a\x00b"
	// ["hi" "" "a\x00b"] <nil>
}

func ExampleFloat16FromFloat32() {
	for _, f := range []float32{1, -2.5, 65504, 70000, 0.1} {
		h := tensor.Float16FromFloat32(f)
		fmt.Printf("%g -> %#04x -> %g\n", f, uint16(h), h.Float32())
	}
	b := tensor.BFloat16FromFloat32(0.1)
	fmt.Printf("bf16: %#04x -> %g\n", uint16(b), b.Float32())
	// Output:
	// 1 -> 0x3c00 -> 1
	// -2.5 -> 0xc100 -> -2.5
	// 65504 -> 0x7bff -> 65504
	// 70000 -> 0x7c00 -> +Inf
	// 0.1 -> 0x2e66 -> 0.099975586
	// bf16: 0x3dcd -> 0.100097656
}

func ExampleConcat() {
	a, _ := tensor.From("INPUT0", tensor.Shape{1, 2}, []int32{1, 2})
	b, _ := tensor.From("INPUT0", tensor.Shape{2, 2}, []int32{3, 4, 5, 6})
	batch, err := tensor.Concat("INPUT0", []tensor.Tensor{a, b})
	if err != nil {
		panic(err)
	}
	fmt.Println(batch.Shape)

	// After execution, each request gets a view of its rows of the output.
	rows, _ := batch.SliceRows(1, 3)
	v, _ := tensor.View[int32](rows)
	fmt.Println(rows.Shape, v)
	// Output:
	// [3,2]
	// [2,2] [3 4 5 6]
}

func ExampleTensor_Validate() {
	t := tensor.Tensor{Name: "INPUT0", DataType: tensor.FP32, Shape: tensor.Shape{2, 3}, Data: make([]byte, 20)}
	fmt.Println(t.Validate())
	// Output:
	// tensor "INPUT0": expected 24 bytes for shape [2,3] of FP32, got 20
}
