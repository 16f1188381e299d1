#!/usr/bin/env bash
# Makes backend/onnxruntime/testdata/speech_16k.wav: an English sentence
# spoken by espeak-ng, trimmed, resampled to 16 kHz mono 16-bit PCM, with
# 0.5 s of digital silence (exact zeros) before and after, for the Silero VAD
# test (speech chunks vs silence chunks). Installs Debian's espeak-ng and sox
# when missing. Deterministic: no dither, fixed voice, speed and pitch.
# Prints the file's path on stdout.
set -euo pipefail

TEXT="The quick brown fox jumps over the lazy dog."

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/backend/onnxruntime/testdata/speech_16k.wav"

missing=()
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
command -v sox >/dev/null 2>&1 || missing+=(sox)
. "$root/scripts/lib.sh"
((${#missing[@]} == 0)) || apt_install "${missing[@]}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
espeak-ng -v en-us -s 230 -p 50 -a 100 -w "$tmp/raw.wav" "$TEXT"
# -D: no dither, so the padding stays exact zeros and the output repeatable.
# silence ... reverse silence ... reverse: trim espeak's own lead-in and tail.
# gain -n -3: peak at -3 dBFS, so resampling never clips.
sox -D "$tmp/raw.wav" -r 16000 -c 1 -b 16 -e signed-integer "$tmp/speech.wav" \
  silence 1 0.005 0.1% reverse silence 1 0.005 0.1% reverse \
  rate -h 16000 gain -n -3 pad 0.5 0.5
mkdir -p "$(dirname "$out")"
mv -f "$tmp/speech.wav" "$out"
echo "$out"
