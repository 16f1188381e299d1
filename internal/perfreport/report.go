package perfreport

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Report is one measurement as plain data: the settings it ran with and
// its stable steps. perf_analyzer fills it from its sweep; anything else
// that measures steps (the batching advisor's candidates) can fill it too.
// The zero values of the optional fields leave their columns out.
type Report struct {
	// Title heads the page; "" gives "perf_analyzer: <Model>".
	Title string `json:"title,omitempty"`
	// Model and Version name what was measured ("" version: the
	// server's choice).
	Model   string `json:"model"`
	Version string `json:"version,omitempty"`
	// Source is where the model was served ("in-process", a URL), so
	// that [Add] merges only reports of the same server.
	Source string `json:"source,omitempty"`
	// RateMode: the steps are request rates (Step.RequestRate), not
	// concurrencies.
	RateMode bool `json:"rate_mode,omitempty"`
	// ServerStats: the server reported its statistics, so the steps'
	// Split has the server's part (queue, compute).
	ServerStats bool `json:"server_stats,omitempty"`
	// Cache: the model has a response cache (the cache hit and miss
	// columns).
	Cache bool `json:"cache,omitempty"`
	// Decoupled: the model answers with several responses (the response
	// throughput column).
	Decoupled bool `json:"decoupled,omitempty"`
	// Settings are shown in a table, in order.
	Settings []Setting `json:"settings,omitempty"`
	// Steps are the measured steps. Steps of one batch size and label
	// make one curve, in the order of their load; several batch sizes
	// add the latency-vs-batch figure.
	Steps []Step `json:"steps"`
}

// A Setting is one line of the settings table.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// A Step is one stable load level: perf_analyzer's step block and CSV
// row. Durations are averages per request, except the percentiles.
type Step struct {
	// Label names the configuration the step ran with when steps differ
	// in more than batch size and load (an advisor's candidate, "delay
	// 100µs"); "" for perf_analyzer's steps.
	Label       string  `json:"label,omitempty"`
	BatchSize   uint64  `json:"batch_size"`
	Concurrency uint64  `json:"concurrency,omitempty"`
	RequestRate float64 `json:"request_rate,omitempty"` // requests/s, in rate mode
	// Throughput is inferences/s (requests × batch size);
	// ResponseThroughput is responses/s (decoupled models).
	Throughput         float64 `json:"throughput"`
	ResponseThroughput float64 `json:"response_throughput,omitempty"`
	// Requests is how many requests the step measured.
	Requests uint64 `json:"requests,omitempty"`
	// Latency is the client's: from send (or, in rate mode, from the
	// scheduled send) to the response.
	Latency Latency `json:"latency"`
	// Split is where the average request's time went.
	Split Split `json:"split"`
}

// Latency is a step's client-side latency.
type Latency struct {
	Avg         time.Duration `json:"avg_ns"`
	Percentiles []Percentile  `json:"percentiles,omitempty"` // ascending P
}

// Percentile returns the latency at p, and whether the step has it.
func (l Latency) Percentile(p int) (time.Duration, bool) {
	for _, x := range l.Percentiles {
		if x.P == p {
			return x.Latency, true
		}
	}
	return 0, false
}

// A Percentile is the latency that P% of the requests did not exceed.
type Percentile struct {
	P       int           `json:"p"`
	Latency time.Duration `json:"ns"`
}

// Split is the time of an average request in parts, as perf_analyzer's
// CSV columns divide it. Network is the client's wait for the response
// less the server's accounted time (queue, compute, cache): the network
// and the server's own overhead (without server statistics it is the
// whole wait). The parts add up to the average latency, unless the
// server accounted for more than the client waited.
type Split struct {
	ClientSend    time.Duration `json:"client_send_ns,omitempty"`
	Network       time.Duration `json:"network_ns,omitempty"`
	Queue         time.Duration `json:"queue_ns,omitempty"`
	ComputeInput  time.Duration `json:"compute_input_ns,omitempty"`
	ComputeInfer  time.Duration `json:"compute_infer_ns,omitempty"`
	ComputeOutput time.Duration `json:"compute_output_ns,omitempty"`
	CacheHit      time.Duration `json:"cache_hit_ns,omitempty"`
	CacheMiss     time.Duration `json:"cache_miss_ns,omitempty"`
	ClientRecv    time.Duration `json:"client_recv_ns,omitempty"`
}

// level is a step's load: its concurrency or request rate.
func (r *Report) level(s *Step) float64 {
	if r.RateMode {
		return s.RequestRate
	}
	return float64(s.Concurrency)
}

// batchSizes are the steps' distinct batch sizes, ascending.
func (r *Report) batchSizes() []uint64 {
	var bs []uint64
	for i := range r.Steps {
		bs = append(bs, r.Steps[i].BatchSize)
	}
	slices.Sort(bs)
	return slices.Compact(bs)
}

// sortedSteps are the steps by label, batch size and load: the table's
// order and the curves'.
func (r *Report) sortedSteps() []Step {
	steps := slices.Clone(r.Steps)
	slices.SortStableFunc(steps, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.Label, b.Label), cmp.Compare(a.BatchSize, b.BatchSize),
			cmp.Compare(r.level(&a), r.level(&b)))
	})
	return steps
}

func (r *Report) title() string {
	if r.Title != "" {
		return r.Title
	}
	t := "perf_analyzer: " + r.Model
	if r.Version != "" {
		t += " version " + r.Version
	}
	return t
}

// dataFile is the report's data, kept in the folder beside the figures
// for [Add] and for other tools.
const dataFile = "report.json"

// Read reads the report that [Write] left in dir.
func Read(dir string) (Report, error) {
	var r Report
	b, err := os.ReadFile(filepath.Join(dir, dataFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("perfreport: %s: %w", filepath.Join(dir, dataFile), err)
	}
	return r, nil
}

// Add writes r into dir as [Write] does, first merging the report an
// earlier Add or Write left there when it measured the same model
// (Model, Version, Source and RateMode equal): the earlier steps of
// batch sizes (and labels) that r did not measure are kept, so that runs
// with -b 1, -b 4 and -b 8 into one folder draw latency against batch
// size. A setting whose value differs between the runs lists each value.
// A report of another model is replaced. It returns what was written.
func Add(dir string, r Report) (Report, error) {
	prev, err := Read(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return r, fmt.Errorf("%w (remove it to start a new report)", err)
	default:
		r = merge(prev, r)
	}
	return r, Write(dir, r)
}

// merge adds to next the steps of prev whose label and batch size next
// lacks, when both measured the same thing.
func merge(prev, next Report) Report {
	if prev.Model != next.Model || prev.Version != next.Version || prev.Source != next.Source || prev.RateMode != next.RateMode {
		return next
	}
	type run struct {
		label string
		batch uint64
	}
	have := map[run]bool{}
	for _, s := range next.Steps {
		have[run{s.Label, s.BatchSize}] = true
	}
	var kept []Step
	for _, s := range prev.Steps {
		if !have[run{s.Label, s.BatchSize}] {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return next
	}
	out := next
	out.Steps = append(kept, next.Steps...)
	out.ServerStats = prev.ServerStats && next.ServerStats
	out.Cache = prev.Cache || next.Cache
	out.Decoupled = prev.Decoupled || next.Decoupled
	out.Settings = mergeSettings(prev.Settings, next.Settings)
	return out
}

// mergeSettings keeps next's order; a value that differs from prev's
// becomes the list of both (each value once).
func mergeSettings(prev, next []Setting) []Setting {
	old := map[string]string{}
	for _, s := range prev {
		old[s.Name] = s.Value
	}
	out := slices.Clone(next)
	for i, s := range out {
		v, ok := old[s.Name]
		if !ok || v == s.Value {
			continue
		}
		vals := strings.Split(v, ", ")
		if !slices.Contains(vals, s.Value) {
			vals = append(vals, s.Value)
		}
		out[i].Value = strings.Join(vals, ", ")
	}
	return out
}
