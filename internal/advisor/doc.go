// Package advisor is the batching advisor behind perf_analyzer --advise:
// for one model, it searches max_batch_size, preferred_batch_size,
// max_queue_delay_microseconds and the instance count under a range of
// concurrencies, finds the knee of the latency-against-batch curve, tells
// whether batching pays at all, and advises the settings with the highest
// throughput within a latency budget, as a config.pbtxt snippet with the
// measured figures beside it.
//
// The package decides what to try and what the figures mean; it does not
// measure. [Advise] drives a [Measurer], which reloads the model with a
// [Candidate]'s settings and measures one load level: internal/perf
// implements it with the tool's own measurement (explicit model control,
// one reload a candidate, no restart), and the tests with closed-form
// models of a batching server, so the search is tested on exact figures.
//
// # Budget and profiles
//
// A [Budget] bounds one statistic of client latency: p99=50ms, p95=20ms,
// avg=10ms (p50 and p90 too). No budget means throughput first. The search
// starts from one of three profiles of ours (NVIDIA's field guide has a
// table of this kind; we did not have it, so these are our own numbers,
// chosen for CPU and GPU instances alike):
//
//	profile    budget          batch sizes of the curve   queue delays tried
//	real-time  under 10 ms     2, 4, 8                    0, 50 µs, 100 µs (curve: 100 µs)
//	online     10 ms – 200 ms  2, 4, 8, 16, 32            0.5, 1, 2, 5 ms (curve: 1 ms)
//	offline    200 ms or none  2, 4, … 128                5, 10, 20, 50 ms (curve: 10 ms)
//
// The budget picks the profile; when the model alone (concurrency 1, its
// own settings) takes more than a quarter of the budget, the profile moves
// one step toward real-time, since queueing has little room left. Delays
// over a quarter of the budget are dropped.
//
// # The search
//
// Brute force over the profile's space (5 batch sizes × 4 delays × 2–4
// instance counts × 5 concurrencies, 200 points or more) would take a
// quarter of an hour at 4–6 s a point; Model Analyzer's brute search takes
// hours for the same reason. The advisor walks it in stages, as Model
// Analyzer's quick search does, in 14–25 measurements:
//
//   - A, instances: 1, 2, … instances without dynamic batching, at one and
//     two requests an instance, until an instance more adds under 5%. The
//     best within the budget fixes the instance count for B.
//   - B, the curve: for each batch size b of the profile, max_batch_size
//     and preferred_batch_size b with the profile's delay, at 2b requests
//     an instance (one batch running, one filling behind it; with b, an
//     instance waits after each batch for its clients to send again, and
//     Model Analyzer's quick search loads 2 × max_batch_size × instances
//     for the same reason). It stops at the first batch over the budget,
//     or once two steps in a row added under 5% throughput.
//   - C, refinement (only when batching pays): around the best batch
//     within the budget, the profile's other delays, an instance less and
//     more, no preferred size (the delay alone), and max_batch_size twice
//     the preferred size at twice the load.
//   - D, confirmation: the three best candidates within the budget are
//     measured twice more, in rounds of rotating order, and compared on
//     the medians of their three measurements. A shared VM's speed drifts
//     by 2–3× within minutes; without this, one lucky window picks the
//     advice.
//   - E, concurrencies: the chosen settings at concurrency 1 and at two,
//     four and eight times their concurrency, up to the first over the
//     budget: how far they hold.
//   - Last, the baseline again: when its throughput moved by more than a
//     quarter since the start, the report warns that the machine's speed
//     changed during the advice.
//
// The advice is the confirmed candidate with the highest median
// throughput within the budget; candidates within 5% of it (the noise of
// a measurement here) count as equal, and among those the shortest queue
// delay wins (it is what a request waits when the load is too light to
// fill a batch), then the lowest latency. When batching does not pay,
// only candidates without dynamic batching are confirmed: a batch then
// computes no faster than its rows, and what a batched candidate seems to
// gain comes from the load it was measured at or from drift.
// When nothing meets the budget, the report says so and shows the
// settings with the lowest latency.
//
// # The knee
//
// Along the curve (batch 1 without dynamic batching, then the profile's
// sizes), each step has a gain: the fraction by which throughput grew
// over the fraction by which latency (the budget's statistic) grew. The
// knee is the largest batch size whose step had a gain of at least 1:
// past it, every step grew latency a request faster than throughput. (The
// last such step, not the first that fails: a measurement's noise makes
// single steps fail where the curve has not bent.) As
// concurrency doubles with the batch, Little's law makes that the same as
// throughput growing at least √2 per doubling. We preferred this rule to
// the Kneedle method (the point farthest from the chord of the normalised
// curve): Kneedle needs the whole curve, which the search stops measuring
// once it is over the budget, and its knee moves with the range measured.
//
// # When batching does not pay
//
// From the statistics extension's executions by batch size, the compute
// time of a batch is fitted with a line, time(b) ≈ fixed + perRow × b
// ([FitBatches], least squares over the mean of each batch size executed
// at least 5 times). Batching pays when the fixed part is at least a tenth
// of a batch of one; otherwise compute grows linearly with the batch (or
// faster: a row costs more in a big batch, as PP-OCR's recogniser does on
// this CPU), a row costs about as much in any batch, and the report says
// that batching does not pay.
//
// # Ensembles and BLS
//
// For an ensemble, or a model that calls others (Go BLS), the throughput
// is the whole pipeline's, measured at the model the load is sent to; the
// first measurement's statistics give each composing model's share of the
// compute (the executions' compute infer time), and the largest is tuned
// ([Request.Pipeline], [Dominant]).
//
// # Time
//
// At perf_analyzer's settings for --advise (1 s windows, stability 15%,
// at most 5 windows a measurement), a measurement takes 4–6 s, and an
// advice 14–25 of them plus a reload each: 1–2 minutes on the 2-core
// development VM (51 s for PP-OCR's recogniser, 1 min 49 s for Silero
// VAD; docs/performance.md has the figures).
//
// # Concurrency
//
// [Advise] calls its Measurer from the calling goroutine only, and
// returns the advice so far with the error when the Measurer fails or ctx
// ends.
package advisor
