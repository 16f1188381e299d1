# The two commands a fresh machine needs:
#   make run    serve the example model repository over HTTP and gRPC (cmd/tritonserver; Ctrl-C stops it)
#   make test   go vet and staticcheck (make lint), every test, race detector on, plus short fuzzing runs
# Both install what they need first (scripts/deps.sh), idempotently.

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED := 1
# go-nvml's header marks functions deprecated; its cgo build would warn about each.
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations
GO ?= go

.PHONY: run test deps test-tools vet lint fuzz bench plots loadgen-tools generate models check-models torch-models check-torch-models speech

deps:
	@scripts/deps.sh

# versitygw and helm, pinned, into .cache/bin: only the tests run them.
test-tools:
	@scripts/test-tools.sh

# Builds cmd/tritonserver and serves examples/model_repository with it
# (scripts/run.sh: a progress line per step, then the server's curl hint).
run: deps
	@scripts/run.sh

test: deps test-tools vet lint check-models check-torch-models
	$(GO) test -race -count=1 -shuffle=on ./...
	@$(MAKE) --no-print-directory fuzz

vet:
	$(GO) vet ./...

# staticcheck, pinned (scripts/deps.sh installs it into .cache/bin), with
# the checks staticcheck.conf sets, test files included, over both builds
# of make test's files: without the race detector (as go vet) and with it
# (-race sets the race tag); a finding in either fails.
lint: deps
	printf 'norace:\nrace: -tags=race\n' | .cache/bin/staticcheck -matrix ./...

# Each fuzz target runs a fixed number of inputs (a few seconds each; a
# count, not a duration: a duration that ends while the fuzzer minimizes a
# new input fails with "context deadline exceeded"). The seed corpora run in
# every `go test`.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime 50000x .
	$(GO) test -run '^$$' -fuzz '^FuzzSequence$$' -fuzztime 1000x .
	$(GO) test -run '^$$' -fuzz '^FuzzBatching$$' -fuzztime 3000x .
	$(GO) test -run '^$$' -fuzz '^FuzzValidateBytes$$' -fuzztime 100000x ./tensor
	$(GO) test -run '^$$' -fuzz '^FuzzShape$$' -fuzztime 100000x ./tensor
	$(GO) test -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime 30000x ./repository
	$(GO) test -run '^$$' -fuzz '^FuzzFileData$$' -fuzztime 30000x ./warmup
	$(GO) test -run '^$$' -fuzz '^FuzzSelectVersions$$' -fuzztime 30000x ./repository
	$(GO) test -run '^$$' -fuzz '^FuzzCheckFraming$$' -fuzztime 30000x ./cgo/ortrun
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime 30000x ./httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzModelInfer$$' -fuzztime 30000x ./grpcapi
	$(GO) test -run '^$$' -fuzz '^FuzzFlatStrings$$' -fuzztime 30000x ./client
	$(GO) test -run '^$$' -fuzz '^FuzzResponseHeader$$' -fuzztime 30000x ./client
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30000x ./backend/python
	$(GO) test -run '^$$' -fuzz '^FuzzUnpack$$' -fuzztime 5000x ./backend/python
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime 5000x ./backend/python
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime 20000x ./backend/onnxruntime
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime 20000x ./backend/pytorch
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 5000x ./backend/fil/lightgbm
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime 20000x ./cgo/xgbrun
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 3000x ./cgo/xgbrun

# Benchmarks behind docs/performance.md.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 . ./tensor ./backend

# Redraws the plots of docs/performance.md (docs/*.png) from the benchmark
# output under docs/bench (internal/benchplot/specs.go says which file makes which plot).
plots:
	$(GO) run ./internal/benchplot -in docs/bench -out docs

# hey and ghz (pinned, into .cache/bin), the load generators that
# BenchmarkLoadGenerators in internal/compare runs beside its own harness
# and BenchmarkAgreement in cmd/perf_analyzer beside perf_analyzer.
loadgen-tools:
	@command -v hey >/dev/null || { . scripts/lib.sh && go_install github.com/rakyll/hey v0.1.5; }
	@command -v ghz >/dev/null || { . scripts/lib.sh && go_install github.com/bojand/ghz/cmd/ghz v0.93.0; }

# Regenerates the Go code of our .proto files (modelconfig, grpcapi/inferencepb; installs protoc and the plugins if missing).
generate:
	scripts/gen-proto.sh

# Regenerates the small ONNX test models of backend/onnxruntime (Debian's
# /usr/bin/python3 with python3-onnx, installed if missing); deterministic.
models:
	@/usr/bin/python3 -c 'import onnx' 2>/dev/null || { . scripts/lib.sh && apt_install python3-onnx; }
	/usr/bin/python3 scripts/gen-test-models.py backend/onnxruntime/testdata/models

# Fails when the committed test models differ from what the generator makes.
check-models:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  /usr/bin/python3 scripts/gen-test-models.py "$$tmp" >/dev/null && \
	  diff -r --exclude=README.md "$$tmp" backend/onnxruntime/testdata/models && \
	  echo "check-models: committed ONNX test models match scripts/gen-test-models.py"

# Regenerates the small TorchScript test models of backend/pytorch and
# cgo/torchrun (Debian's /usr/bin/python3 with python3-torch, installed if
# missing); deterministic.
torch-models:
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { . scripts/lib.sh && apt_install --no-install-recommends python3-torch; }
	/usr/bin/python3 scripts/gen-torch-models.py backend/pytorch/testdata/models

# Fails when the committed TorchScript test models differ from what the generator makes.
check-torch-models:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  /usr/bin/python3 scripts/gen-torch-models.py "$$tmp" >/dev/null && \
	  diff -r --exclude=README.md "$$tmp" backend/pytorch/testdata/models && \
	  echo "check-torch-models: committed TorchScript test models match scripts/gen-torch-models.py"

# Remakes backend/onnxruntime/testdata/speech_16k.wav (espeak-ng and sox).
speech:
	scripts/make-speech.sh
