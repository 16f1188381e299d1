package perf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/perfreport"
)

// reportdir.go is --report DIR (ours): the stable steps handed to package
// perfreport, which draws them and writes an HTML page. The figures are
// the console's and the CSV's, computed the same way (csvRows).

// writeReportDir writes --report's folder, adding to the report of other
// batch sizes already there (perfreport.Add), and says so on stderr when
// it did.
func (r *runner) writeReportDir() error {
	dir := r.cfg.ReportDir
	if dir == "" || len(r.steps) == 0 {
		return nil
	}
	rep := buildReport(r.cfg, r.model, r.async, r.steps, r.opts, time.Now())
	out, err := perfreport.Add(dir, rep)
	if err != nil {
		return generic("error: failed to write the --report folder: %s", oneLine(err.Error()))
	}
	if len(out.Steps) > len(rep.Steps) {
		var bs []string
		for _, s := range out.Steps {
			if b := strconv.FormatUint(s.BatchSize, 10); !slices.Contains(bs, b) {
				bs = append(bs, b)
			}
		}
		r.warn(fmt.Sprintf("Report in %s: this run's steps added to the earlier runs there (batch sizes %s)", dir, strings.Join(bs, ", ")))
	}
	return nil
}

// buildReport is the run as perfreport data: the settings, and one step
// per stable level with the CSV row's figures.
func buildReport(cfg *Config, m *modelInfo, async bool, steps []status, o reportOptions, now time.Time) perfreport.Report {
	rep := perfreport.Report{
		Model:       m.name,
		Version:     m.version,
		Source:      reportSource(cfg),
		RateMode:    o.rateMode,
		ServerStats: o.serverStats,
		Cache:       o.cache,
		Decoupled:   o.decoupled,
		Settings:    reportSettings(cfg, m, async, now),
	}
	for i := range steps {
		rep.Steps = append(rep.Steps, reportStep(&steps[i], o))
	}
	return rep
}

func reportSource(cfg *Config) string {
	if cfg.Protocol == InProcess {
		return "in-process over " + cfg.ModelRepository
	}
	return cfg.Protocol.String() + " " + cfg.URL
}

// reportStep is a step's CSV row as data: the same averages in ns (the
// table truncates them to µs as the CSV does).
func reportStep(s *status, o reportOptions) perfreport.Step {
	cs := &s.client
	st := perfreport.Step{
		BatchSize:   s.batchSize,
		Concurrency: s.concurrency,
		RequestRate: s.requestRate,
		Throughput:  cs.inferPerSec,
		Requests:    cs.requestCount,
		Latency:     perfreport.Latency{Avg: time.Duration(cs.avgLatencyNS)},
	}
	if o.decoupled {
		st.ResponseThroughput = cs.responsesPerSec
	}
	for _, p := range cs.percentiles {
		st.Latency.Percentiles = append(st.Latency.Percentiles, perfreport.Percentile{P: p.p, Latency: time.Duration(p.ns)})
	}
	sp := &st.Split
	sp.ClientSend, sp.ClientRecv = time.Duration(cs.avgSendNS), time.Duration(cs.avgRecvNS)
	var wait uint64
	if sr := cs.avgSendNS + cs.avgRecvNS; cs.avgLatencyNS > sr {
		wait = cs.avgLatencyNS - sr
	}
	if !o.serverStats {
		sp.Network = time.Duration(wait)
		return st
	}
	sv := &s.server
	queue := avg(sv.queueNS, sv.queueCount)
	compute := avg(sv.computeInputNS+sv.computeInferNS+sv.computeOutputNS, sv.computeInputCount)
	hit := avg(sv.cacheHitNS, sv.cacheHitCount)
	miss := avg(sv.cacheMissNS, sv.cacheMissCount)
	sp.Queue = time.Duration(queue)
	sp.ComputeInput = time.Duration(avg(sv.computeInputNS, sv.computeInputCount))
	sp.ComputeInfer = time.Duration(avg(sv.computeInferNS, sv.computeInferCount))
	sp.ComputeOutput = time.Duration(avg(sv.computeOutputNS, sv.computeOutputCount))
	sp.CacheHit, sp.CacheMiss = time.Duration(hit), time.Duration(miss)
	if accounted := queue + compute + hit + miss; wait > accounted {
		sp.Network = time.Duration(wait - accounted)
	}
	return st
}

// reportSettings are the settings table: what was measured and how.
// Values hold no ", ", which perfreport.Add uses to list the values of
// merged runs.
func reportSettings(cfg *Config, m *modelInfo, async bool, now time.Time) []perfreport.Setting {
	var s []perfreport.Setting
	add := func(name, format string, args ...any) {
		s = append(s, perfreport.Setting{Name: name, Value: fmt.Sprintf(format, args...)})
	}
	model := m.name
	if m.version != "" {
		model += " version " + m.version
	}
	add("Model", "%s", model)
	add("Server", "%s", reportSource(cfg))
	add("Batch size", "%d", cfg.BatchSize)
	switch cfg.Mode {
	case Concurrency:
		add("Load", "concurrency %s", rangeText(cfg.Concurrency.Start, cfg.Concurrency.End, cfg.Concurrency.Step, cfg.BinarySearch))
	case RequestRate:
		dist := "constant"
		if cfg.Distribution == Poisson {
			dist = "poisson"
		}
		add("Load", "request rate %s (%s distribution)", rangeText(cfg.RequestRate.Start, cfg.RequestRate.End, cfg.RequestRate.Step, cfg.BinarySearch), dist)
	case CustomIntervals:
		add("Load", "request intervals from %s", cfg.IntervalsFile)
	}
	switch {
	case cfg.RequestCount != 0:
		add("Measurement", "%d requests", cfg.RequestCount)
	case cfg.CountWindows:
		add("Measurement", "count windows of at least %d requests", cfg.WindowRequestCount)
	default:
		add("Measurement", "time windows of %d msec", cfg.Interval.Milliseconds())
	}
	add("Stability", "the last %d windows within %s%% (at most %d windows a level)", stabilityWindow, cppDouble(cfg.Stability*100), cfg.MaxTrials)
	if cfg.Percentile == -1 {
		add("Stabilizing on", "average latency")
	} else {
		add("Stabilizing on", "p%d latency", cfg.Percentile)
	}
	if cfg.LatencyThresholdMS != 0 {
		add("Latency limit", "%d msec", cfg.LatencyThresholdMS)
	}
	calls := "synchronous"
	if async {
		calls = "asynchronous"
	}
	if cfg.Streaming {
		calls += " streaming"
	}
	add("Calls", "%s", calls)
	if cfg.Mode != Concurrency {
		add("Latency from", "each request's scheduled send time")
	}
	switch {
	case len(cfg.UserData) > 0:
		add("Input data", "%s", strings.Join(cfg.UserData, " "))
	case cfg.ZeroInput:
		add("Input data", "zero")
	default:
		add("Input data", "random")
	}
	if cfg.SharedMemory == SystemSharedMemory {
		add("Shared memory", "system")
	}
	add("Tool", "perf_analyzer of triton-go %s", triton.Version)
	add("Measured", "%s", now.UTC().Format("2006-01-02 15:04 UTC"))
	return s
}

// rangeText is a search range as the settings table shows it.
func rangeText[T uint64 | float64](start, end, step T, binary bool) string {
	f := func(x T) string { return strconv.FormatFloat(float64(x), 'g', -1, 64) }
	switch {
	case end == 0:
		return fmt.Sprintf("from %s step %s until the latency limit", f(start), f(step))
	case end <= start:
		return f(start)
	case binary:
		return fmt.Sprintf("%s to %s (binary search to within %s)", f(start), f(end), f(step))
	}
	return fmt.Sprintf("%s to %s step %s", f(start), f(end), f(step))
}
