package modelmetrics

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Kind is the type of a metric family. The values are Triton's
// TRITONSERVER_MetricKind values (and pb_utils.MetricFamily.COUNTER, GAUGE,
// HISTOGRAM): 0, 1, 2.
type Kind int

// The kinds of metric family.
const (
	// Counter only goes up: Increment by non-negative values, Value.
	Counter Kind = iota
	// Gauge goes up and down: Increment by any value, Set, Value.
	Gauge
	// Histogram counts observations in buckets: Observe only.
	Histogram
)

// String returns "counter", "gauge" or "histogram" (the TYPE word of the
// Prometheus text format), or "Kind(n)" for any other value.
func (k Kind) String() string {
	switch k {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Limits on what one [Registry] holds, so that a model creating metrics in a
// loop costs bounded memory. Past them [Registry.Family] and [Family.Metric]
// fail with an error wrapping [ErrLimit]; closing families and metrics frees
// room again.
const (
	// MaxFamilies is the most families a Registry holds at once.
	MaxFamilies = 10_000
	// MaxSeriesPerFamily is the most series (distinct label values) one
	// family holds at once.
	MaxSeriesPerFamily = 10_000
	// MaxSeries is the most series a Registry holds at once, all families
	// together.
	MaxSeries = 100_000
	// MaxBuckets is the most bucket boundaries one histogram series has.
	MaxBuckets = 1_000
)

// reservedPrefixes are the name prefixes of the server's own families
// (package metrics: Triton's nv_* names and our tritongo_* ones). A model
// family with such a name would collide with them in one scrape.
var reservedPrefixes = []string{"nv_", "tritongo_"}

// Sentinel errors, for errors.Is. Every error of this package wraps one of
// them or [errors.ErrUnsupported] (an operation the metric's kind does not
// have, Triton's TRITONSERVER_ERROR_UNSUPPORTED).
var (
	// ErrInvalid marks a rejected argument: an invalid name, label or
	// bucket list, a family name taken by another kind, a label set that
	// differs from the family's, a negative counter increment (Triton's
	// TRITONSERVER_ERROR_INVALID_ARG).
	ErrInvalid = errors.New("modelmetrics: invalid argument")
	// ErrLimit marks a refusal because a limit ([MaxFamilies],
	// [MaxSeriesPerFamily], [MaxSeries]) is reached.
	ErrLimit = errors.New("modelmetrics: limit reached")
	// ErrClosed marks an operation on a [Family] or [Metric] that was
	// closed, or on a Metric whose family was closed to zero references
	// (Triton's TRITONSERVER_ERROR_INTERNAL "Metric has been invalidated").
	ErrClosed = errors.New("modelmetrics: closed")
)

// metricError is an error with Triton's exact text that wraps a sentinel.
// The fixed ones are package variables, so that a failing hot operation
// does not allocate either.
type metricError struct {
	msg  string
	kind error
}

func (e *metricError) Error() string { return e.msg }
func (e *metricError) Unwrap() error { return e.kind }

func newError(kind error, format string, args ...any) error {
	return &metricError{msg: fmt.Sprintf(format, args...), kind: kind}
}

// Registry holds the metric families that models create, and exports them
// as a [prometheus.Collector]: package metrics' Collector collects the
// server's registry beside the nv_* families, so they appear on /metrics.
// It is the Go side of Triton's custom metrics API
// (TRITONSERVER_MetricFamilyNew and friends, pb_utils.MetricFamily in
// Python models).
//
// A Registry is safe for concurrent use. Creating and closing families and
// metrics takes one mutex; the metric operations (Increment, Set, Observe,
// Value) take no lock and do not allocate. Scrapes copy the list of series
// under the mutex and read the values with atomic loads, so they never
// block an operation. The zero value is not usable; call [NewRegistry].
//
// # Design
//
// Families and series are reference-counted as in Triton's core: Triton
// returns the same prometheus-cpp family for a second
// TRITONSERVER_MetricFamilyNew of a name, and the same series for the same
// labels, and removes a series when its last TRITONSERVER_Metric is
// deleted. Every [Registry.Family] and [Family.Metric] call returns a new
// handle holding one reference, so a handle's Close is idempotent and can
// never drop another handle's reference. Each series is a few atomic
// words; a Metric handle reaches it through a pointer, and checks two
// atomic flags (its own closed flag and its family's) before each
// operation. Rejected: a mutex per series (an uncontended lock costs about
// as much as the whole atomic update, and contended ones serialize model
// instances); client_golang's CounterVec and friends (one label-name list
// fixed at construction, a lookup per operation through a hash of the
// label values, and no way to remove a family from a registry while
// handles to it live).
type Registry struct {
	mu sync.Mutex
	// mu protects the following, and the refs, labelNames, desc and
	// series fields of every family and the refs of every series.
	families map[string]*family
	series   int // live series, all families together
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{families: map[string]*family{}}
}

// Family is one handle to a metric family, returned by [Registry.Family].
// Its methods are safe for concurrent use.
type Family struct {
	f      *family
	closed bool // under f.reg.mu
}

// family is the shared state of a metric family.
type family struct {
	reg  *Registry
	name string
	help string
	kind Kind
	dead atomic.Bool // closed to zero references: its metrics are invalid

	// reg.mu protects the following.
	refs       int
	labelNames []string           // sorted; fixed while the family has series
	desc       *prometheus.Desc   // name, help and labelNames; nil without series
	series     map[string]*series // by labelKey of the label values
}

// Family creates the metric family name, with help as its description, or
// returns a new handle to the existing family of that name when it has the
// same kind. Each call adds one reference; call [Family.Close] once per
// call. As in Triton, a second call with another help text gets the existing
// family and its first help text (the exposition format has one HELP line
// per family).
//
// The name must be a valid Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*,
// not starting with "__"), must not start with "nv_" or "tritongo_" (the
// server's own families), and must not collide with the _bucket, _count or
// _sum series of a histogram family (nor, for a histogram, have a family
// with those names). help must be valid UTF-8.
//
// Errors, with Triton's texts where Triton has one: "Invalid metric name",
// "Unsupported kind passed to MetricFamily constructor.", "Family name
// already exists with different type" (all wrapping [ErrInvalid]), and an
// error wrapping [ErrLimit] past [MaxFamilies].
func (r *Registry) Family(name, help string, kind Kind) (*Family, error) {
	if kind != Counter && kind != Gauge && kind != Histogram {
		return nil, errUnsupportedKind
	}
	if !validMetricName(name) {
		return nil, errInvalidName
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return nil, newError(ErrInvalid, "metric family name %q is reserved: names starting with %q belong to the server's own metrics", name, p)
		}
	}
	if !utf8.ValidString(help) {
		return nil, newError(ErrInvalid, "the description of metric family %q is not valid UTF-8", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.families[name]; f != nil {
		if f.kind != kind {
			return nil, errOtherType
		}
		f.refs++
		return &Family{f: f}, nil
	}
	if err := r.suffixCollisionLocked(name, kind); err != nil {
		return nil, err
	}
	if len(r.families) >= MaxFamilies {
		return nil, newError(ErrLimit, "cannot create metric family %q: the server already has %d model-defined metric families, the most it holds", name, MaxFamilies)
	}
	f := &family{reg: r, name: name, help: help, kind: kind, refs: 1, series: map[string]*series{}}
	r.families[name] = f
	return &Family{f: f}, nil
}

// suffixCollisionLocked reports whether a family name of kind would share
// a series name with an existing family: a histogram h exports h_bucket,
// h_count and h_sum, which client_golang refuses beside families of those
// names (the whole scrape fails).
func (r *Registry) suffixCollisionLocked(name string, kind Kind) error {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f := r.families[base]; f != nil && f.kind == Histogram {
				return newError(ErrInvalid, "metric family name %q collides with the %s series of histogram family %q", name, suffix, base)
			}
		}
		if kind == Histogram && r.families[name+suffix] != nil {
			return newError(ErrInvalid, "histogram family %q would export %s, the name of an existing metric family", name, name+suffix)
		}
	}
	return nil
}

// Name returns the family's name.
func (f *Family) Name() string { return f.f.name }

// Kind returns the family's kind.
func (f *Family) Kind() Kind { return f.f.kind }

// Close drops this handle's reference. When the family's last reference
// goes, the family and all its series disappear from scrapes, and every
// [Metric] of the family still open fails its operations with an error
// wrapping [ErrClosed] (its Close still succeeds); a later [Registry.Family]
// call with the name creates a new family. Close is idempotent.
func (f *Family) Close() {
	r := f.f.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	fam := f.f
	fam.refs--
	if fam.refs > 0 {
		return
	}
	fam.dead.Store(true)
	r.series -= len(fam.series)
	fam.series, fam.desc, fam.labelNames = nil, nil, nil
	delete(r.families, fam.name)
}

// Metric returns a handle to the family's series with these labels (label
// name → value), creating the series at zero when it does not exist. Each
// call adds one reference to the series; call [Metric.Close] once per call.
// The same labels give the same series. labels may be nil or empty (one
// series without labels); the map is not retained.
//
// Every series of a family has the same label names: once a family has a
// series, a call with other names fails (until all its series are closed).
// Label names must match [a-zA-Z_][a-zA-Z0-9_]* and not start with "__";
// a histogram's labels must not include "le". Values must be valid UTF-8.
//
// buckets are the upper bounds of a histogram's buckets (an implicit +Inf
// bucket follows): required for a Histogram family (non-nil; an empty,
// non-nil slice means the +Inf bucket alone), finite, strictly increasing,
// at most [MaxBuckets]; and nil for a Counter or Gauge. An existing
// histogram series must be asked for with the same buckets. The slice is
// copied.
//
// Errors, with Triton's texts where Triton has one: "Unexpected args found
// in counter Metric constructor.", "Unexpected args found in gauge Metric
// constructor.", "Bucket boundaries not found in Metric args.", "Bucket
// Boundaries must be strictly sorted", "Invalid label name" (all wrapping
// [ErrInvalid]); errors wrapping [ErrLimit] past [MaxSeriesPerFamily] or
// [MaxSeries]; an error wrapping [ErrClosed] once this handle is closed.
func (f *Family) Metric(labels map[string]string, buckets []float64) (*Metric, error) {
	fam := f.f
	if err := fam.checkBuckets(buckets); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(labels))
	values := make([]string, len(names))
	for i, n := range names {
		if !validLabelName(n) || fam.kind == Histogram && n == "le" {
			return nil, errInvalidLabel
		}
		v := labels[n]
		if !utf8.ValidString(v) {
			return nil, newError(ErrInvalid, "metric family %q: the value of label %q is not valid UTF-8", fam.name, n)
		}
		values[i] = v
	}
	key := labelKey(values)

	r := fam.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	if f.closed {
		return nil, newError(ErrClosed, "metric family %q: this MetricFamily has been closed", fam.name)
	}
	if len(fam.series) > 0 && !slices.Equal(fam.labelNames, names) {
		return nil, newError(ErrInvalid, "metric family %q: labels %v differ from the label names %v of its other metrics; every metric of a family must have the same label names", fam.name, names, fam.labelNames)
	}
	if s := fam.series[key]; s != nil {
		if fam.kind == Histogram && !slices.Equal(s.bounds, buckets) {
			return nil, newError(ErrInvalid, "metric family %q: the metric with labels %v already exists with buckets %v, not %v", fam.name, labels, s.bounds, buckets)
		}
		s.refs++
		return &Metric{s: s}, nil
	}
	if len(fam.series) >= MaxSeriesPerFamily {
		return nil, newError(ErrLimit, "metric family %q: cannot create a metric with labels %v: the family already has %d metrics, the most it holds", fam.name, labels, MaxSeriesPerFamily)
	}
	if r.series >= MaxSeries {
		return nil, newError(ErrLimit, "metric family %q: cannot create a metric with labels %v: the server already has %d model-defined metrics, the most it holds", fam.name, labels, MaxSeries)
	}
	if len(fam.series) == 0 {
		fam.labelNames = names
		fam.desc = prometheus.NewDesc(fam.name, fam.help, names, nil)
	}
	s := &series{fam: fam, key: key, labelValues: values, refs: 1}
	if fam.kind == Histogram {
		s.bounds = slices.Clone(buckets)
		s.counts = make([]atomic.Uint64, len(buckets)+1)
	}
	fam.series[key] = s
	r.series++
	return &Metric{s: s}, nil
}

// checkBuckets checks the buckets argument of Metric against the family's
// kind.
func (fam *family) checkBuckets(buckets []float64) error {
	switch fam.kind {
	case Counter:
		if buckets != nil {
			return errCounterArgs
		}
	case Gauge:
		if buckets != nil {
			return errGaugeArgs
		}
	case Histogram:
		if buckets == nil {
			return errNoBuckets
		}
		if len(buckets) > MaxBuckets {
			return newError(ErrInvalid, "metric family %q: %d bucket boundaries, more than the %d a histogram may have", fam.name, len(buckets), MaxBuckets)
		}
		for i, b := range buckets {
			if math.IsInf(b, 0) || math.IsNaN(b) {
				return newError(ErrInvalid, "metric family %q: bucket boundary %v is not a finite number (the +Inf bucket is implicit)", fam.name, b)
			}
			if i > 0 && buckets[i-1] >= b {
				return errUnsorted
			}
		}
	}
	return nil
}

// labelKey identifies a series by its label values (the names are the
// family's). "\xff" never occurs in valid UTF-8, so the key is unambiguous.
func labelKey(values []string) string { return strings.Join(values, "\xff") }

// validMetricName is prometheus-cpp's CheckMetricName, which Triton uses:
// [a-zA-Z_:][a-zA-Z0-9_:]*, not starting with "__".
func validMetricName(s string) bool {
	return validName(s, true)
}

// validLabelName is prometheus-cpp's CheckLabelName: [a-zA-Z_][a-zA-Z0-9_]*,
// not starting with "__".
func validLabelName(s string) bool {
	return validName(s, false)
}

func validName(s string, colon bool) bool {
	if s == "" || strings.HasPrefix(s, "__") || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || colon && c == ':') {
			return false
		}
	}
	return true
}

// Describe sends nothing: the families come and go while the server runs,
// so the Registry is an unchecked collector (client_golang's term), and a
// prometheus.Registry accepts whatever it collects.
func (r *Registry) Describe(chan<- *prometheus.Desc) {}

// Collect sends one metric per series of every family that has series:
// counters and gauges with their value, histograms with cumulative bucket
// counts, their count and their sum.
func (r *Registry) Collect(ch chan<- prometheus.Metric) {
	r.CollectWith(ch, nil)
}

// CollectWith is [Registry.Collect] with constant labels added to every
// series, for a collector that exports several servers on one registry
// (package metrics' Config.ConstLabels). A family whose own label names
// include one of them is left out, since its series could not carry both.
// constLabels is not retained.
func (r *Registry) CollectWith(ch chan<- prometheus.Metric, constLabels prometheus.Labels) {
	type snap struct {
		desc *prometheus.Desc
		kind Kind
		s    []*series
	}
	r.mu.Lock()
	snaps := make([]snap, 0, len(r.families))
	for _, f := range r.families {
		if len(f.series) == 0 {
			continue
		}
		desc := f.desc
		if len(constLabels) > 0 {
			if slices.ContainsFunc(f.labelNames, func(n string) bool { _, ok := constLabels[n]; return ok }) {
				continue
			}
			desc = prometheus.NewDesc(f.name, f.help, f.labelNames, constLabels)
		}
		snaps = append(snaps, snap{desc: desc, kind: f.kind, s: slices.Collect(maps.Values(f.series))})
	}
	r.mu.Unlock()
	for _, sn := range snaps {
		for _, s := range sn.s {
			if m := s.metric(sn.desc, sn.kind); m != nil {
				ch <- m
			}
		}
	}
}

// The errors with Triton's texts (core src/metric_family.cc, and
// prometheus-cpp's family.cc, registry.cc and histogram.cc, whose
// std::invalid_argument texts TRITONSERVER_MetricFamilyNew and
// TRITONSERVER_MetricNewWithArgs return as TRITONSERVER_ERROR_INVALID_ARG).
var (
	errUnsupportedKind = &metricError{"Unsupported kind passed to MetricFamily constructor.", ErrInvalid}
	errInvalidName     = &metricError{"Invalid metric name", ErrInvalid}
	errOtherType       = &metricError{"Family name already exists with different type", ErrInvalid}
	errInvalidLabel    = &metricError{"Invalid label name", ErrInvalid}
	errCounterArgs     = &metricError{"Unexpected args found in counter Metric constructor.", ErrInvalid}
	errGaugeArgs       = &metricError{"Unexpected args found in gauge Metric constructor.", ErrInvalid}
	errNoBuckets       = &metricError{"Bucket boundaries not found in Metric args.", ErrInvalid}
	errUnsorted        = &metricError{"Bucket Boundaries must be strictly sorted", ErrInvalid}
)
