// Command benchplot draws the plots of docs/performance.md from benchmark
// output: text files in the format `go test -bench` prints, one file per
// plot, under docs/bench. What each plot shows (its file, which benchmarks
// make which curve, which metric, the axes) is declared in specs.go.
//
// `make plots` redraws every plot:
//
//	go run ./internal/benchplot -in docs/bench -out docs
//
// A file may hold several runs of a benchmark (go test -count N): a curve
// goes through the median of a point's runs, with a bar from the lowest run
// to the highest. Lines that are not benchmark results (goos:, pkg:, PASS,
// ok, comments) are skipped; a result line that cannot be read, or a curve
// that no result matches, is an error, so that a renamed benchmark fails
// the command instead of leaving a curve out.
package main
