#!/usr/bin/env bash
# Fetches the ONNX Runtime shared library (the version
# github.com/yalue/onnxruntime_go is built against) from the
# onnxruntime-node npm package into the checkout's cache,
#   .cache/onnxruntime/<version>/linux-<x64|arm64>/libonnxruntime.so.1
# which backend/onnxruntime finds on its own. The work is
# cmd/fetch-onnxruntime's, the command a binary installed with `go install`
# names when it finds no library (it installs into the user's cache folder
# then): `npm pack`, the tarball's sha256 checked against the one pinned in
# internal/ortdist, the library extracted and moved into place atomically,
# a progress line a step with sizes. Idempotent: does nothing when the
# library is already there. Prints the library's path on stdout.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/lib.sh"
command -v npm >/dev/null 2>&1 || apt_install npm
cd "$root"
exec go run ./cmd/fetch-onnxruntime -checkout "$root"
