package torchrun

/*
// The C of this package is torchrun.c (declared in torchrun.h); the shim's
// ABI is ../torchshim/torchshim.h. Any warning fails the build.
#cgo CFLAGS: -I${SRCDIR}/../torchshim -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
#cgo LDFLAGS: -ldl -lpthread
// The calls below keep no Go pointer past the call and never call back
// into Go.
#cgo noescape trun_forward
#cgo nocallback trun_forward
#cgo noescape trun_worker_forward
#cgo nocallback trun_worker_forward
#cgo noescape trun_outputs_describe
#cgo nocallback trun_outputs_describe
#cgo noescape trun_output_copy
#cgo nocallback trun_output_copy
#cgo nocallback trun_outputs_free
#cgo nocallback trun_free_msg

#include <stdlib.h>

#include "torchshim.h"
#include "torchrun.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/triton-go/triton/tensor"
)

// ShimName is the file name of the shim library built from cgo/torchshim.
const ShimName = "libtriton_pytorch.so"

var (
	openMu   sync.Mutex
	openPath string // the first Open's path; "" before it
	openErr  error  // its result
	opened   bool   // the first Open succeeded: the table is filled
)

// Open loads the shim (dlopen RTLD_NOW|RTLD_LOCAL) once per process.
// Calling it again with the same path returns the first call's result;
// with another path, an error. The error of a missing or unloadable file
// names the path and dlerror()'s text. Open is safe for concurrent use.
func Open(path string) error {
	openMu.Lock()
	defer openMu.Unlock()
	if openPath != "" {
		if path != openPath {
			return fmt.Errorf("torchrun: Open(%q): the shim is already opened from %q", path, openPath)
		}
		return openErr
	}
	if path == "" {
		return errors.New("torchrun: Open: empty path")
	}
	openPath = path
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if m := C.trun_open(cpath); m != nil {
		openErr = fmt.Errorf("torchrun: Open: %s", C.GoString(m))
		C.free(unsafe.Pointer(m))
		return openErr
	}
	opened = true
	return nil
}

// isOpen reports whether Open has succeeded.
func isOpen() bool {
	openMu.Lock()
	defer openMu.Unlock()
	return opened
}

var errNotOpen = errors.New("torchrun: the shim is not loaded (call Open first)")

// Version returns the version of libtorch the shim is built against, as
// "1.13.0", or "" before [Open] has succeeded.
func Version() string {
	if !isOpen() {
		return ""
	}
	return C.GoString(C.trun_version())
}

// Tristate is an optional boolean setting: Unset leaves libtorch's
// default.
type Tristate int8

// The values of a [Tristate].
const (
	Unset Tristate = iota // leave libtorch's setting as it is
	False                 // set it to false
	True                  // set it to true
)

// Options are the per-module execution settings (Triton's model
// parameters). libtorch's JIT switches are process-wide: the shim sets
// them before every forward of the module, as Triton does, so modules with
// different settings overwrite each other's call by call.
type Options struct {
	InferenceMode             bool     // torch::InferenceMode around load and forward; else torch::NoGradGuard
	DisableOptimizedExecution bool     // torch::jit::setGraphExecutorOptimize(false) before each forward (else true)
	JITExecutor               Tristate // torch::jit::getExecutorMode() before each forward, when set
	JITProfiling              Tristate // torch::jit::getProfilingMode() before each forward, when set
	TensorFuser               Tristate // torch::jit::setTensorExprFuserEnabled, when set
}

var (
	threadsMu            sync.Mutex
	intraDone, interDone bool
)

// SetThreads sets libtorch's intra-op (at::set_num_threads) and inter-op
// (at::set_num_interop_threads) thread counts; 0 leaves one as it is.
// Each is applied at most once per process (Triton's rule: the first model
// that sets it wins); it reports which were applied. libtorch refuses the
// inter-op count once inter-op work has started: that is an *Error, and the
// count is not tried again. libtorch keeps the intra-op (OpenMP) count per
// thread; the shim applies it to every thread that runs a forward after it
// is set, so that it holds for the whole process ([Settings] reads it).
func SetThreads(intra, inter int) (intraSet, interSet bool, err error) {
	if !isOpen() {
		return false, false, errNotOpen
	}
	if intra < 0 || inter < 0 || intra > math.MaxInt32 || inter > math.MaxInt32 {
		return false, false, fmt.Errorf("torchrun: SetThreads(%d, %d): thread counts must be between 0 and %d", intra, inter, math.MaxInt32)
	}
	threadsMu.Lock()
	defer threadsMu.Unlock()
	if intra > 0 && !intraDone {
		intraDone = true
		if err := msgErr(C.trun_set_intra_threads(C.int(intra))); err != nil {
			return false, false, err
		}
		intraSet = true
	}
	if inter > 0 && !interDone {
		interDone = true
		if err := msgErr(C.trun_set_interop_threads(C.int(inter))); err != nil {
			return intraSet, false, err
		}
		interSet = true
	}
	return intraSet, interSet, nil
}

// GlobalSettings are libtorch's execution switches and thread counts,
// which are process-wide (a model's [Options] and [SetThreads] change them
// for every module), as [Settings] reads them.
type GlobalSettings struct {
	// GraphExecutorOptimize is torch::jit::getGraphExecutorOptimize():
	// false while a module with DisableOptimizedExecution runs. libtorch
	// keeps it per thread and the shim sets it before every forward, on
	// the forward's thread, so this is its value on the thread of the
	// process's most recent forward, read as that forward returned (before
	// any forward, libtorch's default on the calling thread).
	GraphExecutorOptimize bool
	ExecutorMode          bool // torch::jit::getExecutorMode()
	ProfilingMode         bool // torch::jit::getProfilingMode()
	TensorExprFuser       bool // torch::jit::tensorExprFuserEnabled()
	// IntraOpThreads is at::get_num_threads(), the OpenMP count a forward
	// runs its parallel work with. libtorch's OpenMP build keeps the count
	// per thread, and a thread that ran parallel work before
	// at::set_num_threads keeps the old one; the shim applies the count
	// of [SetThreads] to each thread before its next forward, and to the
	// calling thread before reading it, so it is the process's count.
	IntraOpThreads int
	InterOpThreads int // at::get_num_interop_threads()
}

// Settings reads libtorch's process-wide execution switches and thread
// counts (see [GlobalSettings]). It fails before [Open] has succeeded, and
// with a shim built before Settings existed (rebuild it with
// scripts/build-torch-shim.sh).
func Settings() (GlobalSettings, error) {
	if !isOpen() {
		return GlobalSettings{}, errNotOpen
	}
	if C.trun_has_settings() == 0 {
		return GlobalSettings{}, fmt.Errorf("torchrun: Settings: the shim %s lacks tshim_get_settings; rebuild it with scripts/build-torch-shim.sh", openPath)
	}
	var cs C.tshim_settings
	if err := msgErr(C.trun_get_settings(&cs)); err != nil {
		return GlobalSettings{}, err
	}
	return GlobalSettings{
		GraphExecutorOptimize: cs.graph_executor_optimize != 0,
		ExecutorMode:          cs.executor_mode != 0,
		ProfilingMode:         cs.profiling_mode != 0,
		TensorExprFuser:       cs.tensor_fuser != 0,
		IntraOpThreads:        int(cs.intra_threads),
		InterOpThreads:        int(cs.interop_threads),
	}, nil
}

// Argument is one argument of forward (self excluded).
type Argument struct {
	Name string
	// Type is TorchScript's spelling: "Tensor", "List[str]",
	// "Dict(str, Tensor)", "Optional[Tensor]", "int", … (the annotation
	// spelling, except a dict's, which is spelled as Triton prints it).
	Type string
	// Printed is the type as TorchScript's str() prints it, the spelling
	// of Triton's messages: "Tensor?" for Optional[Tensor], "int[]" for
	// List[int] (Type's spelling with a shim built before it).
	Printed string
	// Copied reports that forward may write the argument in place or keep
	// it in the module's state (TorchScript's alias analysis of forward,
	// at load): Forward then hands it a copy of the caller's Data, which
	// stays unchanged and may be reused once Forward returns.
	Copied bool
}

// Value is a tensor or a list of strings passed to or returned by forward.
type Value struct {
	DataType tensor.DataType // tensor.Bytes for List[str]
	Shape    []int64         // for List[str]: [len(Strings)]
	// Data holds the raw little-endian row-major elements. Inputs are
	// wrapped with torch::from_blob without a copy (Data must stay
	// unmodified until Forward returns), unless forward writes or keeps
	// the argument ([Argument.Copied]); outputs are Go memory allocated
	// once at final size (made contiguous first), owned by the caller.
	Data []byte
	// Strings holds the elements of a List[str] (inputs are copied into
	// std::string; outputs are Go memory).
	Strings [][]byte
}

// Error is what libtorch reported (or the shim's own check failing). Msg
// is the whole text: for a forward, Triton's "PyTorch execute failure:
// <what>"; for a load, torch's what(). A c10::Error's text leaves out the
// C++ backtrace (frame addresses) that its what() carries; TorchScript
// exceptions keep their TorchScript traceback, which names the model's
// code.
type Error struct{ Msg string }

// Error returns e.Msg.
func (e *Error) Error() string { return e.Msg }

// msgErr turns a shim message into an *Error and frees it; nil for NULL.
func msgErr(m *C.char) error {
	if m == nil {
		return nil
	}
	e := &Error{Msg: C.GoString(m)}
	C.trun_free_msg(m)
	return e
}

// ErrClosed is returned by Forward and ForwardDict on a closed Module.
var ErrClosed = errors.New("torchrun: the module is closed")

// Module is a loaded TorchScript module; Forward is safe for concurrent
// use (libtorch's is), and Close waits for the calls in progress.
type Module struct {
	path       string
	args       []Argument
	training   bool
	stateBytes int64 // -1: unknown

	mu sync.RWMutex // read-held by forwards, held by Close
	m  *C.tshim_module
}

// Load loads a TorchScript file with torch::jit::load (CPU). The module
// stays in the mode it was saved in (Triton calls no eval(); see
// [Module.Training]).
// A file that is not TorchScript, or anything libtorch throws, is an
// *Error with torch's what() text (without the C++ backtrace libtorch
// appends to its own errors); never a crash. The backend adds Triton's
// "failed to load model '<model>': " in front.
func Load(path string, opts Options) (*Module, error) {
	if !isOpen() {
		return nil, errNotOpen
	}
	copts := C.tshim_options{
		jit_executor:  C.int(opts.JITExecutor),
		jit_profiling: C.int(opts.JITProfiling),
		tensor_fuser:  C.int(opts.TensorFuser),
	}
	if opts.InferenceMode {
		copts.inference_mode = 1
	}
	if opts.DisableOptimizedExecution {
		copts.disable_optimized_execution = 1
	}
	for _, t := range []Tristate{opts.JITExecutor, opts.JITProfiling, opts.TensorFuser} {
		if t < Unset || t > True {
			return nil, fmt.Errorf("torchrun: Load(%q): invalid Tristate %d", path, t)
		}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var m *C.tshim_module
	if err := msgErr(C.trun_load(cpath, &copts, &m)); err != nil {
		return nil, err
	}
	mod := &Module{path: path, m: m, training: C.trun_module_training(m) != 0, stateBytes: int64(C.trun_module_state_bytes(m))}
	n := int(C.trun_num_args(m))
	mod.args = make([]Argument, n)
	for i := range n {
		mod.args[i] = Argument{
			Name:    C.GoString(C.trun_arg_name(m, C.size_t(i))),
			Type:    C.GoString(C.trun_arg_type(m, C.size_t(i))),
			Printed: C.GoString(C.trun_arg_printed(m, C.size_t(i))),
			Copied:  C.trun_arg_copied(m, C.size_t(i)) != 0,
		}
	}
	return mod, nil
}

// Arguments returns forward's arguments, self excluded, in order. The
// slice is the caller's.
func (m *Module) Arguments() []Argument {
	return append([]Argument(nil), m.args...)
}

// Training reports whether the module was saved in training mode
// (module.training in Python): dropout and batch norm then behave as in
// training. False when the shim predates the check.
func (m *Module) Training() bool {
	return m.training
}

// StateBytes returns the bytes of the module's parameters and buffers, its
// submodules' included, each storage counted once (tied weights share
// one), as measured when it loaded; ok is false when the shim predates
// the measure or libtorch could not tell. It reads a field: safe for
// concurrent use, also during a Forward and after Close.
func (m *Module) StateBytes() (n int64, ok bool) {
	return m.stateBytes, m.stateBytes >= 0
}

// Close releases the module; Forward after Close returns [ErrClosed].
// Close waits for the forwards in progress; a second Close does nothing.
func (m *Module) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m != nil {
		C.trun_module_free(m.m)
		m.m = nil
	}
	return nil
}

// Forward runs forward(inputs...) (positional) under the module's Options.
// Outputs are flattened as Triton's backend does: a Tensor → one Value; a
// List[str] → one Bytes Value; a Tuple → one Value per element, each a
// Tensor or List[str]. Any other return type, and any exception, is an
// *Error with Triton's text ("PyTorch execute failure: ..."). A 0-d
// output is returned with an empty Shape (Triton refuses it; the caller
// decides). ctx is checked before the call (libtorch cannot be
// interrupted). BF16 is supported (beyond Triton).
func (m *Module) Forward(ctx context.Context, inputs []Value) ([]Value, error) {
	outs, _, err := m.forward(ctx, nil, Queued, nil, inputs)
	return outs, err
}

// ForwardDict runs forward(dict) for a module whose only argument is
// Dict(str, Tensor): the dict maps names[i] to inputs[i], which must be
// tensors.
func (m *Module) ForwardDict(ctx context.Context, names []string, inputs []Value) ([]Value, error) {
	if len(names) != len(inputs) {
		return nil, fmt.Errorf("torchrun: ForwardDict: %d names for %d inputs", len(names), len(inputs))
	}
	if names == nil {
		names = []string{} // non-nil: a dict, even an empty one
	}
	outs, _, err := m.forward(ctx, nil, Queued, names, inputs)
	return outs, err
}

// scratch is the per-call C-facing memory of a forward, pooled: after the
// first calls a forward allocates only its results.
type scratch struct {
	descs []C.tshim_value
	dims  []int64
	lens  []C.size_t
	bytes []byte // strings and dict keys, concatenated
	infos []C.tshim_output_info
	pin   runtime.Pinner
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// forward runs the module: through w (placed as p) unless w is nil.
func (m *Module) forward(ctx context.Context, w *Worker, p Placement, names []string, inputs []Value) ([]Value, Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, Run{}, err
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	defer func() {
		s.pin.Unpin()
		clear(s.descs) // let go of the inputs' memory while pooled
	}()
	if err := s.describe(names, inputs); err != nil {
		return nil, Run{}, err
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.m == nil {
		return nil, Run{}, ErrClosed
	}
	var (
		outs *C.tshim_outputs
		n    C.size_t
	)
	dict := C.int(0)
	if names != nil {
		dict = 1
	}
	var descs *C.tshim_value
	if len(s.descs) > 0 {
		descs = &s.descs[0]
	}
	var waited, ran C.int64_t
	var msg *C.char
	if w != nil {
		w.mu.RLock()
		defer w.mu.RUnlock()
		if w.w == nil {
			return nil, Run{}, ErrClosed
		}
		inline := C.int(0)
		if p == Inline {
			inline = 1
		}
		msg = C.trun_worker_forward(w.w, inline, m.m, descs, C.size_t(len(s.descs)), dict, &outs, &n, &waited, &ran)
	} else {
		msg = C.trun_forward(m.m, descs, C.size_t(len(s.descs)), dict, &outs, &n)
	}
	run := Run{Waited: time.Duration(waited), Ran: time.Duration(ran)}
	if err := msgErr(msg); err != nil {
		return nil, run, err
	}
	defer C.trun_outputs_free(outs)
	vals, err := s.collect(outs, int(n))
	return vals, run, err
}

// Worker is an OS thread of its own that runs forwards one at a time, in
// the order they are submitted: a forward submitted while another runs
// starts the moment that one ends, on the thread already running, where a
// forward on its caller's thread would first have to wait for that thread
// to be woken and scheduled.
type Worker struct {
	mu sync.RWMutex // read-held by forwards, held by Close
	w  *C.trun_worker
}

// NewWorker starts a worker; Close stops it.
func NewWorker() (*Worker, error) {
	if !isOpen() {
		return nil, errNotOpen
	}
	w := C.trun_worker_start()
	if w == nil {
		return nil, errors.New("torchrun: NewWorker: cannot start a thread")
	}
	return &Worker{w: w}, nil
}

// Close waits for the forwards in progress and ends the worker's thread.
// Later forwards fail with ErrClosed; later calls do nothing.
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.w != nil {
		C.trun_worker_stop(w.w)
		w.w = nil
	}
	return nil
}

// Placement says where a [Worker] runs a forward.
type Placement int

const (
	// Queued: on the worker's thread, behind the forwards submitted before.
	Queued Placement = iota
	// Inline: on the caller's thread when the worker runs nothing and has
	// nothing queued, as Module.Forward would (the first forward of a
	// burst, or a lone one: waking the worker's thread for it would cost
	// two thread wake-ups); otherwise Queued.
	Inline
)

// Run is where the time of a forward through a [Worker] went.
type Run struct {
	// Waited is how long the forward waited for the ones ahead of it
	// (zero when it ran inline); Ran how long it ran, on whichever thread.
	Waited, Ran time.Duration
}

// Forward is m.Forward run through w, placed as p.
func (w *Worker) Forward(ctx context.Context, m *Module, p Placement, inputs []Value) ([]Value, Run, error) {
	return m.forward(ctx, w, p, nil, inputs)
}

// ForwardDict is m.ForwardDict run through w, as [Worker.Forward].
func (w *Worker) ForwardDict(ctx context.Context, m *Module, p Placement, names []string, inputs []Value) ([]Value, Run, error) {
	if len(names) != len(inputs) {
		return nil, Run{}, fmt.Errorf("torchrun: ForwardDict: %d names for %d inputs", len(names), len(inputs))
	}
	if names == nil {
		names = []string{}
	}
	return m.forward(ctx, w, p, names, inputs)
}

// describe fills s.descs with inputs, pinning the Go memory they point to.
func (s *scratch) describe(names []string, inputs []Value) error {
	nd, nl, nb := 0, 0, 0
	for i := range inputs {
		in := &inputs[i]
		if in.DataType == tensor.Bytes {
			if names != nil {
				return fmt.Errorf("torchrun: ForwardDict: input %d (%q): a Dict(str, Tensor) cannot hold BYTES", i, names[i])
			}
			if len(in.Shape) != 1 || in.Shape[0] != int64(len(in.Strings)) {
				return fmt.Errorf("torchrun: Forward: input %d: a List[str] needs shape [%d] (its element count), not %v",
					i, len(in.Strings), in.Shape)
			}
			nl += len(in.Strings)
			for _, e := range in.Strings {
				nb += len(e)
			}
		} else if err := checkTensor(in); err != nil {
			return fmt.Errorf("torchrun: Forward: input %d: %w", i, err)
		}
		nd += len(in.Shape)
		if names != nil {
			nb += len(names[i])
		}
	}
	s.descs = grow(s.descs, len(inputs))
	s.dims = grow(s.dims, nd)
	s.lens = grow(s.lens, nl)
	s.bytes = grow(s.bytes, nb)
	pinFirst(&s.pin, s.dims)
	pinFirst(&s.pin, s.lens)
	pinFirst(&s.pin, s.bytes)
	nd, nl, nb = 0, 0, 0
	for i := range inputs {
		in := &inputs[i]
		d := C.tshim_value{dtype: C.int(in.DataType), rank: C.size_t(len(in.Shape))}
		if len(in.Shape) > 0 {
			copy(s.dims[nd:], in.Shape)
			d.shape = (*C.int64_t)(unsafe.Pointer(&s.dims[nd]))
			nd += len(in.Shape)
		}
		if in.DataType == tensor.Bytes {
			start := nb
			if len(in.Strings) > 0 {
				d.lens = &s.lens[nl]
			}
			for _, e := range in.Strings {
				s.lens[nl] = C.size_t(len(e))
				nl++
				nb += copy(s.bytes[nb:], e)
			}
			if nb > start {
				d.data = unsafe.Pointer(&s.bytes[start])
				d.size = C.size_t(nb - start)
			}
		} else if len(in.Data) > 0 {
			data := in.Data
			if uintptr(unsafe.Pointer(&data[0]))%uintptr(in.DataType.Size()) != 0 {
				// libtorch's kernels read elements as their C types.
				data = append(make([]byte, 0, len(data)), data...)
			}
			s.pin.Pin(&data[0])
			d.data = unsafe.Pointer(&data[0])
			d.size = C.size_t(len(data))
		}
		if names != nil && len(names[i]) > 0 {
			d.key = (*C.char)(unsafe.Pointer(&s.bytes[nb]))
			d.key_len = C.size_t(len(names[i]))
			nb += copy(s.bytes[nb:], names[i])
		}
		s.descs[i] = d
	}
	return nil
}

// checkTensor checks a tensor input's type, shape and byte count.
func checkTensor(v *Value) error {
	switch v.DataType {
	case tensor.Uint16, tensor.Uint32, tensor.Uint64:
		return fmt.Errorf("data type %s has no libtorch type", v.DataType)
	}
	if !v.DataType.Valid() {
		return fmt.Errorf("invalid data type %d", v.DataType)
	}
	count := uint64(1)
	for _, d := range v.Shape {
		if d < 0 {
			return fmt.Errorf("shape %v has a negative dimension", v.Shape)
		}
		if d != 0 && count > math.MaxInt64/uint64(d) {
			return fmt.Errorf("shape %v has too many elements", v.Shape)
		}
		count *= uint64(d)
	}
	size := uint64(v.DataType.Size())
	if count > math.MaxInt64/size || count*size != uint64(len(v.Data)) {
		return fmt.Errorf("shape %v of %s needs %d bytes, the data has %d", v.Shape, v.DataType, count*size, len(v.Data))
	}
	return nil
}

// collect copies the n outputs held by outs into Go memory: one []Value,
// one buffer for every tensor's shape and data and every string's bytes
// (8-byte aligned), and a [][]byte per List[str].
func (s *scratch) collect(outs *C.tshim_outputs, n int) ([]Value, error) {
	s.infos = grow(s.infos, n)
	if n > 0 {
		C.trun_outputs_describe(outs, &s.infos[0])
	}
	words, strs := uint64(0), 0
	for i := range s.infos {
		info := &s.infos[i]
		dt := tensor.DataType(info.dtype)
		if !dt.Valid() {
			return nil, fmt.Errorf("torchrun: Forward: output %d has an unknown data type %d", i, info.dtype)
		}
		if uint64(info.size) > math.MaxInt/2 || uint64(info.rank) > 64 {
			return nil, fmt.Errorf("torchrun: Forward: output %d is too large (%d bytes, rank %d)", i, info.size, info.rank)
		}
		words += uint64(info.rank) + (uint64(info.size)+7)/8
		if dt == tensor.Bytes {
			strs = max(strs, int(info.count))
		}
		if words > math.MaxInt/8 {
			return nil, fmt.Errorf("torchrun: Forward: the outputs' %d words do not fit in a Go slice", words)
		}
	}
	out := make([]Value, n)
	buf := make([]int64, words)
	s.lens = grow(s.lens, strs)
	for i := range s.infos {
		info := &s.infos[i]
		rank, size := int(info.rank), int(info.size)
		v := &out[i]
		v.DataType = tensor.DataType(info.dtype)
		v.Shape = buf[:rank:rank]
		buf = buf[rank:]
		w := (size + 7) / 8
		data := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), w*8)[:size:size]
		buf = buf[w:]
		var dims *C.int64_t
		if rank > 0 {
			dims = (*C.int64_t)(unsafe.Pointer(&v.Shape[0]))
		}
		var dp unsafe.Pointer
		if size > 0 {
			dp = unsafe.Pointer(&data[0])
		}
		if v.DataType != tensor.Bytes {
			v.Data = data
			C.trun_output_copy(outs, C.size_t(i), dims, dp, nil)
			continue
		}
		count := int(info.count)
		var lens *C.size_t
		if count > 0 {
			lens = &s.lens[0]
		}
		C.trun_output_copy(outs, C.size_t(i), dims, dp, lens)
		v.Strings = make([][]byte, count)
		off := 0
		for k := range count {
			l := int(s.lens[k])
			if l > size-off {
				return nil, fmt.Errorf("torchrun: Forward: output %d: string lengths exceed the %d bytes reported", i, size)
			}
			v.Strings[k] = data[off : off+l : off+l]
			off += l
		}
	}
	return out, nil
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// pinFirst pins the array of s, if it has one.
func pinFirst[T any](p *runtime.Pinner, s []T) {
	if len(s) > 0 {
		p.Pin(&s[0])
	}
}

// workers is the number of workers not closed, for the tests' leak checks.
func workers() int { return int(C.trun_workers()) }

// live is the number of modules and outputs objects the shim holds, for
// the tests' leak checks.
func live() int {
	if !isOpen() {
		return 0
	}
	return int(C.trun_live())
}
