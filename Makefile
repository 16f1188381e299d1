# The two commands a fresh machine needs:
#   make run    serve the example model repository (the quickstart, until the HTTP adapter lands)
#   make test   every test, race detector on, plus short fuzzing runs
# Both install what they need first (scripts/deps.sh), idempotently.

SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
export CGO_ENABLED := 1
GO ?= go
FUZZTIME ?= 5s

.PHONY: run test deps vet fuzz bench generate

deps:
	@scripts/deps.sh

run: deps
	$(GO) run ./examples/quickstart

test: deps vet
	$(GO) test -race -count=1 -shuffle=on ./...
	@$(MAKE) --no-print-directory fuzz

vet:
	$(GO) vet ./...

# Each fuzz target runs for FUZZTIME; the seed corpora run in every `go test`.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzInfer$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzValidateBytes$$' -fuzztime $(FUZZTIME) ./tensor
	$(GO) test -run '^$$' -fuzz '^FuzzShape$$' -fuzztime $(FUZZTIME) ./tensor
	$(GO) test -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME) ./repository

# Benchmarks behind docs/performance.md.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 . ./tensor ./backend

# Regenerates modelconfig/model_config.pb.go from our .proto (installs protoc if missing).
generate:
	scripts/gen-proto.sh
