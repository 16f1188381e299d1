// Package lint holds the house rules as tests: the direction of imports
// between our packages, imports the root package must not have, modules
// only tests may import (Kubernetes, Prometheus Operator and BuildKit
// types, internal/helmtest), and banned package names. It has no code of its own; run it with go test. The
// general checks are not repeated here: make test runs go vet and
// staticcheck (the Makefile's vet and lint targets; staticcheck.conf).
package lint
