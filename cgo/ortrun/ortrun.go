//go:build linux || darwin

package ortrun

/*
// The shim's C is in ortrun.c, declared in ortrun.h. These flags reach it
// and cgo's generated C alike: any warning fails the build.
#cgo CFLAGS: -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
#cgo LDFLAGS: -ldl
// Every function below is noescape (keeps no Go pointer past the call) and
// nocallback (ORT never calls into Go: onnxruntime_go registers no Go
// callbacks). Bind's ortrun_open and ortrun_new_env run once and are left
// unmarked.
#cgo noescape ortrun_run
#cgo nocallback ortrun_run
#cgo noescape ortrun_take
#cgo nocallback ortrun_take
#cgo noescape ortrun_release_values
#cgo nocallback ortrun_release_values
#cgo noescape ortrun_check_framing
#cgo nocallback ortrun_check_framing
#cgo noescape ortrun_set_terminate
#cgo nocallback ortrun_set_terminate
#cgo noescape ortrun_unset_terminate
#cgo nocallback ortrun_unset_terminate
#cgo noescape ortrun_new_run_options
#cgo nocallback ortrun_new_run_options
#cgo noescape ortrun_release_run_options
#cgo nocallback ortrun_release_run_options
#cgo noescape ortrun_live_values
#cgo nocallback ortrun_live_values
#cgo noescape ortrun_elem_size
#cgo nocallback ortrun_elem_size

#include <stdlib.h> // C.free

#include "ortrun.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// apiVersion is the OrtApi version Bind requests.
const apiVersion = C.ORTRUN_API_VERSION

// slots maps each ORT C API function the shim calls to its slot in the
// OrtApi table, for slots_internal_test.go to check against the header.
var slots = map[string]int{
	"GetErrorCode":                        C.ORTRUN_SLOT_GetErrorCode,
	"GetErrorMessage":                     C.ORTRUN_SLOT_GetErrorMessage,
	"Run":                                 C.ORTRUN_SLOT_Run,
	"CreateRunOptions":                    C.ORTRUN_SLOT_CreateRunOptions,
	"RunOptionsSetTerminate":              C.ORTRUN_SLOT_RunOptionsSetTerminate,
	"RunOptionsUnsetTerminate":            C.ORTRUN_SLOT_RunOptionsUnsetTerminate,
	"CreateTensorAsOrtValue":              C.ORTRUN_SLOT_CreateTensorAsOrtValue,
	"CreateTensorWithDataAsOrtValue":      C.ORTRUN_SLOT_CreateTensorWithDataAsOrtValue,
	"GetTensorMutableData":                C.ORTRUN_SLOT_GetTensorMutableData,
	"GetStringTensorDataLength":           C.ORTRUN_SLOT_GetStringTensorDataLength,
	"GetStringTensorContent":              C.ORTRUN_SLOT_GetStringTensorContent,
	"GetTensorElementType":                C.ORTRUN_SLOT_GetTensorElementType,
	"GetDimensionsCount":                  C.ORTRUN_SLOT_GetDimensionsCount,
	"GetDimensions":                       C.ORTRUN_SLOT_GetDimensions,
	"GetTensorShapeElementCount":          C.ORTRUN_SLOT_GetTensorShapeElementCount,
	"GetTensorTypeAndShape":               C.ORTRUN_SLOT_GetTensorTypeAndShape,
	"GetValueType":                        C.ORTRUN_SLOT_GetValueType,
	"CreateCpuMemoryInfo":                 C.ORTRUN_SLOT_CreateCpuMemoryInfo,
	"GetAllocatorWithDefaultOptions":      C.ORTRUN_SLOT_GetAllocatorWithDefaultOptions,
	"ReleaseStatus":                       C.ORTRUN_SLOT_ReleaseStatus,
	"ReleaseValue":                        C.ORTRUN_SLOT_ReleaseValue,
	"ReleaseRunOptions":                   C.ORTRUN_SLOT_ReleaseRunOptions,
	"ReleaseTensorTypeAndShapeInfo":       C.ORTRUN_SLOT_ReleaseTensorTypeAndShapeInfo,
	"GetResizedStringTensorElementBuffer": C.ORTRUN_SLOT_GetResizedStringTensorElementBuffer,
}

var (
	bindMu sync.Mutex
	// bindMu protects the following.
	boundPath string
	boundAPI  *C.ortrun_fn

	// env is set once by the first successful Bind and never changed
	// (tests aside). It is C memory, as is everything it points to.
	env atomic.Pointer[C.ortrun_env]
)

// Bind binds the package to the ONNX Runtime library that onnxruntime_go
// has loaded from libraryPath (the path given to ort.SetSharedLibraryPath),
// so call it after ort.InitializeEnvironment. It never loads a second copy
// of the library: values made by one copy must not be handled by another.
// Once bound, the library stays loaded for the life of the process, even
// across ort.DestroyEnvironment. The first successful call also creates the
// CPU OrtMemoryInfo that input tensors are made with.
//
// Bind also checks, once, that onnxruntime_go's session type still has the
// layout [NewSession] reads its OrtSession pointer from, and fails if not.
//
// Bind is safe for concurrent use and idempotent: after a successful call,
// further calls return nil if libraryPath names the same loaded library and
// an error otherwise. A failed call can be retried.
func Bind(libraryPath string) error {
	bindMu.Lock()
	defer bindMu.Unlock()
	if libraryPath == "" {
		return errors.New("ortrun: Bind: empty library path")
	}
	if env.Load() != nil && libraryPath == boundPath {
		return nil
	}
	if err := checkLayout(); err != nil {
		return err
	}
	cpath := C.CString(libraryPath)
	defer C.free(unsafe.Pointer(cpath))
	r := C.ortrun_open(cpath)
	if r.err != nil {
		msg := C.GoString(r.err)
		C.free(unsafe.Pointer(r.err))
		return fmt.Errorf("ortrun: Bind(%q): %s", libraryPath, msg)
	}
	if r.api == nil {
		return fmt.Errorf("ortrun: Bind(%q): out of memory", libraryPath)
	}
	// A repeat call keeps the extra dlopen reference it just took: it costs
	// one refcount, and never dropping one keeps the reasoning simple.
	switch {
	case boundAPI == nil:
		er := C.ortrun_new_env(r.api)
		if er.env == nil {
			return fmt.Errorf("ortrun: Bind(%q): %w", libraryPath, plainErr(&er.r))
		}
		boundAPI = r.api
		boundPath = libraryPath
		env.Store(er.env)
	case boundAPI != r.api:
		return fmt.Errorf("ortrun: Bind(%q): already bound to a different ONNX Runtime library, %q",
			libraryPath, boundPath)
	}
	return nil
}

// checkLayout verifies what sessionPointer relies on: the first field of
// ort.DynamicAdvancedSession is a pointer to onnxruntime_go's
// AdvancedSession, whose first field is its *C.OrtSession.
func checkLayout() error {
	fail := func(what string) error {
		return fmt.Errorf("ortrun: onnxruntime_go's DynamicAdvancedSession layout has changed (%s); this package must be updated", what)
	}
	dyn := reflect.TypeFor[ort.DynamicAdvancedSession]()
	if dyn.NumField() < 1 {
		return fail("no fields")
	}
	f := dyn.Field(0)
	if f.Name != "s" || f.Offset != 0 || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct ||
		f.Type.Elem().Name() != "AdvancedSession" {
		return fail(fmt.Sprintf("first field %s %v", f.Name, f.Type))
	}
	adv := f.Type.Elem()
	if adv.NumField() < 1 {
		return fail("AdvancedSession has no fields")
	}
	g := adv.Field(0)
	if g.Name != "ortSession" || g.Offset != 0 || g.Type.Kind() != reflect.Pointer ||
		g.Type.Elem().Name() != "_Ctype_struct_OrtSession" {
		return fail(fmt.Sprintf("AdvancedSession's first field is %s %v", g.Name, g.Type))
	}
	return nil
}

// sessionPointer reads s's OrtSession pointer (nil once s is destroyed)
// through the layout checkLayout verified: s.s.ortSession.
func sessionPointer(s *ort.DynamicAdvancedSession) *C.OrtSession {
	adv := *(*unsafe.Pointer)(unsafe.Pointer(s))
	if adv == nil {
		return nil
	}
	return *(**C.OrtSession)(adv)
}

// Session runs one onnxruntime_go session with raw tensors. Create it with
// [NewSession] and release it with [Session.Close].
//
// A Session is not safe for concurrent use: its Run calls must be
// serialised (one goroutine per Session is the intended use), and Close
// must not overlap a Run. Several Sessions, on one ort session or on many,
// may run at the same time.
type Session struct {
	ort *ort.DynamicAdvancedSession
	env *C.ortrun_env
	ro  *C.OrtRunOptions

	inputNames, outputNames []string
	inNames, outNames       []*C.char // C strings, freed by Close

	// Scratch for Run, reused from call to call. Everything here holds C
	// pointers or plain values only; Run clears the Go pointers it pins.
	descs     []C.ortrun_input
	dims      []int64
	inVals    []*C.OrtValue
	outVals   []*C.OrtValue
	outs      []C.ortrun_output
	wantNames []*C.char
	seen      []bool
	pin       runtime.Pinner

	// Cancellation: see Run.
	terminateFunc func() // s.terminate, made once
	callback      sync.WaitGroup
	fired         atomic.Bool
	dirty         bool // the run options' terminate flag may be set

	closed bool
}

// NewSession prepares s, an onnxruntime_go session, to be run by this
// package: inputNames are the inputs every [Session.Run] feeds, in order,
// and outputNames the outputs it can compute. It copies the names; it does
// not take ownership of s, which must outlive the Session (destroy it after
// [Session.Close]).
func NewSession(s *ort.DynamicAdvancedSession, inputNames, outputNames []string) (*Session, error) {
	e := env.Load()
	if e == nil {
		return nil, fmt.Errorf("ortrun: NewSession: %w", ErrNotBound)
	}
	if s == nil {
		return nil, errors.New("ortrun: NewSession: nil session")
	}
	if sessionPointer(s) == nil {
		return nil, errors.New("ortrun: NewSession: the session has been destroyed")
	}
	for _, names := range [][]string{inputNames, outputNames} {
		for _, n := range names {
			if n == "" {
				return nil, errors.New("ortrun: NewSession: empty tensor name")
			}
			for i := range len(n) {
				if n[i] == 0 {
					return nil, fmt.Errorf("ortrun: NewSession: tensor name %q contains a NUL byte", n)
				}
			}
		}
	}
	rr := C.ortrun_new_run_options(e)
	if rr.ro == nil {
		return nil, fmt.Errorf("ortrun: NewSession: %w", plainErr(&rr.r))
	}
	ss := &Session{
		ort:         s,
		env:         e,
		ro:          rr.ro,
		inputNames:  append([]string(nil), inputNames...),
		outputNames: append([]string(nil), outputNames...),
		inNames:     cStrings(inputNames),
		outNames:    cStrings(outputNames),
		descs:       make([]C.ortrun_input, len(inputNames)),
		inVals:      make([]*C.OrtValue, len(inputNames)),
		outVals:     make([]*C.OrtValue, len(outputNames)),
		outs:        make([]C.ortrun_output, len(outputNames)),
		wantNames:   make([]*C.char, len(outputNames)),
		seen:        make([]bool, len(outputNames)),
	}
	ss.terminateFunc = ss.terminate
	return ss, nil
}

func cStrings(ss []string) []*C.char {
	c := make([]*C.char, len(ss))
	for i, s := range ss {
		c[i] = C.CString(s)
	}
	return c
}

// Close releases the C resources the Session holds (its copies of the
// names, its run options); it does not destroy the ort session. Close is
// idempotent and always returns nil; it must not overlap a Run.
func (s *Session) Close() error {
	if s == nil || s.closed {
		return nil
	}
	s.closed = true
	C.ortrun_release_run_options(s.env, s.ro)
	s.ro = nil
	for _, names := range [][]*C.char{s.inNames, s.outNames} {
		for i, p := range names {
			C.free(unsafe.Pointer(p))
			names[i] = nil
		}
	}
	return nil
}

// terminate is the context.AfterFunc callback of a Run: it sets the run
// options' terminate flag, then tells Run it has finished.
func (s *Session) terminate() {
	defer s.callback.Done()
	C.ortrun_set_terminate(s.env, s.ro)
	s.fired.Store(true)
}

// Run feeds inputs[i] to the session's input i and computes the outputs
// whose indices (into the names given to [NewSession]) are listed in want,
// returning them in want's order. It does not retain inputs or any memory
// they point to. Every returned tensor's Shape and Data are new Go memory,
// allocated once, at its final size; ORT's own output buffers are released
// before Run returns. A Shape of length 0 is a scalar. With an empty want,
// Run only checks its arguments and returns no tensors.
//
// Numeric inputs are handed to ORT without a copy (unless Data is not
// aligned for its element type, when Run copies it first); STRING inputs
// are copied element by element into ORT strings, NUL bytes and invalid
// UTF-8 included. Every input's Data must be exactly as long as its Shape
// and Type require, or Run fails before calling ORT.
//
// Cancellation: if ctx is already done, Run returns an error wrapping
// [ErrTerminated] and ctx's cause without running. If ctx ends during the
// run, Run sets the terminate flag of the Session's ORT run options; ORT
// checks it between kernels, so the run stops after the kernel in progress
// (a single long kernel is not interrupted) and Run returns an error
// wrapping ErrTerminated, the context's cause and the ORT [*Error]. Run
// waits for its context callback before it returns, so a late cancellation
// cannot affect the next run; a flag left set is cleared before the next
// run starts. A run that completes although ctx ended returns its outputs.
//
// Errors from ORT are [*Error] values, wrapped with the input or output they
// concern. Malformed BYTES data for a STRING input gives an error wrapping
// [ErrFraming].
func (s *Session) Run(ctx context.Context, inputs []Tensor, want []int) ([]Tensor, error) {
	if s == nil || s.closed {
		return nil, errors.New("ortrun: Run: the session is closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ortrun: Run: %w (%w): not started", ErrTerminated, context.Cause(ctx))
	}
	if len(inputs) != len(s.inputNames) {
		return nil, fmt.Errorf("ortrun: Run: %d inputs given, the session has %d", len(inputs), len(s.inputNames))
	}
	if err := s.setWant(want); err != nil {
		return nil, err
	}
	defer s.release()
	s.dims = s.dims[:0]
	for i := range inputs {
		if err := s.describe(i, &inputs[i]); err != nil {
			return nil, err
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	session := sessionPointer(s.ort)
	if session == nil {
		return nil, errors.New("ortrun: Run: the onnxruntime_go session has been destroyed")
	}
	if s.dirty {
		if r := C.ortrun_unset_terminate(s.env, s.ro); r.code != C.ORTRUN_OK {
			return nil, fmt.Errorf("ortrun: Run: clearing the terminate flag: %w", plainErr(&r))
		}
		s.dirty = false
	}

	var stop func() bool
	if ctx.Done() != nil {
		s.fired.Store(false)
		s.callback.Add(1)
		stop = context.AfterFunc(ctx, s.terminateFunc)
	}
	r := C.ortrun_run(s.env, session, s.ro,
		ptr(s.descs), C.size_t(len(s.descs)), (*C.int64_t)(ptr(s.dims)), ptr(s.inNames), ptr(s.inVals),
		ptr(s.wantNames[:len(want)]), C.size_t(len(want)), ptr(s.outVals), ptr(s.outs))
	terminated := false
	if stop != nil {
		if stop() {
			s.callback.Done() // the callback will never run
		}
		s.callback.Wait() // a callback that started has finished
		if s.fired.Load() {
			terminated = true
			s.dirty = true
		}
	}
	if r.code != C.ORTRUN_OK {
		if terminated && r.code == C.ORTRUN_ERR_ORT && r.side == C.ORTRUN_SIDE_NONE {
			return nil, fmt.Errorf("ortrun: Run: %w (%w): %w", ErrTerminated, context.Cause(ctx), plainErr(&r))
		}
		return nil, s.resultErr(&r, want)
	}
	return s.take(want)
}

// setWant checks want and sets wantNames from it.
func (s *Session) setWant(want []int) error {
	clear(s.seen)
	for k, i := range want {
		if i < 0 || i >= len(s.outputNames) {
			return fmt.Errorf("ortrun: Run: want[%d] = %d is not an output index (the session has %d outputs)", k, i, len(s.outputNames))
		}
		if s.seen[i] {
			return fmt.Errorf("ortrun: Run: want lists output %d (%q) twice", i, s.outputNames[i])
		}
		s.seen[i] = true
		s.wantNames[k] = s.outNames[i]
	}
	return nil
}

// describe checks input i and fills its descriptor, pinning its data.
func (s *Session) describe(i int, t *Tensor) error {
	size := elemSize(t.Type)
	if size == 0 && t.Type != typeString {
		return fmt.Errorf("ortrun: Run: input %d (%q): element type %s is not supported", i, s.inputNames[i], typeName(t.Type))
	}
	count := uint64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("ortrun: Run: input %d (%q): shape %v has a negative dimension", i, s.inputNames[i], t.Shape)
		}
		if d != 0 && count > math.MaxInt/uint64(d) {
			return fmt.Errorf("ortrun: Run: input %d (%q): shape %v has too many elements", i, s.inputNames[i], t.Shape)
		}
		count *= uint64(d)
	}
	data := t.Data
	if size != 0 {
		if count > math.MaxInt/uint64(size) || uint64(len(data)) != count*uint64(size) {
			return fmt.Errorf("ortrun: Run: input %d (%q): shape %v of %s needs %d bytes, the data has %d",
				i, s.inputNames[i], t.Shape, typeName(t.Type), count*uint64(size), len(data))
		}
		if len(data) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(size) != 0 {
			// ORT's kernels read elements as their C types.
			data = append(make([]byte, 0, len(data)), data...)
		}
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(data))
		s.pin.Pin(p)
	}
	s.descs[i] = C.ortrun_input{
		data:  p,
		len:   C.size_t(len(data)),
		count: C.size_t(count),
		shape: C.size_t(len(s.dims)),
		rank:  C.size_t(len(t.Shape)),
		_type: C.int(t.Type),
	}
	s.dims = append(s.dims, t.Shape...)
	return nil
}

// release unpins the inputs' data and drops the pointers to it.
func (s *Session) release() {
	s.pin.Unpin()
	clear(s.descs)
}

// take copies the outputs ortrun_run left in outVals into Go memory.
func (s *Session) take(want []int) ([]Tensor, error) {
	n := len(want)
	rank := 0
	for k := range n {
		rank += int(s.outs[k].rank)
	}
	var dims []int64
	if rank > 0 {
		dims = make([]int64, rank)
	}
	out := make([]Tensor, n)
	for k := range n {
		o := &s.outs[k]
		if uint64(o.size) > math.MaxInt {
			C.ortrun_release_values(s.env, ptr(s.outVals[k:n]), C.size_t(n-k))
			return nil, fmt.Errorf("ortrun: Run: output %d (%q): %d bytes do not fit in a Go slice", want[k], s.outputNames[want[k]], uint64(o.size))
		}
		shape := dims[:o.rank:o.rank]
		dims = dims[o.rank:]
		data := make([]byte, int(o.size))
		r := C.ortrun_take(s.env, s.outVals[k], o, (*C.int64_t)(ptr(shape)), (*C.uchar)(ptr(data)))
		s.outVals[k] = nil
		if r.code != C.ORTRUN_OK {
			C.ortrun_release_values(s.env, ptr(s.outVals[k+1:n]), C.size_t(n-k-1))
			r.side, r.tensor = C.ORTRUN_SIDE_OUTPUT, C.size_t(k)
			return nil, s.resultErr(&r, want)
		}
		out[k] = Tensor{Type: int32(o._type), Shape: shape, Data: data}
	}
	return out, nil
}

// ptr returns a pointer to s's first element, or nil if s is empty.
func ptr[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// cElemSize is the C side's element size for type t, for TestElemSizes to
// check elemSize against.
func cElemSize(t int32) int { return int(C.ortrun_elem_size(C.int(t))) }

// liveValues is the number of OrtValues the shim holds, for leak tests.
func liveValues() int { return int(C.ortrun_live_values()) }

// resultErr turns a Run result into an error, naming the input or output it
// concerns, and frees the message it carries.
func (s *Session) resultErr(r *C.ortrun_result, want []int) error {
	err := plainErr(r)
	switch r.side {
	case C.ORTRUN_SIDE_INPUT:
		i := int(r.tensor)
		return fmt.Errorf("ortrun: Run: input %d (%q): %w", i, s.inputNames[i], err)
	case C.ORTRUN_SIDE_OUTPUT:
		i := want[int(r.tensor)]
		return fmt.Errorf("ortrun: Run: output %d (%q): %w", i, s.outputNames[i], err)
	}
	return fmt.Errorf("ortrun: Run: %w", err)
}

// plainErr turns a C result into an error without context (nil for
// ORTRUN_OK), freeing the message it carries.
func plainErr(r *C.ortrun_result) error {
	switch r.code {
	case C.ORTRUN_OK:
		return nil
	case C.ORTRUN_ERR_ORT:
		msg := "(no message: out of memory)"
		if r.msg != nil {
			msg = C.GoString(r.msg)
			C.free(unsafe.Pointer(r.msg))
			r.msg = nil
		}
		return &Error{Code: int(r.ort_code), Op: C.GoString(r.op), Msg: msg}
	case C.ORTRUN_ERR_NO_MEMORY:
		return fmt.Errorf("%s: out of memory", C.GoString(r.op))
	case C.ORTRUN_ERR_PREFIX:
		return fmt.Errorf("%w: element %d at offset %d: length prefix truncated (%d of 4 bytes)",
			ErrFraming, uint64(r.index), uint64(r.offset), uint64(r.value))
	case C.ORTRUN_ERR_LENGTH:
		return fmt.Errorf("%w: element %d at offset %d: length %d runs past the end of the data (%d bytes left)",
			ErrFraming, uint64(r.index), uint64(r.offset), uint64(r.value), uint64(r.count))
	case C.ORTRUN_ERR_TOO_FEW:
		return fmt.Errorf("%w: data holds %d elements, the tensor has %d", ErrFraming, uint64(r.index), uint64(r.count))
	case C.ORTRUN_ERR_TOO_MANY:
		return fmt.Errorf("%w: data holds %d elements, the tensor has only %d", ErrFraming, uint64(r.index), uint64(r.count))
	case C.ORTRUN_ERR_TRAILING:
		return fmt.Errorf("%w: %d trailing bytes at offset %d, after the tensor's %d elements",
			ErrFraming, uint64(r.value), uint64(r.offset), uint64(r.count))
	case C.ORTRUN_ERR_TOO_LONG:
		return fmt.Errorf("element %d is %d bytes, more than a BYTES length prefix can hold", uint64(r.index), uint64(r.value))
	case C.ORTRUN_ERR_SIZE:
		return fmt.Errorf("%d elements (%d bytes each, or in all for strings) overflow the byte size", uint64(r.count), uint64(r.value))
	case C.ORTRUN_ERR_OFFSETS:
		return fmt.Errorf("ONNX Runtime GetStringTensorContent returned inconsistent offsets at element %d", uint64(r.index))
	case C.ORTRUN_ERR_NO_VALUE:
		return errors.New("ONNX Runtime returned no value")
	case C.ORTRUN_ERR_NOT_TENSOR:
		return fmt.Errorf("the value is a %s, not a tensor; only tensor outputs are supported", valueTypeName(int(r.value)))
	case C.ORTRUN_ERR_TYPE:
		return fmt.Errorf("element type %s is not supported", typeName(int32(r.value)))
	default:
		return fmt.Errorf("unexpected result code %d", int(r.code))
	}
}

// checkFraming reports whether data is exactly n elements in BYTES framing,
// with the errors Run gives for a STRING input. It needs no ONNX Runtime.
func checkFraming(data []byte, n int) error {
	r := C.ortrun_check_framing((*C.uchar)(ptr(data)), C.size_t(len(data)), C.size_t(n))
	return plainErr(&r)
}
