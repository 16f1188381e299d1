// Package pytorch is the PyTorch (TorchScript) backend: it serves model.pt
// files with libtorch, as Triton's pytorch_libtorch platform does.
// Importing the package registers it as "pytorch", which also serves
// `platform: "pytorch_libtorch"` (and its alias "libtorch"):
//
//	import _ "github.com/triton-go/triton/backend/pytorch"
//
// # The shim
//
// libtorch is C++, reached through a small shim library built from
// cgo/torchshim (scripts/build-torch-shim.sh, which make deps runs) and
// loaded at run time with dlopen, as Triton loads its backends: a program
// builds with or without libtorch installed, and one that never loads a
// PyTorch model never needs it. The shim is searched for in this order:
// [WithShim]; the TRITONGO_PYTORCH_SHIM environment variable;
// dir/pytorch/libtriton_pytorch.so for [WithBackendDirectory] (what
// cmd/tritonserver's --backend-directory sets); the checkout's copy,
// .cache/backends/pytorch/libtriton_pytorch.so, found from the working
// directory upwards; and the user's cache folder ([UserCachePath]). Without
// it a PyTorch model fails to load with an error that says how to build
// it. The shim is loaded once per process and shared by every Backend.
//
// # Models, inputs and outputs
//
// A model version is the TorchScript file named by default_model_filename
// (default model.pt) in its version folder, loaded with torch::jit::load on
// the CPU as it was saved: like Triton, the backend calls no eval(), so a
// module saved in training mode runs its dropout and batch norm as in
// training, which the load logs as a warning. `platform: "torch_aoti"`
// (AOTInductor's model.pt2) fails the load with an Unsupported error: it
// needs libtorch 2's AOTInductor runtime, which the shim is not built
// against. The configuration must list the inputs and
// outputs (auto-complete is not possible: TorchScript does not record
// them). Configuration inputs meet forward's arguments by Triton's rules:
// every input named after an argument; else every name <name>__<index>
// (INPUT__0, the index after the first "__"); else their order in the
// configuration (logged as a warning). Outputs follow <name>__<index> or
// their order. A forward taking one Dict(str, Tensor) gets the inputs as
// its entries, keyed by the configuration names. Sequence controls and
// implicit state take part in the <name>__<index> map. Load checks all
// of it with Triton's error texts, and more than Triton does: an index
// beyond forward's arguments, two inputs on one argument, a TYPE_STRING
// input for a Tensor argument (or a tensor for a List[str] one).
//
// Datatypes: BOOL, UINT8, INT8, INT16, INT32, INT64, FP16, FP32, FP64, as
// in Triton, and BF16 beyond it; UINT16, UINT32 and UINT64 have no torch
// type and are refused. A TYPE_STRING input (one dimension, the batch
// counted) is passed as one List[str] holding every element of the batch;
// a List[str] output becomes a BYTES tensor: [len] for a model without
// batching; with batching, one string per row of the batch, each request
// getting its rows ([rows], a lone request too, as Triton shapes it).
//
// Execute runs the whole batch in one forward call: each input is the
// requests' inputs concatenated along the batch dimension (no copy for a
// batch of one), handed to libtorch without a copy (torch::from_blob over
// the request's memory), except an argument that forward may write in
// place or keep in the module's state (found by TorchScript's alias
// analysis at load, and logged): it gets a copy, so that the caller's
// tensor is left as it was and the kept one keeps its values after the
// caller reuses its memory; each output is split back per request. forward
// may return a Tensor, a List[str], or a tuple of them; an exception raised
// by the model, or another return type, fails with Triton's
// "PyTorch execute failure: ..." (Internal), never a crash. Unlike Triton,
// when forward fails for a batch of several requests, each request is run
// again alone, so a request that makes the model raise fails on its own
// and the rest of its batch is served. An output index beyond forward's
// outputs, a datatype other than the configuration's, and a 0-d output fail
// the batch with Triton's texts (InvalidArgument).
//
// Under dynamic batching (not for a sequence model or a rate-limited
// instance) the server queues up to two full batches behind the one an
// instance runs ([backend.Queuer]), and the instance runs them through a
// [torchrun.Worker]: a queued forward starts on the worker's thread the
// moment the one before ends, and the batches' gathering and answering
// happen beside the forward rather than between two. The wait behind
// another batch counts as queue time. A batch the server did not queue
// behind another (a lone request at low load) runs on the calling
// goroutine's thread, as without batching.
//
// # Parameters
//
// Model configuration parameters, parsed as Triton parses them (booleans
// true/on/1 and false/off/0 in any case, integers in decimal):
//
//   - INFERENCE_MODE (default true): torch::InferenceMode around load and
//     forward; false runs forward under torch::NoGradGuard.
//   - DISABLE_OPTIMIZED_EXECUTION: the graph executor's optimizations off.
//   - ENABLE_JIT_EXECUTOR, ENABLE_JIT_PROFILING, ENABLE_TENSOR_FUSER: set
//     libtorch's switches before each forward when given; when not, a
//     forward runs with what the previous one left (libtorch's defaults if
//     no model set them). As in Triton these are process-wide switches, so
//     models that set them differently overwrite each other per call;
//     torchrun.Settings reads them.
//   - INTRA_OP_THREAD_COUNT, INTER_OP_THREAD_COUNT: libtorch's thread pools,
//     sized once per process: the first model that sets one wins, and a
//     later model's different value is logged as not applied. The intra-op
//     count holds on every thread that runs a forward, also one that ran
//     forwards before it was set (libtorch's OpenMP count is per thread).
//   - ENABLE_WEIGHT_SHARING: the model's instances share one loaded module
//     instead of loading one each.
//   - ENABLE_CACHE_CLEANING, DISABLE_CUDNN: accepted and validated; they act
//     on CUDA memory and cuDNN, so they have no effect on CPU instances.
//
// # Instances
//
// KIND_CPU and KIND_MODEL instances run on the CPU (one instance by
// default, Triton's default for this backend). KIND_AUTO, and a config
// without instance_group, is KIND_CPU even on a machine with GPUs (unlike
// Triton, repository.Normalize's rule for this backend), unless the group
// lists GPUs. KIND_GPU fails the load
// with an error saying that a CUDA build of libtorch is needed: the shim
// is built against the CPU libtorch that Debian packages.
//
// Each loaded module is reported (backend.MemoryReporter) as the bytes of
// its parameters and buffers, its submodules' included, a storage that
// tied weights share counted once, measured when it loads: by the instance
// that owns it, or under ENABLE_WEIGHT_SHARING by the model, whose module
// the instances share. libtorch's code and allocations during a forward
// are not counted.
//
// # Sequence batching
//
// Control inputs (START, END, READY, CORRID) must be named
// <name>__<index>, and CORRID must have a torch datatype (not UINT64 or
// STRING). Implicit state (sequence_batching.state) needs every input,
// output and state named <name>__<index>: the state's input_name is fed
// to forward, and its output_name is read from forward's outputs and
// written back by the server as the sequence's next state.
package pytorch
