// torchshim.h is the plain C ABI of libtriton_pytorch.so, the shim between
// package cgo/torchrun and libtorch (TorchScript, CPU). It holds no C++
// type: Go's cgo reads it, and torchrun resolves every function below with
// dlsym, so that Go programs build without libtorch and load it only when a
// PyTorch model is loaded.
//
// Conventions:
//   - A function that can fail returns NULL on success and otherwise a
//     NUL-terminated message allocated by the shim, which the caller
//     releases with tshim_free_msg. No C++ exception ever crosses the ABI.
//   - Data types are Triton's (tensor.DataType in Go, the model
//     configuration's TYPE_* numbers), see TSHIM_* below.
//   - Memory passed in is the caller's and is used only during the call,
//     except that tensor inputs are wrapped (torch::from_blob, no copy) for
//     the length of tshim_forward.
//   - Outputs are two-phase: tshim_forward keeps them in a tshim_outputs,
//     contiguous on the CPU; tshim_outputs_describe reports their types and
//     sizes, the caller allocates each at its final size and
//     tshim_output_copy copies one in; tshim_outputs_free releases them.
//
// Every function is safe to call from several threads at once, on one
// module or several, except that a module or outputs object must not be
// freed while another call uses it.

#ifndef TORCHSHIM_H
#define TORCHSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Data types: the numbers of Triton's TYPE_* (model_config.proto).
// UINT16/32/64 have no libtorch 1.13 type.
enum {
	TSHIM_BOOL = 1,
	TSHIM_UINT8 = 2,
	TSHIM_INT8 = 6,
	TSHIM_INT16 = 7,
	TSHIM_INT32 = 8,
	TSHIM_INT64 = 9,
	TSHIM_FP16 = 10,
	TSHIM_FP32 = 11,
	TSHIM_FP64 = 12,
	TSHIM_STRINGS = 13, // a List[str] (Triton's BYTES / TYPE_STRING)
	TSHIM_BF16 = 14,
};

// Tristate values of tshim_options.
enum {
	TSHIM_UNSET = 0, // leave libtorch's setting alone
	TSHIM_FALSE = 1,
	TSHIM_TRUE = 2,
};

// tshim_options are a module's execution settings (Triton's model
// parameters). The JIT switches are process-wide in libtorch: they are set
// before every forward of the module, as Triton does.
typedef struct {
	int inference_mode;              // 1: c10::InferenceMode around load and forward; 0: torch::NoGradGuard
	int disable_optimized_execution; // 1: setGraphExecutorOptimize(false) before each forward, else true
	int jit_executor;                // TSHIM_*: getExecutorMode() before each forward, when set
	int jit_profiling;               // TSHIM_*: getProfilingMode() before each forward, when set
	int tensor_fuser;                // TSHIM_*: setTensorExprFuserEnabled before each forward, when set
} tshim_options;

// tshim_value is one input of tshim_forward.
//   - A tensor (dtype not TSHIM_STRINGS): data holds size bytes, the
//     little-endian row-major elements of shape[0:rank], aligned to the
//     element size; NULL when size is 0.
//   - A List[str]: rank is 1, shape[0] the element count, lens[0:shape[0]]
//     the byte length of each and data their concatenated bytes (size in
//     all). Each is copied into a std::string.
//   - key[0:key_len] is the input's key when tshim_forward builds a
//     Dict(str, Tensor); unused otherwise.
typedef struct {
	const void *data;
	size_t size;
	const int64_t *shape;
	size_t rank;
	const size_t *lens;
	const char *key;
	size_t key_len;
	int dtype;
} tshim_value;

// tshim_output_info describes one output of a forward.
typedef struct {
	int dtype;    // TSHIM_*, TSHIM_STRINGS for a List[str]
	size_t rank;  // 0 for a 0-d (scalar) tensor; 1 for a List[str]
	size_t count; // elements (strings for a List[str])
	size_t size;  // bytes: count × element size, or the strings' total length
} tshim_output_info;

typedef struct tshim_module tshim_module;   // a loaded TorchScript module
typedef struct tshim_outputs tshim_outputs; // the outputs of one forward

// tshim_free_msg releases a message returned by a shim function.
void tshim_free_msg(char *msg);

// tshim_version returns libtorch's version, as "1.13.0" (static memory).
const char *tshim_version(void);

// tshim_load loads the TorchScript file at path (torch::jit::load onto the
// CPU; the module keeps the training flag it was saved with, as under
// Triton, which calls no eval()) and reads forward's schema. On success
// *out is the module, released with tshim_module_free. The message of a
// failure is torch's what() text.
char *tshim_load(const char *path, const tshim_options *opts, tshim_module **out);

// tshim_module_free releases m (NULL is ignored).
void tshim_module_free(tshim_module *m);

// tshim_module_training is 1 when m was saved in training mode
// (module.training), else 0.
int tshim_module_training(const tshim_module *m);

// tshim_module_state_bytes is the bytes of m's parameters and buffers,
// its submodules' included (named_parameters() and named_buffers(),
// recursively), each storage counted once (tied weights share one): the
// memory the loaded module holds for its state. It is computed by
// tshim_load, so the call only reads it; -1 when libtorch could not tell.
// Optional, as tshim_module_training.
int64_t tshim_module_state_bytes(const tshim_module *m);

// tshim_num_args is the number of forward's arguments, self excluded.
size_t tshim_num_args(const tshim_module *m);

// tshim_arg_name and tshim_arg_type return argument i's name and type
// (TorchScript's annotation spelling, "Tensor", "List[str]",
// "Optional[Tensor]", "int", except that a dict is spelled "Dict(str,
// Tensor)" as Triton prints it). The strings live as long as m.
const char *tshim_arg_name(const tshim_module *m, size_t i);
const char *tshim_arg_type(const tshim_module *m, size_t i);

// tshim_arg_printed returns argument i's type as TorchScript's str()
// prints it, the spelling of Triton's messages ("Tensor?" for
// Optional[Tensor], "int[]" for List[int]); it lives as long as m.
// Optional, as tshim_module_training.
const char *tshim_arg_printed(const tshim_module *m, size_t i);

// tshim_arg_copied is 1 when forward may write argument i in place or keep
// it in the module's state: tshim_forward then copies it first (the
// others are wrapped over the caller's memory). Optional, as
// tshim_module_training: a shim built before it has none.
int tshim_arg_copied(const tshim_module *m, size_t i);

// tshim_forward runs m's forward on the n inputs in[0:n] (positional), or,
// when dict is 1, on a single Dict(str, Tensor) made of them, under m's
// options. The result is flattened: a Tensor is one output, a List[str]
// one TSHIM_STRINGS output, a Tuple one output per element, each a Tensor
// or a List[str]. On success *out holds the outputs (released with
// tshim_outputs_free) and *n_out their number. A failure, an exception of
// the model or a return value of another type, is a message in Triton's
// words: "PyTorch execute failure: <what>".
char *tshim_forward(tshim_module *m, const tshim_value *in, size_t n, int dict, tshim_outputs **out, size_t *n_out);

// tshim_outputs_describe fills infos[0:n_out], n_out from tshim_forward.
void tshim_outputs_describe(const tshim_outputs *o, tshim_output_info *infos);

// tshim_output_copy copies output i into the caller's memory: its shape
// into dims (rank entries) and its bytes into data (size bytes); for a
// List[str] also each string's length into lens (count entries), the
// strings' bytes concatenated into data. A NULL pointer skips that part.
void tshim_output_copy(const tshim_outputs *o, size_t i, int64_t *dims, void *data, size_t *lens);

// tshim_outputs_free releases o (NULL is ignored).
void tshim_outputs_free(tshim_outputs *o);

// tshim_set_intra_threads calls at::set_num_threads(n);
// tshim_set_interop_threads at::set_num_interop_threads(n), which libtorch
// refuses once inter-op work has started (the message says so).
char *tshim_set_intra_threads(int n);
char *tshim_set_interop_threads(int n);

// tshim_settings are libtorch's execution switches and thread counts, as
// tshim_get_settings reads them (1 true, 0 false for the switches).
typedef struct {
	int graph_executor_optimize; // torch::jit::getGraphExecutorOptimize(), see tshim_get_settings
	int executor_mode;           // torch::jit::getExecutorMode()
	int profiling_mode;          // torch::jit::getProfilingMode()
	int tensor_fuser;            // torch::jit::tensorExprFuserEnabled()
	int intra_threads;           // at::get_num_threads(), see tshim_get_settings
	int interop_threads;         // at::get_num_interop_threads()
} tshim_settings;

// tshim_get_settings fills *out. The executor, profiling and fuser
// switches and the inter-op count are process-wide and read as they are.
// Two are per thread in libtorch, and read so that they say what a forward
// runs with:
//   - graph_executor_optimize is the value on the thread of the most recent
//     tshim_forward, read when that forward returned (tshim_forward sets it
//     on its own thread before every call); before any forward, the calling
//     thread's.
//   - intra_threads is the calling thread's OpenMP count, after the count
//     of tshim_set_intra_threads is applied to that thread, as tshim_forward
//     applies it to its own thread before every call (libtorch's OpenMP
//     build keeps the count per thread, and a thread that ran parallel work
//     before at::set_num_threads keeps the old one).
// It fails only if libtorch throws.
char *tshim_get_settings(tshim_settings *out);

// tshim_live is the number of modules and outputs objects not yet freed,
// for leak checks in tests.
size_t tshim_live(void);

#ifdef __cplusplus
}
#endif

#endif // TORCHSHIM_H
