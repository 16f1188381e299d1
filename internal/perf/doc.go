// Package perf is cmd/perf_analyzer: a load generator and measurement
// tool with the command line, console report, CSV file and exit statuses
// of NVIDIA's perf_analyzer (the fact sheet is shared/spec/perf-analyzer.md;
// "PA" below), written against [client.Conn] so that it measures a remote
// server over HTTP or gRPC, or a server running in the same process.
//
// [Main] is the whole program: parse (flags.go, getopt.go), connect
// through the command's [Dialer], read the model (model.go) and the input
// data (data.go, requests.go), then for each load level of the search
// (run.go): set the load (load.go, schedule.go), warm up, measure windows
// until the last three are stable (measure.go, serverstats.go), and print
// the step (report.go); finally the summary and the CSV.
//
// # Options
//
// PA's option table, with glibc getopt_long's reading of it (prefixes,
// --opt=v and --opt v, short clusters, non-options skipped with a
// warning) and PA's checks and error texts in PA's order. The client
// options reach [client.NewHTTP] and [client.NewGRPC] (remote.go): -H
// headers, the --ssl-grpc-* and --ssl-https-* files and checks, gRPC
// compression, JSON tensors. --shared-memory=system puts every input in
// one registered POSIX shared-memory region and each worker's outputs in
// one of its own (--output-shared-memory-size per output and batch row);
// in-process it is a no-op. Options that change nothing that is measured
// here (--max-threads, tracing, GPU metrics, profile export, MPI, ...) are
// accepted with a warning naming the reason; load modes this tool lacks
// (periodic concurrency, session concurrency, fixed schedule) and service
// kinds other than triton and triton_c_api are refused. Ours: -i
// inprocess with --model-repository (PA's --service-kind=triton_c_api
// means the same), and --help.
//
// # Exit statuses
//
// PA's: 0 success (also after the first SIGINT, with the steps measured so
// far); 2 when the first step of a linear search never stabilized; 3 when a
// window without a valid request ended the run; 99 for everything else:
// usage errors (the synopsis, then "Error: <text>") and runtime failures
// alike. Bad input (an unknown model, a shape that does not fit, an
// unreachable server, a JSON file not in PA's format) is PA's
// GENERIC_ERROR too, 99 rather than 1, since scripts compare against PA's
// statuses, with one line on stderr naming the problem
// ("error: failed to get model metadata: ...", "error: Failed to init
// manager inputs: missing tensor X ( Location stream id: 0, step id: 2)").
//
// # Measurement
//
// As PA defines it: windows run back to back, a time window lasting 1.2 ×
// --measurement-interval (PA's sleep; throughput divides by the time
// actually measured, so only the run's length depends on the factor) and a
// count window whole seconds until enough requests ended; a request counts
// in the window its last response fell in; a step is stable when the last
// three windows have throughput, and max/min of their throughputs and of
// their latencies (average, or --percentile) is at most 1 +
// --stability-percentage; the step's result merges those three windows
// (pooled latencies, Σcount/Σtime, server deltas summed). The arithmetic,
// single-precision throughput included, is PA's, so the same samples give
// the same figures. Where this tool departs from PA, on purpose:
//
//   - Warm-up. PA has none unless --warmup-request-count is given. Here each
//     level first runs unmeasured until as many requests as the concurrency
//     (one in rate modes) were answered and a tenth of a window has passed
//     (in count_windows mode, until a tenth of --measurement-request-count
//     were answered), so cold connections, first executions and the
//     previous level's queue stay out of the windows. The warm-up's pace
//     also sizes the workers' sample buffers for a window, so that they do
//     not grow during the first ones. --warmup-request-count N keeps PA's
//     meaning; 0 turns warm-up off. -v prints what the warm-up took.
//   - Latency in rate modes runs from each request's scheduled send time,
//     not from the actual send: when the tool or the server falls behind,
//     the wait is charged to latency (no coordinated omission). PA starts the
//     clock at the send and only counts sends over 1 ms late as "delayed";
//     that count and PA's warning are kept, and the settings block says
//     which clock is used. Scheduled requests go to a pool of senders that
//     grows as needed (up to 10,000), so a slow server cannot throttle the
//     offered load as PA's few synchronous threads do. The dispatcher
//     sleeps with nanosleep(2) and spins the last microseconds: Go's timers
//     wake up to a millisecond late, which would be charged to latency.
//   - The tool's own cost: every step prints PA's "Avg client overhead"
//     (PA: with -v only), the share of its workers' time spent outside the
//     call to the server and outside waiting for a scheduled send, and PA's
//     warning above 50%.
//   - Client Send and Client Recv (and the send/recv split of the HTTP and
//     gRPC lines, and the response wait, the rest of the call) are the
//     client's own [client.Timing] of each call: over HTTP, encoding and
//     writing the request, then reading and decoding the response; over
//     gRPC, building and protobuf-encoding the request, then decoding and
//     converting the response. PA's clients count less: their HTTP send
//     starts after the JSON header is built and their receive ends before
//     it is parsed, and their gRPC "marshal" and "unmarshal" only fill and
//     wrap message objects, protobuf's encoding and decoding falling in the
//     response wait. In-process both are 0 and the library line is blank,
//     as PA's C API mode prints it.
//   - Input data: a --shape for an input the model lacks, or against a fixed
//     dimension, is an error (PA ignores it); JSON numbers without a fraction
//     are accepted for FP32/FP64, FP16 and BF16 values are accepted, and
//     integers out of their type's range are refused (PA casts them); BYTES
//     data is checked to hold the shape's element count.
//   - Smaller things: a value out of range is an error (PA's parser lets
//     std::out_of_range crash it) and a negative value for an unsigned
//     option is refused (C++ wraps it); a range whose step is 0 measures
//     its start only (PA measures it forever); a sequence id another worker
//     still holds is skipped; the composing models' CSV files of an
//     ensemble that cannot be written are a warning (PA's ofstream fails
//     silently); a worker that stops ends its open sequence with one more
//     request.
//
// # Performance
//
// The per-request path allocates nothing of its own (requests are built
// before the load; a worker points its one request at prepared inputs) and
// costs two monotonic clock reads and an uncontended lock. Window
// processing swaps the workers' sample slices rather than copying them and
// sorts latencies with a radix sort. In-process, on the 2-core development
// machine, the identity model runs at a median of 2.5 million requests/s
// at concurrency 1 (five runs of "perf_analyzer -m noop -i inprocess
// --model-repository DIR --concurrency-range 1:2 -p 2000"; 1.6 to 3.4
// million at concurrency 2), the tool reporting 4-13% client overhead. In
// a CPU profile of such a run (cmd/perf_analyzer's BenchmarkInProcessNoop)
// the tool's own code is about 17% of the samples: the clock reads 9%,
// window processing 4%, the workers' bookkeeping 2%; the server is the
// rest. A window's samples (24 bytes each, millions at these rates) make
// the process's live heap large, so the in-process server's garbage is
// collected less often than in a server of its own.
//
// # Figures
//
// --report DIR (ours) hands the stable steps, with the CSV's figures, to
// package perfreport (reportdir.go), which writes throughput, latency
// (p50, average, p99) and the time split of each step as PNG and SVG,
// and report.html, one self-contained page with the settings, the table
// and the figures. Runs of the same model with other -b values into the
// same DIR add to its report, which then also draws latency against
// batch size.
//
// # Advice
//
// --advise (ours; advise.go) runs the batching advisor of package
// internal/advisor instead of a measurement: it reloads the model (or, for
// an ensemble or a BLS model, the composing model with the largest share
// of the compute) with each candidate setting of max_batch_size,
// dynamic_batching and instance_group through the model repository
// extension, without a restart, measures each as a step is measured, and
// prints the settings with the highest throughput within
// --latency-budget (p99=50ms, p95=20ms, avg=10ms; none: throughput
// first) as a config.pbtxt snippet, with the table of what was measured.
// -p, -s and -r left at perf_analyzer's defaults become 1 s, 15% and 5, so
// that an advice ends in minutes; --concurrency-range's end bounds the
// load (256 otherwise). It needs explicit model control: -i inprocess, or
// a remote server started with --model-control-mode=explicit. The model is
// reloaded with its own configuration at the end. With -f, the CSV has a
// row per measurement in the order measured: the point's number, stage
// and settings, then perf_analyzer's columns. With --report, the figures
// draw a curve per candidate. A model with several instance groups is
// tried with one, of the first group's kind and devices (the advice says
// so). Our own options (--advise, --latency-budget, --report) are
// matched by their whole names only, so every prefix perf_analyzer
// accepts ("--a" for --async, "--lat" for --latency-threshold) means
// what it means there.
//
// # Progress
//
// While it measures, a line on stderr names the level, the step and window,
// and the time left (at the finished steps' pace, and at most, with
// --max-trials windows per step). It is drawn only when stderr is a
// terminal and cleared before every line of the report.
//
// # Concurrency
//
// [Main] runs on the caller's goroutine; the load runs on goroutines it
// owns (a closed-loop worker per concurrent request, or a dispatcher and
// senders in rate modes) and stops them before it returns.
package perf
