#!/usr/bin/env bash
# Installs what `make run` and `make test` need. Idempotent: each step checks
# first and does nothing when the dependency is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev) # cgo, for the race detector
if ((${#need_apt[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need_apt[*]} with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go is not installed (expected /usr/local/go/bin/go); install Go 1.26 and retry" >&2
  exit 1
fi

# Go modules: downloads only what is missing from the module cache.
go mod download
