//go:build linux

package sysshm_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/triton-go/triton/sysshm"
)

// Example plays both sides: a client that creates a POSIX shared-memory
// object and puts an input tensor in it, and the server that registers the
// region, reads the input and writes an output next to it.
func Example() {
	// Client: shm_open("/<key>", O_CREAT|O_RDWR), ftruncate, write.
	f, err := os.CreateTemp("/dev/shm", "sysshm-example-*")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(64); err != nil {
		panic(err)
	}
	if _, err := f.WriteAt([]byte("ping"), 16); err != nil {
		panic(err)
	}
	key := "/" + filepath.Base(f.Name())

	// Server: POST /v2/systemsharedmemory/region/io/register
	// {"key": key, "offset": 0, "byte_size": 64}
	reg := sysshm.NewRegistry()
	defer reg.Close()
	if err := reg.Register("io", key, 0, 64); err != nil {
		panic(err)
	}

	// An input with shared_memory_region "io", _offset 16, _byte_size 4.
	in, release, err := reg.Use("io", 16, 4)
	if err != nil {
		panic(err)
	}
	fmt.Printf("input: %s\n", in)
	release()

	// An output with shared_memory_region "io", _offset 32, _byte_size 4.
	out, release, err := reg.Use("io", 32, 4)
	if err != nil {
		panic(err)
	}
	copy(out, "pong")
	release()

	// Unknown regions and out-of-range tensors are the client's error.
	_, _, err = reg.Use("io", 60, 8)
	fmt.Println(err)

	// Client: read the output.
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, 32); err != nil {
		panic(err)
	}
	fmt.Printf("output: %s\n", b)

	status, _ := reg.Status("")
	fmt.Println(len(status), status[0].Name, status[0].Offset, status[0].ByteSize)
	// Output:
	// input: ping
	// Invalid offset + byte size for shared memory region: 'io' (offset 60, byte size 8, region byte size 64)
	// output: pong
	// 1 io 0 64
}
