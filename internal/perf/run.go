package perf

import (
	"context"
	"errors"
	"fmt"
	"github.com/triton-go/triton/internal/advisor"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
)

// Exit statuses, perf_analyzer's (src/constants.h).
const (
	ExitSuccess   = 0
	ExitStability = 2  // the first step never stabilized
	ExitOption    = 3  // a window without a valid request ended the run
	ExitGeneric   = 99 // usage errors and every other failure
)

// Dialer opens the connection a configuration asks for: HTTP or gRPC to
// cfg.URL, or an in-process server over cfg.ModelRepository. The command
// provides it, so that this package does not decide how servers are
// built. The connection is closed by Main.
type Dialer func(ctx context.Context, cfg *Config) (client.Conn, error)

// Main runs perf_analyzer with args (without the program name), writing
// the report to stdout and diagnostics to stderr, and returns the exit
// status. ctx ending is perf_analyzer's first SIGINT: the measurement
// stops, the stable steps so far are reported, and the status is 0.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, dial Dialer) int {
	cfg, err := ParseArgs(args)
	switch {
	case errors.Is(err, errVersion):
		fmt.Fprintf(stderr, "Perf Analyzer Version %s (commit %s)\n", triton.Version, commit())
		return ExitSuccess
	case errors.Is(err, errHelp):
		printUsage(stdout)
		return ExitSuccess
	}
	var scanErr *scanError
	if errors.As(err, &scanErr) {
		fmt.Fprintln(stderr, scanErr.msg)
		return ExitGeneric
	}
	var useErr *usageError
	if errors.As(err, &useErr) {
		for _, l := range cfg.pendingStderr {
			fmt.Fprintln(stderr, l)
		}
		printUsage(stderr)
		fmt.Fprintf(stderr, "Error: %s\n\n", useErr.msg)
		return ExitGeneric
	}
	for _, l := range cfg.pendingStderr {
		fmt.Fprintln(stderr, l)
	}
	for _, w := range cfg.warnings {
		fmt.Fprintln(stderr, w)
	}
	if cfg.Advise {
		return advise(ctx, &cfg, stdout, stderr, dial)
	}
	r := &runner{cfg: &cfg, stdout: stdout, stderr: stderr, interrupted: ctx.Done()}
	return r.run(dial)
}

// commit is the VCS revision the binary was built from.
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// runner is one run: the connection, the model, the load and the
// measurement state, all used from the goroutine that called Main.
type runner struct {
	cfg         *Config
	stdout      io.Writer
	stderr      io.Writer
	interrupted <-chan struct{}

	conn     client.Conn
	model    *modelInfo
	out      *console
	clk      clock
	load     *loader
	shm      *shmState
	async    bool
	opts     reportOptions
	progress *progress

	// The window chain of the current step: where the last window
	// ended, the statistics then, and the samples that ended after it.
	prevEnd   int64
	prevStats statsSnapshot
	carry     []sample

	steps []status // stable steps, in search order
	// advised are, for --advise, the advisor's points that steps are.
	advised []*advisor.Point
}

// fatal is a failure that ends the run with a status; msg is printed to
// stderr as is.
type fatal struct {
	status int
	msg    string
}

func (f *fatal) Error() string { return f.msg }

func generic(format string, args ...any) error {
	return &fatal{ExitGeneric, fmt.Sprintf(format, args...)}
}

func (r *runner) warn(s string) {
	r.progress.clear()
	fmt.Fprintln(r.stderr, s)
}

func (r *runner) run(dial Dialer) int {
	err := r.setup(dial)
	if err == nil {
		err = r.profileAll()
		if err == nil || errors.Is(err, errInterrupted) {
			if err != nil {
				r.warn(err.Error())
			}
			err = r.writeReport()
		}
	}
	return r.finish(err)
}

// finish tears the run down (load, shared memory, progress line,
// connection) and turns err into an exit status, its message on stderr.
func (r *runner) finish(err error) int {
	if r.load != nil {
		r.load.close(5 * time.Second)
	}
	r.shm.close(context.Background())
	r.progress.stop()
	if r.conn != nil {
		r.conn.Close()
	}
	if err == nil {
		return ExitSuccess
	}
	var f *fatal
	if errors.As(err, &f) {
		if f.msg != "" {
			fmt.Fprintln(r.stderr, f.msg)
		}
		return f.status
	}
	fmt.Fprintln(r.stderr, "error: "+oneLine(err.Error()))
	return ExitGeneric
}

// oneLine keeps an error on one line (server messages may hold newlines).
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// setup is CreateAnalyzerObjects: connection, model, checks, data.
func (r *runner) setup(dial Dialer) error {
	cfg := r.cfg
	ctx := context.Background()
	conn, err := dial(ctx, cfg)
	if err != nil {
		return generic("error: failed to create triton client backend: %s", oneLine(err.Error()))
	}
	r.conn = conn
	m, err := loadModel(ctx, conn, cfg.Model, cfg.Version)
	if err != nil {
		return generic("error: %s", oneLine(err.Error()))
	}
	r.model = m
	if m.maxBatch == 0 && cfg.BatchSize > 1 {
		return generic("can not specify batch size > 1 as the model does not support batching")
	}
	r.async = cfg.Async
	if m.sequence {
		if !r.async {
			r.async = !cfg.forcedSync
		}
		if cfg.BatchSize > 1 {
			return generic("can not specify batch size > 1 when using a sequence model")
		}
	}
	if cfg.Streaming {
		if cfg.forcedSync {
			return generic("can not use streaming with synchronous API")
		}
		r.async = true
	}
	if m.decoupled && (!r.async || !cfg.Streaming) {
		return generic("Decoupled models must be run with `--async` and `--streaming` and either `-i grpc` or `--service-kind=triton_c_api`")
	}
	switch cfg.Mode {
	case Concurrency:
		maxConc := max(cfg.Concurrency.Start, cfg.Concurrency.End)
		if m.sequence && cfg.Concurrency.End == 0 && r.async {
			return generic("The 'end' concurrency can not be 0 for sequence models when using asynchronous API.")
		}
		if !r.async {
			if cfg.Concurrency.End == 0 {
				r.warn("WARNING: The maximum attainable concurrency will be limited by max_threads specification.")
				cfg.Concurrency.End = cfg.MaxThreads
			} else if cfg.maxThreadsSet {
				r.warn("WARNING: Overriding max_threads specification to ensure requested concurrency range.")
			}
		}
		if cfg.SequenceIDRange != 0 && cfg.SequenceIDRange < maxConc {
			return generic("sequence id range specified is smaller than the maximum possible concurrency, sequence id collision may occur.")
		}
	default:
		if cfg.SequenceIDRange != 0 && cfg.SequenceIDRange < cfg.NumOfSequences {
			return generic("sequence id range specified is smaller than the maximum possible number of sequences, sequence id collision may occur.")
		}
	}

	shapes, err := defaultShapes(cfg, m)
	if err != nil {
		return generic("error: %s", err)
	}
	ds, err := loadData(cfg, m, shapes)
	if err == nil && len(ds.streams) == 0 {
		err = errors.New("The json file doesn't contain data field")
	}
	if err == nil {
		for _, st := range ds.streams {
			if len(st) == 0 {
				err = errors.New("the --input-data file has a stream without steps")
			}
		}
	}
	if err != nil {
		return generic("error: Failed to init manager inputs: %s", err)
	}
	reqs, err := prepareRequests(ds, m, shapes, int64(cfg.BatchSize))
	if err != nil {
		return generic("error: Unable to init infer data manager: %s", err)
	}
	r.out = &console{w: r.stdout}
	if ds.fromFile {
		r.out.printf(" Successfully read data for %d stream/streams", len(ds.streams))
		if len(ds.streams) == 1 {
			r.out.printf(" with %d step/steps", len(ds.streams[0]))
		}
		r.out.printf(".\n")
	}

	r.opts = reportOptions{
		percentile:   cfg.Percentile,
		protocol:     cfg.Protocol,
		verbose:      cfg.Verbose,
		libStats:     !m.decoupled,
		decoupled:    m.decoupled,
		cache:        m.responseCache,
		rateMode:     cfg.rangeRate(),
		verboseCSV:   cfg.VerboseCSV,
		overheadWarn: 50,
	}
	if cfg.Protocol == InProcess {
		r.opts.serverStats = true
	} else {
		md, err := conn.ServerMetadata(ctx)
		if err != nil {
			return generic("error: failed to get server metadata: %s", oneLine(err.Error()))
		}
		r.opts.serverStats = slices.Contains(md.Extensions, "statistics")
	}

	if cfg.SharedMemory == SystemSharedMemory && cfg.Protocol != InProcess {
		shm, err := setupSharedMemory(ctx, conn, reqs, m, cfg)
		if err != nil {
			return generic("error: failed to set up system shared memory: %s", oneLine(err.Error()))
		}
		r.shm = shm
	}
	r.clk = clock{base: time.Now()}
	var seqs *sequencer
	if m.sequence {
		seqs = newSequencer(cfg, reqs, ds.fromFile)
	}
	r.load = newLoader(conn, m, reqs, cfg, r.clk, seqs)
	r.load.shm = r.shm
	r.progress = newProgress(r.stderr, isTerminal(r.stderr), cfg)
	r.out.w = r.progress.wrap(r.out.w)
	settingsBlock(r.out, cfg, m, r.async)
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// errInterrupted is the first SIGINT's end of the measurement.
var errInterrupted = errors.New("Received exit signal.")

// errStability is the first step's failure to stabilize.
var errStability = &fatal{ExitStability, "Failed to obtain stable measurement."}

// profileAll is the search over load levels (InferenceProfiler::Profile).
func (r *runner) profileAll() error {
	cfg := r.cfg
	switch cfg.Mode {
	case Concurrency:
		return search(r, cfg.Concurrency, cfg.BinarySearch, func(c uint64) (bool, bool, error) {
			return r.profileStep(level{concurrency: c})
		})
	case RequestRate:
		return search(r, cfg.RequestRate, cfg.BinarySearch, func(rate float64) (bool, bool, error) {
			return r.profileStep(level{rate: rate})
		})
	case CustomIntervals:
		gaps, err := readIntervals(cfg.IntervalsFile)
		if err != nil {
			return generic("error: failed to create custom load manager: %s", err)
		}
		r.progress.setRange(1, 1, 1, false)
		_, _, err = r.profileStep(level{rate: intervalsRate(gaps), intervals: gaps})
		return err
	}
	return generic("error: unsupported load mode")
}

// search is the linear or binary search over a range (IPH:297-350). step
// runs one level and reports whether it met the latency limit and was
// stable.
func search[T uint64 | float64](r *runner, rg Range[T], binary bool, step func(T) (meets, stable bool, err error)) error {
	r.progress.setRange(float64(rg.Start), float64(rg.End), float64(rg.Step), binary)
	if !binary {
		cur := rg.Start
		var meets, stable bool
		for {
			var err error
			meets, stable, err = step(cur)
			if err != nil {
				return err
			}
			if rg.Step == 0 {
				// perf_analyzer would measure the same level forever.
				cur += rg.Step
				break
			}
			cur += rg.Step
			if !((cur <= rg.End || rg.End == 0) && meets) {
				break
			}
		}
		if cur == rg.Start+rg.Step && !stable {
			return errStability
		}
		return nil
	}
	meets, _, err := step(rg.Start)
	if err != nil || !meets {
		return err
	}
	meets, _, err = step(rg.End)
	if err != nil || meets {
		return err
	}
	lo, hi := rg.Start, rg.End
	for hi-lo > rg.Step {
		cur := (hi + lo) / 2
		meets, _, err = step(cur)
		if err != nil {
			return err
		}
		if meets {
			lo = cur
		} else {
			hi = cur
		}
	}
	return nil
}

// level is one step's load: a concurrency, or a rate (with the custom
// gaps of --request-intervals).
type level struct {
	concurrency uint64
	rate        float64
	intervals   []int64
}

// profileStep measures one level until it is stable (Profile and
// ProfileHelper) and prints its block. It reports whether the level met
// the latency limit and whether it was stable.
func (r *runner) profileStep(lv level) (meets, stable bool, err error) {
	cfg := r.cfg
	if err := r.setLevel(lv); err != nil {
		return false, false, err
	}
	r.prevEnd, r.prevStats, r.carry = 0, nil, r.carry[:0]
	var windows []status
	var ls loadStatus
	trials := uint64(0)
	for {
		ws, err := r.measureWindow()
		if err != nil {
			return false, false, err
		}
		ws.concurrency, ws.requestRate = lv.concurrency, lv.rate
		windows = append(windows, ws)
		if len(windows) > stabilityWindow {
			windows = windows[1:]
		}
		ls.add(ws)
		if cfg.Verbose {
			r.passLine(trials+1, &ws)
		}
		r.progress.window(int(trials+1), lv, &ws)
		if cfg.RequestCount != 0 {
			stable = true
			break
		}
		stable = ls.stable(cfg.Stability, true)
		if stable || ls.overLimit(cfg.LatencyThresholdMS) {
			break
		}
		trials++
		if trials >= cfg.MaxTrials || r.isInterrupted() {
			break
		}
	}
	if r.async && !stable && ls.stable(cfg.Stability, false) {
		r.warn("Warning: Request latency is not stabilizing. Please try lowering the request rate.")
		stable = true
	}
	for _, w := range windows {
		if w.err != nil {
			return false, stable, &fatal{ExitOption, w.err.Error()}
		}
	}
	var result status
	if stable {
		result = mergeStatuses(windows, cfg.Percentile, r.opts.libStats)
		result.concurrency, result.requestRate = lv.concurrency, lv.rate
	}
	if r.isInterrupted() {
		return false, stable, errInterrupted
	}
	r.progress.stepDone(len(ls.ips))
	meets = true
	switch {
	case cfg.LatencyThresholdMS != 0 && result.stabilizingNS/1_000_000 >= cfg.LatencyThresholdMS:
		r.warn(fmt.Sprintf("Measured latency went over the set limit of %d msec. ", cfg.LatencyThresholdMS))
		meets = false
	case !stable:
		switch {
		case cfg.Mode != Concurrency:
			r.warn("Failed to obtain stable measurement.")
		case cfg.CountWindows:
			r.warn(fmt.Sprintf("Failed to obtain stable measurement within %d measurement windows for concurrency %d. Please try to increase the --measurement-request-count.", cfg.MaxTrials, lv.concurrency))
		default:
			r.warn(fmt.Sprintf("Failed to obtain stable measurement within %d measurement windows for concurrency %d. Please try to increase the --measurement-interval.", cfg.MaxTrials, lv.concurrency))
		}
		meets = false
	default:
		r.steps = append(r.steps, result)
		stepBlock(r.out, &result, r.opts)
	}
	return meets, stable, nil
}

// passLine is -v's line per window.
func (r *runner) passLine(k uint64, ws *status) {
	if ws.err != nil {
		r.out.printf("  Pass [%d] cb::Error: %s\n", k, ws.err)
		return
	}
	r.out.printf("  Pass [%d] throughput: %s infer/sec. ", k, r.out.f(ws.client.inferPerSec))
	if r.cfg.Percentile != -1 {
		ns, _ := ws.client.percentile(r.cfg.Percentile)
		r.out.printf("p%d latency: %d usec\n", r.cfg.Percentile, ns/1000)
		return
	}
	r.out.printf("Avg latency: %d usec (std %d usec). \n", ws.client.avgLatencyNS/1000, ws.client.stdUS)
}

func (r *runner) isInterrupted() bool {
	select {
	case <-r.interrupted:
		return true
	default:
		return false
	}
}

// setLevel applies a step's load, prints its header, and warms up.
func (r *runner) setLevel(lv level) error {
	cfg := r.cfg
	r.progress.stepStart(lv)
	if lv.rate == 0 {
		c := int(lv.concurrency)
		if n := cfg.WarmupRequestCount; n > 0 {
			wc := c
			if uint64(wc) > n {
				r.warn("WARNING: The number of concurrent requests exceeds the warmup request count. Adjusting warmup concurrency to match the warmup request count.")
				wc = int(n)
			}
			r.load.setConcurrency(wc)
			r.out.printf("Request concurrency: %d\n", wc)
			if err := r.warmup(n, 0); err != nil {
				return err
			}
			r.load.setConcurrency(c)
			r.out.printf("Request concurrency: %d\n", c)
			return nil
		}
		r.load.setConcurrency(c)
		r.out.printf("Request concurrency: %d\n", c)
		if !cfg.warmupSet {
			return r.warmup(uint64(c), r.warmupTime())
		}
		return nil
	}
	r.load.stopRate()
	var gaps gapSource
	switch {
	case lv.intervals != nil:
		gaps = &intervalGaps{gaps: lv.intervals}
	case cfg.Distribution == Poisson:
		gaps = newPoisson(lv.rate)
	default:
		gaps = newConstant(lv.rate)
	}
	seqs := 0
	if r.model.sequence {
		seqs = int(cfg.NumOfSequences)
	}
	r.load.startRate(gaps, seqs)
	if lv.intervals == nil {
		r.out.printf("Request Rate: %s inference requests per second\n", r.out.f(lv.rate))
	}
	switch {
	case cfg.WarmupRequestCount > 0:
		return r.warmup(cfg.WarmupRequestCount, 0)
	case !cfg.warmupSet:
		return r.warmup(1, r.warmupTime())
	}
	return nil
}

// warmupTime is the default warm-up's minimum length: a tenth of a
// measurement window (none in count_windows mode, which counts).
func (r *runner) warmupTime() time.Duration {
	if r.cfg.CountWindows {
		return 0
	}
	return r.cfg.Interval / 10
}

// warmup runs the load, unmeasured, until need requests have completed
// and at least minTime has passed: the requests that met a cold
// connection, a model's first execution or a previous level's queue are
// not measured. The default warm-up gives up waiting after one window's
// time (a server that answers nothing then fails the first window, as it
// would without a warm-up).
func (r *runner) warmup(need uint64, minTime time.Duration) error {
	start := r.clk.now()
	r.recycle(r.load.collect())
	limit := int64(0)
	if !r.cfg.CountWindows && minTime > 0 {
		limit = int64(r.cfg.Interval) * 12 / 10
	}
	if r.cfg.CountWindows && minTime == 0 && !r.cfg.warmupSet {
		need = max(need, r.cfg.WindowRequestCount/10)
	}
	tick := time.NewTicker(min(10*time.Millisecond, max(r.cfg.Interval/100, time.Millisecond)))
	defer tick.Stop()
	for {
		elapsed := r.clk.now() - start
		if uint64(r.load.pending()) >= need && elapsed >= int64(minTime) {
			break
		}
		if limit > 0 && elapsed >= limit {
			break
		}
		select {
		case <-tick.C:
		case <-r.load.failed:
			return generic("%s", describeFailure(r.load.err))
		case <-r.interrupted:
			return errInterrupted
		}
	}
	done := r.load.pending()
	window := int64(r.cfg.Interval) * 12 / 10
	if r.cfg.CountWindows {
		window = int64(time.Second)
	}
	r.load.sizeFor(done, r.clk.now()-start, window)
	r.recycle(r.load.collect())
	if r.cfg.Verbose {
		r.out.printf("  Warm-up: %d request(s) in %d msec, not measured\n", done, (r.clk.now()-start)/1e6)
	}
	return nil
}

// recycle gives a collection's sample slices back to the loader.
func (r *runner) recycle(c collected) { r.load.recycle(c.parts...) }

// measureWindow is Measure: one window, back to back with the previous
// one of the step, summarized.
func (r *runner) measureWindow() (status, error) {
	cfg := r.cfg
	ctx := context.Background()
	start, startStats := r.prevEnd, r.prevStats
	if start == 0 {
		start = r.clk.now()
		r.recycle(r.load.collect()) // idle time and counters restart here
		if r.opts.serverStats {
			s, err := fetchStats(ctx, r.conn, r.model)
			if err != nil {
				return status{}, generic("error: %s", oneLine(err.Error()))
			}
			startStats = s
		}
	}
	if err := r.waitWindow(start); err != nil {
		return status{}, err
	}
	end := r.clk.now()
	r.prevEnd = end
	c := r.load.collect()
	var endStats statsSnapshot
	if r.opts.serverStats {
		s, err := fetchStats(ctx, r.conn, r.model)
		if err != nil {
			return status{}, generic("error: %s", oneLine(err.Error()))
		}
		endStats = s
		r.prevStats = s
	}
	// Samples that ended in the window count in it; those that ended
	// after it wait for the next; older ones (warm-up) are dropped.
	var in, later []sample
	split := func(xs []sample) {
		for _, x := range xs {
			switch {
			case x.end > end:
				later = append(later, x)
			case x.end >= start && x.start <= x.end:
				in = append(in, x)
			}
		}
	}
	n := len(r.carry)
	for _, p := range c.parts {
		n += len(p)
	}
	in = make([]sample, 0, n)
	split(r.carry)
	for _, p := range c.parts {
		split(p)
	}
	r.load.recycle(c.parts...)
	r.carry = later
	s := summarizeWindow(windowInput{
		samples: in, durationNS: end - start, batch: cfg.BatchSize, percentile: cfg.Percentile,
		onSequence: r.model.sequence, completed: c.completed, reqNS: c.reqNS, sent: c.sent, idle: c.idle,
		sendNS: c.sendNS, recvNS: c.recvNS,
		libStats: r.opts.libStats,
		singleWarning: func() {
			r.warn("WARNING: Pass contained only one request, so sample latency standard deviation will be infinity (UINT64_MAX).")
		},
	})
	if r.opts.serverStats && s.err == nil {
		// (A window without samples is not summarized further, as
		// perf_analyzer's Summarize returns at SummarizeLatency.)
		sv, err := summarizeServer(r.model, modelID{r.model.name, r.model.version}, startStats, endStats, r.warn)
		if err != nil {
			return status{}, generic("error: %s", err)
		}
		s.server = sv
	}
	return s, nil
}

// waitWindow waits out a window from start: 1.2 × the interval in
// time_windows mode (perf_analyzer's sleep; throughput divides by the time
// actually measured), or whole seconds until enough samples arrived in
// count_windows mode.
func (r *runner) waitWindow(start int64) error {
	cfg := r.cfg
	var deadline int64
	if !cfg.CountWindows {
		deadline = start + int64(cfg.Interval)*12/10
	}
	t := time.NewTimer(0)
	<-t.C
	defer t.Stop()
	for {
		var wait time.Duration
		if deadline != 0 {
			wait = time.Duration(deadline - r.clk.now())
			if wait <= 0 {
				return nil
			}
		} else {
			wait = time.Second
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-r.load.failed:
			return generic("%s", describeFailure(r.load.err))
		case <-r.interrupted:
			return errInterrupted
		}
		if deadline == 0 && uint64(r.load.pending()+len(r.carry)) >= cfg.WindowRequestCount {
			return nil
		}
	}
}

// writeReport is WriteReport: the summary and the CSV (and ours, --report).
func (r *runner) writeReport() error {
	r.progress.stop()
	if len(r.steps) == 0 {
		return nil
	}
	summaryBlock(r.out, r.steps, r.opts)
	if err := writeCSV(r.cfg.CSVFile, r.steps, r.opts, r.warn); err != nil {
		return generic("error: failed to create report writer: %s", err)
	}
	return r.writeReportDir()
}
