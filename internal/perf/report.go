package perf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// report.go prints what perf_analyzer prints: the settings block, each
// stable step's block, the summary, and the CSV file (report_writer.cc),
// with its number formatting. Doubles go through a console that keeps
// std::cout's state: after the delayed-requests warning switches it to
// std::fixed with 2 decimals, every later double on stdout is printed so.

// console is stdout with std::cout's floating-point state.
type console struct {
	w     io.Writer
	fixed bool // std::fixed << std::setprecision(2) was applied
}

func (c *console) printf(format string, args ...any) { fmt.Fprintf(c.w, format, args...) }

// f formats a double as std::cout would now.
func (c *console) f(x float64) string {
	if c.fixed {
		return fixed2(x)
	}
	return cppDouble(x)
}

// cppDouble is a double through a default-formatted C++ stream: %g with 6
// significant digits ("1407.84", "69.2", "10", "1.23457e+06").
func cppDouble(x float64) string { return streamDouble(x, 'g', 6) }

// fixed2 is a double through a C++ stream set to std::fixed and
// precision 2.
func fixed2(x float64) string { return streamDouble(x, 'f', 2) }

// streamDouble formats x as strconv does, but for NaN and the infinities,
// which a C++ stream writes "nan", "inf" and "-inf".
func streamDouble(x float64, format byte, prec int) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, format, prec, 64)
}

// reportOptions are what the blocks depend on besides the result.
type reportOptions struct {
	percentile   int
	protocol     Protocol
	verbose      bool
	libStats     bool // perf_analyzer's include_lib_stats: not decoupled
	serverStats  bool // the server has the statistics extension
	decoupled    bool
	cache        bool // the model has a response cache
	rateMode     bool
	verboseCSV   bool
	overheadWarn float64 // percent; perf_analyzer's 50
}

// settingsBlock is PrerunReport, with this tool's additions marked in
// doc.go: the rate-mode latency origin and, with -v, the warm-up.
func settingsBlock(c *console, cfg *Config, m *modelInfo, async bool) {
	c.printf("*** Measurement Settings ***\n")
	c.printf("  Batch size: %d\n", cfg.BatchSize)
	kind := "TRITON"
	if cfg.Protocol == InProcess {
		kind = "TRITON_C_API"
	}
	c.printf("  Service Kind: %s\n", kind)
	if cfg.WarmupRequestCount > 0 {
		s := ""
		if cfg.WarmupRequestCount > 1 {
			s = "s"
		}
		c.printf("  Sending %d warmup request%s\n", cfg.WarmupRequestCount, s)
	}
	if cfg.RequestCount != 0 {
		s := ""
		if cfg.RequestCount > 1 {
			s = "s"
		}
		c.printf("  Sending %d benchmark request%s\n", cfg.RequestCount, s)
	} else {
		if cfg.CountWindows {
			c.printf("  Using \"count_windows\" mode for stabilization\n")
		} else {
			c.printf("  Using \"time_windows\" mode for stabilization\n")
		}
		metric := "latency and throughput"
		if async {
			metric = "throughput"
		}
		if cfg.Percentile == -1 {
			c.printf("  Stabilizing using average %s\n", metric)
		} else {
			c.printf("  Stabilizing using p%d%s\n", cfg.Percentile, metric)
		}
		if cfg.CountWindows {
			c.printf("  Minimum number of samples in each window: %d\n", cfg.WindowRequestCount)
		} else {
			c.printf("  Measurement window: %d msec\n", cfg.Interval.Milliseconds())
		}
	}
	if cfg.Concurrency.End != 1 {
		c.printf("  Latency limit: %d msec\n", cfg.LatencyThresholdMS)
		if cfg.Concurrency.End != 0 {
			c.printf("  Concurrency limit: %d concurrent requests\n", max(cfg.Concurrency.Start, cfg.Concurrency.End))
		}
	}
	if cfg.RequestRate.End != 1 {
		c.printf("  Latency limit: %d msec\n", cfg.LatencyThresholdMS)
		if cfg.RequestRate.End != 0 {
			c.printf("  Request Rate limit: %s requests per seconds\n", c.f(max(cfg.RequestRate.Start, cfg.RequestRate.End)))
		}
	}
	if cfg.Mode == RequestRate {
		if cfg.Distribution == Poisson {
			c.printf("  Using poisson distribution on request generation\n")
		} else {
			c.printf("  Using uniform distribution on request generation\n")
		}
	}
	if cfg.Mode == RequestRate || cfg.Mode == CustomIntervals {
		// Ours: perf_analyzer measures from the actual send.
		c.printf("  Measuring latency from each request's scheduled send time (perf_analyzer measures from the actual send)\n")
	}
	if cfg.BinarySearch {
		c.printf("  Using Binary Search algorithm\n")
	}
	if async {
		c.printf("  Using asynchronous calls for inference\n")
	} else {
		c.printf("  Using synchronous calls for inference\n")
	}
	if m.decoupled {
		c.printf("  Detected decoupled model, using the first response for measuring latency\n")
	}
	c.printf("\n")
}

// stepBlock is Report: the client block, the server block and the
// overhead warning of a stable step.
func stepBlock(c *console, s *status, o reportOptions) {
	c.printf("  Client: \n")
	cs := &s.client
	c.printf("    Request count: %d\n", cs.requestCount)
	delayPct := float64(cs.delayedCount) / float64(cs.requestCount) * 100
	if delayPct > 1.0 {
		c.fixed = true
		c.printf("    Avg send request rate: %s infer/sec\n", c.f(s.sendRate))
		c.printf("    [WARNING] Perf Analyzer was not able to keep up with the desired request rate. ")
		c.printf("%s%% of the requests were delayed. \n", c.f(delayPct))
	}
	if s.onSequence {
		c.printf("    Sequence count: %d (%s seq/sec)\n", cs.sequenceCount, c.f(cs.sequencePerSec))
	}
	c.printf("    Throughput: %s infer/sec\n", c.f(cs.inferPerSec))
	if o.decoupled {
		c.printf("    Response Throughput: %s infer/sec\n", c.f(cs.responsesPerSec))
	}
	// perf_analyzer prints the overhead with -v only; it is the tool's
	// own cost, so it is always reported here.
	c.printf("    Avg client overhead: %s%%\n", fixed2(s.overheadPct))
	if o.percentile == -1 {
		c.printf("    Avg latency: %d usec (standard deviation %d usec)\n", cs.avgLatencyNS/1000, cs.stdUS)
	}
	for _, p := range cs.percentiles {
		c.printf("    p%d latency: %d usec\n", p.p, p.ns/1000)
	}
	c.printf("%s\n", libraryLine(cs, o))
	if o.serverStats {
		c.printf("  Server: \n")
		serverBlock(c, &s.server, 1, o)
	}
	if s.overheadPct > o.overheadWarn {
		c.printf("[WARNING] Perf Analyzer is not able to keep up with the desired load. The results may not be accurate.\n")
	}
}

// libraryLine is the client library detail: HTTP or gRPC time, split into
// send/receive and the wait for the response; blank (four spaces) for the
// in-process server, whose "library" is a function call, and for
// decoupled models.
func libraryLine(cs *clientStats, o reportOptions) string {
	line := "    "
	if !o.libStats {
		return line
	}
	req, send, recv := cs.avgRequestNS/1000, cs.avgSendNS/1000, cs.avgRecvNS/1000
	wait := req - send - recv
	switch o.protocol {
	case GRPC:
		line += fmt.Sprintf("Avg gRPC time: %d usec (", req)
		if !o.verbose {
			line += fmt.Sprintf("(un)marshal request/response %d usec + response wait %d usec)", send+recv, wait)
		} else {
			line += fmt.Sprintf("marshal %d usec + response wait %d usec + unmarshal %d usec)", send, wait, recv)
		}
	case HTTP:
		line += fmt.Sprintf("Avg HTTP time: %d usec (", req)
		if !o.verbose {
			line += fmt.Sprintf("send/recv %d usec + response wait %d usec)", send+recv, wait)
		} else {
			line += fmt.Sprintf("send %d usec + response wait %d usec + receive %d usec)", send, wait, recv)
		}
	}
	return line
}

// usAvg is AverageDurationInUs.
func usAvg(ns, count uint64) uint64 {
	if count == 0 {
		return 0
	}
	return ns / (count * 1000)
}

func overheadOf(total, queue, compute uint64) uint64 {
	if total > queue+compute {
		return total - queue - compute
	}
	return 0
}

// serverBlock is ReportServerSideStats at indentation level it.
func serverBlock(c *console, s *serverStats, it int, o reportOptions) {
	ident := strings.Repeat(" ", 2*it)
	if s.successCount == 0 {
		c.printf("%s  Request count: %d\n", ident, s.successCount)
		return
	}
	cumm := usAvg(s.cummNS, s.successCount)
	c.printf("%s  Inference count: %d\n", ident, s.inferenceCount)
	c.printf("%s  Execution count: %d\n", ident, s.executionCount)
	if o.cache {
		c.printf("%s  Cache hit count: %d\n", ident, s.cacheHitCount)
		c.printf("%s  Cache miss count: %d\n", ident, s.cacheMissCount)
	}
	c.printf("%s  Successful request count: %d\n", ident, s.successCount)
	c.printf("%s  Avg request latency: %d usec", ident, cumm)
	if len(s.composing) == 0 {
		queue := usAvg(s.queueNS, s.queueCount)
		in := usAvg(s.computeInputNS, s.computeInputCount)
		inf := usAvg(s.computeInferNS, s.computeInferCount)
		out := usAvg(s.computeOutputNS, s.computeOutputCount)
		computeNS := s.computeInputNS + s.computeInferNS + s.computeOutputNS
		computeCnt := s.computeInputCount
		compute := usAvg(computeNS, computeCnt)
		hit := usAvg(s.cacheHitNS, s.cacheHitCount)
		miss := usAvg(s.cacheMissNS, s.cacheMissCount)
		combined := usAvg(s.cacheHitNS+s.cacheMissNS+computeNS, computeCnt+s.cacheHitCount)
		if o.cache {
			c.printf(" (overhead %d usec + queue %d usec + cache hit/miss %d usec)\n", overheadOf(cumm, queue, combined), queue, combined)
			c.printf("%s%s  Average Cache Hit Latency: %d usec\n", ident, ident, hit)
			c.printf("%s%s  Average Cache Miss Latency: %d usec (cache lookup/insertion %d usec + compute input %d usec + compute infer %d usec + compute output %d usec)\n",
				ident, ident, miss+compute, miss, in, inf, out)
		} else {
			c.printf(" (overhead %d usec + queue %d usec + compute input %d usec + compute infer %d usec + compute output %d usec)\n",
				overheadOf(cumm, queue, compute), queue, in, inf, out)
		}
		return
	}
	var queue, compute, hit, miss, combined uint64
	hit += usAvg(s.cacheHitNS, s.cacheHitCount)
	miss += usAvg(s.cacheMissNS, s.cacheMissCount)
	var add func(x *serverStats)
	add = func(x *serverStats) {
		for i := range x.composing {
			sub := &x.composing[i].stats
			if len(sub.composing) > 0 {
				add(sub)
				continue
			}
			computeNS := sub.computeInputNS + sub.computeInferNS + sub.computeOutputNS
			queue += usAvg(sub.queueNS, sub.queueCount)
			compute += usAvg(computeNS, sub.computeInputCount)
			hit += usAvg(sub.cacheHitNS, sub.cacheHitCount)
			miss += usAvg(sub.cacheMissNS, sub.cacheMissCount)
			combined += usAvg(computeNS+sub.cacheHitNS+sub.cacheMissNS, sub.computeInputCount+sub.cacheHitCount)
		}
	}
	add(s)
	if o.cache {
		c.printf(" (overhead %d usec + queue %d usec + cache hit/miss %d usec)\n", overheadOf(cumm, queue, combined), queue, combined)
		c.printf("%s%s  Average Cache Hit Latency: %d usec\n", ident, ident, hit)
		c.printf("%s%s  Average Cache Miss Latency: %d usec \n\n", ident, ident, miss+compute)
	} else {
		c.printf(" (overhead %d usec + queue %d usec + compute %d usec)\n\n", overheadOf(cumm, queue, compute), queue, compute)
	}
	c.printf("%sComposing models: \n", ident)
	for i := range s.composing {
		sub := &s.composing[i]
		c.printf("%s%s, version: %s\n", ident, sub.id.name, sub.id.version)
		serverBlock(c, &sub.stats, it+1, o)
	}
}

// summaryBlock is WriteReport's console part: the stable steps in search
// order.
func summaryBlock(c *console, steps []status, o reportOptions) {
	if o.percentile == -1 {
		c.printf("Inferences/Second vs. Client Average Batch Latency\n")
	} else {
		c.printf("Inferences/Second vs. Client p%d Batch Latency\n", o.percentile)
	}
	for i := range steps {
		s := &steps[i]
		if o.rateMode {
			c.printf("Request Rate: %s, ", c.f(s.requestRate))
		} else {
			c.printf("Concurrency: %d, ", s.concurrency)
		}
		c.printf("throughput: %s infer/sec, latency %d usec\n", c.f(s.client.inferPerSec), s.stabilizingNS/1000)
	}
}

// csvHeader is the CSV's first line (ReportWriter::GenerateReport).
func csvHeader(steps []status, o reportOptions) string {
	var b strings.Builder
	if o.rateMode {
		b.WriteString("Request Rate,")
	} else {
		b.WriteString("Concurrency,")
	}
	b.WriteString("Inferences/Second,")
	if o.decoupled {
		b.WriteString("Response Throughput,")
	}
	b.WriteString("Client Send,")
	if o.serverStats {
		b.WriteString("Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,")
		if o.cache {
			b.WriteString("Server Cache Hit,Server Cache Miss,")
		}
	}
	b.WriteString("Client Recv")
	if len(steps) > 0 {
		for _, p := range steps[0].client.percentiles {
			fmt.Fprintf(&b, ",p%d latency", p.p)
		}
	}
	if o.verboseCSV {
		if o.percentile == -1 {
			b.WriteString(",Avg latency")
		}
		b.WriteString(",request/response,response wait")
	}
	return b.String()
}

// csvRows are the rows, sorted by Inferences/Second ascending. warn gets
// perf_analyzer's warning for a row whose server time exceeds the
// client's wait.
func csvRows(steps []status, o reportOptions, warn func(string)) []string {
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b status) int {
		switch {
		case a.client.inferPerSec < b.client.inferPerSec:
			return -1
		case a.client.inferPerSec > b.client.inferPerSec:
			return 1
		}
		return 0
	})
	rows := make([]string, len(sorted))
	for i := range sorted {
		rows[i] = csvRow(&sorted[i], o, warn)
	}
	return rows
}

// csvRow is one step's CSV line.
func csvRow(s *status, o reportOptions, warn func(string)) string {
	cs := &s.client
	var b strings.Builder
	if o.rateMode {
		b.WriteString(cppDouble(s.requestRate))
	} else {
		b.WriteString(strconv.FormatUint(s.concurrency, 10))
	}
	b.WriteString("," + cppDouble(cs.inferPerSec) + ",")
	if o.decoupled {
		b.WriteString(cppDouble(cs.responsesPerSec) + ",")
	}
	fmt.Fprintf(&b, "%d,", cs.avgSendNS/1000)
	if o.serverStats {
		sv := &s.server
		queue := avg(sv.queueNS, sv.queueCount)
		in := avg(sv.computeInputNS, sv.computeInputCount)
		inf := avg(sv.computeInferNS, sv.computeInferCount)
		out := avg(sv.computeOutputNS, sv.computeOutputCount)
		compute := avg(sv.computeInputNS+sv.computeInferNS+sv.computeOutputNS, sv.computeInputCount)
		hit := avg(sv.cacheHitNS, sv.cacheHitCount)
		miss := avg(sv.cacheMissNS, sv.cacheMissCount)
		// (Saturating: the latency's average is over the window's
		// samples, send and receive over its completed calls.)
		var wait uint64
		if sr := cs.avgSendNS + cs.avgRecvNS; cs.avgLatencyNS > sr {
			wait = cs.avgLatencyNS - sr
		}
		accounted := queue + compute + hit + miss
		var network uint64
		if wait > accounted {
			network = wait - accounted
		}
		if network == 0 && warn != nil {
			warn("Server average accounted time was larger than client average wait time due to small sample size. Increase the measurement interval with `--measurement-interval`.")
		}
		fmt.Fprintf(&b, "%d,%d,%d,%d,%d,", network/1000, queue/1000, in/1000, inf/1000, out/1000)
		if o.cache {
			fmt.Fprintf(&b, "%d,%d,", hit/1000, miss/1000)
		}
	}
	fmt.Fprintf(&b, "%d", cs.avgRecvNS/1000)
	for _, p := range cs.percentiles {
		fmt.Fprintf(&b, ",%d", p.ns/1000)
	}
	if o.verboseCSV {
		req, send, recv := cs.avgRequestNS/1000, cs.avgSendNS/1000, cs.avgRecvNS/1000
		if o.percentile == -1 {
			fmt.Fprintf(&b, ",%d", cs.avgLatencyNS/1000)
		}
		fmt.Fprintf(&b, ",%d,%d", send+recv, req-send-recv)
	}
	return b.String()
}

// composingCSV is the extra file of one composing model of an ensemble:
// its header and rows (in the order of rows, sorted as the main file).
func composingCSV(steps []status, id modelID, o reportOptions, warn func(string)) []string {
	head := "Concurrency,"
	if o.rateMode {
		head = "Request Rate,"
	}
	head += "Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,"
	if o.cache {
		head += "Server Cache Hit,Server Cache Miss,"
	}
	head += "Client Recv"
	lines := []string{head}
	for i := range steps {
		s := &steps[i]
		var st *serverStats
		for j := range s.server.composing {
			if s.server.composing[j].id == id {
				st = &s.server.composing[j].stats
			}
		}
		if st == nil {
			continue
		}
		queue := avg(st.queueNS, st.queueCount)
		in := avg(st.computeInputNS, st.computeInputCount)
		inf := avg(st.computeInferNS, st.computeInferCount)
		out := avg(st.computeOutputNS, st.computeOutputCount)
		compute := avg(st.computeInputNS+st.computeInferNS+st.computeOutputNS, st.computeInputCount)
		hit := avg(st.cacheHitNS, st.cacheHitCount)
		miss := avg(st.cacheMissNS, st.cacheMissCount)
		overhead := avg(st.cummNS, st.successCount)
		accounted := queue + compute + hit + miss
		if overhead > accounted {
			overhead -= accounted
		} else {
			overhead = 0
		}
		if overhead == 0 && warn != nil {
			warn("Server average accounted time was larger than client average wait time due to small sample size. Increase the measurement interval with `--measurement-interval`.")
		}
		ratio := 0.0
		if s.server.successCount > 0 {
			ratio = float64(st.successCount) / float64(s.server.successCount)
		}
		var b strings.Builder
		if o.rateMode {
			b.WriteString(cppDouble(s.requestRate))
		} else {
			b.WriteString(strconv.FormatUint(s.concurrency, 10))
		}
		fmt.Fprintf(&b, ",%s,0,%d,%d,%d,%d,%d,", cppDouble(ratio*s.client.inferPerSec), overhead/1000, queue/1000, in/1000, inf/1000, out/1000)
		if o.cache {
			fmt.Fprintf(&b, "%d,%d,", hit/1000, miss/1000)
		}
		b.WriteString("0")
		lines = append(lines, b.String())
	}
	return lines
}

// writeCSV writes the -f file and, for an ensemble, one file per composing
// model named <name>_v<version>.<-f value> (the prefix goes on the whole
// path, as perf_analyzer does, so -f out/x.csv gives pre_v1.out/x.csv).
func writeCSV(path string, steps []status, o reportOptions, warn func(string)) error {
	if path == "" || len(steps) == 0 {
		return nil
	}
	lines := append([]string{csvHeader(steps, o)}, csvRows(steps, o, warn)...)
	if err := writeLines(path, lines); err != nil {
		return err
	}
	if !o.serverStats {
		return nil
	}
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b status) int {
		switch {
		case a.client.inferPerSec < b.client.inferPerSec:
			return -1
		case a.client.inferPerSec > b.client.inferPerSec:
			return 1
		}
		return 0
	})
	for _, c := range steps[0].server.composing {
		// perf_analyzer writes through an ofstream whose failure to open
		// (with -f dir/x.csv the prefixed path rarely exists) goes
		// unnoticed; here it is a warning.
		name := c.id.name + "_v" + c.id.version + "." + path
		if err := writeLines(name, composingCSV(sorted, c.id, o, warn)); err != nil && warn != nil {
			warn("WARNING: " + err.Error())
		}
	}
	return nil
}

func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("failed to write the CSV report: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("failed to write the CSV report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to write the CSV report: %w", err)
	}
	return nil
}
