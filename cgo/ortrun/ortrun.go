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
#cgo noescape ortrun_output_types
#cgo nocallback ortrun_output_types
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
	"slices"
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
	"SessionGetOutputCount":               C.ORTRUN_SLOT_SessionGetOutputCount,
	"SessionGetOutputTypeInfo":            C.ORTRUN_SLOT_SessionGetOutputTypeInfo,
	"SessionGetOutputName":                C.ORTRUN_SLOT_SessionGetOutputName,
	"CreateRunOptions":                    C.ORTRUN_SLOT_CreateRunOptions,
	"RunOptionsSetTerminate":              C.ORTRUN_SLOT_RunOptionsSetTerminate,
	"RunOptionsUnsetTerminate":            C.ORTRUN_SLOT_RunOptionsUnsetTerminate,
	"CreateTensorAsOrtValue":              C.ORTRUN_SLOT_CreateTensorAsOrtValue,
	"CreateTensorWithDataAsOrtValue":      C.ORTRUN_SLOT_CreateTensorWithDataAsOrtValue,
	"GetTensorMutableData":                C.ORTRUN_SLOT_GetTensorMutableData,
	"GetStringTensorDataLength":           C.ORTRUN_SLOT_GetStringTensorDataLength,
	"GetStringTensorContent":              C.ORTRUN_SLOT_GetStringTensorContent,
	"CastTypeInfoToTensorInfo":            C.ORTRUN_SLOT_CastTypeInfoToTensorInfo,
	"GetTensorElementType":                C.ORTRUN_SLOT_GetTensorElementType,
	"GetDimensionsCount":                  C.ORTRUN_SLOT_GetDimensionsCount,
	"GetDimensions":                       C.ORTRUN_SLOT_GetDimensions,
	"GetTensorShapeElementCount":          C.ORTRUN_SLOT_GetTensorShapeElementCount,
	"GetTensorTypeAndShape":               C.ORTRUN_SLOT_GetTensorTypeAndShape,
	"GetValueType":                        C.ORTRUN_SLOT_GetValueType,
	"CreateCpuMemoryInfo":                 C.ORTRUN_SLOT_CreateCpuMemoryInfo,
	"AllocatorFree":                       C.ORTRUN_SLOT_AllocatorFree,
	"GetAllocatorWithDefaultOptions":      C.ORTRUN_SLOT_GetAllocatorWithDefaultOptions,
	"ReleaseStatus":                       C.ORTRUN_SLOT_ReleaseStatus,
	"ReleaseValue":                        C.ORTRUN_SLOT_ReleaseValue,
	"ReleaseRunOptions":                   C.ORTRUN_SLOT_ReleaseRunOptions,
	"ReleaseTypeInfo":                     C.ORTRUN_SLOT_ReleaseTypeInfo,
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
	// placeTypes[i] is output i's element type if ORT can write it into
	// the caller's memory: a tensor of a fixed-size type that is not also
	// one of the inputs (ORT hands a graph input that is also an output
	// back as the input's value, and writes nothing into the caller's);
	// 0 otherwise.
	placeTypes []int32

	// Scratch for Run, reused from call to call. Everything here holds C
	// pointers or plain values only; Run clears the Go pointers it pins.
	descs     []C.ortrun_tensor
	pre       []C.ortrun_tensor // per wanted output: the memory ORT writes it into, if any
	dims      []int64
	inVals    []*C.OrtValue
	outVals   []*C.OrtValue
	outs      []C.ortrun_output
	wantNames []*C.char
	seen      []bool
	specs     []Output // Run's want as RunOutputs takes it
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
// and outputNames the outputs it can compute. It copies the names and
// reads the outputs' element types from the session; it does not take
// ownership of s, which must outlive the Session (destroy it after
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
	outNames := cStrings(outputNames)
	types := make([]C.int, len(outputNames))
	if r := C.ortrun_output_types(e, sessionPointer(s), ptr(outNames), C.size_t(len(outNames)), ptr(types)); r.code != C.ORTRUN_OK {
		freeCStrings(outNames)
		return nil, fmt.Errorf("ortrun: NewSession: reading the outputs' types: %w", plainErr(&r))
	}
	rr := C.ortrun_new_run_options(e)
	if rr.ro == nil {
		freeCStrings(outNames)
		return nil, fmt.Errorf("ortrun: NewSession: %w", plainErr(&rr.r))
	}
	ss := &Session{
		ort:         s,
		env:         e,
		ro:          rr.ro,
		inputNames:  append([]string(nil), inputNames...),
		outputNames: append([]string(nil), outputNames...),
		inNames:     cStrings(inputNames),
		outNames:    outNames,
		placeTypes:  make([]int32, len(outputNames)),
		descs:       make([]C.ortrun_tensor, len(inputNames)),
		pre:         make([]C.ortrun_tensor, len(outputNames)),
		inVals:      make([]*C.OrtValue, len(inputNames)),
		outVals:     make([]*C.OrtValue, len(outputNames)),
		outs:        make([]C.ortrun_output, len(outputNames)),
		wantNames:   make([]*C.char, len(outputNames)),
		seen:        make([]bool, len(outputNames)),
		specs:       make([]Output, 0, len(outputNames)),
	}
	for i, t := range types {
		if elemSize(int32(t)) > 0 && !slices.Contains(inputNames, outputNames[i]) {
			ss.placeTypes[i] = int32(t)
		}
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

// freeCStrings frees the strings of c and clears it.
func freeCStrings(c []*C.char) {
	for i, p := range c {
		C.free(unsafe.Pointer(p))
		c[i] = nil
	}
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
	freeCStrings(s.inNames)
	freeCStrings(s.outNames)
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
// Run only checks its arguments and returns no tensors. Run is
// [Session.RunOutputs] with no output shape known in advance.
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
	s.specs = s.specs[:0]
	for _, i := range want {
		s.specs = append(s.specs, Output{Index: i})
	}
	return s.RunOutputs(ctx, inputs, s.specs)
}

// Output is one output for [Session.RunOutputs] to compute.
type Output struct {
	// Index is the output's index in the names given to [NewSession].
	Index int
	// Known says that the caller knows the output's shape before the run:
	// Shape (of length 0 for a scalar). RunOutputs then allocates the
	// output's Go memory first and ONNX Runtime writes the output straight
	// into it, which saves ORT's own allocation, the copy out of it and its
	// release. If the output turns out to have another shape, the run fails
	// with ORT's error. Known is ignored for outputs of type STRING, whose
	// size is not known before the run, for an output that is also one of
	// the session's inputs, and for the types and values the package does
	// not return (see the package documentation).
	//
	// The memory is allocated before ORT runs: a Shape far larger than the
	// output will be costs that memory, or more than the process has.
	Known bool
	Shape []int64
}

// RunOutputs is [Session.Run] with the outputs to compute given as
// [Output] values, in the order they are returned: the Data of those with a
// known shape is written by ORT in place (one allocation for all of them);
// the others are copied out of ORT's memory as Run does. The returned
// Shapes are new Go memory, never the callers'. The element type of each
// output is the model's, as the session reports it.
func (s *Session) RunOutputs(ctx context.Context, inputs []Tensor, outputs []Output) ([]Tensor, error) {
	if s == nil || s.closed {
		return nil, errors.New("ortrun: Run: the session is closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ortrun: Run: %w (%w): not started", ErrTerminated, context.Cause(ctx))
	}
	if len(inputs) != len(s.inputNames) {
		return nil, fmt.Errorf("ortrun: Run: %d inputs given, the session has %d", len(inputs), len(s.inputNames))
	}
	if err := s.setWant(outputs); err != nil {
		return nil, err
	}
	defer s.release()
	s.dims = s.dims[:0]
	for i := range inputs {
		if err := s.describe(i, &inputs[i]); err != nil {
			return nil, err
		}
	}
	if len(outputs) == 0 {
		return nil, nil
	}
	out, err := s.preallocate(outputs)
	if err != nil {
		return nil, err
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
	n := len(outputs)
	r := C.ortrun_run(s.env, session, s.ro,
		ptr(s.descs), C.size_t(len(s.descs)), (*C.int64_t)(ptr(s.dims)), ptr(s.inNames), ptr(s.inVals),
		ptr(s.wantNames[:n]), C.size_t(n), ptr(s.pre[:n]), ptr(s.outVals), ptr(s.outs))
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
		return nil, s.resultErr(&r, outputs)
	}
	if err := s.take(outputs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// setWant checks outputs and sets wantNames from them.
func (s *Session) setWant(outputs []Output) error {
	clear(s.seen)
	for k, o := range outputs {
		i := o.Index
		if i < 0 || i >= len(s.outputNames) {
			return fmt.Errorf("ortrun: Run: outputs[%d].Index = %d is not an output index (the session has %d outputs)",
				k, i, len(s.outputNames))
		}
		if s.seen[i] {
			return fmt.Errorf("ortrun: Run: output %d (%q) is asked for twice", i, s.outputNames[i])
		}
		s.seen[i] = true
		s.wantNames[k] = s.outNames[i]
	}
	return nil
}

// elements returns the number of elements of shape, or an error naming
// what of it is wrong.
func elements(shape []int64) (uint64, error) {
	count := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && count > math.MaxInt/uint64(d) {
			return 0, fmt.Errorf("shape %v has too many elements", shape)
		}
		count *= uint64(d)
	}
	return count, nil
}

// describe checks input i and fills its descriptor, pinning its data.
func (s *Session) describe(i int, t *Tensor) error {
	size := elemSize(t.Type)
	if size == 0 && t.Type != typeString {
		return fmt.Errorf("ortrun: Run: input %d (%q): element type %s is not supported", i, s.inputNames[i], typeName(t.Type))
	}
	count, err := elements(t.Shape)
	if err != nil {
		return fmt.Errorf("ortrun: Run: input %d (%q): %w", i, s.inputNames[i], err)
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
	s.descs[i] = s.tensorDesc(data, count, t.Shape, t.Type)
	return nil
}

// tensorDesc returns the descriptor of a tensor over data, pinning data
// and appending shape to s.dims.
func (s *Session) tensorDesc(data []byte, count uint64, shape []int64, typ int32) C.ortrun_tensor {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(data))
		s.pin.Pin(p)
	}
	d := C.ortrun_tensor{
		data:  p,
		len:   C.size_t(len(data)),
		count: C.size_t(count),
		shape: C.size_t(len(s.dims)),
		rank:  C.size_t(len(shape)),
		_type: C.int(typ),
	}
	s.dims = append(s.dims, shape...)
	return d
}

// preallocate returns the result slice of a run, with the tensors of the
// outputs ORT will write in place already made: their shapes and data in
// one new allocation, the data pinned and described in s.pre.
func (s *Session) preallocate(outputs []Output) ([]Tensor, error) {
	out := make([]Tensor, len(outputs))
	words := uint64(0) // 8-byte words for the shapes and data of the outputs ORT writes in place
	for k, o := range outputs {
		s.pre[k] = C.ortrun_tensor{}
		if !s.inPlace(o) {
			continue
		}
		count, err := elements(o.Shape)
		if err == nil && count > math.MaxInt/8 {
			err = fmt.Errorf("shape %v has too many elements", o.Shape)
		}
		if err != nil {
			return nil, fmt.Errorf("ortrun: Run: output %d (%q): %w", o.Index, s.outputNames[o.Index], err)
		}
		words += uint64(len(o.Shape)) + (count*uint64(elemSize(s.placeTypes[o.Index]))+7)/8
		if words > math.MaxInt/8 {
			return nil, fmt.Errorf("ortrun: Run: output %d (%q): the outputs' %d words do not fit in a Go slice", o.Index, s.outputNames[o.Index], words)
		}
	}
	if words == 0 {
		return out, nil // none is written in place (a scalar has a word of data, any other shape a word per dimension)
	}
	buf := make([]int64, words)
	for k, o := range outputs {
		if !s.inPlace(o) {
			continue
		}
		typ := s.placeTypes[o.Index]
		count, _ := elements(o.Shape)
		size := int(count) * elemSize(typ)
		shape := buf[:len(o.Shape):len(o.Shape)]
		copy(shape, o.Shape)
		buf = buf[len(o.Shape):]
		data := []byte{}
		if size > 0 {
			data = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), size)
			buf = buf[(size+7)/8:]
		}
		out[k] = Tensor{Type: typ, Shape: shape, Data: data}
		s.pre[k] = s.tensorDesc(data, count, shape, typ)
	}
	return out, nil
}

// inPlace reports whether ORT is to write output o in place: its shape is
// known and its element type has a fixed size.
func (s *Session) inPlace(o Output) bool { return o.Known && s.placeTypes[o.Index] != 0 }

// release unpins the inputs' and outputs' data and drops the pointers to it.
func (s *Session) release() {
	s.pin.Unpin()
	clear(s.descs)
	clear(s.pre)
}

// take copies the outputs ortrun_run left in outVals (those ORT allocated)
// into Go memory, into out.
func (s *Session) take(outputs []Output, out []Tensor) error {
	n := len(outputs)
	rank := 0
	for k := range n {
		if s.pre[k]._type == 0 {
			rank += int(s.outs[k].rank)
		}
	}
	var dims []int64
	if rank > 0 {
		dims = make([]int64, rank)
	}
	for k := range n {
		if s.pre[k]._type != 0 {
			continue // written in place
		}
		o := &s.outs[k]
		if uint64(o.size) > math.MaxInt {
			C.ortrun_release_values(s.env, ptr(s.outVals[k:n]), C.size_t(n-k))
			return fmt.Errorf("ortrun: Run: output %d (%q): %d bytes do not fit in a Go slice", outputs[k].Index, s.outputNames[outputs[k].Index], uint64(o.size))
		}
		shape := dims[:o.rank:o.rank]
		dims = dims[o.rank:]
		data := make([]byte, int(o.size))
		r := C.ortrun_take(s.env, s.outVals[k], o, (*C.int64_t)(ptr(shape)), (*C.uchar)(ptr(data)))
		s.outVals[k] = nil
		if r.code != C.ORTRUN_OK {
			C.ortrun_release_values(s.env, ptr(s.outVals[k+1:n]), C.size_t(n-k-1))
			r.side, r.tensor = C.ORTRUN_SIDE_OUTPUT, C.size_t(k)
			return s.resultErr(&r, outputs)
		}
		out[k] = Tensor{Type: int32(o._type), Shape: shape, Data: data}
	}
	return nil
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
func (s *Session) resultErr(r *C.ortrun_result, outputs []Output) error {
	err := plainErr(r)
	switch r.side {
	case C.ORTRUN_SIDE_INPUT:
		i := int(r.tensor)
		return fmt.Errorf("ortrun: Run: input %d (%q): %w", i, s.inputNames[i], err)
	case C.ORTRUN_SIDE_OUTPUT:
		i := outputs[int(r.tensor)].Index
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
