package xgbrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAPITypes compiles xgbrun_api.h's function types against XGBoost's
// own header (libxgboost-dev's xgboost/c_api.h) and OpenMP's: each
// function must convert to its type without a warning, so a declaration
// that drifts from the library's fails here rather than at a call. Without
// the header the test is skipped, and fails under CI=true (scripts/deps.sh
// installs libxgboost-dev).
func TestAPITypes(t *testing.T) {
	const header = "/usr/include/xgboost/c_api.h"
	if _, err := os.Stat(header); err != nil {
		msg := header + " is missing; run make deps (scripts/deps.sh installs libxgboost-dev)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	src := `#include <xgboost/c_api.h>
#include <omp.h>
#include "xgbrun_api.h"
xgbrun_XGBoostVersion_t f1 = XGBoostVersion;
xgbrun_XGBGetLastError_t f2 = XGBGetLastError;
xgbrun_XGBoosterCreate_t f3 = XGBoosterCreate;
xgbrun_XGBoosterFree_t f4 = XGBoosterFree;
xgbrun_XGBoosterLoadModelFromBuffer_t f5 = XGBoosterLoadModelFromBuffer;
xgbrun_XGBoosterSetParam_t f6 = XGBoosterSetParam;
xgbrun_XGBoosterSaveModelToBuffer_t f7 = XGBoosterSaveModelToBuffer;
xgbrun_XGBoosterPredictFromDense_t f8 = XGBoosterPredictFromDense;
xgbrun_XGDMatrixCreateFromDense_t f9 = XGDMatrixCreateFromDense;
xgbrun_XGDMatrixFree_t f10 = XGDMatrixFree;
xgbrun_XGBSetGlobalConfig_t f11 = XGBSetGlobalConfig;
xgbrun_XGProxyDMatrixCreate_t f16 = XGProxyDMatrixCreate;
xgbrun_XGProxyDMatrixSetDataDense_t f17 = XGProxyDMatrixSetDataDense;
xgbrun_XGBoosterPredictFromDMatrix_t f12 = XGBoosterPredictFromDMatrix;
xgbrun_omp_get_max_threads_t f13 = omp_get_max_threads;
xgbrun_omp_get_num_procs_t f14 = omp_get_num_procs;
xgbrun_omp_set_num_threads_t f15 = omp_set_num_threads;
`
	dir := t.TempDir()
	file := filepath.Join(dir, "api_check.c")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", wd, file).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
}
