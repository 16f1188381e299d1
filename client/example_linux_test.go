//go:build linux

package client_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/tensor"
)

// Tensors travel through system shared memory instead of the request and
// response: the client writes the input into a shared-memory object,
// registers it with the server, and reads the output the server wrote
// there. The same code works with the HTTP and gRPC clients (against a
// server with shared memory enabled: tritonserver --allow-client-shm=true).
func ExampleInputInRegion() {
	ctx := context.Background()
	srv := exampleServer()
	defer srv.Close()
	var conn client.Conn = client.Local(srv)
	defer conn.Close()
	shm := conn.(client.SystemSharedMemory)

	mem, err := client.CreateSharedMemory(fmt.Sprintf("/example-%d", os.Getpid()), 64)
	if err != nil {
		log.Fatal(err)
	}
	defer mem.Close()
	if err := shm.RegisterSystemSharedMemory(ctx, "io", mem.Key(), 0, 64); err != nil {
		log.Fatal(err)
	}
	defer shm.UnregisterSystemSharedMemory(ctx, "io")

	// The input, in Triton's BYTES framing, at the start of the region.
	data := tensor.AppendElement(nil, []byte("shared"))
	copy(mem.Bytes(), data)
	req := &triton.InferRequest{Model: "upper", Inputs: []tensor.Tensor{{Name: "TEXT", DataType: tensor.Bytes, Shape: tensor.Shape{1}}}}
	client.InputInRegion(req, "TEXT", client.Region{Name: "io", ByteSize: uint64(len(data))})
	client.OutputInRegion(req, "UPPER", client.Region{Name: "io", Offset: 32, ByteSize: 32})
	resp, err := conn.Infer(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	out := resp.Outputs[0] // UPPER: name, datatype and shape; its data is in the region
	out.Data = mem.Bytes()[32 : 32+4+len("shared")]
	s, err := tensor.Strings(out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Name, out.Shape, s)
	// Output:
	// UPPER [1] [SHARED]
}
