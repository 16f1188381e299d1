package perf

import (
	"math"
	"slices"
)

// measure.go is the arithmetic of perf_analyzer's InferenceProfiler,
// without clocks or I/O, so that it can be tested on synthetic windows:
// a window's summary (Summarize, SummarizeLatency, SummarizeClientStat),
// stability over the last three windows (DetermineStability), the latency
// limit (IsDoneProfiling), and the merge of the last three windows into
// the step's result (MergePerfStatusReports). The integer divisions and
// single-precision throughput are perf_analyzer's, so that the same
// samples give the same numbers.

// stabilityWindow is how many of the latest windows must agree.
const stabilityWindow = 3

// percentilePoint is one reported percentile: p and its latency in ns.
type percentilePoint struct {
	p  int
	ns uint64
}

// clientStats are the client side of a window or step (ClientSideStats).
type clientStats struct {
	requestCount, sequenceCount, delayedCount, responseCount uint64
	durationNS                                               uint64
	avgLatencyNS                                             uint64
	stdUS                                                    uint64
	percentiles                                              []percentilePoint // ascending p
	latencies                                                []uint64          // sorted, ns
	inferPerSec, sequencePerSec, responsesPerSec             float64
	// The client library's view: requests it completed and their
	// average time in the call, send and receive (client.Timing; 0
	// in-process, where there is no wire).
	completedCount                     uint64
	avgRequestNS, avgSendNS, avgRecvNS uint64
}

// percentile returns the latency at p, and whether p was computed.
func (c *clientStats) percentile(p int) (uint64, bool) {
	for _, x := range c.percentiles {
		if x.p == p {
			return x.ns, true
		}
	}
	return 0, false
}

// status is one window's or one step's result (PerfStatus).
type status struct {
	concurrency   uint64
	requestRate   float64
	batchSize     uint64
	onSequence    bool
	client        clientStats
	server        serverStats
	stabilizingNS uint64
	overheadPct   float64
	sendRate      float64
	// err is a window without valid requests (errNoSamples).
	err error
}

// windowInput is what a window is summarized from.
type windowInput struct {
	samples    []sample // those that ended inside the window
	durationNS int64
	batch      uint64
	percentile int // -1: none extra
	onSequence bool
	// The recorders' counters for the window.
	completed      uint64
	reqNS          int64
	sendNS, recvNS int64 // the client's send and receive time in those calls
	sent           uint64
	idle           []int64
	libStats       bool // perf_analyzer's include_lib_stats
	// singleWarning is called when a window has one request (its
	// standard deviation is infinite).
	singleWarning func()
}

// summarizeWindow is Summarize for one window. A window without samples
// has err set, as SummarizeLatency fails.
func summarizeWindow(in windowInput) status {
	var s status
	s.batchSize = max(in.batch, 1)
	s.onSequence = in.onSequence
	lat := make([]uint64, 0, len(in.samples))
	for _, x := range in.samples {
		lat = append(lat, uint64(x.end-x.start))
		s.client.responseCount += uint64(x.responses)
		if x.flags&flagSeqEnd != 0 {
			s.client.sequenceCount++
		}
		if x.flags&flagDelayed != 0 {
			s.client.delayedCount++
		}
	}
	sortLatencies(lat)
	if err := summarizeLatency(lat, in.percentile, &s, in.singleWarning); err != nil {
		s.err = err
	}
	s.client.latencies = lat
	s.client.requestCount = uint64(len(lat))
	s.client.durationNS = uint64(in.durationNS)
	sec := float32(in.durationNS) / 1e9
	s.client.sequencePerSec = float64(float32(s.client.sequenceCount) / sec)
	s.client.inferPerSec = float64(float32(s.client.requestCount*s.batchSize) / sec)
	s.client.responsesPerSec = float64(float32(s.client.responseCount) / sec)
	if in.libStats {
		s.client.completedCount = in.completed
		if in.completed != 0 {
			s.client.avgRequestNS = uint64(in.reqNS) / in.completed
			s.client.avgSendNS = uint64(in.sendNS) / in.completed
			s.client.avgRecvNS = uint64(in.recvNS) / in.completed
		}
	}
	s.overheadPct = overheadPct(in.durationNS, in.idle)
	if in.durationNS > 0 {
		s.sendRate = float64(in.sent) / (float64(in.durationNS) / 1e9)
	}
	return s
}

// overheadPct is SummarizeOverhead over the average idle time of the
// recorders that had any (LoadManager::GetIdleTime).
func overheadPct(windowNS int64, idle []int64) float64 {
	var total int64
	for _, i := range idle {
		total += i
	}
	if len(idle) > 0 {
		total /= int64(len(idle))
	}
	if total > windowNS || windowNS <= 0 {
		return 0
	}
	return float64(windowNS-total) / float64(windowNS) * 100
}

// sortLatencies sorts ascending; a radix sort, since windows hold
// millions of samples at in-process rates and the sort runs while the
// load does.
func sortLatencies(a []uint64) {
	if len(a) < 1<<12 {
		slices.Sort(a)
		return
	}
	var or uint64
	for _, x := range a {
		or |= x
	}
	buf := make([]uint64, len(a))
	src, dst := a, buf
	for shift := uint(0); shift < 64 && or>>shift != 0; shift += 16 {
		var count [1 << 16]int
		for _, x := range src {
			count[(x>>shift)&0xffff]++
		}
		pos := 0
		for i := range count {
			c := count[i]
			count[i] = pos
			pos += c
		}
		for _, x := range src {
			d := (x >> shift) & 0xffff
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// summarizeLatency is SummarizeLatency: mean, sample standard deviation
// (in µs), the percentiles 50, 90, 95, 99 and --percentile, and the
// stabilizing latency. lat is sorted.
func summarizeLatency(lat []uint64, percentile int, s *status, singleWarning func()) error {
	if len(lat) == 0 {
		return errNoSamples
	}
	s.client.avgLatencyNS, s.client.stdUS = meanAndStdDev(lat, singleWarning)
	ps := []int{50, 90, 95, 99}
	if percentile != -1 && !slices.Contains(ps, percentile) {
		ps = append(ps, percentile)
		slices.Sort(ps)
	}
	s.client.percentiles = s.client.percentiles[:0]
	for _, p := range ps {
		i := int(float64(p)/100.0*float64(len(lat)-1) + 0.5)
		s.client.percentiles = append(s.client.percentiles, percentilePoint{p, lat[i]})
	}
	if percentile != -1 {
		s.stabilizingNS, _ = s.client.percentile(percentile)
	} else {
		s.stabilizingNS = s.client.avgLatencyNS
	}
	return nil
}

// meanAndStdDev is GetMeanAndStdDev, with its unsigned arithmetic.
func meanAndStdDev(lat []uint64, singleWarning func()) (avgNS, stdUS uint64) {
	var total uint64
	for _, l := range lat {
		total += l
	}
	avgNS = total / uint64(len(lat))
	var sq uint64
	for _, l := range lat {
		d := int64(l - avgNS)
		sq += uint64(d * d)
	}
	if len(lat) > 1 {
		stdUS = uint64(math.Sqrt(float64(sq/uint64(len(lat)-1))) / 1000)
	} else {
		stdUS = math.MaxUint64
		if singleWarning != nil {
			singleWarning()
		}
	}
	return avgNS, stdUS
}

// loadStatus is the history of a step's windows: throughput and
// stabilizing latency of each (0 and MaxUint64 for a failed window).
type loadStatus struct {
	ips []float64
	lat []uint64
}

func (ls *loadStatus) add(s status) {
	if s.err != nil {
		ls.ips = append(ls.ips, 0)
		ls.lat = append(ls.lat, math.MaxUint64)
		return
	}
	ls.ips = append(ls.ips, s.client.inferPerSec)
	ls.lat = append(ls.lat, s.stabilizingNS)
}

// stable is DetermineStability: the last three windows all have
// throughput, and max/min of their throughputs (and, with checkLatency,
// of their latencies) is at most 1+threshold.
func (ls *loadStatus) stable(threshold float64, checkLatency bool) bool {
	n := len(ls.ips)
	if n < stabilityWindow {
		return false
	}
	ips := ls.ips[n-stabilityWindow:]
	for _, x := range ips {
		if x == 0 {
			return false
		}
	}
	if slices.Max(ips)/slices.Min(ips) > 1+threshold {
		return false
	}
	if !checkLatency {
		return true
	}
	lat := ls.lat[n-stabilityWindow:]
	return float64(slices.Max(lat))/float64(slices.Min(lat)) <= 1+threshold
}

// overLimit is the latency part of IsDoneProfiling: with a limit set,
// some of the last three windows reached it.
func (ls *loadStatus) overLimit(limitMS uint64) bool {
	n := len(ls.lat)
	if limitMS == 0 || n < stabilityWindow {
		return false
	}
	for _, l := range ls.lat[n-stabilityWindow:] {
		if l >= limitMS*1_000_000 {
			return true
		}
	}
	return false
}

// mergeStatuses is MergePerfStatusReports: the step's result from its
// last windows. Throughput is Σcount·batch/Σduration, latencies are
// pooled (and re-summarized), the client library's averages are weighted
// by completed requests, server deltas are summed, and overhead and send
// rate are averaged.
func mergeStatuses(windows []status, percentile int, libStats bool) status {
	first := windows[0]
	var m status
	m.concurrency, m.requestRate = first.concurrency, first.requestRate
	m.batchSize, m.onSequence = first.batchSize, first.onSequence
	parts := make([][]uint64, 0, len(windows))
	servers := make([]serverStats, 0, len(windows))
	for _, w := range windows {
		m.client.requestCount += w.client.requestCount
		m.client.sequenceCount += w.client.sequenceCount
		m.client.delayedCount += w.client.delayedCount
		m.client.responseCount += w.client.responseCount
		m.client.durationNS += w.client.durationNS
		parts = append(parts, w.client.latencies)
		servers = append(servers, w.server)
		m.overheadPct += w.overheadPct
		m.sendRate += w.sendRate
	}
	m.overheadPct /= float64(len(windows))
	m.sendRate /= float64(len(windows))
	if libStats {
		var req, send, recv uint64
		for _, w := range windows {
			m.client.completedCount += w.client.completedCount
			req += w.client.avgRequestNS * w.client.completedCount
			send += w.client.avgSendNS * w.client.completedCount
			recv += w.client.avgRecvNS * w.client.completedCount
		}
		if c := m.client.completedCount; c != 0 {
			m.client.avgRequestNS, m.client.avgSendNS, m.client.avgRecvNS = req/c, send/c, recv/c
		}
	}
	m.server = mergeServer(servers)
	m.client.latencies = mergeSorted(parts)
	sec := float32(m.client.durationNS) / 1e9
	m.client.sequencePerSec = float64(float32(m.client.sequenceCount) / sec)
	m.client.inferPerSec = float64(float32(m.client.requestCount*m.batchSize) / sec)
	m.client.responsesPerSec = float64(float32(m.client.responseCount) / sec)
	if err := summarizeLatency(m.client.latencies, percentile, &m, nil); err != nil {
		m.err = err
	}
	return m
}

// mergeSorted merges sorted slices into one sorted slice.
func mergeSorted(parts [][]uint64) []uint64 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]uint64, 0, n)
	idx := make([]int, len(parts))
	for len(out) < n {
		best := -1
		for i, p := range parts {
			if idx[i] < len(p) && (best < 0 || p[idx[i]] < parts[best][idx[best]]) {
				best = i
			}
		}
		// Copy the run of the best part that stays below every other
		// part's head, not one element at a time.
		limit := uint64(math.MaxUint64)
		for i, p := range parts {
			if i != best && idx[i] < len(p) && p[idx[i]] < limit {
				limit = p[idx[i]]
			}
		}
		p := parts[best]
		j := idx[best]
		k := j + 1
		for k < len(p) && p[k] <= limit {
			k++
		}
		out = append(out, p[j:k]...)
		idx[best] = k
	}
	return out
}
