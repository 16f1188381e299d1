package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/advisor"
	"github.com/triton-go/triton/internal/perfreport"
	"github.com/triton-go/triton/modelconfig"
)

// advise.go is --advise (ours): the batching advisor of package
// internal/advisor on this tool's measurement. The advisor decides what
// to try; this file tries it: it reloads the tuned model with each
// candidate's max_batch_size, dynamic_batching and instance_group
// through the model repository extension (explicit model control: the
// in-process server, or a remote one started with
// --model-control-mode=explicit), and measures each load level as a step
// is measured (warm-up, windows back to back until the last three agree),
// except that stability is judged on throughput and average latency
// whatever the budget's statistic, and a level two windows of which are
// over twice the budget ends there. At the end the model is reloaded with
// the configuration it had.
//
// The model the load is sent to is -m. When it is an ensemble, or when
// other models execute while it runs (a BLS model calling them), the
// statistics of a first measurement at concurrency 1 give each one's
// share of the compute, and the largest is tuned while the throughput is
// still the whole pipeline's.

// Advice's defaults for the measurement options left at perf_analyzer's:
// windows of 1 s instead of 5, stability 15% instead of 10, at most 5
// windows instead of 10, so that an advice ends in minutes.
const (
	adviceInterval  = time.Second
	adviceStability = 0.15
	adviceMaxTrials = 5
)

// adviceMaxConcurrency bounds the load when --concurrency-range does not.
const adviceMaxConcurrency = 256

// setLatencyBudget is --latency-budget.
func setLatencyBudget(c *Config, v string, _ optEvent) error {
	b, err := advisor.ParseBudget(v)
	if err != nil {
		return usagef("Failed to parse --latency-budget. %s", err)
	}
	c.LatencyBudget = b
	return nil
}

// verifyAdvice checks --advise's options and puts in its measurement
// defaults (see above).
func (c *Config) verifyAdvice() error {
	if !c.Advise {
		if c.LatencyBudget.Limit != 0 {
			return usagef("--latency-budget is the budget of --advise, which is not set.")
		}
		return nil
	}
	if c.Mode != Concurrency {
		return usagef("--advise measures concurrencies; it cannot be used with --request-rate-range or --request-intervals.")
	}
	if c.BatchSize > 1 {
		return usagef("--advise sends requests of one row and lets the server form the batches; -b must be 1.")
	}
	if c.Interval == 5000*time.Millisecond {
		c.Interval = adviceInterval
	}
	if c.Stability == 0.1 {
		c.Stability = adviceStability
	}
	if c.MaxTrials == 10 {
		c.MaxTrials = adviceMaxTrials
	}
	c.Percentile = -1
	return nil
}

// advise is Main for --advise: the advice on stdout, a line a
// measurement on stderr.
func advise(ctx context.Context, cfg *Config, stdout, stderr io.Writer, dial Dialer) int {
	// The runner's own console output (settings block, step headers)
	// is not the advice's; stderr is wrapped so that no progress line is
	// drawn (it would name steps the advice does not have).
	r := &runner{cfg: cfg, stdout: io.Discard, stderr: struct{ io.Writer }{stderr}, interrupted: ctx.Done()}
	err := r.setup(dial)
	var a *advisor.Advice
	if err == nil {
		a, err = r.advise(ctx, stderr)
		if a != nil && (err == nil || errors.Is(err, errInterrupted)) {
			if err != nil {
				r.warn(err.Error())
				err = nil
			}
			if werr := a.Report(stdout); werr != nil {
				err = werr
			} else {
				err = r.writeAdviceFiles(a)
			}
		}
	}
	r.stderr = stderr
	return r.finish(err)
}

// advise measures the model as loaded, chooses the model to tune, runs the
// advisor and reloads the model as it was.
func (r *runner) advise(ctx context.Context, log io.Writer) (*advisor.Advice, error) {
	repo, ok := r.conn.(client.Repository)
	if !ok {
		return nil, generic("error: --advise reloads the model with each setting it tries, through the model repository extension, which this connection lacks")
	}
	m := &adviceMeasurer{r: r, repo: repo, target: r.model.name, composing: map[string]bool{}}
	for _, steps := range r.model.composing {
		for _, s := range steps {
			m.composing[s.name] = true
		}
	}
	base, err := m.Measure(ctx, 1)
	if err != nil {
		return nil, err
	}
	pipeline := ""
	if d := advisor.Dominant(base.Shares); d != "" {
		pipeline, m.target = r.model.name, d
		base = m.measurement(m.last, m.before, m.after, 1, base.Stable)
	}
	orig, err := r.conn.ModelConfig(ctx, m.target, 0)
	if err != nil {
		return nil, generic("error: failed to get model config: %s", oneLine(err.Error()))
	}
	if orig.GetSequenceBatching() != nil {
		return nil, generic("error: --advise tunes dynamic batching, and model '%s' uses sequence batching", m.target)
	}
	m.orig = orig
	cand, kind := candidateOf(orig)
	if r.cfg.Protocol != InProcess {
		// A remote server may not allow explicit loads: find out before
		// the first candidate, with a reload that changes nothing.
		if err := m.load(ctx, orig); err != nil {
			return nil, generic("error: --advise needs a server under explicit model control (tritonserver --model-control-mode=explicit): %s", oneLine(err.Error()))
		}
	}
	defer func() {
		if m.changed {
			if err := m.load(context.WithoutCancel(ctx), orig); err != nil {
				r.warn("error: reloading model '" + m.target + "' with its own configuration: " + oneLine(err.Error()))
			}
		}
	}()
	maxConc := adviceMaxConcurrency
	if r.cfg.Concurrency.End > 1 {
		maxConc = int(r.cfg.Concurrency.End)
	}
	req := advisor.Request{
		Model: m.target, Pipeline: pipeline, Kind: kind, Budget: r.cfg.LatencyBudget,
		Original: cand, Baseline: base,
		MaxInstances: min(4, max(2, runtime.GOMAXPROCS(0))), MaxConcurrency: maxConc,
		Observe: func(p *advisor.Point) {
			r.progress.clear()
			if p.Err == nil && m.last.client.requestCount > 0 {
				r.steps = append(r.steps, m.last)
				r.advised = append(r.advised, p)
			}
			if p.Err != nil {
				fmt.Fprintf(log, "advise: #%d %s: %s: load failed: %s\n", p.N, p.Stage, p.Candidate, oneLine(p.Err.Error()))
				return
			}
			fmt.Fprintf(log, "advise: #%d %s: %s, concurrency %d: %.1f infer/s, %s %d usec\n",
				p.N, p.Stage, p.Candidate, p.Concurrency, p.Throughput, r.cfg.LatencyBudget.Stat(),
				r.cfg.LatencyBudget.Of(&p.Measurement).Microseconds())
		},
	}
	a, err := advisor.Advise(ctx, req, m)
	if n := len(orig.GetInstanceGroup()); a != nil && n > 1 {
		a.Notes = append(a.Notes, fmt.Sprintf("%s's %d instance groups were tried as one group of the first one's kind and devices, %s.", m.target, n, kind))
	}
	if errors.Is(err, context.Canceled) {
		err = errInterrupted
	}
	return a, err
}

// writeAdviceFiles writes -f and --report for an advice: a CSV row per
// measurement, in the order measured, of perf_analyzer's columns after
// the point's number, stage and settings; and the report's figures with
// a curve per candidate (its last measurement at each concurrency).
func (r *runner) writeAdviceFiles(a *advisor.Advice) error {
	if len(r.steps) == 0 {
		return nil
	}
	if path := r.cfg.CSVFile; path != "" {
		lines := []string{"Point,Stage,Settings," + csvHeader(r.steps, r.opts)}
		for i := range r.steps {
			p := r.advised[i]
			lines = append(lines, fmt.Sprintf("%d,%s,\"%s\",%s", p.N, p.Stage, p.Candidate.Label(), csvRow(&r.steps[i], r.opts, r.warn)))
		}
		if err := writeLines(path, lines); err != nil {
			return generic("error: failed to create report writer: %s", err)
		}
	}
	if dir := r.cfg.ReportDir; dir != "" {
		rep := buildReport(r.cfg, r.model, r.async, nil, r.opts, time.Now())
		rep.Title = "Batching advice: " + a.Model
		if a.Pipeline != "" {
			rep.Title += " in " + a.Pipeline
		}
		rep.Settings = slices.DeleteFunc(rep.Settings, func(s perfreport.Setting) bool { return s.Name == "Load" })
		rep.Settings = append(rep.Settings, perfreport.Setting{Name: "Latency budget", Value: a.Budget.String()})
		if a.Chosen != nil {
			rep.Settings = append(rep.Settings, perfreport.Setting{Name: "Advice", Value: a.Chosen.Candidate.Label()})
		}
		type key struct {
			label       string
			concurrency uint64
		}
		last := map[key]int{}
		for i := range r.steps {
			st := reportStep(&r.steps[i], r.opts)
			st.Label = r.advised[i].Candidate.Label()
			k := key{st.Label, st.Concurrency}
			if j, ok := last[k]; ok {
				rep.Steps[j] = st
				continue
			}
			last[k] = len(rep.Steps)
			rep.Steps = append(rep.Steps, st)
		}
		if err := perfreport.Write(dir, rep); err != nil {
			return generic("error: failed to write the --report folder: %s", oneLine(err.Error()))
		}
	}
	return nil
}

// candidateOf reads a config's settings as a candidate, and its instance
// group kind (KIND_CPU for none or KIND_AUTO).
func candidateOf(cfg *modelconfig.ModelConfig) (advisor.Candidate, string) {
	c := advisor.Candidate{MaxBatch: int(cfg.GetMaxBatchSize())}
	kind := "KIND_CPU"
	for i, g := range cfg.GetInstanceGroup() {
		c.Instances += max(int(g.GetCount()), 1)
		if k := g.GetKind(); i == 0 && k != modelconfig.ModelInstanceGroup_KIND_AUTO {
			kind = k.String()
		}
	}
	c.Instances = max(c.Instances, 1)
	if db := cfg.GetDynamicBatching(); db != nil {
		c.Dynamic = true
		for _, p := range db.GetPreferredBatchSize() {
			c.Preferred = append(c.Preferred, int(p))
		}
		c.Delay = time.Duration(db.GetMaxQueueDelayMicroseconds()) * time.Microsecond
	}
	return c, kind
}

// withCandidate returns a copy of cfg with c's settings: max_batch_size,
// dynamic_batching (its other fields kept) and one instance group, of the
// first group's kind and devices.
func withCandidate(cfg *modelconfig.ModelConfig, c advisor.Candidate) *modelconfig.ModelConfig {
	out := proto.Clone(cfg).(*modelconfig.ModelConfig)
	out.MaxBatchSize = int32(c.MaxBatch)
	if c.Dynamic {
		db := &modelconfig.ModelDynamicBatching{}
		if old := cfg.GetDynamicBatching(); old != nil {
			db = proto.Clone(old).(*modelconfig.ModelDynamicBatching)
		}
		db.PreferredBatchSize = nil
		for _, p := range c.Preferred {
			db.PreferredBatchSize = append(db.PreferredBatchSize, int32(p))
		}
		db.MaxQueueDelayMicroseconds = uint64(c.Delay.Microseconds())
		out.SchedulingChoice = &modelconfig.ModelConfig_DynamicBatching{DynamicBatching: db}
	} else if out.GetDynamicBatching() != nil {
		out.SchedulingChoice = nil
	}
	g := &modelconfig.ModelInstanceGroup{Kind: modelconfig.ModelInstanceGroup_KIND_CPU}
	if groups := cfg.GetInstanceGroup(); len(groups) > 0 {
		g = proto.Clone(groups[0]).(*modelconfig.ModelInstanceGroup)
	}
	g.Count = int32(c.Instances)
	out.InstanceGroup = []*modelconfig.ModelInstanceGroup{g}
	return out
}

// adviceMeasurer is the advisor's [advisor.Measurer]: reloads through the
// repository extension, load levels through the runner.
type adviceMeasurer struct {
	r         *runner
	repo      client.Repository
	target    string          // the model tuned
	composing map[string]bool // an ensemble's models (its steps, recursively)
	orig      *modelconfig.ModelConfig
	changed   bool // a candidate was loaded
	last      status
	before    []triton.ModelStats // every model's statistics around the last measurement
	after     []triton.ModelStats
}

var _ advisor.Measurer = (*adviceMeasurer)(nil)

func (m *adviceMeasurer) load(ctx context.Context, cfg *modelconfig.ModelConfig) error {
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(cfg)
	if err != nil {
		return err
	}
	return m.repo.Load(ctx, m.target, &triton.LoadOptions{Config: string(js)})
}

// Apply stops the load (the workers finish their requests) and reloads
// the tuned model with c; the next Measure starts the load again.
func (m *adviceMeasurer) Apply(ctx context.Context, c advisor.Candidate) error {
	m.r.load.setConcurrency(0)
	m.changed = true
	return m.load(ctx, withCandidate(m.orig, c))
}

// Measure is profileStep without its report: the level, warmed up, then
// windows until the last three agree on throughput and average latency,
// or two are over twice the budget, or --max-trials windows were taken;
// the last three merged.
func (m *adviceMeasurer) Measure(ctx context.Context, concurrency int) (advisor.Measurement, error) {
	r, cfg := m.r, m.r.cfg
	if err := r.setLevel(level{concurrency: uint64(concurrency)}); err != nil {
		return advisor.Measurement{}, err
	}
	before, err := r.conn.ModelStatistics(ctx, "", 0)
	if err != nil {
		return advisor.Measurement{}, generic("error: failed to get model statistics: %s", oneLine(err.Error()))
	}
	r.prevEnd, r.prevStats, r.carry = 0, nil, r.carry[:0]
	var windows []status
	var ls loadStatus
	stable := false
	limit := uint64(2 * r.cfg.LatencyBudget.Limit)
	over := 0
	for trials := uint64(1); ; trials++ {
		ws, err := r.measureWindow()
		if err != nil {
			return advisor.Measurement{}, err
		}
		windows = append(windows, ws)
		if len(windows) > stabilityWindow {
			windows = windows[1:]
		}
		ls.add(ws)
		if ws.err != nil || (limit > 0 && budgetNS(ws, r.cfg.LatencyBudget) >= limit) {
			over++
		}
		if stable = ls.stable(cfg.Stability, true); stable || over >= 2 || trials >= cfg.MaxTrials {
			break
		}
	}
	after, err := r.conn.ModelStatistics(ctx, "", 0)
	if err != nil {
		return advisor.Measurement{}, generic("error: failed to get model statistics: %s", oneLine(err.Error()))
	}
	ok := slices.DeleteFunc(windows, func(w status) bool { return w.err != nil })
	var merged status
	if len(ok) > 0 {
		merged = mergeStatuses(ok, -1, r.opts.libStats)
		merged.concurrency = uint64(concurrency)
	}
	m.last, m.before, m.after = merged, before, after
	return m.measurement(merged, before, after, concurrency, stable), nil
}

// budgetNS is a window's latency in the budget's statistic.
func budgetNS(s status, b advisor.Budget) uint64 {
	if b.Percentile == 0 {
		return s.client.avgLatencyNS
	}
	ns, _ := s.client.percentile(b.Percentile)
	return ns
}

// measurement is the advisor's view of a merged step and the statistics
// around it: the client's figures, and the tuned model's queue, compute
// and batches; with other models executing, their shares.
func (m *adviceMeasurer) measurement(s status, before, after []triton.ModelStats, concurrency int, stable bool) advisor.Measurement {
	out := advisor.Measurement{Concurrency: concurrency, Stable: stable}
	if s.client.requestCount > 0 {
		out.Throughput = s.client.inferPerSec
		out.Avg = time.Duration(s.client.avgLatencyNS)
		for _, p := range []struct {
			p int
			d *time.Duration
		}{{50, &out.P50}, {90, &out.P90}, {95, &out.P95}, {99, &out.P99}} {
			ns, _ := s.client.percentile(p.p)
			*p.d = time.Duration(ns)
		}
	}
	diffs := statsDiffs(before, after)
	if d, ok := diffs[m.target]; ok {
		if n := d.Queue.Count; n > 0 {
			out.Queue = d.Queue.Total / time.Duration(n)
		}
		if n := d.ComputeInfer.Count; n > 0 {
			out.Compute = (d.ComputeInput.Total + d.ComputeInfer.Total + d.ComputeOutput.Total) / time.Duration(n)
		}
		for _, b := range d.Batches {
			out.Batches = append(out.Batches, advisor.BatchTime{Size: int(b.BatchSize), Count: b.ComputeInfer.Count, Total: b.ComputeInfer.Total})
		}
	}
	var total time.Duration
	for name, d := range diffs {
		if name == m.r.model.name || (m.r.model.ensemble() && !m.composing[name]) || d.ExecutionCount == 0 {
			continue
		}
		sh := advisor.Share{Model: name, Executions: d.ExecutionCount, Inferences: d.InferenceCount}
		for _, b := range d.Batches {
			sh.Compute += b.ComputeInfer.Total
		}
		total += sh.Compute
		out.Shares = append(out.Shares, sh)
	}
	for i := range out.Shares {
		if total > 0 {
			out.Shares[i].Share = float64(out.Shares[i].Compute) / float64(total)
		}
	}
	slices.SortFunc(out.Shares, func(a, b advisor.Share) int {
		if a.Compute != b.Compute {
			if a.Compute > b.Compute {
				return -1
			}
			return 1
		}
		if a.Model < b.Model {
			return -1
		}
		return 1
	})
	return out
}

// statsDiffs is after − before for each model name, over the version that
// executed the most in between (a reload makes a new version's counters).
func statsDiffs(before, after []triton.ModelStats) map[string]triton.ModelStats {
	type key struct {
		name    string
		version int64
	}
	prev := map[key]triton.ModelStats{}
	for _, s := range before {
		prev[key{s.Name, s.Version}] = s
	}
	out := map[string]triton.ModelStats{}
	for _, a := range after {
		b := prev[key{a.Name, a.Version}]
		if a.ExecutionCount < b.ExecutionCount {
			b = triton.ModelStats{} // the version was reloaded: counters restarted
		}
		d := triton.ModelStats{Name: a.Name, Version: a.Version,
			InferenceCount: a.InferenceCount - b.InferenceCount,
			ExecutionCount: a.ExecutionCount - b.ExecutionCount,
			Queue:          subDuration(a.Queue, b.Queue),
			ComputeInput:   subDuration(a.ComputeInput, b.ComputeInput),
			ComputeInfer:   subDuration(a.ComputeInfer, b.ComputeInfer),
			ComputeOutput:  subDuration(a.ComputeOutput, b.ComputeOutput),
		}
		for _, bs := range a.Batches {
			var old triton.StatDuration
			for _, ob := range b.Batches {
				if ob.BatchSize == bs.BatchSize {
					old = ob.ComputeInfer
				}
			}
			if inf := subDuration(bs.ComputeInfer, old); inf.Count > 0 {
				d.Batches = append(d.Batches, triton.BatchStats{BatchSize: bs.BatchSize, ComputeInfer: inf})
			}
		}
		if have, ok := out[a.Name]; !ok || d.ExecutionCount > have.ExecutionCount {
			out[a.Name] = d
		}
	}
	return out
}

func subDuration(a, b triton.StatDuration) triton.StatDuration {
	return triton.StatDuration{Count: a.Count - b.Count, Total: a.Total - b.Total}
}
