package metrics

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/triton-go/triton"
)

// Config selects what a [Collector] exports. The zero value exports what
// tritonserver exports by default (counter latencies on, CPU and GPU
// metrics on where the machine has them) for at most 1000 model versions.
type Config struct {
	// DisableCounters drops the cumulative *_duration_us counters and the
	// response-cache families (Triton's --metrics-config
	// counter_latencies=false).
	DisableCounters bool
	// DisableCPU drops nv_cpu_utilization and nv_cpu_memory_*_bytes
	// (Triton's --allow-cpu-metrics=false).
	DisableCPU bool
	// DisableGPU drops the nv_gpu_* and nv_energy_consumption families and
	// does not load NVML at all (Triton's --allow-gpu-metrics=false).
	DisableGPU bool
	// MaxSeries bounds label cardinality: at most this many model versions
	// are exported, the first ones by model name, then version number; the
	// rest are dropped and counted by the gauge
	// tritongo_metrics_dropped_model_versions. 0 means 1000; negative
	// values are treated as 0.
	MaxSeries int
	// Interval is how often the machine families (CPU, GPU, pinned
	// memory) are read, as Triton's --metrics-interval-ms: a scrape
	// within Interval of the last reading answers that reading again, so
	// CPU utilization covers at least Interval and NVML is asked no more
	// often. The per-model families are read at every scrape. 0 reads
	// everything at every scrape.
	Interval time.Duration
	// Logger receives the one line saying why GPU metrics are off, at
	// construction. Nil means zap.NewNop(). Nothing is logged per scrape.
	Logger *zap.Logger
	// ConstLabels are added, with their fixed values, to every series the
	// Collector exports, as prometheus.Opts.ConstLabels are. Nil adds none,
	// which is what tritonserver exports. Several Collectors (several
	// servers in one process) can share a registry only when each has its
	// own ConstLabels, such as {"server_id": "a"} and {"server_id": "b"}:
	// without them their series would be the same, and the registry refuses
	// the second at Register (see [Collector]). A name must be a valid
	// Prometheus label name that the Collector does not use itself: not
	// model, version, reason or gpu_uuid, and not starting with "_" (the
	// metric_tags labels and Prometheus's reserved names); an invalid one
	// makes Register fail with an error naming it. The map is copied.
	ConstLabels prometheus.Labels
}

// Collector is a [prometheus.Collector] exporting a [triton.Server]'s
// statistics under Triton's metric names. Register it on the application's
// registry; it reads [triton.Server.Stats] at scrape time and keeps no
// per-request state of its own, so it costs nothing on the request path.
//
// Collector is a checked collector: Describe sends the descriptor of every
// family it may export, so that a registry refuses at Register what would
// otherwise break every scrape. Two Collectors with the same (or no)
// [Config.ConstLabels] on one registry would export the same series, and
// Gather would fail each time with "collected before with the same name
// and label values" (promhttp answers 500); instead the second Register
// fails with a [prometheus.AlreadyRegisteredError]. Give each its own
// ConstLabels to serve both. The per-model families carry one _<tag> label
// per metric_tags entry of the model (Triton's rule), which Describe cannot
// know in advance; it describes them without those labels, which is enough
// for client_golang: a descriptor's identity is its name and constant
// label values, so a model loaded later with other tags still passes a
// pedantic registry's checks. Unregister removes a Collector.
//
// The Collector also exports the families that models define for
// themselves ([triton.Server.ModelMetrics]: Triton's custom metrics,
// pb_utils.MetricFamily in Python models), with the ConstLabels added; a
// model family whose own label names include a ConstLabels name is left
// out. Those families come and go while the server runs, so Describe
// cannot send them: an ordinary registry (prometheus.NewRegistry, what
// cmd/tritonserver uses) exports them, but a pedantic one
// (prometheus.NewPedanticRegistry) fails every Gather while a model family
// has series, reporting it as collected with an unregistered descriptor.
//
// A Collector is safe for concurrent use: concurrent scrapes are fine.
// Close releases NVML.
type Collector struct {
	srv       *triton.Server
	cfg       Config
	maxSeries int
	cpu       *cpuReader // nil when off or not Linux
	labels    prometheus.Labels
	err       error // ConstLabels refused: Describe and Collect report it
	fixed     *fixedDescs
	life      *lifecycleDescs

	mu sync.Mutex
	// mu protects the following.
	descs      map[string]*modelDescs // by tag label names, joined by "\x00"
	gpu        gpuSource              // nil when off, unavailable or closed
	energyBase map[string]uint64      // each GPU's energy counter at construction, mJ

	machineMu sync.Mutex
	// machineMu protects the following (and serializes machine reads
	// when Interval is set).
	machine   []prometheus.Metric // the last reading of the machine families
	machineAt time.Time           // when it was taken; zero: never
}

// NewCollector returns a Collector exporting srv's statistics. It loads
// NVML to read the GPUs unless cfg.DisableGPU is set; where NVML or a
// driver is missing (any machine without an NVIDIA GPU, or a build without
// cgo) the GPU families are absent and nothing fails. srv must not be nil.
func NewCollector(srv *triton.Server, cfg Config) *Collector {
	var gpu gpuSource
	if !cfg.DisableGPU {
		gpu = openNVML(logger(cfg.Logger))
	}
	return newCollector(srv, cfg, gpu)
}

func logger(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	return l
}

// newCollector is NewCollector with the GPU source given (tests feed fake
// readings through it).
func newCollector(srv *triton.Server, cfg Config, gpu gpuSource) *Collector {
	labels := maps.Clone(cfg.ConstLabels)
	c := &Collector{
		srv:       srv,
		cfg:       cfg,
		maxSeries: maxSeries(cfg.MaxSeries),
		labels:    labels,
		err:       checkConstLabels("Config", labels, labelModel, labelVersion, labelReason, labelGPU, labelTrigger),
		fixed:     newFixedDescs(labels),
		life:      newLifecycleDescs(labels),
		descs:     map[string]*modelDescs{},
	}
	if !cfg.DisableCPU {
		c.cpu = newCPUReader()
	}
	if gpu != nil {
		c.gpu = gpu
		c.energyBase = map[string]uint64{}
		c.recordEnergyBase(gpu.read())
	}
	return c
}

func maxSeries(n int) int {
	if n <= 0 {
		return defaultMaxSeries
	}
	return n
}

// Close releases NVML (nvml.Shutdown) when the Collector loaded it; the GPU
// families disappear from later scrapes. It is idempotent and safe to call
// while a scrape runs. It returns NVML's error, if any.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gpu == nil {
		return nil
	}
	err := c.gpu.close()
	c.gpu = nil
	return err
}

// Describe sends the descriptor of every family the Collector may export
// (see the type's documentation), or one invalid descriptor naming the
// problem when [Config.ConstLabels] is invalid, which makes Register fail.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if c.err != nil {
		ch <- prometheus.NewInvalidDesc(c.err)
		return
	}
	f := c.fixed
	for _, d := range []*prometheus.Desc{f.dropped, f.pinnedTotal, f.pinnedUsed,
		f.gpuUtil, f.gpuMemTotal, f.gpuMemUsed, f.gpuPower, f.gpuLimit, f.gpuEnergy} {
		ch <- d
	}
	if c.cpu != nil {
		ch <- f.cpuUtil
		ch <- f.cpuMemTotal
		ch <- f.cpuMemUsed
	}
	c.life.describe(ch)
	m := c.descsFor(nil)
	for _, d := range []*prometheus.Desc{m.success, m.failure, m.count, m.execCount,
		m.requestDur, m.queueDur, m.inputDur, m.inferDur, m.outputDur, m.pending, m.loadTime,
		m.cacheHits, m.cacheMisses, m.cacheHitDur, m.cacheMissDur, m.shed, m.estimate} {
		ch <- d
	}
}

// Collect reads the server's statistics, the CPU and the GPUs, and sends
// one metric per family and series, then the model-defined families.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(c.err), c.err)
		return
	}
	c.collectModels(ch)
	c.collectLifecycle(ch)
	c.collectMachine(ch)
	c.srv.ModelMetrics().CollectWith(ch, c.labels)
}

// fixedDescs are the descriptors of the families that are not per model,
// with a Collector's constant labels.
type fixedDescs struct {
	dropped, pinnedTotal, pinnedUsed                                *prometheus.Desc
	cpuUtil, cpuMemTotal, cpuMemUsed                                *prometheus.Desc
	gpuUtil, gpuMemTotal, gpuMemUsed, gpuPower, gpuLimit, gpuEnergy *prometheus.Desc
}

func newFixedDescs(labels prometheus.Labels) *fixedDescs {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, labels) }
	g := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{labelGPU}, labels)
	}
	return &fixedDescs{
		dropped:     d(nameDropped, helpDropped),
		pinnedTotal: d(namePinnedTotal, helpPinnedTotal),
		pinnedUsed:  d(namePinnedUsed, helpPinnedUsed),
		cpuUtil:     d(nameCPUUtil, helpCPUUtil),
		cpuMemTotal: d(nameCPUMemTotal, helpCPUMemTotal),
		cpuMemUsed:  d(nameCPUMemUsed, helpCPUMemUsed),
		gpuUtil:     g(nameGPUUtil, helpGPUUtil),
		gpuMemTotal: g(nameGPUMemTotal, helpGPUMemTotal),
		gpuMemUsed:  g(nameGPUMemUsed, helpGPUMemUsed),
		gpuPower:    g(nameGPUPower, helpGPUPower),
		gpuLimit:    g(nameGPULimit, helpGPULimit),
		gpuEnergy:   g(nameGPUEnergy, helpGPUEnergy),
	}
}

// checkConstLabels returns an error naming the first of labels that is not
// a valid label name, starts with "_", or is one of reserved; what names
// the config field.
func checkConstLabels(what string, labels prometheus.Labels, reserved ...string) error {
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case name == "" || name[0] == '_' || name[0] >= '0' && name[0] <= '9' || !validTagKey(name):
			return fmt.Errorf("metrics: %s.ConstLabels: %q is not a label name a collector can add (letters, digits and _, not starting with _ or a digit)", what, name)
		case slices.Contains(reserved, name):
			return fmt.Errorf("metrics: %s.ConstLabels: %q is a label the collector sets itself", what, name)
		}
	}
	return nil
}

// modelDescs are the per-model descriptors for one set of label names.
type modelDescs struct {
	tagKeys                                             []string // metric_tags keys, sorted, each a valid label name once prefixed
	success, failure, count, execCount                  *prometheus.Desc
	requestDur, queueDur, inputDur, inferDur, outputDur *prometheus.Desc
	pending, loadTime                                   *prometheus.Desc
	cacheHits, cacheMisses, cacheHitDur, cacheMissDur   *prometheus.Desc
	shed, estimate                                      *prometheus.Desc
}

func newModelDescs(tagKeys []string, constLabels prometheus.Labels) *modelDescs {
	labels := []string{labelModel, labelVersion}
	for _, k := range tagKeys {
		labels = append(labels, "_"+k)
	}
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, labels, constLabels) }
	return &modelDescs{
		tagKeys:      tagKeys,
		success:      d(nameSuccess, helpSuccess),
		failure:      prometheus.NewDesc(nameFailure, helpFailure, append(slices.Clip(labels), labelReason), constLabels),
		count:        d(nameCount, helpCount),
		execCount:    d(nameExecCount, helpExecCount),
		requestDur:   d(nameRequestDur, helpRequestDur),
		queueDur:     d(nameQueueDur, helpQueueDur),
		inputDur:     d(nameInputDur, helpInputDur),
		inferDur:     d(nameInferDur, helpInferDur),
		outputDur:    d(nameOutputDur, helpOutputDur),
		pending:      d(namePending, helpPending),
		loadTime:     d(nameLoadTime, helpLoadTime),
		cacheHits:    d(nameCacheHits, helpCacheHits),
		cacheMisses:  d(nameCacheMisses, helpCacheMisses),
		cacheHitDur:  d(nameCacheHitDur, helpCacheHitDur),
		cacheMissDur: d(nameCacheMisDur, helpCacheMisDur),
		shed:         prometheus.NewDesc(nameShed, helpShed, append(slices.Clip(labels), labelReason), constLabels),
		estimate:     prometheus.NewDesc(nameEstimate, helpEstimate, append(slices.Clip(labels), labelGroup, labelTerm), constLabels),
	}
}

// descsFor returns the descriptors for a model with the given metric_tags.
// Tags whose key cannot be a Prometheus label name ("_"+key must match
// [a-zA-Z_][a-zA-Z0-9_]* and not start with "__") are left out.
func (c *Collector) descsFor(tags map[string]string) *modelDescs {
	var keys []string
	for k := range tags {
		if validTagKey(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	id := strings.Join(keys, "\x00")
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.descs[id]
	if d == nil {
		d = newModelDescs(keys, c.labels)
		c.descs[id] = d
	}
	return d
}

// validTagKey reports whether "_"+k is a label name every Prometheus
// version accepts.
func validTagKey(k string) bool {
	if k == "" || k[0] == '_' {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// collectModels sends the per-model families of every ready model
// version, up to the MaxSeries bound, and the count of those dropped.
func (c *Collector) collectModels(ch chan<- prometheus.Metric) {
	stats, err := c.srv.Stats("", 0)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.fixed.dropped, err)
		return
	}
	dropped := 0
	if len(stats) > c.maxSeries {
		// Stats sorts by name, then version: the kept set is deterministic.
		dropped = len(stats) - c.maxSeries
		stats = stats[:c.maxSeries]
	}
	ch <- prometheus.MustNewConstMetric(c.fixed.dropped, prometheus.GaugeValue, float64(dropped))
	for i := range stats {
		c.collectModel(ch, &stats[i])
	}
}

// us converts a cumulative duration to Triton's integer microseconds.
func us(d time.Duration) float64 { return float64(int64(d) / 1000) }

func (c *Collector) collectModel(ch chan<- prometheus.Metric, st *triton.ModelStats) {
	d := c.descsFor(st.MetricTags)
	lv := make([]string, 0, 3+len(d.tagKeys))
	lv = append(lv, st.Name, strconv.FormatInt(st.Version, 10))
	for _, k := range d.tagKeys {
		lv = append(lv, st.MetricTags[k])
	}
	counter := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, lv...)
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv...)
	}
	counter(d.success, float64(st.Success.Count))
	for _, f := range []struct {
		reason triton.FailureReason
		n      uint64
	}{
		{triton.FailureRejected, st.Failures.Rejected},
		{triton.FailureCanceled, st.Failures.Canceled},
		{triton.FailureBackend, st.Failures.Backend},
		{triton.FailureOther, st.Failures.Other},
	} {
		ch <- prometheus.MustNewConstMetric(d.failure, prometheus.CounterValue, float64(f.n), append(lv, f.reason.String())...)
	}
	for r, n := range st.Shed {
		if n > 0 { // a reason appears with its first request, as a CounterVec's child does
			ch <- prometheus.MustNewConstMetric(d.shed, prometheus.CounterValue, float64(n), append(lv, triton.ShedReason(r).String())...)
		}
	}
	for _, e := range st.Estimates {
		g := strconv.Itoa(e.Group)
		for _, t := range []struct {
			term string
			d    time.Duration
		}{{"fixed", e.Fixed}, {"per_row", e.PerRow}, {"margin", e.Margin}} {
			ch <- prometheus.MustNewConstMetric(d.estimate, prometheus.GaugeValue, t.d.Seconds(), append(lv, g, t.term)...)
		}
	}
	counter(d.count, float64(st.InferenceCount))
	counter(d.execCount, float64(st.ExecutionCount))
	gauge(d.pending, float64(st.Pending))
	gauge(d.loadTime, st.LoadTime.Seconds())
	if c.cfg.DisableCounters {
		return
	}
	counter(d.requestDur, us(st.Success.Total))
	counter(d.queueDur, us(st.Queue.Total))
	counter(d.inputDur, us(st.ComputeInput.Total))
	counter(d.inferDur, us(st.ComputeInfer.Total))
	counter(d.outputDur, us(st.ComputeOutput.Total))
	if st.CacheHit.Count > 0 || st.CacheMiss.Count > 0 || st.ResponseCache {
		counter(d.cacheHits, float64(st.CacheHit.Count))
		counter(d.cacheMisses, float64(st.CacheMiss.Count))
		counter(d.cacheHitDur, us(st.CacheHit.Total))
		counter(d.cacheMissDur, us(st.CacheMiss.Total))
	}
}
