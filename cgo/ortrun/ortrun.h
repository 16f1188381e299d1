// ortrun.h declares the C shim of package ortrun as its Go side (ortrun.go)
// uses it: the types that cross the cgo boundary, the result codes, the
// OrtApi slot numbers, and the functions Go calls. The definitions are in
// ortrun.c, which cgo compiles with the package's CFLAGS (-Werror among
// them); ortrun.go's cgo preamble includes this header and nothing of the
// shim besides.

#ifndef ORTRUN_H
#define ORTRUN_H

#include <stddef.h>
#include <stdint.h>

// Our own minimal declarations of the parts of ONNX Runtime's C ABI that this
// shim uses. We do not include onnxruntime_c_api.h: the types are opaque and
// the OrtApi function table is indexed by slot number (see the enum below).
// ORT's enum parameters (ONNXTensorElementDataType, ONNXType, OrtErrorCode,
// OrtAllocatorType, OrtMemType) are passed as int, which is how C passes an
// enum on every ABI we build for.
typedef struct OrtValue OrtValue;
typedef struct OrtStatus OrtStatus;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtAllocator OrtAllocator;
typedef struct OrtSession OrtSession;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTypeInfo OrtTypeInfo;

// A slot of the OrtApi table. The table holds function pointers of many
// types; each is cast to its real type (ortrun_<Function>_t in ortrun.c)
// before it is called.
typedef void (*ortrun_fn)(void);

// ORTRUN_API_VERSION is the OrtApi version we request: the lowest that has
// every function we use (GetResizedStringTensorElementBuffer arrived in 15;
// everything else is original API).
#define ORTRUN_API_VERSION 15

// Slots in the OrtApi table: the 0-based index of each function pointer in
// struct OrtApi, counted in onnxruntime_c_api.h (ORT 1.24.1, shipped with
// github.com/yalue/onnxruntime_go v1.27.0), with the ORT release that
// introduced each function: "original API" marks functions the header gives
// no \since note, which come before the first note (1.11) in the table.
// The table is append-only, so a slot never moves once a release has it.
// slots_internal_test.go recounts the slots and these bounds from the header.
enum {
	ORTRUN_SLOT_GetErrorCode = 1,                          // original API
	ORTRUN_SLOT_GetErrorMessage = 2,                       // original API
	ORTRUN_SLOT_Run = 9,                                   // original API
	ORTRUN_SLOT_SessionGetOutputCount = 31,                // original API
	ORTRUN_SLOT_SessionGetOutputTypeInfo = 34,             // original API
	ORTRUN_SLOT_SessionGetOutputName = 37,                 // original API
	ORTRUN_SLOT_CreateRunOptions = 39,                     // original API
	ORTRUN_SLOT_RunOptionsSetTerminate = 46,               // original API
	ORTRUN_SLOT_RunOptionsUnsetTerminate = 47,             // original API
	ORTRUN_SLOT_CreateTensorAsOrtValue = 48,               // original API
	ORTRUN_SLOT_CreateTensorWithDataAsOrtValue = 49,       // original API
	ORTRUN_SLOT_GetTensorMutableData = 51,                 // original API
	ORTRUN_SLOT_GetStringTensorDataLength = 53,            // original API
	ORTRUN_SLOT_GetStringTensorContent = 54,               // original API
	ORTRUN_SLOT_CastTypeInfoToTensorInfo = 55,             // original API
	ORTRUN_SLOT_GetTensorElementType = 60,                 // original API
	ORTRUN_SLOT_GetDimensionsCount = 61,                   // original API
	ORTRUN_SLOT_GetDimensions = 62,                        // original API
	ORTRUN_SLOT_GetTensorShapeElementCount = 64,           // original API
	ORTRUN_SLOT_GetTensorTypeAndShape = 65,                // original API
	ORTRUN_SLOT_GetValueType = 67,                         // original API
	ORTRUN_SLOT_CreateCpuMemoryInfo = 69,                  // original API
	ORTRUN_SLOT_AllocatorFree = 76,                        // original API
	ORTRUN_SLOT_GetAllocatorWithDefaultOptions = 78,       // original API
	ORTRUN_SLOT_ReleaseStatus = 93,                        // original API
	ORTRUN_SLOT_ReleaseValue = 96,                         // original API
	ORTRUN_SLOT_ReleaseRunOptions = 97,                    // original API
	ORTRUN_SLOT_ReleaseTypeInfo = 98,                      // original API
	ORTRUN_SLOT_ReleaseTensorTypeAndShapeInfo = 99,        // original API
	ORTRUN_SLOT_GetResizedStringTensorElementBuffer = 252, // ORT 1.15 (API 15)
};

// Result codes. Go turns them into errors (see Session.resultErr).
enum {
	ORTRUN_OK = 0,
	ORTRUN_ERR_ORT,        // an ORT call failed: ort_code, op, msg
	ORTRUN_ERR_NO_MEMORY,  // malloc failed: op
	ORTRUN_ERR_PREFIX,     // element index at offset: prefix truncated, value bytes left
	ORTRUN_ERR_LENGTH,     // element index at offset: length value runs past the end, count bytes left
	ORTRUN_ERR_TOO_FEW,    // data holds index elements, tensor has count
	ORTRUN_ERR_TOO_MANY,   // data holds index elements, tensor has count
	ORTRUN_ERR_TRAILING,   // value trailing bytes at offset after count elements
	ORTRUN_ERR_TOO_LONG,   // element index has value bytes, more than a 4-byte prefix can frame
	ORTRUN_ERR_SIZE,       // the byte size overflows size_t: count elements, value bytes/element size
	ORTRUN_ERR_OFFSETS,    // ORT returned inconsistent string offsets at element index
	ORTRUN_ERR_NO_VALUE,   // ORT returned a NULL output
	ORTRUN_ERR_NOT_TENSOR, // the output is an ONNXType value, not a tensor
	ORTRUN_ERR_TYPE,       // the output has element type value, which the shim does not handle
};

// Where a result happened: which input or output (tensor is its index).
enum {
	ORTRUN_SIDE_NONE = 0,
	ORTRUN_SIDE_INPUT,
	ORTRUN_SIDE_OUTPUT,
};

typedef struct {
	int code;
	int ort_code;   // ORTRUN_ERR_ORT: ORT's OrtErrorCode
	const char *op; // static: the ORT function that failed
	char *msg;      // malloc'd ORT error message, or NULL; the caller frees it
	size_t index, offset, count, value;
	int side;
	size_t tensor;
} ortrun_result;

// ortrun_env is what Bind sets up, once per process: the OrtApi table, the
// CPU memory info tensors over Go memory are created with, and ORT's default
// allocator for string inputs and output names. It is never freed.
typedef struct {
	const ortrun_fn *api;
	OrtMemoryInfo *mem;
	OrtAllocator *alloc;
} ortrun_env;

// ortrun_tensor describes a tensor over Go memory: an input, which ORT
// reads, or an output the caller has allocated, which ORT writes. data is
// pinned by the caller for the length of the ortrun_run call; it is NULL
// when len is 0. The shape is dims[shape:shape+rank] of the dims array
// passed with it.
typedef struct {
	void *data;
	size_t len;   // bytes
	size_t count; // elements: the product of the dims
	size_t shape;
	size_t rank;
	int type;     // ONNXTensorElementDataType; for an output, 0: ORT allocates it
} ortrun_tensor;

// ortrun_output describes one output, as ortrun_run found it.
typedef struct {
	size_t rank;
	size_t count;   // elements
	size_t size;    // bytes to hold it: count × element size, or the BYTES-framed size
	size_t strings; // STRING only: the total length of the strings
	int type;       // ONNXTensorElementDataType
} ortrun_output;

typedef struct {
	const ortrun_fn *api;
	char *err; // malloc'd; the caller frees it
} ortrun_open_result;

typedef struct {
	ortrun_env *env;
	ortrun_result r;
} ortrun_env_result;

typedef struct {
	OrtRunOptions *ro;
	ortrun_result r;
} ortrun_ro_result;

// ortrun_open finds the OrtApi of the ONNX Runtime library at path, which
// must already be loaded in this process (RTLD_NOLOAD: we never load a second
// copy). The handle is never closed, so the library stays mapped, and the
// table valid, for the life of the process.
ortrun_open_result ortrun_open(const char *path);

// ortrun_new_env makes the process-wide environment for api.
ortrun_env_result ortrun_new_env(const ortrun_fn *api);

ortrun_ro_result ortrun_new_run_options(const ortrun_env *env);

void ortrun_release_run_options(const ortrun_env *env, OrtRunOptions *ro);

// ortrun_set_terminate makes every run using ro stop as soon as it can.
// ORT reads the flag between kernels, from the thread running the session.
void ortrun_set_terminate(const ortrun_env *env, OrtRunOptions *ro);

ortrun_result ortrun_unset_terminate(const ortrun_env *env, OrtRunOptions *ro);

// ortrun_check_framing checks that data[0:len] is exactly n elements in
// Triton's BYTES framing. It reads nothing outside data and touches no ORT.
ortrun_result ortrun_check_framing(const unsigned char *data, size_t len, size_t n);

// ortrun_output_types sets types[i] to the element type of the session's
// output named names[i], or to 0 when the session has no tensor output of
// that name.
ortrun_result ortrun_output_types(const ortrun_env *env, const OrtSession *session, const char *const *names, size_t n,
	int *types);

// ortrun_run creates the n_in inputs described by in (with their shapes in
// dims), runs session for the n_out outputs named out_names, releases the
// inputs, and describes each output in outs. An output whose pre[i].type is
// not 0 is written by ORT into the caller's memory pre[i] describes (its
// shape in dims too): ORT fails the run if the output has another shape.
// For such an output outs[i] and out_vals[i] are left alone (out_vals[i]
// NULL): the data is in place when ortrun_run returns. in_vals (n_in) and
// out_vals (n_out) are the caller's scratch arrays; on success out_vals
// holds the outputs ORT allocated, which the caller owns (see ortrun_take);
// on failure every value has been released. Go memory reachable from in and
// pre is used only during the call.
ortrun_result ortrun_run(const ortrun_env *env, OrtSession *session, const OrtRunOptions *ro,
	const ortrun_tensor *in, size_t n_in, const int64_t *dims, const char *const *in_names, OrtValue **in_vals,
	const char *const *out_names, size_t n_out, const ortrun_tensor *pre, OrtValue **out_vals, ortrun_output *outs);

// ortrun_take copies the output v, described by o, into dims (o->rank
// entries) and data (o->size bytes), both Go memory used only during the
// call, and releases v, whether or not the copy succeeds.
ortrun_result ortrun_take(const ortrun_env *env, OrtValue *v, const ortrun_output *o, int64_t *dims, unsigned char *data);

// ortrun_release_values releases the non-NULL values of v[0:n] and sets
// them to NULL.
void ortrun_release_values(const ortrun_env *env, OrtValue **v, size_t n);

// ortrun_elem_size is the byte size of an element of ONNX element type t,
// or 0 for STRING and for the types the shim does not handle (see
// ortrun_elem_sizes in ortrun.c).
size_t ortrun_elem_size(int t);

// ortrun_live_values is the number of OrtValues the shim holds (created
// inputs, and outputs not yet taken or released), for the tests' leak
// checks.
size_t ortrun_live_values(void);

#endif // ORTRUN_H
