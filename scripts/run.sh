#!/usr/bin/env bash
# The second half of `make run`, after scripts/deps.sh: builds
# cmd/tritonserver, saying how many packages it compiles and how far it is,
# then serves examples/model_repository with it, the Python-based backends
# of examples/backends beside it (HTTP :8000, gRPC :8001,
# metrics :8002; the server prints a curl line to try). Arguments are
# passed on to tritonserver. TRITONSERVER_BIN names the binary to build
# (default .cache/bin/tritonserver).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TRITONSERVER_BIN:-.cache/bin/tritonserver}
log() { echo "run: $*" >&2; }

start=$SECONDS
total=$(go list -deps ./cmd/tritonserver | grep -c .)
stale=$(go list -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' ./cmd/tritonserver | grep -c . || true)
if ((stale > 0)); then
  log "go build ./cmd/tritonserver: compiling up to $stale of its $total packages (the others are in Go's build cache; a first build, with cgo, takes a few minutes)"
else
  log "go build ./cmd/tritonserver: its $total packages are in Go's build cache; linking"
fi
mkdir -p "$(dirname "$bin")"
# go build -v names each package as it compiles it: a line every 10%; the
# count of packages compiled comes out on stdout.
compiled=$(go build -v -o "$bin" ./cmd/tritonserver 2>&1 | awk -v n="$stale" '
  /^[a-zA-Z0-9._~-]+(\/[a-zA-Z0-9._~+-]+)*$/ && n > 0 {
    done++
    pct = int(100 * done / n)
    if (pct > 100) pct = 100
    if (pct >= next_pct) {
      printf "run: compiled %d of up to %d packages (%d%%)\n", done, n, pct > "/dev/stderr"
      next_pct = pct - pct % 10 + 10
    }
    next
  }
  { print > "/dev/stderr" }
  END { print done + 0 }')
log "built $bin ($(du -m "$bin" | cut -f1) MB, $compiled packages compiled) in $((SECONDS - start)) s"
log "serving examples/model_repository: $bin --model-repository=examples/model_repository --backend-directory=examples/backends $*"
exec "$bin" --model-repository=examples/model_repository --backend-directory=examples/backends "$@"
