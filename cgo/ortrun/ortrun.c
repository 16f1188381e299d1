//go:build cgo && (linux || darwin)

// ortrun.c is the C shim of package ortrun: a few calls over ONNX Runtime's
// C ABI, found at run time (dlopen with RTLD_NOLOAD, OrtGetApiBase) and
// called by slot number in the OrtApi table. The functions ortrun.h
// declares, which Go calls, are documented there; everything else here is
// static.
//
// cgo compiles this file whenever it builds the package, with the #cgo
// CFLAGS of ortrun.go: warnings as errors. The build constraint above, which
// the go command reads in C files too, matches ortrun.go's: on other systems
// (windows, freebsd) ortrun.go is excluded, and a C file left on its own
// would fail a cgo build there ("C source files not allowed when not using
// cgo or SWIG"). Without cgo the go command ignores C files.

// Two more warnings, as errors, for this file only: cgo's generated C, which
// the #cgo CFLAGS also reach, does not pass them (its wrappers have no
// prototypes, and its C.malloc wrapper narrows an unsigned long long to
// size_t on 32-bit systems). -Wmissing-prototypes holds every function here
// that is not static to its declaration in ortrun.h.
#pragma GCC diagnostic error "-Wmissing-prototypes"
#pragma GCC diagnostic error "-Wconversion"

#include "ortrun.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// OrtApiBase, as returned by the library's exported OrtGetApiBase: two
// function pointers. ORT_API_CALL is empty on the platforms we build for.
typedef struct {
	const void *(*get_api)(uint32_t version);
	const char *(*get_version_string)(void);
} ortrun_api_base;

// The real types of the slots we call (ORTRUN_SLOT_<Function> in ortrun.h),
// named ortrun_<Function>_t; ORT's enum parameters are int, as ortrun.h says.
typedef int (*ortrun_GetErrorCode_t)(const OrtStatus *);
typedef const char *(*ortrun_GetErrorMessage_t)(const OrtStatus *);
typedef OrtStatus *(*ortrun_Run_t)(OrtSession *, const OrtRunOptions *, const char *const *, const OrtValue *const *, size_t,
	const char *const *, size_t, OrtValue **);
typedef OrtStatus *(*ortrun_SessionGetOutputCount_t)(const OrtSession *, size_t *);
typedef OrtStatus *(*ortrun_SessionGetOutputTypeInfo_t)(const OrtSession *, size_t, OrtTypeInfo **);
typedef OrtStatus *(*ortrun_SessionGetOutputName_t)(const OrtSession *, size_t, OrtAllocator *, char **);
typedef OrtStatus *(*ortrun_CreateRunOptions_t)(OrtRunOptions **);
typedef OrtStatus *(*ortrun_RunOptionsSetTerminate_t)(OrtRunOptions *);
typedef OrtStatus *(*ortrun_RunOptionsUnsetTerminate_t)(OrtRunOptions *);
typedef OrtStatus *(*ortrun_CreateTensorAsOrtValue_t)(OrtAllocator *, const int64_t *, size_t, int, OrtValue **);
typedef OrtStatus *(*ortrun_CreateTensorWithDataAsOrtValue_t)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int,
	OrtValue **);
typedef OrtStatus *(*ortrun_GetTensorMutableData_t)(OrtValue *, void **);
typedef OrtStatus *(*ortrun_GetStringTensorDataLength_t)(const OrtValue *, size_t *);
typedef OrtStatus *(*ortrun_GetStringTensorContent_t)(const OrtValue *, void *, size_t, size_t *, size_t);
typedef OrtStatus *(*ortrun_CastTypeInfoToTensorInfo_t)(const OrtTypeInfo *, const OrtTensorTypeAndShapeInfo **);
typedef OrtStatus *(*ortrun_GetTensorElementType_t)(const OrtTensorTypeAndShapeInfo *, int *);
typedef OrtStatus *(*ortrun_GetDimensionsCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(*ortrun_GetDimensions_t)(const OrtTensorTypeAndShapeInfo *, int64_t *, size_t);
typedef OrtStatus *(*ortrun_GetTensorShapeElementCount_t)(const OrtTensorTypeAndShapeInfo *, size_t *);
typedef OrtStatus *(*ortrun_GetTensorTypeAndShape_t)(const OrtValue *, OrtTensorTypeAndShapeInfo **);
typedef OrtStatus *(*ortrun_GetValueType_t)(const OrtValue *, int *);
typedef OrtStatus *(*ortrun_CreateCpuMemoryInfo_t)(int, int, OrtMemoryInfo **);
typedef OrtStatus *(*ortrun_AllocatorFree_t)(OrtAllocator *, void *);
typedef OrtStatus *(*ortrun_GetAllocatorWithDefaultOptions_t)(OrtAllocator **);
typedef void (*ortrun_ReleaseStatus_t)(OrtStatus *);
typedef void (*ortrun_ReleaseValue_t)(OrtValue *);
typedef void (*ortrun_ReleaseRunOptions_t)(OrtRunOptions *);
typedef void (*ortrun_ReleaseTypeInfo_t)(OrtTypeInfo *);
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

size_t ortrun_elem_size(int t) {
	return t >= 0 && t < 32 ? ortrun_elem_sizes[t] : 0;
}

// ortrun_live counts the OrtValues the shim holds (created inputs, and
// outputs not yet taken or released), for the tests' leak checks.
static size_t ortrun_live;

size_t ortrun_live_values(void) { return __atomic_load_n(&ortrun_live, __ATOMIC_RELAXED); }
static void ortrun_live_add(size_t n) { __atomic_fetch_add(&ortrun_live, n, __ATOMIC_RELAXED); }
static void ortrun_live_sub(size_t n) { __atomic_fetch_sub(&ortrun_live, n, __ATOMIC_RELAXED); }

static char *ortrun_strdup(const char *s) {
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d != NULL) memcpy(d, s, n);
	return d;
}

ortrun_open_result ortrun_open(const char *path) {
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

ortrun_env_result ortrun_new_env(const ortrun_fn *api) {
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

ortrun_ro_result ortrun_new_run_options(const ortrun_env *env) {
	ortrun_ro_result rr = {NULL, {0}};
	OrtStatus *st = ORTRUN_CALL(env->api, CreateRunOptions)(&rr.ro);
	if (st != NULL) rr.r = ortrun_status(env->api, "CreateRunOptions", st);
	return rr;
}

void ortrun_release_run_options(const ortrun_env *env, OrtRunOptions *ro) {
	ORTRUN_CALL(env->api, ReleaseRunOptions)(ro);
}

void ortrun_set_terminate(const ortrun_env *env, OrtRunOptions *ro) {
	OrtStatus *st = ORTRUN_CALL(env->api, RunOptionsSetTerminate)(ro);
	if (st != NULL) ORTRUN_CALL(env->api, ReleaseStatus)(st);
}

ortrun_result ortrun_unset_terminate(const ortrun_env *env, OrtRunOptions *ro) {
	ortrun_result r = {0};
	ORTRUN_TRY(env->api, RunOptionsUnsetTerminate, ro);
	return r;
}

// ortrun_output_type returns in *type the element type of the session's
// output j, or 0 if it is not a tensor.
static ortrun_result ortrun_output_type(const ortrun_fn *api, const OrtSession *session, size_t j, int *type) {
	ortrun_result r = {0};
	OrtTypeInfo *ti = NULL;
	ORTRUN_TRY(api, SessionGetOutputTypeInfo, session, j, &ti);
	const OrtTensorTypeAndShapeInfo *info = NULL; // owned by ti; NULL when not a tensor
	const char *op = "CastTypeInfoToTensorInfo";
	OrtStatus *st = ORTRUN_CALL(api, CastTypeInfoToTensorInfo)(ti, &info);
	*type = 0;
	if (st == NULL && info != NULL) {
		op = "GetTensorElementType";
		st = ORTRUN_CALL(api, GetTensorElementType)(info, type);
	}
	ORTRUN_CALL(api, ReleaseTypeInfo)(ti);
	if (st != NULL) return ortrun_status(api, op, st);
	return r;
}

ortrun_result ortrun_output_types(const ortrun_env *env, const OrtSession *session, const char *const *names, size_t n,
		int *types) {
	const ortrun_fn *api = env->api;
	ortrun_result r = {0};
	for (size_t i = 0; i < n; i++) types[i] = 0;
	size_t count = 0;
	ORTRUN_TRY(api, SessionGetOutputCount, session, &count);
	for (size_t j = 0; j < count && r.code == ORTRUN_OK; j++) {
		char *name = NULL;
		ORTRUN_TRY(api, SessionGetOutputName, session, j, env->alloc, &name);
		for (size_t i = 0; i < n && r.code == ORTRUN_OK; i++) {
			if (strcmp(name, names[i]) == 0) r = ortrun_output_type(api, session, j, &types[i]);
		}
		OrtStatus *st = ORTRUN_CALL(api, AllocatorFree)(env->alloc, name);
		if (st != NULL && r.code == ORTRUN_OK) r = ortrun_status(api, "AllocatorFree", st);
		else if (st != NULL) ORTRUN_CALL(api, ReleaseStatus)(st);
	}
	return r;
}

static uint32_t ortrun_le32(const unsigned char *p) {
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

ortrun_result ortrun_check_framing(const unsigned char *data, size_t len, size_t n) {
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

// ortrun_wrap creates in *out an OrtValue over the numeric tensor t, without
// copying: t->data must stay valid until *out is released.
static ortrun_result ortrun_wrap(const ortrun_env *env, const ortrun_tensor *t, const int64_t *dims, OrtValue **out) {
	ortrun_result r = {0};
	const int64_t *shape = t->rank > 0 ? dims + t->shape : ortrun_no_dims;
	void *data = t->len > 0 ? t->data : ortrun_no_data;
	ORTRUN_TRY(env->api, CreateTensorWithDataAsOrtValue, env->mem, data, t->len, shape, t->rank, t->type, out);
	ortrun_live_add(1);
	return r;
}

// ortrun_make_input creates the OrtValue for one input in *out. A numeric
// tensor wraps in->data (see ortrun_wrap); a string tensor gets its own copy
// of every element.
static ortrun_result ortrun_make_input(const ortrun_env *env, const ortrun_tensor *in, const int64_t *dims, OrtValue **out) {
	if (in->type != ORTRUN_ELEM_STRING) return ortrun_wrap(env, in, dims, out);
	const ortrun_fn *api = env->api;
	const int64_t *shape = in->rank > 0 ? dims + in->shape : ortrun_no_dims;
	ortrun_result r = ortrun_check_framing(in->data, in->len, in->count);
	if (r.code != ORTRUN_OK) return r;
	ORTRUN_TRY(api, CreateTensorAsOrtValue, env->alloc, shape, in->rank, in->type, out);
	ortrun_live_add(1);
	return ortrun_fill(api, *out, in->data, in->count);
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

void ortrun_release_values(const ortrun_env *env, OrtValue **v, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (v[i] != NULL) {
			ORTRUN_CALL(env->api, ReleaseValue)(v[i]);
			v[i] = NULL;
			ortrun_live_sub(1);
		}
	}
}

ortrun_result ortrun_run(const ortrun_env *env, OrtSession *session, const OrtRunOptions *ro,
		const ortrun_tensor *in, size_t n_in, const int64_t *dims, const char *const *in_names, OrtValue **in_vals,
		const char *const *out_names, size_t n_out, const ortrun_tensor *pre, OrtValue **out_vals, ortrun_output *outs) {
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
	for (size_t i = 0; i < n_out && r.code == ORTRUN_OK; i++) {
		if (pre[i].type == 0) continue;
		r = ortrun_wrap(env, &pre[i], dims, &out_vals[i]);
		if (r.code != ORTRUN_OK) {
			r.side = ORTRUN_SIDE_OUTPUT;
			r.tensor = i;
		}
	}
	if (r.code == ORTRUN_OK) {
		OrtStatus *st = ORTRUN_CALL(api, Run)(session, ro, in_names, (const OrtValue *const *)in_vals, n_in,
			out_names, n_out, out_vals);
		if (st != NULL) r = ortrun_status(api, "Run", st);
		for (size_t i = 0; i < n_out; i++) {
			if (out_vals[i] != NULL && pre[i].type == 0) ortrun_live_add(1);
		}
	}
	ortrun_release_values(env, in_vals, n_in);
	for (size_t i = 0; i < n_out; i++) {
		// The value only wrapped the caller's memory, which holds the
		// output if the run succeeded.
		if (pre[i].type != 0) ortrun_release_values(env, &out_vals[i], 1);
	}
	for (size_t i = 0; i < n_out && r.code == ORTRUN_OK; i++) {
		if (pre[i].type != 0) continue;
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

ortrun_result ortrun_take(const ortrun_env *env, OrtValue *v, const ortrun_output *o, int64_t *dims, unsigned char *data) {
	ortrun_result r = ortrun_copy(env->api, v, o, dims, data);
	ortrun_release_values(env, &v, 1);
	return r;
}
