// Package ortrun runs ONNX Runtime sessions created by
// github.com/yalue/onnxruntime_go with raw tensors: little-endian bytes in,
// Go-owned bytes out, and Triton's BYTES framing for strings. It is the
// small cgo layer between Triton's tensors and ORT's C API.
//
// # Why
//
// onnxruntime_go does well what this package leaves to it: loading the
// library, the environment, session options and execution providers,
// creating sessions, and GetInputOutputInfo. Its Run path does not serve
// Triton: auto-allocated FLOAT16 and BFLOAT16 outputs fail (it sizes them at
// one byte per element), rank-0 outputs fail and rank-0 inputs need typed
// scalars, string inputs are cut at their first NUL byte (C.CString), and
// every output is copied twice and wrapped in a new OrtValue. [Session.Run]
// instead does, in one cgo call: create every input OrtValue (numeric data
// wrapped without a copy, strings copied length-aware), OrtApi::Run with
// ORT-allocated outputs for just the outputs asked for, release the inputs,
// and read each output's type, shape and byte size; then Go allocates each
// output once, at its final size, and a second call per output copies it in
// and releases ORT's value.
//
// When the caller knows an output's shape before the run (the Triton
// backend does whenever the model file fixes every dimension but the
// batch), [Session.RunOutputs] allocates the output's Go memory first and
// hands ORT a value over it: ORT writes the output in place, and the
// allocation inside ORT, the copy and the second cgo call disappear. On the
// 16-element add/sub model that takes the instructions spent inside ORT per
// run from 24,100 to 15,000 (callgrind; docs/performance.md, issue #22).
// The output's element
// type is the model's, read from the session by [NewSession], never the
// caller's word: a buffer sized for another type could be overrun by
// kernels that copy raw bytes.
//
// # Usage
//
// Set up onnxruntime_go first, then bind this package to the same library,
// and wrap each session:
//
//	ort.SetSharedLibraryPath(lib)
//	if err := ort.InitializeEnvironment(); err != nil { … }
//	if err := ortrun.Bind(lib); err != nil { … }
//
//	s, err := ort.NewDynamicAdvancedSession(path, inNames, outNames, opts)
//	r, err := ortrun.NewSession(s, inNames, outNames)
//	defer s.Destroy()
//	defer r.Close()
//	out, err := r.Run(ctx, []ortrun.Tensor{{Type: 1, Shape: []int64{1, 16}, Data: b}}, []int{0})
//
// [Bind] finds ORT's function table through the library onnxruntime_go has
// already loaded (dlopen with RTLD_NOLOAD, then OrtGetApiBase); it never
// loads a second copy, because values made by one copy of ORT must not be
// handled by another. The shim declares the few ORT types it needs itself
// and calls functions by their slot in the OrtApi table;
// slots_internal_test.go recounts those slots from the ORT header in
// onnxruntime_go's module, and cross-checks the count with the C compiler.
//
// # Where the C lives
//
// The shim is plain C in ortrun.c, with the declarations the Go side uses
// (types, result codes, slot numbers, prototypes) in ortrun.h; ortrun.go's
// cgo preamble holds only #cgo directives and #includes. cgo compiles
// ortrun.c with -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes, and the
// file makes -Wmissing-prototypes and -Wconversion errors for itself, so a
// warning fails the build.
//
// # Unsafe layout dependency
//
// onnxruntime_go does not export a session's OrtSession pointer.
// ort.DynamicAdvancedSession's first field points to its AdvancedSession,
// whose first field is the *C.OrtSession, and this package reads it there.
// [Bind] checks with reflection that both fields are still first, named as
// expected and pointers of the expected types, and refuses to bind
// otherwise; TestSessionLayout asserts the same, and every Run test would
// fail if the read were wrong. Revisit this whenever onnxruntime_go is
// upgraded.
//
// # Concurrency and ownership
//
// [Bind] is safe for concurrent use. A [Session] is not: serialise its Run
// calls (one goroutine per Session), and do not Close it during a Run.
// Different Sessions, on one ort session or many, run concurrently; ORT
// allows concurrent runs of one session.
//
// Go memory is handed to C only for the duration of a call: inputs' Data is
// pinned with runtime.Pinner while ORT reads it and is never retained, and
// outputs are written into new Go slices that the caller then owns (also
// pinned while ORT writes them in place). ORT's own output values, and the
// values wrapping Go memory, are released before Run returns, on every
// path.
//
// # Cancellation
//
// Each Session has its own ORT run options. When Run's context ends during
// a run, a context.AfterFunc callback sets their terminate flag; ORT checks
// it between kernels, so the latency is that of the kernel in progress.
// Run waits for the callback to finish before returning, and clears the
// flag before the next run. A context that has already ended stops Run
// before it calls ORT. Either way the error wraps [ErrTerminated].
//
// # Errors
//
// ORT failures are [*Error] values with ORT's error code, message and the
// ORT function that failed, wrapped with the input or output they concern;
// [Error.InvalidArgument] marks those ORT blames on its arguments (a shape
// the model does not accept). Run checks its arguments before calling ORT:
// supported element types, non-negative dimensions, data lengths that match
// the shape, and for STRING inputs the BYTES framing (errors wrapping
// [ErrFraming], naming the element and offset). Outputs ORT returns that
// the shim cannot represent (sequences, maps, optional values; complex,
// float8 and 4-bit element types) fail with an error naming the output.
//
// # Platforms
//
// The shim needs cgo and dlopen (Linux, macOS). Without cgo the package is
// empty, as onnxruntime_go is.
package ortrun
