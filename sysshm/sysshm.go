package sysshm

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Sentinel errors. Every error this package returns wraps one of them
// (test with [errors.Is]), except failures of the operating system to open,
// inspect or map an object that the request named correctly: those wrap the
// OS error only (an *os.PathError or a syscall.Errno), and Triton reports
// them as INTERNAL. On systems other than Linux, Register's error wraps
// [errors.ErrUnsupported].
//
// An error's message is Triton's message for the same condition where Triton
// has one (tritonserver src/shared_memory_manager.cc), sometimes followed by
// details; the adapters can send err.Error() to clients as is.
var (
	// ErrNotFound: no region is registered under the name
	// (Triton's NOT_FOUND: HTTP 404, gRPC NOT_FOUND).
	ErrNotFound = errors.New("sysshm: shared memory region not found")
	// ErrAlreadyExists: Register of a name already registered
	// (Triton's ALREADY_EXISTS: HTTP 400, gRPC ALREADY_EXISTS).
	ErrAlreadyExists = errors.New("sysshm: shared memory region already exists")
	// ErrInvalid: a bad name, key, offset or size, an object that is not a
	// regular file, or a registry already closed
	// (Triton's INVALID_ARG: HTTP 400, gRPC INVALID_ARGUMENT).
	ErrInvalid = errors.New("sysshm: invalid shared memory argument")
)

// shmError carries Triton's message (msg), the sentinel it belongs to (kind,
// nil for a bare OS failure) and the OS error behind it (cause, may be nil).
type shmError struct {
	kind  error
	msg   string
	cause error
}

func (e *shmError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *shmError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

func invalidf(format string, args ...any) error {
	return &shmError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

func notFound(name string) error {
	return &shmError{kind: ErrNotFound, msg: "Unable to find shared memory region: '" + name + "'"}
}

// ReservedPrefix is the prefix of the shared-memory objects of Triton's
// Python backend. Register refuses keys that contain it, as Triton does, so
// that no client can map another Triton's backend memory through this
// process.
const ReservedPrefix = "triton_python_backend_shm_region_"

// MaxKeyLen is the longest key Register accepts, leading slash included
// (NAME_MAX for the file under /dev/shm).
const MaxKeyLen = 255

// Region is one registered region, as the status APIs report it: the name it
// was registered under, the POSIX shared-memory key ("/name"), and the byte
// range [Offset, Offset+ByteSize) of that object it covers.
type Region struct {
	Name, Key        string
	Offset, ByteSize uint64
}

// Registry maps region names to POSIX shared-memory objects mapped into this
// process: Triton's system shared-memory manager. Create it with
// [NewRegistry]; the zero value is not usable. Safe for concurrent use.
//
// # Lifetime of a mapping
//
// Register maps the object and closes its file descriptor; the mapping is the
// region's only hold on the object. [Registry.Use] hands out a view of the
// mapping together with a release function and counts the view as a
// reference. Unregister (and UnregisterAll and Close) removes the name at
// once, so it can be registered again, but unmaps only when the reference
// count is zero; otherwise the last release unmaps. So a view stays valid,
// for reading and writing, from Use until its release, whatever other
// clients do meanwhile. This is Triton's behaviour too: "Unregistering a
// region still used by in-flight requests returns success immediately; the
// unmap is deferred until those requests release it."
//
// Rejected alternatives: a Slice method returning the bytes without a
// release cannot know when its caller is done, so a concurrent Unregister
// would unmap memory under an in-flight request, a segmentation fault that
// takes the whole server down; Use replaces it. Unregister waiting for the uses to end was rejected because
// a client's unregister call would then block on other clients' inferences,
// and Triton answers at once.
//
// # Invariants
//
// A mapping is unmapped exactly once: by whoever sees it both removed from
// the map (dead) and without references (refs == 0), both checked and set
// under mu. A dead mapping can no longer gain references because Use finds
// mappings only through the map.
type Registry struct {
	mu sync.Mutex
	// mu protects the following fields, and the refs and dead fields of
	// every *mapping in regions or referenced by an unreleased Use.
	regions map[string]*mapping
	closed  bool
}

// mapping is one registered region and its memory.
type mapping struct {
	Region
	mem  []byte // the whole mapping, page-aligned, as mapObject returned it
	data []byte // the region's bytes: mem[delta : delta+ByteSize]
	refs int    // unreleased Uses
	dead bool   // removed from the registry; unmap when refs drops to zero
}

// NewRegistry returns an empty registry. Close it to unmap what is still
// registered.
func NewRegistry() *Registry {
	return &Registry{regions: make(map[string]*mapping)}
}

// Register maps byteSize bytes at offset of the POSIX shared-memory object
// key (as shm_open names it: "/name") and records it under name.
//
// name must be non-empty. key must be a POSIX shared-memory name: a leading
// "/" and no other, no "..", no NUL byte, at most [MaxKeyLen] bytes, and not
// containing [ReservedPrefix]; it resolves to /dev/shm/<key without the
// slash>, which is opened read-write without following symbolic links and
// must be a regular file. byteSize must be positive and
// [offset, offset+byteSize) must lie within the object's current size.
//
// Errors: [ErrInvalid] for a bad name, key, range or object type, or a closed
// registry; [ErrAlreadyExists] when name is registered ("shared memory region
// 'x' already in manager"); a wrapped OS error when the object cannot be
// opened, inspected or mapped ("Unable to open shared memory region: '/k'",
// e.g. [io/fs.ErrNotExist] when it does not exist). Nothing is registered
// after an error.
func (r *Registry) Register(name, key string, offset, byteSize uint64) error {
	if name == "" {
		return invalidf("'region name' is necessary to register system shared memory region")
	}
	if err := checkKey(name, key); err != nil {
		return err
	}
	if byteSize == 0 {
		return invalidf("failed to register shared memory region '%s': invalid args (byte size is 0)", name)
	}
	if _, carry := bits.Add64(offset, byteSize, 0); carry != 0 {
		return invalidf("failed to register shared memory region '%s': invalid args (offset %d + byte size %d overflows)",
			name, offset, byteSize)
	}
	if err := r.checkFree(name); err != nil {
		return err
	}

	// Open and map without the lock: other regions stay usable meanwhile.
	mem, data, err := mapObject(name, key, offset, byteSize)
	if err != nil {
		return err
	}
	r.mu.Lock()
	err = r.checkFreeLocked(name)
	if err == nil {
		r.regions[name] = &mapping{
			Region: Region{Name: name, Key: key, Offset: offset, ByteSize: byteSize},
			mem:    mem,
			data:   data,
		}
	}
	r.mu.Unlock()
	if err != nil {
		// Lost a race with a concurrent Register of the same name (or Close).
		_ = unmapObject(mem)
		return err
	}
	return nil
}

func (r *Registry) checkFree(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkFreeLocked(name)
}

func (r *Registry) checkFreeLocked(name string) error {
	if r.closed {
		return invalidf("failed to register shared memory region '%s': the shared memory registry is closed", name)
	}
	if _, ok := r.regions[name]; ok {
		return &shmError{kind: ErrAlreadyExists, msg: "shared memory region '" + name + "' already in manager"}
	}
	return nil
}

// checkKey validates key as a POSIX shared-memory name that resolves to a
// single file directly under /dev/shm.
func checkKey(name, key string) error {
	bad := func(why string) error {
		return invalidf("invalid key %q for shared memory region '%s': %s", key, name, why)
	}
	switch {
	case strings.IndexByte(key, 0) >= 0:
		return bad("contains a NUL byte")
	case !strings.HasPrefix(key, "/"):
		return bad(`a POSIX shared memory name must start with "/"`)
	case len(key) == 1:
		return bad("names no object")
	case strings.IndexByte(key[1:], '/') >= 0:
		return bad(`a POSIX shared memory name contains exactly one "/", the first character`)
	case strings.Contains(key, ".."):
		return bad(`contains ".."`)
	case key == "/.":
		return bad("names a directory")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case strings.Contains(key, ReservedPrefix):
		return invalidf("cannot register shared memory region '%s' with key '%s' as the key contains the reserved prefix '%s'",
			name, key, ReservedPrefix)
	}
	return nil
}

// Unregister removes the region registered under name. It returns at once;
// the memory is unmapped now, or, while views from [Registry.Use] are
// unreleased, by the last release. The name can be registered again
// immediately.
//
// Errors: [ErrNotFound] for an unknown name ("Unable to find shared memory
// region: 'x'"; Triton itself answers success there, so an adapter that
// wants Triton's behaviour ignores it); a wrapped OS error if munmap fails,
// in which case the region is unregistered all the same.
func (r *Registry) Unregister(name string) error {
	r.mu.Lock()
	m, ok := r.regions[name]
	var unmap bool
	if ok {
		delete(r.regions, name)
		unmap = r.killLocked(m)
	}
	r.mu.Unlock()
	if !ok {
		return notFound(name)
	}
	if unmap {
		return unmapErr(m, unmapObject(m.mem))
	}
	return nil
}

// killLocked marks m removed from the registry and reports whether the
// caller must unmap it now.
func (r *Registry) killLocked(m *mapping) bool {
	m.dead = true
	return m.refs == 0
}

func unmapErr(m *mapping, err error) error {
	if err == nil {
		return nil
	}
	return &shmError{msg: "unable to munmap shared memory region '" + m.Name + "'", cause: err}
}

// UnregisterAll removes every region, as [Registry.Unregister] does for
// each (unmapping deferred for regions in use). An empty registry is not an
// error. It returns the munmap failures joined, if any.
func (r *Registry) UnregisterAll() error {
	return r.unregisterAll(false)
}

func (r *Registry) unregisterAll(closing bool) error {
	r.mu.Lock()
	if closing {
		r.closed = true
	}
	var now []*mapping
	for name, m := range r.regions {
		delete(r.regions, name)
		if r.killLocked(m) {
			now = append(now, m)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, m := range now {
		errs = append(errs, unmapErr(m, unmapObject(m.mem)))
	}
	return errors.Join(errs...)
}

// Status describes the region registered under name, or, for name "", every
// region, sorted by name (an empty, non-nil slice when there is none). The
// result is the caller's.
//
// Errors: [ErrNotFound] for an unknown name ("Unable to find shared memory
// region: 'x'"; Triton's status call says "system shared memory region").
func (r *Registry) Status(name string) ([]Region, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" {
		m, ok := r.regions[name]
		if !ok {
			return nil, notFound(name)
		}
		return []Region{m.Region}, nil
	}
	out := make([]Region, 0, len(r.regions))
	for _, m := range r.regions {
		out = append(out, m.Region)
	}
	slices.SortFunc(out, func(a, b Region) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Use returns the bytes [offset, offset+byteSize) of the region registered
// under name (offset is relative to the region, Triton's
// shared_memory_offset) and a function that releases them.
//
// data aliases the shared memory: reads see what clients write and writes
// are visible to them, with no synchronisation beyond what the protocol
// gives (a client must not touch a request's memory until its response
// arrives). Its capacity is byteSize, so appending to it copies instead of
// spilling into the rest of the region. data stays valid until release is
// called, even if the region is unregistered or the registry closed
// meanwhile; it must not be touched afterwards. Call release exactly once
// when done (extra calls do nothing; a use never released keeps its mapping
// for the life of the process). byteSize 0 gives an empty view.
//
// A client can shrink the object after registering it; the pages past its
// new end then fault on access (SIGBUS), which crashes a Go program. Copy
// through [Copy] where that must be survived.
//
// Errors: [ErrNotFound] for an unknown name ("Unable to find shared memory
// region: 'x'"); [ErrInvalid] when the range does not lie within the region
// (the message names the region, offset, byte size and region size; Triton
// requires offset < region size even for byteSize 0). release is nil
// whenever err is not.
func (r *Registry) Use(name string, offset, byteSize uint64) (data []byte, release func(), err error) {
	r.mu.Lock()
	m, ok := r.regions[name]
	if !ok {
		r.mu.Unlock()
		return nil, nil, notFound(name)
	}
	if err := checkRange(&m.Region, offset, byteSize); err != nil {
		r.mu.Unlock()
		return nil, nil, err
	}
	m.refs++
	r.mu.Unlock()
	u := &use{r: r, m: m}
	end := offset + byteSize
	return m.data[offset:end:end], u.release, nil
}

// checkRange is Triton's GetMemoryInfo bounds check, messages included.
func checkRange(reg *Region, offset, byteSize uint64) error {
	if offset >= reg.ByteSize {
		return invalidf("Invalid offset for shared memory region: '%s' (offset %d, byte size %d, region byte size %d)",
			reg.Name, offset, byteSize, reg.ByteSize)
	}
	if _, carry := bits.Add64(offset, byteSize, 0); carry != 0 {
		return invalidf("Integer overflow detected: byte_size (%d) + offset (%d) exceeds maximum value (%d) for region '%s' (region byte size %d)",
			byteSize, offset, uint64(1<<64-1), reg.Name, reg.ByteSize)
	}
	if offset+byteSize > reg.ByteSize {
		return invalidf("Invalid offset + byte size for shared memory region: '%s' (offset %d, byte size %d, region byte size %d)",
			reg.Name, offset, byteSize, reg.ByteSize)
	}
	return nil
}

// use is one unreleased [Registry.Use].
type use struct {
	r    *Registry
	m    *mapping
	done atomic.Bool
}

func (u *use) release() {
	if !u.done.CompareAndSwap(false, true) {
		return
	}
	r, m := u.r, u.m
	r.mu.Lock()
	m.refs--
	unmap := m.dead && m.refs == 0
	r.mu.Unlock()
	if unmap {
		// Nobody to report a failure to; munmap of a mapping we own fails
		// only on a corrupted slice.
		_ = unmapObject(m.mem)
	}
}

// Close unregisters every region, as [Registry.UnregisterAll] does (regions
// in use are unmapped by their last release), and makes later Registers fail
// with [ErrInvalid]. Close does not wait for uses to be released. It is
// idempotent; only the first call can return an error (munmap failures).
func (r *Registry) Close() error {
	return r.unregisterAll(true)
}

// Copy is the built-in copy for views of shared memory: it copies
// min(len(dst), len(src)) bytes and returns that count, but a fault while
// copying (a client truncated the object under a registered region, so the
// pages past its new end are gone) becomes an error wrapping [ErrInvalid]
// instead of crashing the process. Either slice may alias shared memory.
// Copy uses [runtime/debug.SetPanicOnFault] on the calling goroutine for
// the duration of the copy.
func Copy(dst, src []byte) (n int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			if f, ok := v.(interface{ Addr() uintptr }); ok {
				n = 0
				err = invalidf("shared memory fault at address %#x: the shared memory object is smaller than its registered region", f.Addr())
				return
			}
			panic(v)
		}
	}()
	return copy(dst, src), nil
}
