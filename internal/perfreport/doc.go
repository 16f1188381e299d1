// Package perfreport draws a throughput and latency measurement as
// figures (PNG and SVG, with gonum/plot) and one self-contained HTML page:
// perf_analyzer's --report DIR, and whatever else measures steps of load
// (the batching advisor's candidates).
//
// The input is a [Report]: plain data, the settings and one [Step] per
// stable load level, with the figures perf_analyzer prints and writes to
// its CSV file. [Write] renders it into a folder:
//
//   - throughput: inferences/s against concurrency (or request rate), a
//     curve per batch size (and label);
//   - latency: p50, average and p99 latency against the same;
//   - latency-vs-batch, when the steps have several batch sizes: at one
//     load level p50, average and p99 against batch size, at several p99
//     alone, a curve per level;
//   - time-split: a stacked bar per step of where the average request's
//     time went: the server's queue, compute input, infer and output
//     (cache hit and miss with a response cache), the client's send and
//     receive, and the rest (network and the server's own overhead, or
//     the whole wait without server statistics), the parts the CSV
//     columns have, so that a bar's height is the average latency;
//   - report.html: the settings, the table of steps (the CSV's columns and
//     figures), and the figures as inline SVG; inline CSS, no scripts, no
//     external references;
//   - report.json: the Report, for [Read], [Add] and other tools.
//
// # Several batch sizes
//
// perf_analyzer measures one batch size per run. [Add] is [Write] that
// first keeps the steps of the report already in the folder when it is of
// the same model (same server, same load mode) and of other batch sizes,
// so
//
//	for b in 1 2 4 8; do perf_analyzer -m M -b $b --concurrency-range 1:8 --report out; done
//
// leaves one report with four curves per figure and the latency-vs-batch
// figure. A Report filled with several batch sizes at once (an advisor's
// candidates) draws the same with Write alone.
//
// # Design
//
// Figures are built in two steps: figures.go turns the Report into
// numbers (curves of points, stacks of segments, in the report's units)
// and plot.go only styles and draws them, so that the tests check the
// data that reaches each figure without reading pictures. The figures
// follow internal/benchplot's house style (size, grid, plotutil colours,
// dashes and markers, linear axes from zero, ticks at the measured
// values); the legend stands outside the plot area, where it hides no
// data. Durations are drawn in µs when the longest is under a
// millisecond, else in ms; the table keeps the CSV's whole microseconds.
package perfreport
