//go:build linux || darwin

package ortrun

/*
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

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

// OrtApiBase, as returned by the library's exported OrtGetApiBase: two
// function pointers. ORT_API_CALL is empty on the platforms we build for.
typedef struct {
	const void *(*get_api)(uint32_t version);
	const char *(*get_version_string)(void);
} ortrun_api_base;

// A slot of the OrtApi table. The table holds function pointers of many
// types; each is cast to its real type (below) before it is called.
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
	ORTRUN_SLOT_CreateRunOptions = 39,                     // original API
	ORTRUN_SLOT_RunOptionsSetTerminate = 46,               // original API
	ORTRUN_SLOT_RunOptionsUnsetTerminate = 47,             // original API
	ORTRUN_SLOT_CreateTensorAsOrtValue = 48,               // original API
	ORTRUN_SLOT_CreateTensorWithDataAsOrtValue = 49,       // original API
	ORTRUN_SLOT_GetTensorMutableData = 51,                 // original API
	ORTRUN_SLOT_GetStringTensorDataLength = 53,            // original API
	ORTRUN_SLOT_GetStringTensorContent = 54,               // original API
	ORTRUN_SLOT_GetTensorElementType = 60,                 // original API
	ORTRUN_SLOT_GetDimensionsCount = 61,                   // original API
	ORTRUN_SLOT_GetDimensions = 62,                        // original API
	ORTRUN_SLOT_GetTensorShapeElementCount = 64,           // original API
	ORTRUN_SLOT_GetTensorTypeAndShape = 65,                // original API
	ORTRUN_SLOT_GetValueType = 67,                         // original API
	ORTRUN_SLOT_CreateCpuMemoryInfo = 69,                  // original API
	ORTRUN_SLOT_GetAllocatorWithDefaultOptions = 78,       // original API
	ORTRUN_SLOT_ReleaseStatus = 93,                        // original API
	ORTRUN_SLOT_ReleaseValue = 96,                         // original API
	ORTRUN_SLOT_ReleaseRunOptions = 97,                    // original API
	ORTRUN_SLOT_ReleaseTensorTypeAndShapeInfo = 99,        // original API
	ORTRUN_SLOT_GetResizedStringTensorElementBuffer = 252, // ORT 1.15 (API 15)
};

// The real types of the slots we call, named ortrun_<Function>_t.
typedef int (*ortrun_GetErrorCode_t)(const OrtStatus *);
typedef const char *(*ortrun_GetErrorMessage_t)(const OrtStatus *);
typedef OrtStatus *(*ortrun_Run_t)(OrtSession *, const OrtRunOptions *, const char *const *, const OrtValue *const *, size_t,
	const char *const *, size_t, OrtValue **);
typedef OrtStatus *(*ortrun_CreateRunOptions_t)(OrtRunOptions **);
typedef OrtStatus *(*ortrun_RunOptionsSetTerminate_t)(OrtRunOptions *);
typedef OrtStatus *(*ortrun_RunOptionsUnsetTerminate_t)(OrtRunOptions *);
typedef OrtStatus *(*ortrun_CreateTensorAsOrtValue_t)(OrtAllocator *, const int64_t *, size_t, int, OrtValue **);
typedef OrtStatus *(*ortrun_CreateTensorWithDataAsOrtValue_t)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int,
	OrtValue **);
typedef OrtStatus *(*ortrun_GetTensorMutableData_t)(OrtValue *, void **);
typedef OrtStatus *(*ortrun_GetStringTensorDataLength_t)(const OrtValue *, size_t *);
typedef OrtStatus *(*ortrun_GetStringTensorContent_t)(const OrtValue *, void *, size_t, size_t *, size_t);
typedef OrtStatus *(*ortrun_GetTensorElementType_t)(const OrtTensorTypeAndShapeInfo *, int *);
typedef OrtStatus *(*ortrun_GetDimensionsCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(*ortrun_GetDimensions_t)(const OrtTensorTypeAndShapeInfo *, int64_t *, size_t);
typedef OrtStatus *(*ortrun_GetTensorShapeElementCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(*ortrun_GetTensorTypeAndShape_t)(const OrtValue *, OrtTensorTypeAndShapeInfo **);
typedef OrtStatus *(*ortrun_GetValueType_t)(const OrtValue *, int *);
typedef OrtStatus *(*ortrun_CreateCpuMemoryInfo_t)(int, int, OrtMemoryInfo **);
typedef OrtStatus *(*ortrun_GetAllocatorWithDefaultOptions_t)(OrtAllocator **);
typedef void (*ortrun_ReleaseStatus_t)(OrtStatus *);
typedef void (*ortrun_ReleaseValue_t)(OrtValue *);
typedef void (*ortrun_ReleaseRunOptions_t)(OrtRunOptions *);
typedef void (*ortrun_ReleaseTensorTypeAndShapeInfo_t)(OrtTensorTypeAndShapeInfo *);
typedef OrtStatus *(*ortrun_GetResizedStringTensorElementBuffer_t)(OrtValue *, size_t, size_t, char **);

// ORTRUN_CALL(api, F) is the function in F's slot of api, cast to F's type.
#define ORTRUN_CALL(api, name) ((ortrun_##name##_t)(api)[ORTRUN_SLOT_##name])

// Values of ORT enums we use.
enum {
	ORTRUN_ONNX_TYPE_TENSOR = 1,   // ONNXType
	ORTRUN_ELEM_STRING = 8,        // ONNXTensorElementDataType
	ORTRUN_ARENA_ALLOCATOR = 1,    // OrtAllocatorType: OrtArenaAllocator, as onnxruntime_go uses
	ORTRUN_MEM_TYPE_DEFAULT = 0,   // OrtMemType: OrtMemTypeDefault
};

// ortrun_elem_sizes[t] is the byte size of an element of ONNX element type
// t, or 0 for STRING and for the types the shim does not handle (complex,
// float8, 4- and 2-bit types). Go's elemSize must agree (TestElemSizes).
static const unsigned char ortrun_elem_sizes[32] = {
	[1] = 4,  // FLOAT
	[2] = 1,  // UINT8
	[3] = 1,  // INT8
	[4] = 2,  // UINT16
	[5] = 2,  // INT16
	[6] = 4,  // INT32
	[7] = 8,  // INT64
	[9] = 1,  // BOOL
	[10] = 2, // FLOAT16
	[11] = 8, // DOUBLE
	[12] = 4, // UINT32
	[13] = 8, // UINT64
	[16] = 2, // BFLOAT16
};

static size_t ortrun_elem_size(int t) {
	return t >= 0 && t < 32 ? ortrun_elem_sizes[t] : 0;
}

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
// CPU memory info input tensors are created with, and ORT's default
// allocator for string inputs. It is never freed.
typedef struct {
	const ortrun_fn *api;
	OrtMemoryInfo *mem;
	OrtAllocator *alloc;
} ortrun_env;

// ortrun_input describes one input tensor. data is Go memory, pinned by the
// caller for the length of the ortrun_run call; it is NULL when len is 0.
// The shape is dims[shape:shape+rank] of the dims array passed with it.
typedef struct {
	const void *data;
	size_t len;   // bytes
	size_t count; // elements: the product of the dims
	size_t shape;
	size_t rank;
	int type;     // ONNXTensorElementDataType
} ortrun_input;

// ortrun_output describes one output, as ortrun_run found it.
typedef struct {
	size_t rank;
	size_t count;   // elements
	size_t size;    // bytes to hold it: count × element size, or the BYTES-framed size
	size_t strings; // STRING only: the total length of the strings
	int type;       // ONNXTensorElementDataType
} ortrun_output;

// ortrun_live counts the OrtValues the shim holds (created inputs, and
// outputs not yet taken or released), for the tests' leak checks.
static size_t ortrun_live;

static size_t ortrun_live_values(void) { return __atomic_load_n(&ortrun_live, __ATOMIC_RELAXED); }
static void ortrun_live_add(size_t n) { __atomic_fetch_add(&ortrun_live, n, __ATOMIC_RELAXED); }
static void ortrun_live_sub(size_t n) { __atomic_fetch_sub(&ortrun_live, n, __ATOMIC_RELAXED); }

static char *ortrun_strdup(const char *s) {
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d != NULL) memcpy(d, s, n);
	return d;
}

typedef struct {
	const ortrun_fn *api;
	char *err; // malloc'd; the caller frees it
} ortrun_open_result;

// ortrun_open finds the OrtApi of the ONNX Runtime library at path, which
// must already be loaded in this process (RTLD_NOLOAD: we never load a second
// copy). The handle is never closed, so the library stays mapped, and the
// table valid, for the life of the process.
static ortrun_open_result ortrun_open(const char *path) {
	ortrun_open_result r = {NULL, NULL};
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (h == NULL) {
		const char *e = dlerror();
		char buf[1024];
		snprintf(buf, sizeof buf,
			"the library is not loaded in this process (%s); initialise onnxruntime_go from this path first",
			e != NULL ? e : "dlopen with RTLD_NOLOAD failed");
		r.err = ortrun_strdup(buf);
		return r;
	}
	const ortrun_api_base *(*get_base)(void) = (const ortrun_api_base *(*)(void))dlsym(h, "OrtGetApiBase");
	if (get_base == NULL) {
		const char *e = dlerror();
		r.err = ortrun_strdup(e != NULL ? e : "OrtGetApiBase not found");
		dlclose(h);
		return r;
	}
	const ortrun_api_base *base = get_base();
	const void *api = base != NULL ? base->get_api(ORTRUN_API_VERSION) : NULL;
	if (api == NULL) {
		char buf[256];
		snprintf(buf, sizeof buf, "ONNX Runtime %s does not offer OrtApi version %d (needs ONNX Runtime 1.%d or later)",
			base != NULL ? base->get_version_string() : "?", ORTRUN_API_VERSION, ORTRUN_API_VERSION);
		r.err = ortrun_strdup(buf);
		dlclose(h);
		return r;
	}
	r.api = (const ortrun_fn *)api;
	return r;
}

// ortrun_status turns a failed ORT call into a result, taking ownership of
// (and releasing) the status.
static ortrun_result ortrun_status(const ortrun_fn *api, const char *op, OrtStatus *st) {
	ortrun_result r = {0};
	r.code = ORTRUN_ERR_ORT;
	r.op = op;
	r.ort_code = ORTRUN_CALL(api, GetErrorCode)(st);
	r.msg = ortrun_strdup(ORTRUN_CALL(api, GetErrorMessage)(st));
	ORTRUN_CALL(api, ReleaseStatus)(st);
	return r;
}

#define ORTRUN_TRY(api, name, ...) do { \
	OrtStatus *st_ = ORTRUN_CALL(api, name)(__VA_ARGS__); \
	if (st_ != NULL) return ortrun_status(api, #name, st_); \
} while (0)

typedef struct {
	ortrun_env *env;
	ortrun_result r;
} ortrun_env_result;

// ortrun_new_env makes the process-wide environment for api.
static ortrun_env_result ortrun_new_env(const ortrun_fn *api) {
	ortrun_env_result er = {NULL, {0}};
	ortrun_env *env = calloc(1, sizeof *env);
	if (env == NULL) {
		er.r.code = ORTRUN_ERR_NO_MEMORY;
		er.r.op = "calloc";
		return er;
	}
	env->api = api;
	OrtStatus *st = ORTRUN_CALL(api, CreateCpuMemoryInfo)(ORTRUN_ARENA_ALLOCATOR, ORTRUN_MEM_TYPE_DEFAULT, &env->mem);
	if (st == NULL) {
		st = ORTRUN_CALL(api, GetAllocatorWithDefaultOptions)(&env->alloc);
		if (st != NULL) {
			// The memory info stays: one small leak on a failure that does
			// not happen, rather than a ReleaseMemoryInfo slot to maintain.
			er.r = ortrun_status(api, "GetAllocatorWithDefaultOptions", st);
			free(env);
			return er;
		}
	} else {
		er.r = ortrun_status(api, "CreateCpuMemoryInfo", st);
		free(env);
		return er;
	}
	er.env = env;
	return er;
}

typedef struct {
	OrtRunOptions *ro;
	ortrun_result r;
} ortrun_ro_result;

static ortrun_ro_result ortrun_new_run_options(const ortrun_env *env) {
	ortrun_ro_result rr = {NULL, {0}};
	OrtStatus *st = ORTRUN_CALL(env->api, CreateRunOptions)(&rr.ro);
	if (st != NULL) rr.r = ortrun_status(env->api, "CreateRunOptions", st);
	return rr;
}

static void ortrun_release_run_options(const ortrun_env *env, OrtRunOptions *ro) {
	ORTRUN_CALL(env->api, ReleaseRunOptions)(ro);
}

// ortrun_set_terminate makes every run using ro stop as soon as it can.
// ORT reads the flag between kernels, from the thread running the session.
static void ortrun_set_terminate(const ortrun_env *env, OrtRunOptions *ro) {
	OrtStatus *st = ORTRUN_CALL(env->api, RunOptionsSetTerminate)(ro);
	if (st != NULL) ORTRUN_CALL(env->api, ReleaseStatus)(st);
}

static ortrun_result ortrun_unset_terminate(const ortrun_env *env, OrtRunOptions *ro) {
	ortrun_result r = {0};
	ORTRUN_TRY(env->api, RunOptionsUnsetTerminate, ro);
	return r;
}

static uint32_t ortrun_le32(const unsigned char *p) {
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// ortrun_check_framing checks that data[0:len] is exactly n elements in
// Triton's BYTES framing. It reads nothing outside data and touches no ORT.
static ortrun_result ortrun_check_framing(const unsigned char *data, size_t len, size_t n) {
	ortrun_result r = {0};
	size_t off = 0, i = 0;
	for (;; i++) {
		size_t rest = len - off;
		if (i == n && rest == 0) return r;
		if (rest == 0) {
			r.code = ORTRUN_ERR_TOO_FEW;
			r.index = i;
			r.count = n;
			return r;
		}
		if (rest < 4) {
			r.code = i < n ? ORTRUN_ERR_PREFIX : ORTRUN_ERR_TRAILING;
			break;
		}
		uint32_t l = ortrun_le32(data + off);
		if ((size_t)l > rest - 4) {
			r.code = i < n ? ORTRUN_ERR_LENGTH : ORTRUN_ERR_TRAILING;
			break;
		}
		off += 4 + (size_t)l;
		if (i >= n && off == len) {
			// Everything after element n-1 frames cleanly: extra elements.
			r.code = ORTRUN_ERR_TOO_MANY;
			r.index = i + 1;
			r.count = n;
			return r;
		}
	}
	if (r.code == ORTRUN_ERR_TRAILING) {
		// Report from the end of element n-1, not from where the walk stopped.
		size_t end = 0;
		for (size_t j = 0; j < n; j++) end += 4 + (size_t)ortrun_le32(data + end);
		r.offset = end;
		r.value = len - end;
		r.count = n;
		return r;
	}
	r.index = i;
	r.offset = off;
	r.count = len - off - (r.code == ORTRUN_ERR_LENGTH ? 4 : 0);
	r.value = r.code == ORTRUN_ERR_LENGTH ? ortrun_le32(data + off) : len - off;
	return r;
}

// ortrun_fill sets the n elements of the string tensor v from data, which
// ortrun_check_framing has accepted as exactly n framed elements.
static ortrun_result ortrun_fill(const ortrun_fn *api, OrtValue *v, const unsigned char *data, size_t n) {
	ortrun_result r = {0};
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = ortrun_le32(data + off);
		char *buf = NULL;
		ORTRUN_TRY(api, GetResizedStringTensorElementBuffer, v, i, l, &buf);
		if (l > 0) memcpy(buf, data + off + 4, l);
		off += 4 + l;
	}
	return r;
}

// Stand-ins for empty Go data and rank-0 shapes: ORT gets a valid pointer
// even when it reads nothing through it.
static const int64_t ortrun_no_dims[1];
static unsigned char ortrun_no_data[8];

// ortrun_make_input creates the OrtValue for one input in *out. A numeric
// tensor wraps in->data without copying (so in->data must stay valid until
// *out is released); a string tensor gets its own copy of every element.
static ortrun_result ortrun_make_input(const ortrun_env *env, const ortrun_input *in, const int64_t *dims, OrtValue **out) {
	const ortrun_fn *api = env->api;
	const int64_t *shape = in->rank > 0 ? dims + in->shape : ortrun_no_dims;
	ortrun_result r = {0};
	if (in->type == ORTRUN_ELEM_STRING) {
		r = ortrun_check_framing(in->data, in->len, in->count);
		if (r.code != ORTRUN_OK) return r;
		ORTRUN_TRY(api, CreateTensorAsOrtValue, env->alloc, shape, in->rank, in->type, out);
		ortrun_live_add(1);
		return ortrun_fill(api, *out, in->data, in->count);
	}
	void *data = in->len > 0 ? (void *)in->data : ortrun_no_data;
	ORTRUN_TRY(api, CreateTensorWithDataAsOrtValue, env->mem, data, in->len, shape, in->rank, in->type, out);
	ortrun_live_add(1);
	return r;
}

// ortrun_describe fills *o from the output v, or says why the shim cannot
// return it.
static ortrun_result ortrun_describe(const ortrun_fn *api, const OrtValue *v, ortrun_output *o) {
	ortrun_result r = {0};
	if (v == NULL) {
		r.code = ORTRUN_ERR_NO_VALUE;
		return r;
	}
	int vt = 0;
	ORTRUN_TRY(api, GetValueType, v, &vt);
	if (vt != ORTRUN_ONNX_TYPE_TENSOR) {
		r.code = ORTRUN_ERR_NOT_TENSOR;
		r.value = (size_t)vt;
		return r;
	}
	OrtTensorTypeAndShapeInfo *info = NULL;
	ORTRUN_TRY(api, GetTensorTypeAndShape, v, &info);
	const char *op = "GetTensorElementType";
	OrtStatus *st = ORTRUN_CALL(api, GetTensorElementType)(info, &o->type);
	if (st == NULL) {
		op = "GetDimensionsCount";
		st = ORTRUN_CALL(api, GetDimensionsCount)(info, &o->rank);
	}
	if (st == NULL) {
		op = "GetTensorShapeElementCount";
		st = ORTRUN_CALL(api, GetTensorShapeElementCount)(info, &o->count);
	}
	ORTRUN_CALL(api, ReleaseTensorTypeAndShapeInfo)(info);
	if (st != NULL) return ortrun_status(api, op, st);
	o->strings = 0;
	if (o->type == ORTRUN_ELEM_STRING) {
		ORTRUN_TRY(api, GetStringTensorDataLength, v, &o->strings);
		if (o->count > (SIZE_MAX - o->strings) / 4) {
			r.code = ORTRUN_ERR_SIZE;
			r.count = o->count;
			r.value = o->strings;
			return r;
		}
		o->size = 4 * o->count + o->strings;
		return r;
	}
	size_t es = ortrun_elem_size(o->type);
	if (es == 0) {
		r.code = ORTRUN_ERR_TYPE;
		r.value = (size_t)o->type;
		return r;
	}
	if (o->count > SIZE_MAX / es) {
		r.code = ORTRUN_ERR_SIZE;
		r.count = o->count;
		r.value = es;
		return r;
	}
	o->size = o->count * es;
	return r;
}

// ortrun_release_values releases the non-NULL values of v[0:n] and sets
// them to NULL.
static void ortrun_release_values(const ortrun_env *env, OrtValue **v, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (v[i] != NULL) {
			ORTRUN_CALL(env->api, ReleaseValue)(v[i]);
			v[i] = NULL;
			ortrun_live_sub(1);
		}
	}
}

// ortrun_run creates the n_in inputs described by in (with their shapes in
// dims), runs session for the n_out outputs named out_names, releases the
// inputs, and describes each output in outs. in_vals (n_in) and out_vals
// (n_out) are the caller's scratch arrays; on success out_vals holds the
// outputs, which the caller owns (see ortrun_take); on failure every value
// has been released. Go memory reachable from in is used only during the
// call.
static ortrun_result ortrun_run(const ortrun_env *env, OrtSession *session, const OrtRunOptions *ro,
		const ortrun_input *in, size_t n_in, const int64_t *dims, const char *const *in_names, OrtValue **in_vals,
		const char *const *out_names, size_t n_out, OrtValue **out_vals, ortrun_output *outs) {
	const ortrun_fn *api = env->api;
	ortrun_result r = {0};
	for (size_t i = 0; i < n_in; i++) in_vals[i] = NULL;
	for (size_t i = 0; i < n_out; i++) out_vals[i] = NULL;
	for (size_t i = 0; i < n_in && r.code == ORTRUN_OK; i++) {
		r = ortrun_make_input(env, &in[i], dims, &in_vals[i]);
		if (r.code != ORTRUN_OK) {
			r.side = ORTRUN_SIDE_INPUT;
			r.tensor = i;
		}
	}
	if (r.code == ORTRUN_OK) {
		OrtStatus *st = ORTRUN_CALL(api, Run)(session, ro, in_names, (const OrtValue *const *)in_vals, n_in,
			out_names, n_out, out_vals);
		if (st != NULL) r = ortrun_status(api, "Run", st);
		for (size_t i = 0; i < n_out; i++) {
			if (out_vals[i] != NULL) ortrun_live_add(1);
		}
	}
	ortrun_release_values(env, in_vals, n_in);
	for (size_t i = 0; i < n_out && r.code == ORTRUN_OK; i++) {
		r = ortrun_describe(api, out_vals[i], &outs[i]);
		if (r.code != ORTRUN_OK) {
			r.side = ORTRUN_SIDE_OUTPUT;
			r.tensor = i;
		}
	}
	if (r.code != ORTRUN_OK) ortrun_release_values(env, out_vals, n_out);
	return r;
}

// ortrun_frame writes the n strings of v, total bytes in all, to out in
// Triton's BYTES framing; out has room for exactly 4n + total bytes.
//
// GetStringTensorContent writes all strings back to back, so we let it write
// them at the tail of the output, out[4n:], and then slide each one forward
// to its place after its length prefix. Element i moves from 4n+off[i] to
// 4(i+1)+off[i], never later, and its prefix ends at or before where element
// i+1 starts, so walking i upward never overwrites bytes not yet moved.
static ortrun_result ortrun_frame(const ortrun_fn *api, const OrtValue *v, unsigned char *out, size_t n, size_t total) {
	ortrun_result r = {0};
	if (n == 0) return r;
	if (total == 0) {
		memset(out, 0, 4 * n);
		return r;
	}
	size_t *offs = malloc(n * sizeof *offs);
	if (offs == NULL) {
		r.code = ORTRUN_ERR_NO_MEMORY;
		r.op = "malloc";
		return r;
	}
	unsigned char *tail = out + 4 * n;
	OrtStatus *st = ORTRUN_CALL(api, GetStringTensorContent)(v, tail, total, offs, n);
	if (st != NULL) {
		free(offs);
		return ortrun_status(api, "GetStringTensorContent", st);
	}
	for (size_t i = 0; i < n; i++) {
		size_t start = offs[i], end = i + 1 < n ? offs[i + 1] : total;
		if (start > end || end > total) {
			free(offs);
			r.code = ORTRUN_ERR_OFFSETS;
			r.index = i;
			return r;
		}
		size_t l = end - start;
		if (l > UINT32_MAX) {
			free(offs);
			r.code = ORTRUN_ERR_TOO_LONG;
			r.index = i;
			r.value = l;
			return r;
		}
		unsigned char *p = out + 4 * i + start;
		memmove(p + 4, tail + start, l);
		p[0] = (unsigned char)l;
		p[1] = (unsigned char)(l >> 8);
		p[2] = (unsigned char)(l >> 16);
		p[3] = (unsigned char)(l >> 24);
	}
	free(offs);
	return r;
}

static ortrun_result ortrun_copy(const ortrun_fn *api, OrtValue *v, const ortrun_output *o, int64_t *dims, unsigned char *data) {
	ortrun_result r = {0};
	if (o->rank > 0) {
		OrtTensorTypeAndShapeInfo *info = NULL;
		ORTRUN_TRY(api, GetTensorTypeAndShape, v, &info);
		OrtStatus *st = ORTRUN_CALL(api, GetDimensions)(info, dims, o->rank);
		ORTRUN_CALL(api, ReleaseTensorTypeAndShapeInfo)(info);
		if (st != NULL) return ortrun_status(api, "GetDimensions", st);
	}
	if (o->type == ORTRUN_ELEM_STRING) return ortrun_frame(api, v, data, o->count, o->strings);
	if (o->size > 0) {
		void *p = NULL;
		ORTRUN_TRY(api, GetTensorMutableData, v, &p);
		memcpy(data, p, o->size);
	}
	return r;
}

// ortrun_take copies the output v, described by o, into dims (o->rank
// entries) and data (o->size bytes), both Go memory used only during the
// call, and releases v, whether or not the copy succeeds.
static ortrun_result ortrun_take(const ortrun_env *env, OrtValue *v, const ortrun_output *o, int64_t *dims, unsigned char *data) {
	ortrun_result r = ortrun_copy(env->api, v, o, dims, data);
	ortrun_release_values(env, &v, 1);
	return r;
}
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
