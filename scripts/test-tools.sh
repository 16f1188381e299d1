#!/usr/bin/env bash
# Installs the programs that only `make test` runs, pinned, into .cache/bin
# (scripts/lib.sh's go_install: nothing to do when they are there):
#   - versitygw, an S3 gateway over a local folder: the object-storage
#     repository tests start it on loopback (package cloudrepo,
#     cmd/tritonserver);
#   - helm: the chart tests run helm lint and helm template (package deploy).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

go_install github.com/versity/versitygw/cmd/versitygw v1.8.0
go_install helm.sh/helm/v4/cmd/helm v4.3.2
