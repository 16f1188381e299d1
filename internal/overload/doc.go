// Package overload is an open-loop load generator for benchmarks that
// offer a server more than it can serve (issue #46): requests arrive as a
// Poisson process at a given rate, each on its own goroutine at its
// arrival time, each with a deadline, whether or not earlier ones have been
// answered. A closed-loop harness (internal/loadtest, a fixed number of
// callers each waiting for its answer) can never overload a server: its
// callers slow down with it. Open loop is what clients of a shared service
// do, and it is the only way to see what a schedule does with the work it
// cannot finish in time.
//
// [Run] drives one run and returns a [Result]: the offered rate, the
// goodput (answers that arrived within their deadline, a second), the
// median and 99th percentile latency of those answers, and what became of
// the rest: answered too late, refused (Unavailable), expired
// (DeadlineExceeded), cancelled, failed otherwise, or never sent because
// too many requests were already in flight.
//
// # Timing
//
// Arrival times are drawn once, from a seeded PCG source, as offsets from
// the start of the run; the generator sleeps until each one, measured from
// the start on the monotonic clock, never by adding up sleeps, so that a
// late wake-up delays one arrival and not every one after it. Latencies
// and deadlines count from the scheduled arrival, not from when the
// generator got round to it (no coordinated omission); [Result.MaxLag]
// says how far behind its schedule the generator fell.
//
// Go's timers wake up to a millisecond late when a process is otherwise
// idle (the runtime's poller waits in whole milliseconds), which bunches
// arrivals at rates of thousands a second; [PreciseSleep] waits with the
// operating system's precision on Linux, and a benchmark passes it as
// [Spec.Sleep]. The package's tests run [Run] under testing/synctest's fake
// clock, where time.Sleep is exact.
//
// # Concurrency
//
// Run calls do from many goroutines at once and returns only when every
// call has returned; it starts no goroutine that outlives it. A [Result]
// is a plain value.
//
//	res, err := overload.Run(ctx, overload.Spec{
//		Rate: 2000, Duration: 3 * time.Second, Deadline: 40 * time.Millisecond,
//		Seed: 1, Sleep: overload.PreciseSleep,
//	}, func(ctx context.Context, n int) error {
//		_, err := srv.Infer(ctx, req)
//		return err
//	})
//	fmt.Printf("offered %.0f/s, goodput %.0f/s, p99 %v\n", res.Offered(), res.Goodput(), res.P99)
package overload
