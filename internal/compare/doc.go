// Package compare holds, as benchmarks, the comparisons behind the
// performance claims of docs/performance.md that are made against code we
// did not write for production: minimal servers written only for the
// comparison (a net/http handler with encoding/json and a grpc-go server
// implementing only ModelInfer, both calling an onnxruntime_go session
// directly) and raw onnxruntime_go sessions. Each benchmark runs our path
// and its baseline in interleaved rounds in one process and reports the
// medians and ranges of the rounds' own ratios, so that the drift of a
// shared machine touches both sides of a ratio alike.
//
// The package has no non-test code. Its tests check that every baseline
// answers correctly, so that the comparisons cannot rot unseen; its
// benchmarks are run by hand (commands in docs/performance.md):
//
//	go test -run '^$' -bench . -benchtime 8x ./internal/compare/
//
// BenchmarkLoadGenerators also drives the servers with hey and ghz, which
// `make loadgen-tools` installs.
package compare
