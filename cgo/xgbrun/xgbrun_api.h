// xgbrun_api.h declares the types of the XGBoost C API functions (and the
// OpenMP ones) that xgbrun.c resolves with dlsym, as XGBoost 1.7's
// xgboost/c_api.h declares them, so that the package builds without
// libxgboost-dev. TestAPITypes compiles these against the real header when
// it is installed: a mismatch is a compile error there.
//
// bst_ulong is c_api.h's uint64_t; BoosterHandle and DMatrixHandle are its
// void pointers.

#ifndef XGBRUN_API_H
#define XGBRUN_API_H

#include <stdint.h>

typedef void (*xgbrun_XGBoostVersion_t)(int *major, int *minor, int *patch);
typedef const char *(*xgbrun_XGBGetLastError_t)(void);
typedef int (*xgbrun_XGBoosterCreate_t)(void *const dmats[], uint64_t len, void **out);
typedef int (*xgbrun_XGBoosterFree_t)(void *handle);
typedef int (*xgbrun_XGBoosterLoadModelFromBuffer_t)(void *handle, const void *buf, uint64_t len);
typedef int (*xgbrun_XGBoosterSetParam_t)(void *handle, const char *name, const char *value);
typedef int (*xgbrun_XGBoosterSaveModelToBuffer_t)(void *handle, char const *config, uint64_t *out_len,
	char const **out_dptr);
typedef int (*xgbrun_XGBoosterPredictFromDense_t)(void *handle, char const *values, char const *config, void *m,
	uint64_t const **out_shape, uint64_t *out_dim, const float **out_result);
typedef int (*xgbrun_XGDMatrixCreateFromDense_t)(char const *data, char const *config, void **out);
typedef int (*xgbrun_XGDMatrixFree_t)(void *handle);
typedef int (*xgbrun_XGProxyDMatrixCreate_t)(void **out);
typedef int (*xgbrun_XGProxyDMatrixSetDataDense_t)(void *handle, char const *data);
typedef int (*xgbrun_XGBSetGlobalConfig_t)(char const *config);
typedef int (*xgbrun_XGBoosterPredictFromDMatrix_t)(void *handle, void *dmat, char const *config,
	uint64_t const **out_shape, uint64_t *out_dim, float const **out_result);

typedef int (*xgbrun_omp_get_max_threads_t)(void);
typedef int (*xgbrun_omp_get_num_procs_t)(void);
typedef void (*xgbrun_omp_set_num_threads_t)(int n);

#endif // XGBRUN_API_H
