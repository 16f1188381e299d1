#!/usr/bin/env bash
# Regenerates the Go code of our .proto files: modelconfig/model_config.pb.go,
# and the gRPC adapter's grpcapi/inferencepb (GRPCInferenceService) with its
# service stubs. grpcapi/healthpb (grpc.health.v1) is grpc-go's own package.
#
# Installs what it needs, only when missing:
#   - protoc, from Debian's protobuf-compiler package (sudo unless root);
#   - protoc-gen-go and protoc-gen-go-grpc at the versions pinned below, into
#     .cache/bin of the repo (git-ignored).
# The generated file is committed; ordinary builds and tests never need protoc.
set -euo pipefail

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

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

gengrpc="$bin/protoc-gen-go-grpc"
if ! [ -x "$gengrpc" ] || [ "$("$gengrpc" --version 2>/dev/null)" != "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}" ]; then
	echo "gen-proto: installing protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC_VERSION into .cache/bin" >&2
	GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
fi

protoc \
	--plugin=protoc-gen-go="$gen" \
	--proto_path=modelconfig \
	--go_out=modelconfig \
	--go_opt=paths=source_relative \
	model_config.proto

for pkg in inferencepb; do
	protoc \
		--plugin=protoc-gen-go="$gen" \
		--plugin=protoc-gen-go-grpc="$gengrpc" \
		--proto_path=modelconfig \
		--proto_path="grpcapi/$pkg" \
		--go_out="grpcapi/$pkg" --go_opt=paths=source_relative \
		--go-grpc_out="grpcapi/$pkg" --go-grpc_opt=paths=source_relative \
		"grpcapi/$pkg"/*.proto
done

echo "gen-proto: wrote modelconfig/model_config.pb.go and grpcapi/inferencepb" >&2
