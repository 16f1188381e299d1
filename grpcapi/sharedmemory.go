package grpcapi

import (
	"context"
	"errors"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/sysshm"
)

// SystemSharedMemoryStatus answers the registered system shared-memory
// regions keyed by name: all of them for an empty name, else the one named
// (NOT_FOUND "Unable to find system shared memory region: 'r'" when there
// is none). Without [WithSharedMemory] there are none.
func (s *Service) SystemSharedMemoryStatus(ctx context.Context, req *inferencepb.SystemSharedMemoryStatusRequest) (*inferencepb.SystemSharedMemoryStatusResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	name := req.GetName()
	notFound := errorf(triton.NotFound, "Unable to find system shared memory region: '%s'", name)
	var regions []sysshm.Region
	if s.shm != nil {
		var err error
		if regions, err = s.shm.Status(name); err != nil {
			return nil, s.toStatus(notFound)
		}
	} else if name != "" {
		return nil, s.toStatus(notFound)
	}
	out := &inferencepb.SystemSharedMemoryStatusResponse{Regions: make(map[string]*inferencepb.SystemSharedMemoryStatusResponse_RegionStatus, len(regions))}
	for _, r := range regions {
		out.Regions[r.Name] = &inferencepb.SystemSharedMemoryStatusResponse_RegionStatus{Name: r.Name, Key: r.Key, Offset: r.Offset, ByteSize: r.ByteSize}
	}
	return out, nil
}

// SystemSharedMemoryRegister registers [offset, offset+byte_size) of the
// POSIX shared-memory object key (such as "/input0") as region name. The
// checks and messages are package sysshm's, which are Triton's: an empty
// name, a bad key, range or object is INVALID_ARGUMENT, a name in use
// ALREADY_EXISTS, an object that cannot be opened INTERNAL. Without
// [WithSharedMemory] it is UNIMPLEMENTED.
func (s *Service) SystemSharedMemoryRegister(ctx context.Context, req *inferencepb.SystemSharedMemoryRegisterRequest) (*inferencepb.SystemSharedMemoryRegisterResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	if s.shm == nil {
		return nil, s.toStatus(wire.ErrSHMDisabled)
	}
	if err := s.shm.Register(req.GetName(), req.GetKey(), req.GetOffset(), req.GetByteSize()); err != nil {
		return nil, s.toStatus(wire.SHMError(err))
	}
	return &inferencepb.SystemSharedMemoryRegisterResponse{}, nil
}

// SystemSharedMemoryUnregister unregisters the region named, or every
// system region for an empty name. A name not registered is a success, as
// in Triton. Requests using a region keep its memory until they are done.
// Without [WithSharedMemory] it is UNIMPLEMENTED.
func (s *Service) SystemSharedMemoryUnregister(ctx context.Context, req *inferencepb.SystemSharedMemoryUnregisterRequest) (*inferencepb.SystemSharedMemoryUnregisterResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	if s.shm == nil {
		return nil, s.toStatus(wire.ErrSHMDisabled)
	}
	var err error
	if req.GetName() == "" {
		err = s.shm.UnregisterAll()
	} else if err = s.shm.Unregister(req.GetName()); errors.Is(err, sysshm.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return nil, s.toStatus(wire.SHMError(err))
	}
	return &inferencepb.SystemSharedMemoryUnregisterResponse{}, nil
}

// CudaSharedMemoryStatus answers as a Triton built without GPU support:
// no region is ever registered, so an empty name lists none and a name is
// NOT_FOUND (saying so when it names a system region, which shares the
// namespace).
func (s *Service) CudaSharedMemoryStatus(ctx context.Context, req *inferencepb.CudaSharedMemoryStatusRequest) (*inferencepb.CudaSharedMemoryStatusResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	name := req.GetName()
	if name == "" {
		return &inferencepb.CudaSharedMemoryStatusResponse{}, nil
	}
	if s.shm != nil {
		if _, err := s.shm.Status(name); err == nil {
			return nil, s.toStatus(errorf(triton.NotFound, "The region named '%s' is registered as system shared memory, not CUDA shared memory", name))
		}
	}
	return nil, s.toStatus(errorf(triton.NotFound, "Unable to find cuda shared memory region: '%s'", name))
}

// CudaSharedMemoryRegister fails as in a Triton built without GPU support:
// INVALID_ARGUMENT "failed to register CUDA shared memory region: 'r',
// GPUs not supported" (UNIMPLEMENTED without [WithSharedMemory]).
func (s *Service) CudaSharedMemoryRegister(ctx context.Context, req *inferencepb.CudaSharedMemoryRegisterRequest) (*inferencepb.CudaSharedMemoryRegisterResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	if s.shm == nil {
		return nil, s.toStatus(wire.ErrSHMDisabled)
	}
	if req.GetName() == "" {
		return nil, s.toStatus(errorf(triton.InvalidArgument, "'region name' is necessary to register cuda shared memory region"))
	}
	return nil, s.toStatus(errorf(triton.InvalidArgument, "failed to register CUDA shared memory region: '%s', GPUs not supported", req.GetName()))
}

// CudaSharedMemoryUnregister succeeds: there is never a CUDA region to
// unregister (UNIMPLEMENTED without [WithSharedMemory]).
func (s *Service) CudaSharedMemoryUnregister(ctx context.Context, _ *inferencepb.CudaSharedMemoryUnregisterRequest) (*inferencepb.CudaSharedMemoryUnregisterResponse, error) {
	if err := s.allowed(ctx, wire.SharedMemory); err != nil {
		return nil, err
	}
	if s.shm == nil {
		return nil, s.toStatus(wire.ErrSHMDisabled)
	}
	return &inferencepb.CudaSharedMemoryUnregisterResponse{}, nil
}
