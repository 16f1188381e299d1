//go:build cgo && linux

// xgbrun.c is the C side of package xgbrun: it loads libxgboost at run
// time, resolves the C API functions it calls with dlsym into a table (see
// xgbrun.h), and calls XGBoost through it. The functions xgbrun.h
// declares are documented there; everything else here is static.
//
// cgo compiles this file with the #cgo CFLAGS of xgbrun.go: any warning is
// an error. The build constraint matches xgbrun.go's, so that a cgo build
// on another system does not find a C file without its Go package.

// As in cgo/ortrun: two more warnings, as errors, for this file only (cgo's
// generated C does not pass them).
#pragma GCC diagnostic error "-Wmissing-prototypes"
#pragma GCC diagnostic error "-Wconversion"

#include "xgbrun.h"
#include "xgbrun_api.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The table. The required functions are set together by xgbrun_open's
// first success and never change after; the OpenMP ones may be NULL (an
// XGBoost built without OpenMP).
static struct {
	xgbrun_XGBoostVersion_t version;
	xgbrun_XGBGetLastError_t last_error;
	xgbrun_XGBoosterCreate_t create;
	xgbrun_XGBoosterFree_t free;
	xgbrun_XGBoosterLoadModelFromBuffer_t load;
	xgbrun_XGBoosterSetParam_t set_param;
	xgbrun_XGBoosterSaveModelToBuffer_t save;
	xgbrun_XGBoosterPredictFromDense_t predict_dense;
	xgbrun_XGDMatrixCreateFromDense_t dmatrix_dense;
	xgbrun_XGDMatrixFree_t dmatrix_free;
	xgbrun_XGBoosterPredictFromDMatrix_t predict_dmatrix;
	xgbrun_XGBSetGlobalConfig_t set_global_config;
	xgbrun_XGProxyDMatrixCreate_t proxy_create;
	xgbrun_XGProxyDMatrixSetDataDense_t proxy_set_dense;

	xgbrun_omp_get_max_threads_t omp_get_max_threads;
	xgbrun_omp_get_num_procs_t omp_get_num_procs;
	xgbrun_omp_set_num_threads_t omp_set_num_threads;
} fns;

static int64_t live_boosters;

int64_t xgbrun_live_boosters(void) { return __atomic_load_n(&live_boosters, __ATOMIC_RELAXED); }

// msgf returns a malloc'd message formatted as printf does, or xgbrun_oom
// when out of memory: never NULL.
__attribute__((format(printf, 1, 2))) static char *msgf(const char *format, ...);

static char *msgf(const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(NULL, 0, format, ap);
	va_end(ap);
	if (n < 0) {
		return xgbrun_oom;
	}
	size_t size = (size_t)n + 1;
	char *m = malloc(size);
	if (m == NULL) {
		return xgbrun_oom;
	}
	va_start(ap, format);
	vsnprintf(m, size, format, ap);
	va_end(ap);
	return m;
}

char xgbrun_oom[] = "out of memory";

// xgb_error returns "<op>: <XGBGetLastError()>" after a failed call.
static char *xgb_error(const char *op) {
	const char *e = fns.last_error();
	return msgf("%s: %s", op, e != NULL && e[0] != 0 ? e : "(XGBoost gave no message)");
}

char *xgbrun_open(const char *path, int min_major, int min_minor, void **handle) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		return msgf("%s", e != NULL ? e : "dlopen failed");
	}
	struct {
		const char *name;
		void **slot;
	} syms[] = {
		{"XGBoostVersion", (void **)&fns.version},
		{"XGBGetLastError", (void **)&fns.last_error},
		{"XGBoosterCreate", (void **)&fns.create},
		{"XGBoosterFree", (void **)&fns.free},
		{"XGBoosterLoadModelFromBuffer", (void **)&fns.load},
		{"XGBoosterSetParam", (void **)&fns.set_param},
		{"XGBoosterSaveModelToBuffer", (void **)&fns.save},
		{"XGBoosterPredictFromDense", (void **)&fns.predict_dense},
		{"XGDMatrixCreateFromDense", (void **)&fns.dmatrix_dense},
		{"XGDMatrixFree", (void **)&fns.dmatrix_free},
		{"XGBoosterPredictFromDMatrix", (void **)&fns.predict_dmatrix},
		{"XGBSetGlobalConfig", (void **)&fns.set_global_config},
		{"XGProxyDMatrixCreate", (void **)&fns.proxy_create},
		{"XGProxyDMatrixSetDataDense", (void **)&fns.proxy_set_dense},
	};
	enum { nsyms = sizeof syms / sizeof syms[0] };
	// Resolve everything before filling the table, so that a library that
	// is refused leaves the table as it was.
	void *found[nsyms];
	for (size_t i = 0; i < nsyms; i++) {
		dlerror();
		found[i] = dlsym(h, syms[i].name);
		if (found[i] == NULL) {
			const char *e = dlerror();
			char *m = msgf("not an XGBoost library of version %d.%d or later: %s", min_major, min_minor,
				e != NULL ? e : syms[i].name);
			dlclose(h);
			return m;
		}
	}
	int major = 0, minor = 0, patch = 0;
	((xgbrun_XGBoostVersion_t)found[0])(&major, &minor, &patch);
	if (major < min_major || (major == min_major && minor < min_minor)) {
		dlclose(h);
		return msgf("XGBoost %d.%d.%d is older than %d.%d", major, minor, patch, min_major, min_minor);
	}
	if (fns.version == NULL) {
		for (size_t i = 0; i < nsyms; i++) {
			*syms[i].slot = found[i];
		}
		// Silence XGBoost's logging to stderr (warnings such as "Loading
		// model from XGBoost < 1.0.0"); errors come back through
		// XGBGetLastError.
		fns.set_global_config("{\"verbosity\":0}");
		// dlsym on the handle searches the library's dependencies too:
		// libgomp, for an XGBoost built with OpenMP.
		fns.omp_get_max_threads = (xgbrun_omp_get_max_threads_t)dlsym(h, "omp_get_max_threads");
		fns.omp_get_num_procs = (xgbrun_omp_get_num_procs_t)dlsym(h, "omp_get_num_procs");
		fns.omp_set_num_threads = (xgbrun_omp_set_num_threads_t)dlsym(h, "omp_set_num_threads");
		if (fns.omp_get_max_threads == NULL || fns.omp_get_num_procs == NULL || fns.omp_set_num_threads == NULL) {
			fns.omp_get_max_threads = NULL;
			fns.omp_get_num_procs = NULL;
			fns.omp_set_num_threads = NULL;
		}
	}
	dlerror();
	*handle = h;
	return NULL;
}

void xgbrun_close(void *handle) { dlclose(handle); }

void xgbrun_version(int *major, int *minor, int *patch) { fns.version(major, minor, patch); }

int xgbrun_max_threads(void) {
	if (fns.omp_get_max_threads == NULL) {
		return 1;
	}
	int procs = fns.omp_get_num_procs(), max = fns.omp_get_max_threads();
	int n = procs < max ? procs : max;
	return n > 0 ? n : 1;
}

// set_threads makes OpenMP's thread count on the calling thread n and
// returns the count to restore, or 0 when there is nothing to restore.
static int set_threads(int n) {
	if (fns.omp_set_num_threads == NULL || n <= 0) {
		return 0;
	}
	int saved = fns.omp_get_max_threads();
	if (saved != n) {
		fns.omp_set_num_threads(n);
	}
	return saved != n ? saved : 0;
}

static void restore_threads(int saved) {
	if (saved > 0) {
		fns.omp_set_num_threads(saved);
	}
}

char *xgbrun_load(const void *buf, uint64_t len, void **booster) {
	void *b = NULL;
	if (fns.create(NULL, 0, &b) != 0) {
		return xgb_error("XGBoosterCreate");
	}
	if (fns.load(b, buf, len) != 0) {
		char *m = xgb_error("XGBoosterLoadModelFromBuffer");
		fns.free(b);
		return m;
	}
	if (fns.set_param(b, "nthread", "0") != 0) {
		char *m = xgb_error("XGBoosterSetParam(nthread)");
		fns.free(b);
		return m;
	}
	__atomic_fetch_add(&live_boosters, 1, __ATOMIC_RELAXED);
	*booster = b;
	return NULL;
}

void xgbrun_free(void *booster) {
	fns.free(booster);
	__atomic_fetch_sub(&live_boosters, 1, __ATOMIC_RELAXED);
}

char *xgbrun_save_ubj(void *booster, char **out, uint64_t *len) {
	uint64_t n = 0;
	const char *p = NULL;
	if (fns.save(booster, "{\"format\":\"ubj\"}", &n, &p) != 0) {
		return xgb_error("XGBoosterSaveModelToBuffer");
	}
	// The buffer is XGBoost's (per thread and booster): copy it now.
	char *c = malloc(n > 0 ? (size_t)n : 1);
	if (c == NULL) {
		return xgbrun_oom;
	}
	memcpy(c, p, (size_t)n);
	*out = c;
	*len = n;
	return NULL;
}

// array_interface writes the __array_interface__ JSON of n×cols float32
// values at rows (version 3, C order, read-only) into buf.
static void array_interface(char *buf, size_t size, const float *rows, uint64_t n, uint64_t cols) {
	snprintf(buf, size, "{\"data\":[%" PRIuPTR ",true],\"shape\":[%" PRIu64 ",%" PRIu64 "],\"typestr\":\"<f4\",\"version\":3}",
		(uintptr_t)rows, n, cols);
}

// take copies a prediction of shape[0:dim] from res into out, which has
// room for out_cap values, and stores the count in *out_len.
static char *take(const char *op, const uint64_t *shape, uint64_t dim, const float *res, float *out, uint64_t out_cap,
	uint64_t *out_len) {
	uint64_t total = 1;
	for (uint64_t i = 0; i < dim; i++) {
		total *= shape[i];
	}
	if (total > out_cap) {
		return msgf("%s: XGBoost returned %" PRIu64 " values, room was made for %" PRIu64, op, total, out_cap);
	}
	memcpy(out, res, (size_t)total * sizeof(float));
	*out_len = total;
	return NULL;
}

// softmax is XGBoost's common::Softmax (src/common/math.h), operation for
// operation, so that its results are bit for bit those of multi:softprob.
static void softmax(float *v, uint64_t k) {
	float wmax = v[0];
	for (uint64_t i = 1; i < k; i++) {
		wmax = fmaxf(v[i], wmax);
	}
	double wsum = 0.0f;
	for (uint64_t i = 0; i < k; i++) {
		v[i] = expf(v[i] - wmax);
		wsum += v[i];
	}
	for (uint64_t i = 0; i < k; i++) {
		v[i] /= (float)wsum;
	}
}

// The prediction configs: Python's, NaN the missing value.
static const char *const dense_configs[2] = {
	"{\"type\":0,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false,\"cache_id\":0,\"missing\":NaN}",
	"{\"type\":1,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false,\"cache_id\":0,\"missing\":NaN}",
};
static const char *const dmatrix_configs[3] = {
	"{\"type\":0,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false}",
	"{\"type\":1,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false}",
	"{\"type\":2,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false}",
};

// The calling thread's proxy DMatrix for in-place prediction, made on its
// first prediction and kept for the thread's life. Without one,
// XGBoosterPredictFromDense makes a DMatrixProxy per call, whose Context
// reads the cgroup's CPU quota from /sys/fs/cgroup (two opens and reads)
// every time: about two thirds of a one-row prediction. A thread runs one
// call at a time, so its proxy is never shared.
static __thread void *tls_proxy;

// A row of zero columns, for the proxy to point at between calls.
static float no_rows[1];

static char *thread_proxy(void **proxy) {
	if (tls_proxy == NULL && fns.proxy_create(&tls_proxy) != 0) {
		tls_proxy = NULL;
		return xgb_error("XGProxyDMatrixCreate");
	}
	*proxy = tls_proxy;
	return NULL;
}

// release_proxy points the proxy at no_rows, so that XGBoost keeps no
// address of the caller's memory after the call (cgo's rule for Go
// memory), though it would not read it again.
static void release_proxy(void *proxy) {
	char ai[192];
	array_interface(ai, sizeof ai, no_rows, 0, 1);
	fns.proxy_set_dense(proxy, ai);
}

char *xgbrun_predict(void *booster, const float *rows, uint64_t n, uint64_t cols, int type, int dmatrix, int threads,
	float *out, uint64_t out_cap, uint64_t softmax_k, uint64_t *out_len) {
	if (type < 0 || type > 2 || (type == 2 && !dmatrix)) {
		return msgf("xgbrun_predict: prediction type %d%s", type, dmatrix ? "" : " in place");
	}
	char ai[192];
	array_interface(ai, sizeof ai, rows, n, cols);
	const uint64_t *shape = NULL;
	uint64_t dim = 0;
	const float *res = NULL;
	int saved = set_threads(threads);
	char *m = NULL;
	if (!dmatrix) {
		void *proxy = NULL;
		m = thread_proxy(&proxy);
		if (m == NULL) {
			if (fns.predict_dense(booster, ai, dense_configs[type], proxy, &shape, &dim, &res) != 0) {
				m = xgb_error("XGBoosterPredictFromDense");
			} else {
				m = take("XGBoosterPredictFromDense", shape, dim, res, out, out_cap, out_len);
			}
			release_proxy(proxy);
		}
	} else {
		char dconfig[64];
		snprintf(dconfig, sizeof dconfig, "{\"missing\":NaN,\"nthread\":%d}", threads > 0 ? threads : 0);
		void *d = NULL;
		if (fns.dmatrix_dense(ai, dconfig, &d) != 0) {
			m = xgb_error("XGDMatrixCreateFromDense");
		} else {
			if (fns.predict_dmatrix(booster, d, dmatrix_configs[type], &shape, &dim, &res) != 0) {
				m = xgb_error("XGBoosterPredictFromDMatrix");
			} else {
				m = take("XGBoosterPredictFromDMatrix", shape, dim, res, out, out_cap, out_len);
			}
			fns.dmatrix_free(d);
		}
	}
	restore_threads(saved);
	if (m == NULL && softmax_k > 0) {
		for (uint64_t i = 0; i + softmax_k <= *out_len; i += softmax_k) {
			softmax(out + i, softmax_k);
		}
	}
	return m;
}
