// Package metrics exports a [triton.Server]'s metrics to Prometheus under
// tritonserver's names, so that dashboards and alerts written for
// tritonserver (nv_inference_request_success, nv_inference_queue_duration_us,
// nv_gpu_utilization, ...) work unchanged.
//
// # Choosing an entry point
//
// [NewCollector] returns a [Collector]: counters and gauges read from
// [triton.Server.Stats] at scrape time, plus the machine's CPU (Linux
// /proc) and GPUs (NVML). It keeps no per-request state and costs nothing
// on the request path; it is what tritonserver exports by default:
//
//   - per model version (labels model, version, and _<tag> for each
//     metric_tags entry of the model's config): nv_inference_request_success,
//     nv_inference_request_failure (label reason: REJECTED, CANCELED,
//     BACKEND, OTHER; all four always present), nv_inference_count,
//     nv_inference_exec_count, nv_inference_pending_request_count,
//     nv_model_load_duration_secs; unless Config.DisableCounters,
//     nv_inference_request_duration_us, nv_inference_queue_duration_us and
//     nv_inference_compute_{input,infer,output}_duration_us, and, for a model
//     whose config enables response_cache (or that has cache traffic),
//     nv_cache_num_{hits,misses}_per_model and
//     nv_cache_{hit,miss}_duration_per_model;
//   - unless Config.DisableCPU, on Linux: nv_cpu_utilization,
//     nv_cpu_memory_total_bytes, nv_cpu_memory_used_bytes;
//   - nv_pinned_memory_pool_total_bytes and nv_pinned_memory_pool_used_bytes,
//     always 0: the server has no pinned host-memory pool (tensors live in
//     ordinary Go memory), and the families exist so that dashboards find
//     them;
//   - unless Config.DisableGPU, where NVML finds a driver (cgo builds on
//     Linux), per GPU (label gpu_uuid): nv_gpu_utilization (0-1),
//     nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes, nv_gpu_power_usage
//     and nv_gpu_power_limit (watts), nv_energy_consumption (joules since
//     the Collector was created);
//   - tritongo_metrics_dropped_model_versions: the model versions left out
//     by Config.MaxSeries;
//   - for a server with a memory budget or under explicit model control
//     ([triton.Server.Memory]): tritongo_model_memory_budget_bytes,
//     tritongo_model_memory_resident_bytes, tritongo_model_memory_bytes
//     (per model and version), tritongo_model_loads_total (label trigger:
//     startup, explicit, poll, on_demand), tritongo_model_evictions_total
//     (label reason: memory_budget, keep_alive), tritongo_model_thrash_total
//     (loads within a minute of the model's eviction) and the histogram
//     tritongo_model_on_demand_wait_seconds.
//
// [NewLatencies] returns a [Latencies]: a [triton.Observer] that records
// distributions of successful requests, each family opt-in as in
// tritonserver: Triton's nv_inference_{request,queue,compute_input,
// compute_infer,compute_output}_summary_us summaries
// (LatencyConfig.Summaries), Triton's
// nv_inference_first_response_histogram_ms
// (LatencyConfig.FirstResponseHistogram, buckets per model from the
// config's model_metrics), and our own tritongo_request_stage_seconds
// histogram with a stage label (LatencyConfig.StageHistograms). Use the
// histograms for percentiles across replicas (about 150 ns per request for
// both); the summaries cost about 1 µs per observation, five per request,
// cannot be aggregated across replicas, and exist for dashboards that
// expect them.
//
// # Usage
//
//	lat := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true})
//	srv, err := triton.New(triton.WithModelRepository("models"), triton.WithObserver(lat))
//	...
//	lat.Attach(srv)
//	col := metrics.NewCollector(srv, metrics.Config{})
//	defer col.Close()
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(col, lat)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Nothing is registered on prometheus.DefaultRegisterer: the application
// chooses its registry. Several servers in one process can share one:
// give each server's Collector and Latencies their own ConstLabels
// ({"server_id": "a"}, {"server_id": "b"}); a second Collector with the
// same labels as one already registered is refused by Register (a
// [prometheus.AlreadyRegisteredError]), since its series would collide
// and fail every scrape. Serve it in the text format (promhttp's default):
// the OpenMetrics encoder, enabled with HandlerOpts.EnableOpenMetrics, adds
// a _total suffix to counters, which tritonserver's names do not have.
//
// # Units
//
// The units are Triton's, not Prometheus's base units: the *_duration_us
// counters and *_summary_us summaries are in microseconds (the counters are
// the cumulative nanosecond totals divided by 1000), the first-response
// histogram in milliseconds, nv_model_load_duration_secs in seconds. This
// departs from the Prometheus convention of seconds on purpose: it is what
// tritonserver exports, and existing dashboards and alerts depend on it.
// Families of our own (tritongo_*) use base units.
//
// # Concurrency and ownership
//
// Collector and Latencies are safe for concurrent use, including
// concurrent scrapes. Neither starts a goroutine of its own (client_golang's
// summaries flush on short-lived goroutines). A Collector holds NVML
// (reference-counted by go-nvml) until [Collector.Close]; Latencies holds
// nothing that needs closing. Both keep a reference to the server and
// read it at scrape time; closing the server first is fine (its
// statistics stay readable). The per-model descriptors and series they
// build are bounded by MaxSeries (default 1000 model versions each).
package metrics
