// Package modelmetrics holds the metrics that models define for themselves:
// counters, gauges and histograms created while the server runs, exported
// on /metrics beside the server's own nv_* families. It is Triton's custom
// metrics API (TRITONSERVER_MetricFamilyNew, TRITONSERVER_MetricNew,
// TRITONSERVER_MetricIncrement, ..._Set, ..._Observe, ..._Value and the
// Delete calls), which Python models use through pb_utils.MetricFamily and
// Go backends through the Metrics field of backend.ModelSpec.
//
// # Choosing an entry point
//
// Each server owns one [Registry] (the root package's Server.ModelMetrics,
// and ModelSpec.Metrics for the models it loads); package metrics'
// Collector collects it, so nothing else needs registering. [NewRegistry]
// is for a Registry of one's own, such as in tests.
//
//   - [Registry.Family] creates a family (a metric name, a description and
//     a [Kind]), or returns another handle to the family of that name.
//   - [Family.Metric] returns a handle to one series of the family: one set
//     of label values, and for a histogram its bucket boundaries.
//   - [Metric.Increment], [Metric.Set], [Metric.Observe] and [Metric.Value]
//     update and read it, each legal only for some kinds (see [Metric]).
//   - Close on a Family or a Metric drops that handle's reference.
//
// # Lifetime
//
// Families and series are reference-counted, as in Triton: a second Family
// call with the same name and kind, and a second Metric call with the same
// labels, return new handles to the same family or series. A series leaves
// the scrape when its last Metric handle is closed, a family when its last
// Family handle is closed; the Metric handles of a family closed to zero
// then fail every operation (close the metrics first, as Triton asks). A
// model closes what it created when it unloads; a family that several
// models share stays while any of them holds it.
//
// # Errors
//
// The error texts are Triton's core texts where Triton has one ("Invalid
// metric name", "Family name already exists with different type",
// "TRITONSERVER_METRIC_KIND_COUNTER does not support Set", ...), so that a
// Python model sees the messages it would see under Triton, after the
// prefix that pb_utils adds. Every error wraps [ErrInvalid], [ErrLimit],
// [ErrClosed] or [errors.ErrUnsupported], for errors.Is.
//
// Where this package differs from Triton: names starting with "nv_" or
// "tritongo_" are refused (under Triton a custom family named like one of
// the server's own merges into it, or fails with "Family name already
// exists with different type"); every series of a family must have the
// same label names, and a histogram series asked for again with other
// buckets is an error (prometheus-cpp accepts mixed label sets, and returns
// the existing series with its first buckets); bucket boundaries must be
// finite; a counter refuses a NaN increment; and the sizes are bounded
// ([MaxFamilies], [MaxSeriesPerFamily], [MaxSeries], [MaxBuckets]).
//
// # Concurrency
//
// Everything is safe for concurrent use. The metric operations take no
// lock and do not allocate: each is one or two atomic updates of the
// series after two atomic loads checking that the handle is still valid.
// Creating and closing take the Registry's mutex; a scrape holds it only
// to list the series.
//
// # Usage
//
//	fam, err := spec.Metrics.Family("requests_by_user", "Requests per user", modelmetrics.Counter)
//	if err != nil { ... }
//	defer fam.Close()
//	m, err := fam.Metric(map[string]string{"user": "alice"}, nil)
//	if err != nil { ... }
//	defer m.Close()
//	m.Increment(1)
//
// The scrape then shows
//
//	# HELP requests_by_user Requests per user
//	# TYPE requests_by_user counter
//	requests_by_user{user="alice"} 1
package modelmetrics
