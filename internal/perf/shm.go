package perf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
)

// shm.go is --shared-memory=system against a remote server: every
// prepared input is copied once into one POSIX shared-memory object that
// is registered with the server, and requests name their range of it
// instead of carrying the bytes; each worker gets a region of its own for
// the outputs (--output-shared-memory-size bytes per output and batch
// row), which the server writes and, with validation data, the worker
// reads back.

// shmState holds the objects and regions of a run.
type shmState struct {
	ext  client.SystemSharedMemory
	base string // region and object name prefix
	// outBytes is the size of one worker's output region; outOffsets
	// where each output of the model starts in it.
	outBytes   uint64
	outOffsets []uint64
	outputs    []tensorInfo

	mu sync.Mutex
	// mu protects the following.
	objs    []*client.SharedMemory
	regions []string
	n       int
}

// setupSharedMemory moves the prepared inputs into a registered region.
func setupSharedMemory(ctx context.Context, conn client.Conn, reqs *requestSet, m *modelInfo, cfg *Config) (*shmState, error) {
	ext, ok := conn.(client.SystemSharedMemory)
	if !ok {
		return nil, errors.New("the connection has no system shared-memory support")
	}
	s := &shmState{ext: ext, base: fmt.Sprintf("perf_analyzer_%d", os.Getpid()), outputs: m.outputs}
	all := reqs.all()
	var total uint64
	for _, p := range all {
		for _, in := range p.inputs {
			total += uint64(len(in.Data))
		}
	}
	if total > 0 {
		obj, err := s.create(ctx, "in", total)
		if err != nil {
			return nil, err
		}
		buf := obj.Bytes()
		var off uint64
		for _, p := range all {
			p.inRegions = make([]client.Region, len(p.inputs))
			for i := range p.inputs {
				n := uint64(copy(buf[off:], p.inputs[i].Data))
				p.inRegions[i] = client.Region{Name: s.base + "_in", Offset: off, ByteSize: n}
				p.inputs[i].Data = nil
				off += n
			}
		}
	}
	per := cfg.OutputShmSize * max(cfg.BatchSize, 1)
	for range m.outputs {
		s.outOffsets = append(s.outOffsets, s.outBytes)
		s.outBytes += per
	}
	return s, nil
}

// all lists every prepared request.
func (rs *requestSet) all() []*prepared {
	var ps []*prepared
	for i := range rs.cycle {
		ps = append(ps, &rs.cycle[i])
	}
	for _, st := range rs.streams {
		for i := range st {
			ps = append(ps, &st[i])
		}
	}
	return ps
}

// create makes an object of size bytes and registers it whole as the
// region base_suffix.
func (s *shmState) create(ctx context.Context, suffix string, size uint64) (*client.SharedMemory, error) {
	name := s.base + "_" + suffix
	obj, err := client.CreateSharedMemory("/"+name, int(size))
	if err != nil {
		return nil, err
	}
	if err := s.ext.RegisterSystemSharedMemory(ctx, name, obj.Key(), 0, size); err != nil {
		obj.Close()
		return nil, fmt.Errorf("registering shared memory: %w", err)
	}
	s.mu.Lock()
	s.objs = append(s.objs, obj)
	s.regions = append(s.regions, name)
	s.mu.Unlock()
	return obj, nil
}

// workerRegion creates a worker's output region and points req's outputs
// at it. It returns the region's memory.
func (s *shmState) workerRegion(ctx context.Context, req *triton.InferRequest) ([]byte, error) {
	if s.outBytes == 0 {
		return nil, nil
	}
	s.mu.Lock()
	s.n++
	suffix := fmt.Sprintf("out%d", s.n)
	s.mu.Unlock()
	obj, err := s.create(ctx, suffix, s.outBytes)
	if err != nil {
		return nil, err
	}
	for i, o := range s.outputs {
		size := s.outBytes / uint64(len(s.outputs))
		client.OutputInRegion(req, o.name, client.Region{Name: s.base + "_" + suffix, Offset: s.outOffsets[i], ByteSize: size})
	}
	return obj.Bytes(), nil
}

// outputBytes returns output i's bytes in a worker's region.
func (s *shmState) outputBytes(mem []byte, name string, n int) []byte {
	for i, o := range s.outputs {
		if o.name == name {
			off := s.outOffsets[i]
			return mem[off : off+uint64(n)]
		}
	}
	return nil
}

// close unregisters the regions and removes the objects.
func (s *shmState) close(ctx context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.regions {
		_ = s.ext.UnregisterSystemSharedMemory(ctx, r)
	}
	for _, o := range s.objs {
		_ = o.Close()
	}
	s.objs, s.regions = nil, nil
}
