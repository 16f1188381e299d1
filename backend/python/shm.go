package python

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blockHeader is the space before every block's data: its state word
// (1 while the block is in use, 0 once its reader released it; the stub
// releases with one store of the low byte, so the word holds nothing but 0
// and 1), padded so that data starts 64-byte aligned.
const blockHeader = 64

// region is one shared-memory file between the server and a stub: an
// anonymous memfd (it disappears with the last descriptor, so nothing is
// left behind however the processes end), mapped here as large as it is.
//
// One side writes a region: it allocates blocks (first fit among the blocks
// still in use, growing the file in steps up to a limit) and writes their
// state word; the other side reads the blocks and releases each by zeroing
// its state word, with no message. The writer reclaims released blocks when
// it next allocates. Old mappings stay valid after growth (they map the same
// pages) until the region is closed, since a reader may still hold a view.
type region struct {
	file          *os.File
	growth, limit int64

	mu sync.Mutex
	// mu protects the following.
	maps [][]byte // every mapping made; the last is the largest
	mem  []byte   // the current mapping
	live []span   // blocks in use (writer side), by offset
	err  error    // set once closed
}

// span is a block: its header's offset and its size with the header.
type span struct{ off, size int64 }

// newRegion creates a region of the given initial size.
func newRegion(name string, size, growth, limit int64) (*region, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating shared memory %q: %w", name, err)
	}
	r := &region{file: os.NewFile(uintptr(fd), name), growth: max(growth, 4096), limit: limit}
	if err := r.resize(min(size, limit)); err != nil {
		return nil, errors.Join(err, r.close())
	}
	return r, nil
}

// resize sets the file's size and maps it. r.mu is held (or r is new).
func (r *region) resize(size int64) error {
	if err := r.file.Truncate(size); err != nil {
		return fmt.Errorf("growing shared memory to %d bytes: %w", size, err)
	}
	return r.remap(size)
}

func (r *region) remap(size int64) error {
	if size <= int64(len(r.mem)) {
		return nil
	}
	m, err := unix.Mmap(int(r.file.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping %d bytes of shared memory: %w", size, err)
	}
	r.maps = append(r.maps, m)
	r.mem = m
	return nil
}

// alloc returns a block of n bytes: the offset of its data and the data.
func (r *region) alloc(n int64) (int64, []byte, error) {
	need := blockHeader + (n+63)&^63
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, nil, r.err
	}
	r.live = slices.DeleteFunc(r.live, func(s span) bool { return r.state(s.off).Load() == 0 })
	var off int64
	at := len(r.live)
	for i, s := range r.live {
		if s.off-off >= need {
			at = i
			break
		}
		off = s.off + s.size
	}
	if size := int64(len(r.mem)); off+need > size {
		if off+need > r.limit {
			var used int64
			for _, s := range r.live {
				used += s.size
			}
			return 0, nil, fmt.Errorf("%d bytes do not fit in the shared memory of the stub (limit %d bytes, %d in use)", n, r.limit, used)
		}
		want := max(off+need, size+r.growth, 2*size)
		want = min((want+r.growth-1)/r.growth*r.growth, r.limit)
		if err := r.resize(want); err != nil {
			return 0, nil, err
		}
	}
	r.state(off).Store(1)
	r.live = slices.Insert(r.live, at, span{off, need})
	return off + blockHeader, r.mem[off+blockHeader : off+blockHeader+n : off+blockHeader+n], nil
}

// state is the state word of the block whose header is at off.
func (r *region) state(off int64) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&r.mem[off]))
}

// view returns n bytes at off of a region the other side writes, mapping
// more of it when the writer has grown the file.
func (r *region) view(off, n int64) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	if off < blockHeader || n < 0 || off+n < off {
		return nil, fmt.Errorf("shared memory block %d+%d is not valid", off, n)
	}
	if off+n > int64(len(r.mem)) {
		var st unix.Stat_t
		if err := unix.Fstat(int(r.file.Fd()), &st); err != nil {
			return nil, fmt.Errorf("reading the size of the shared memory: %w", err)
		}
		if off+n > st.Size {
			return nil, fmt.Errorf("shared memory block %d+%d lies beyond the region's %d bytes", off, n, st.Size)
		}
		if err := r.remap(st.Size); err != nil {
			return nil, err
		}
	}
	return r.mem[off : off+n : off+n], nil
}

// release gives back the block whose data starts at off.
func (r *region) release(off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && off >= blockHeader && off <= int64(len(r.mem)) {
		r.state(off - blockHeader).Store(0)
	}
}

// mark sets the 4-byte flag at off (a request's cancellation flag in a
// block the stub reads).
func (r *region) mark(off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && off >= 0 && off+4 <= int64(len(r.mem)) {
		(*atomic.Uint32)(unsafe.Pointer(&r.mem[off])).Store(1)
	}
}

// inUse counts the bytes of live blocks (writer side), for tests.
func (r *region) inUse() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = slices.DeleteFunc(r.live, func(s span) bool { return r.state(s.off).Load() == 0 })
	var n int64
	for _, s := range r.live {
		n += s.size
	}
	return n
}

// close unmaps the region and closes its file. Views become invalid.
func (r *region) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil
	}
	r.err = errors.New("the stub's shared memory is closed")
	var errs []error
	for _, m := range r.maps {
		errs = append(errs, unix.Munmap(m))
	}
	r.maps, r.mem, r.live = nil, nil, nil
	errs = append(errs, r.file.Close())
	return errors.Join(errs...)
}
