#!/usr/bin/env bash
# Fetches the ONNX Runtime 1.24.1 shared library (the version
# github.com/yalue/onnxruntime_go v1.27.0 is built against) from the
# onnxruntime-node npm package, checks the package's sha256, and extracts
# libonnxruntime.so.1 for this machine's architecture into
#   .cache/onnxruntime/1.24.1/linux-<x64|arm64>/libonnxruntime.so.1
# which backend/onnxruntime finds on its own. Idempotent: does nothing when
# the library is already there. Prints the library's path on stdout.
set -euo pipefail

VERSION=1.24.1
PACKAGE="onnxruntime-node@$VERSION"
SHA256=57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "fetch-onnxruntime: no ONNX Runtime build for $(uname -m) in $PACKAGE" >&2; exit 1 ;;
esac
dest="$root/.cache/onnxruntime/$VERSION/linux-$arch"
lib="$dest/libonnxruntime.so.1"
if [ -s "$lib" ]; then
  echo "$lib"
  exit 0
fi

. "$root/scripts/lib.sh"
command -v npm >/dev/null 2>&1 || apt_install npm

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch-onnxruntime: fetching $PACKAGE (about 85 MB)" >&2
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null)
tgz="$tmp/onnxruntime-node-$VERSION.tgz"
got=$(sha256sum "$tgz" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch-onnxruntime: sha256 of $PACKAGE is $got, want $SHA256; refusing to use it" >&2
  exit 1
fi
member="package/bin/napi-v6/linux/$arch/libonnxruntime.so.1"
tar -xzf "$tgz" -C "$tmp" "$member"
mkdir -p "$dest"
mv "$tmp/$member" "$lib.tmp"
mv "$lib.tmp" "$lib" # atomic: a half-written library is never found
echo "fetch-onnxruntime: installed $lib" >&2
echo "$lib"
