// xgbrun.h declares the C side of package xgbrun: xgbrun_open, which
// loads XGBoost's shared library (libxgboost.so) with dlopen and resolves
// the few C API functions the package calls with dlsym, and the calls Go
// makes through them. Go calls only these; it never links against
// libxgboost, so a program that does not load an XGBoost model runs
// without it.
//
// Every function that can fail returns NULL or a message: allocated with
// malloc, which the caller frees with free, or xgbrun_oom (not to be
// freed) when even that failed. A booster is XGBoost's BoosterHandle,
// opaque here.

#ifndef XGBRUN_H
#define XGBRUN_H

#include <stddef.h>
#include <stdint.h>

// xgbrun_oom is the message "out of memory".
extern char xgbrun_oom[];

// xgbrun_open loads the library at path (dlopen RTLD_NOW|RTLD_LOCAL; a
// bare file name goes through the dynamic linker's search), resolves every
// function the package uses and checks that XGBoostVersion is at least
// min_major.min_minor. On success it stores the library's handle in
// *handle (the same handle for a library already loaded) and, the first
// time, fills the table the functions below call through; the caller
// serialises calls, and keeps one library (it closes the handle of any
// other), and sets XGBoost's global verbosity to 0 (silent). On failure
// it returns a message with dlerror()'s text, or the
// version, and closes what it opened.
char *xgbrun_open(const char *path, int min_major, int min_minor, void **handle);

// xgbrun_close drops a reference that xgbrun_open took on a library the
// package does not use (a second path to the library already bound, or a
// different library refused).
void xgbrun_close(void *handle);

// xgbrun_version is XGBoostVersion.
void xgbrun_version(int *major, int *minor, int *patch);

// xgbrun_max_threads is the number of threads XGBoost uses when its
// nthread is 0 (min(omp_get_num_procs(), omp_get_max_threads()) on the
// calling thread), or 1 when the library has no OpenMP.
int xgbrun_max_threads(void);

// xgbrun_load creates a booster and loads the model in buf[0:len] with
// XGBoosterLoadModelFromBuffer (which tells legacy binary, JSON and UBJSON
// apart by their first bytes), then sets its nthread to 0: the thread
// count of each call then comes from OpenMP's setting on the calling
// thread, which xgbrun_predict and xgbrun_contribs set. buf is read during
// the call only.
char *xgbrun_load(const void *buf, uint64_t len, void **booster);

// xgbrun_free frees a booster (XGBoosterFree).
void xgbrun_free(void *booster);

// xgbrun_save_ubj saves the booster's model as UBJSON
// (XGBoosterSaveModelToBuffer) into a buffer allocated with malloc, which
// the caller frees.
char *xgbrun_save_ubj(void *booster, char **out, uint64_t *len);

// xgbrun_predict predicts n rows of cols float32 values (row-major, NaN
// missing) as Python's Booster.predict does: type 0 values (the
// objective's transformation applied), 1 margins, 2 SHAP contributions.
// With dmatrix == 0 it predicts in place (XGBoosterPredictFromDense; not
// for type 2); otherwise it makes a DMatrix of the rows
// (XGDMatrixCreateFromDense, NaN missing), predicts from it
// (XGBoosterPredictFromDMatrix) and frees it. It runs on threads OpenMP
// threads (OpenMP's setting on the calling thread is restored after; 0
// leaves it) and copies the result into out, which has room for out_cap
// values, storing the count in *out_len (a larger result is an error).
// softmax_k > 0 then applies XGBoost's own softmax (common::Softmax) to
// each group of softmax_k values of out. rows and out are used during the
// call only.
char *xgbrun_predict(void *booster, const float *rows, uint64_t n, uint64_t cols, int type, int dmatrix, int threads,
	float *out, uint64_t out_cap, uint64_t softmax_k, uint64_t *out_len);

// xgbrun_live_boosters is the number of boosters loaded and not freed,
// for the tests' leak checks.
int64_t xgbrun_live_boosters(void);

#endif // XGBRUN_H
