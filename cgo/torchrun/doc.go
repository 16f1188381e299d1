// Package torchrun runs TorchScript modules with libtorch, through a small
// C shim loaded at run time. It is the cgo layer under backend/pytorch, as
// cgo/ortrun is under backend/onnxruntime.
//
// # The shim, and why dlopen
//
// libtorch is a C++ library of several hundred megabytes that most users of
// this module never need. Linking it into every Go program (cgo LDFLAGS)
// would make every build need its headers and every binary need its
// libraries. Instead the C++ lives in cgo/torchshim (torchshim.cc, a plain
// C ABI declared in torchshim.h), which scripts/build-torch-shim.sh compiles
// into libtriton_pytorch.so (`make deps` does it; the file goes to
// .cache/backends/pytorch/, Triton's <backend-dir>/<name>/libtriton_<name>.so
// layout). This package includes only the header: [Open] loads the library
// with dlopen (RTLD_NOW|RTLD_LOCAL) and resolves its functions with dlsym,
// much as Triton loads its backends. So `go build ./...` and `go vet ./...`
// need no libtorch, and a program that never calls Open never loads it.
//
// Every shim function catches every C++ exception and returns it as a
// message: a file that is not TorchScript, or a model that throws, is an
// [*Error], never a crash.
//
// # Usage
//
//	if err := torchrun.Open(shimPath); err != nil { … }
//	m, err := torchrun.Load("model.pt", torchrun.Options{InferenceMode: true})
//	defer m.Close()
//	for _, a := range m.Arguments() { … } // forward's names and types, self excluded
//	out, err := m.Forward(ctx, []torchrun.Value{{DataType: tensor.FP32, Shape: []int64{1, 16}, Data: b}})
//
// # Memory
//
// Inputs are the caller's: tensor data is wrapped with torch::from_blob,
// without a copy, for the length of the call (it is pinned, and must not
// change until Forward returns); strings and dict keys are copied, and so
// is an argument that forward may write in place or keep in the module's
// state (Argument.Copied: TorchScript's alias analysis of forward, at
// load), which would otherwise write into, or outlive, the caller's
// memory. Outputs
// are two-phase: the shim keeps forward's results (made contiguous on the
// CPU) and reports their types and sizes, Go allocates every output at its
// final size (one buffer for all shapes and data), and one copy per output
// fills it before the shim lets its tensors go. The outputs are the
// caller's. C-facing scratch is pooled, so a forward allocates its results
// and little else.
//
// # Concurrency
//
// [Module.Forward] is safe for concurrent use, as libtorch's forward is;
// [Module.Close] waits for the calls in progress. A [Worker] runs the
// forwards submitted to it one at a time on a thread of its own, in order,
// so that a forward queued behind another starts on a running thread when
// that one ends ([Worker.Forward] reports how long it waited and ran); one placed
// [Inline] runs on the caller's thread when nothing is ahead of it. A
// second thread of the worker wakes the callers of long forwards (100 µs
// or more), so that the worker's thread goes on to the next forward
// without paying for the wake-up. Close stops both threads.
//
// libtorch's JIT switches ([Options]) and thread counts ([SetThreads]) are
// process-wide; [Settings] reads them.
package torchrun
