#!/usr/bin/env bash
# Installs what `make run` and `make test` need. Idempotent: each step checks
# first and does nothing when the dependency is already there.
#   - apt: gcc (cgo, the race detector), npm (fetching ONNX Runtime and the
#     real models), python3-numpy (the Python backend's stubs run Debian's
#     /usr/bin/python3 with numpy), python3-onnx and python3-torch (the
#     test-model generators; python3-torch without recommended packages);
#   - Go modules, and staticcheck (pinned; make lint, run by make test)
#     into .cache/bin;
#   - ONNX Runtime 1.24.1 (scripts/fetch-onnxruntime.sh) and the real models
#     of the ONNX Runtime tests (scripts/fetch-models.sh), into .cache/;
#   - the PyTorch shim .cache/backends/pytorch/libtriton_pytorch.so, built
#     from cgo/torchshim against Debian's libtorch-dev, which it installs
#     (scripts/build-torch-shim.sh);
#   - apt: libxgboost-dev (XGBoost 1.7.4: libxgboost0's library, which the
#     FIL backend loads at run time for XGBoost models, and the C API header
#     that cgo/xgbrun's tests check its declarations against) and
#     python3-xgboost (scripts/gen-fil-models.py).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

need_apt=()
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need_apt+=(python3 python3-numpy)
/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1 || need_apt+=(python3-onnx)
((${#need_apt[@]} == 0)) || apt_install "${need_apt[@]}"
# python3-torch with libtorch-dev (the shim's headers, scripts/build-torch-shim.sh): one apt run.
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || apt_install --no-install-recommends python3-torch libtorch-dev g++
# XGBoost's library and header, and its Python package: one apt run.
{ [ -e /usr/include/xgboost/c_api.h ] && /usr/bin/python3 -c 'import xgboost' >/dev/null 2>&1; } ||
  apt_install libxgboost-dev python3-xgboost

if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed (expected /usr/local/go/bin/go); install Go 1.26 and retry" >&2
  exit 1
fi
start=$SECONDS
go mod download
echo "deps: Go modules: the $(go list -m all | grep -c .) modules of go.mod are in the module cache ($((SECONDS - start)) s)" >&2
# Release 2026.2.2; built with the go command in use, it knows our Go version.
go_install honnef.co/go/tools/cmd/staticcheck v0.8.2

# Each says what it fetches, with sizes, or that it has nothing to do.
scripts/fetch-onnxruntime.sh >/dev/null
scripts/fetch-models.sh >/dev/null
scripts/build-torch-shim.sh >/dev/null
