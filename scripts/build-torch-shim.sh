#!/usr/bin/env bash
# Builds the PyTorch shim, the C ABI over libtorch that cgo/torchrun loads
# with dlopen (Triton's layout: <backend-dir>/pytorch/libtriton_pytorch.so):
#   cgo/torchshim/torchshim.cc -> .cache/backends/pytorch/libtriton_pytorch.so
# Installs Debian's libtorch-dev (libtorch 1.13, without recommended
# packages) first when its headers are missing. Idempotent: rebuilds only
# when a source under cgo/torchshim is newer than the library, or the
# library is missing. Warnings are errors; libtorch's own headers are
# included with -isystem, so only ours are checked. Prints the library's
# path on stdout and a progress line on stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/lib.sh"
cd "$root"

src=cgo/torchshim
out=.cache/backends/pytorch/libtriton_pytorch.so
inc=/usr/include/torch/csrc/api/include

if [ ! -f "$inc/torch/torch.h" ] || ! command -v g++ >/dev/null 2>&1; then
	apt_install --no-install-recommends libtorch-dev g++
fi

stale=0
if [ ! -f "$out" ]; then
	stale=1
else
	for f in "$src"/*.cc "$src"/*.h "$0"; do
		[ "$f" -nt "$out" ] && stale=1
	done
fi
if [ "$stale" = 0 ]; then
	echo "deps: PyTorch shim: $out is up to date" >&2
	echo "$root/$out"
	exit 0
fi

mkdir -p "$(dirname "$out")"
start=$SECONDS
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
g++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra -Werror \
	-isystem "$inc" \
	-Wl,--no-undefined -Wl,--as-needed \
	-o "$tmp" "$src"/torchshim.cc \
	-ltorch -ltorch_cpu -lc10
mv -f "$tmp" "$out"
echo "deps: PyTorch shim: built $out ($(du -k "$out" | cut -f1) KiB, libtorch $(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo '?'), $((SECONDS - start)) s)" >&2
echo "$root/$out"
