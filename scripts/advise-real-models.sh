#!/usr/bin/env bash
# Runs the batching advisor (perf_analyzer --advise, in-process) on the two
# real models whose settings docs/performance.md records by hand:
#   silero   Silero VAD v6, batch-first variant (.cache/models/silero_vad_v6_batched.onnx),
#            budget p99=50ms (a live VAD stream)
#   ocr_rec  PP-OCRv4's recogniser (.cache/models/ppocr/ch_PP-OCRv4_rec_infer.onnx),
#            one 320-pixel line a request, budget p99=250ms
# Each starts from a plain config (max_batch_size as the by-hand benchmarks,
# one instance, no dynamic batching, one intra-op and one inter-op thread an
# instance). The model repository is written to .cache/advise; the advice
# goes to .cache/advise/<model>.txt (stdout) and <model>.log (stderr), and
# the time each took and the machine's load average are printed. Each
# waits (up to 10 minutes) for the machine to be quiet first. Needs make
# deps (the models and the ONNX Runtime library).
# Usage: scripts/advise-real-models.sh [silero|ocr_rec]...
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
repo=.cache/advise/repository
mkdir -p "$repo/silero/1" "$repo/ocr_rec/1"
ln -sf "$root/.cache/models/silero_vad_v6_batched.onnx" "$repo/silero/1/model.onnx"
ln -sf "$root/.cache/models/ppocr/ch_PP-OCRv4_rec_infer.onnx" "$repo/ocr_rec/1/model.onnx"
for f in "$repo/silero/1/model.onnx" "$repo/ocr_rec/1/model.onnx"; do
  [ -e "$f" ] || { echo "missing $(readlink "$f"): run make deps" >&2; exit 1; }
done

threads='parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }'
cat >"$repo/silero/config.pbtxt" <<EOF
name: "silero"
backend: "onnxruntime"
max_batch_size: 64
input [
  { name: "input" data_type: TYPE_FP32 dims: [ 576 ] },
  { name: "state" data_type: TYPE_FP32 dims: [ 2, 128 ] }
]
output [
  { name: "output" data_type: TYPE_FP32 dims: [ 1 ] },
  { name: "stateN" data_type: TYPE_FP32 dims: [ 2, 128 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
$threads
EOF
cat >"$repo/ocr_rec/config.pbtxt" <<EOF
name: "ocr_rec"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3, 48, -1 ] } ]
output [ { name: "softmax_11.tmp_0" data_type: TYPE_FP32 dims: [ -1, 6625 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
$threads
EOF

go build -o .cache/advise/perf_analyzer ./cmd/perf_analyzer

# quiet waits, up to 10 minutes, for the 1-minute load average to fall
# under 1.5: on the shared development VM other jobs take the cores the
# advice measures.
quiet() {
  local i
  for i in $(seq 120); do
    awk '{ exit !($1 < 1.5) }' /proc/loadavg && return 0
    sleep 5
  done
  echo "the machine stayed busy (load average $(cut -d' ' -f1-3 /proc/loadavg)); measuring anyway" >&2
}

advise() {
  local model=$1
  shift
  local start end load
  quiet
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s)
  .cache/advise/perf_analyzer -m "$model" -i inprocess --model-repository "$repo" --advise "$@" \
    >".cache/advise/$model.txt" 2>".cache/advise/$model.log"
  end=$(date +%s)
  cat ".cache/advise/$model.txt"
  echo "== $model: $((end - start)) s, load average $load before, $(cut -d' ' -f1-3 /proc/loadavg) after (perf_analyzer -m $model -i inprocess --model-repository $repo --advise $*)"
}

models=("$@")
[ ${#models[@]} -gt 0 ] || models=(silero ocr_rec)
for m in "${models[@]}"; do
  case $m in
  silero) advise silero --latency-budget p99=50ms ;;
  ocr_rec) advise ocr_rec --latency-budget p99=250ms --shape x:3,48,320 ;;
  *) echo "unknown model $m (silero, ocr_rec)" >&2; exit 2 ;;
  esac
done
