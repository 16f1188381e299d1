#!/usr/bin/env bash
# Regenerates modelconfig/model_config.pb.go from modelconfig/model_config.proto.
#
# Installs what it needs, only when missing:
#   - protoc, from Debian's protobuf-compiler package (sudo unless root);
#   - protoc-gen-go at the version pinned below, into .cache/bin of the repo
#     (git-ignored).
# The generated file is committed; ordinary builds and tests never need protoc.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. scripts/lib.sh

bin="$root/.cache/bin"
mkdir -p "$bin"

command -v protoc >/dev/null 2>&1 || apt_install protobuf-compiler

gen="$bin/protoc-gen-go"
if ! [ -x "$gen" ] || [ "$("$gen" --version 2>/dev/null)" != "protoc-gen-go $PROTOC_GEN_GO_VERSION" ]; then
	echo "gen-proto: installing protoc-gen-go $PROTOC_GEN_GO_VERSION into .cache/bin" >&2
	GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
fi

protoc \
	--plugin=protoc-gen-go="$gen" \
	--proto_path=modelconfig \
	--go_out=modelconfig \
	--go_opt=paths=source_relative \
	model_config.proto

echo "gen-proto: wrote modelconfig/model_config.pb.go" >&2
