package grpcapi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/sysshm"
)

const shmDisabledMsg = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."

// newSysShmObject creates a POSIX shared-memory object of size bytes,
// removed when the test ends, and returns its key.
func newSysShmObject(t *testing.T, size int) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skipf("no /dev/shm: %v", err)
	}
	fh, err := os.CreateTemp("/dev/shm", "grpcapi-test-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(fh.Name()) })
	defer fh.Close()
	if err := fh.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	return "/" + filepath.Base(fh.Name())
}

// newShmRegistryFixture is a fixture with system shared memory enabled over
// a registry of its own, which it returns too.
func newShmRegistryFixture(t *testing.T) (*fixture, *sysshm.Registry) {
	t.Helper()
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	return newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithSharedMemory(reg)}}), reg
}

func TestSharedMemoryDisabled(t *testing.T) {
	f := newFixture(t, setup{})
	c, ctx := f.client, context.Background()
	_, err := c.SystemSharedMemoryRegister(ctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: "r", Key: "/k", ByteSize: 4})
	wantStatus(t, err, codes.Unimplemented, shmDisabledMsg)
	_, err = c.SystemSharedMemoryUnregister(ctx, &inferencepb.SystemSharedMemoryUnregisterRequest{Name: "r"})
	wantStatus(t, err, codes.Unimplemented, shmDisabledMsg)
	_, err = c.SystemSharedMemoryUnregister(ctx, &inferencepb.SystemSharedMemoryUnregisterRequest{})
	wantStatus(t, err, codes.Unimplemented, shmDisabledMsg)
	_, err = c.CudaSharedMemoryRegister(ctx, &inferencepb.CudaSharedMemoryRegisterRequest{Name: "r", RawHandle: make([]byte, 64), ByteSize: 4})
	wantStatus(t, err, codes.Unimplemented, shmDisabledMsg)
	_, err = c.CudaSharedMemoryUnregister(ctx, &inferencepb.CudaSharedMemoryUnregisterRequest{})
	wantStatus(t, err, codes.Unimplemented, shmDisabledMsg)

	st, err := c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{})
	if err != nil || len(st.GetRegions()) != 0 {
		t.Errorf("system status: %v, %v", st, err)
	}
	cst, err := c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{})
	if err != nil || len(cst.GetRegions()) != 0 {
		t.Errorf("CUDA status: %v, %v", cst, err)
	}
	_, err = c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{Name: "r"})
	wantStatus(t, err, codes.NotFound, "Unable to find system shared memory region: 'r'")
	_, err = c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{Name: "r"})
	wantStatus(t, err, codes.NotFound, "Unable to find cuda shared memory region: 'r'")
}

func TestSystemSharedMemory(t *testing.T) {
	f, reg := newShmRegistryFixture(t)
	c, ctx := f.client, context.Background()
	key := newSysShmObject(t, 64)
	register := func(name, key string, offset, size uint64) error {
		_, err := c.SystemSharedMemoryRegister(ctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: name, Key: key, Offset: offset, ByteSize: size})
		return err
	}
	status := func(name string) map[string]*inferencepb.SystemSharedMemoryStatusResponse_RegionStatus {
		t.Helper()
		st, err := c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{Name: name})
		if err != nil {
			t.Fatalf("status %q: %v", name, err)
		}
		return st.GetRegions()
	}
	unregister := func(name string) {
		t.Helper()
		if _, err := c.SystemSharedMemoryUnregister(ctx, &inferencepb.SystemSharedMemoryUnregisterRequest{Name: name}); err != nil {
			t.Fatalf("unregister %q: %v", name, err)
		}
	}

	for _, tc := range []struct {
		name, region, key string
		offset, size      uint64
		code              codes.Code
		msg               string
	}{
		{"no region name", "", key, 0, 64, codes.InvalidArgument, "'region name' is necessary to register system shared memory region"},
		{"no key", "r", "", 0, 64, codes.InvalidArgument, "invalid key"},
		{"relative key", "r", "../../etc/passwd", 0, 4, codes.InvalidArgument, "invalid key"},
		{"key with dot dot", "r", "/a/../../etc/passwd", 0, 4, codes.InvalidArgument, "invalid key"},
		{"reserved prefix", "r", "/triton_python_backend_shm_region_1", 0, 4, codes.InvalidArgument, "reserved prefix"},
		{"no object", "r", "/grpcapi-test-does-not-exist", 0, 4, codes.Internal, "Unable to open shared memory region: '/grpcapi-test-does-not-exist'"},
		{"past the end", "r", key, 32, 64, codes.InvalidArgument, "failed to register shared memory region 'r': invalid args"},
		{"no byte size", "r", key, 0, 0, codes.InvalidArgument, "failed to register shared memory region 'r': invalid args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, register(tc.region, tc.key, tc.offset, tc.size), tc.code, tc.msg)
		})
	}
	if got := status(""); len(got) != 0 {
		t.Fatalf("failed registrations left regions: %v", got)
	}

	if err := register("r", key, 8, 56); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, register("r", key, 0, 4), codes.AlreadyExists, "shared memory region 'r' already in manager")
	if err := register("s", key, 0, 8); err != nil {
		t.Fatal(err)
	}
	rRegion := &inferencepb.SystemSharedMemoryStatusResponse_RegionStatus{Name: "r", Key: key, Offset: 8, ByteSize: 56}
	sRegion := &inferencepb.SystemSharedMemoryStatusResponse_RegionStatus{Name: "s", Key: key, Offset: 0, ByteSize: 8}
	got := status("")
	if len(got) != 2 || !proto.Equal(got["r"], rRegion) || !proto.Equal(got["s"], sRegion) {
		t.Errorf("status %v", got)
	}
	if got := status("s"); len(got) != 1 || !proto.Equal(got["s"], sRegion) {
		t.Errorf("status of s: %v", got)
	}
	_, err := c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{Name: "x"})
	wantStatus(t, err, codes.NotFound, "Unable to find system shared memory region: 'x'")
	// The registry is the one given: other adapters see the same regions.
	if regions, err := reg.Status("r"); err != nil || regions[0].Offset != 8 {
		t.Errorf("registry status of r: %v, %v", regions, err)
	}

	unregister("s")
	unregister("s") // not registered: a success, as in Triton
	if got := status(""); len(got) != 1 || got["r"] == nil {
		t.Errorf("after unregistering s: %v", got)
	}
	unregister("") // every region
	if got := status(""); len(got) != 0 {
		t.Errorf("after unregistering all: %v", got)
	}
	unregister("") // none left: still a success
}

func TestCudaSharedMemory(t *testing.T) {
	f, _ := newShmRegistryFixture(t)
	c, ctx := f.client, context.Background()
	key := newSysShmObject(t, 16)
	if _, err := c.SystemSharedMemoryRegister(ctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: "sys", Key: key, ByteSize: 16}); err != nil {
		t.Fatal(err)
	}
	st, err := c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{})
	if err != nil || len(st.GetRegions()) != 0 {
		t.Errorf("CUDA status: %v, %v", st, err)
	}
	_, err = c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{Name: "sys"})
	wantStatus(t, err, codes.NotFound, "The region named 'sys' is registered as system shared memory, not CUDA shared memory")
	_, err = c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{Name: "c"})
	wantStatus(t, err, codes.NotFound, "Unable to find cuda shared memory region: 'c'")
	_, err = c.CudaSharedMemoryRegister(ctx, &inferencepb.CudaSharedMemoryRegisterRequest{Name: "c", RawHandle: make([]byte, 64), DeviceId: 0, ByteSize: 4})
	wantStatus(t, err, codes.InvalidArgument, "failed to register CUDA shared memory region: 'c', GPUs not supported")
	_, err = c.CudaSharedMemoryRegister(ctx, &inferencepb.CudaSharedMemoryRegisterRequest{RawHandle: make([]byte, 64), ByteSize: 4})
	wantStatus(t, err, codes.InvalidArgument, "'region name' is necessary to register cuda shared memory region")
	for _, name := range []string{"c", "sys", ""} {
		if _, err := c.CudaSharedMemoryUnregister(ctx, &inferencepb.CudaSharedMemoryUnregisterRequest{Name: name}); err != nil {
			t.Errorf("CUDA unregister %q: %v", name, err)
		}
	}
	// A CUDA unregister leaves system regions alone.
	sys, err := c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{})
	if err != nil || len(sys.GetRegions()) != 1 {
		t.Errorf("system regions after CUDA unregisters: %v, %v", sys, err)
	}
}
