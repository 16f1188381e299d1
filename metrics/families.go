package metrics

// Triton's metric families (spec §5.2): names and HELP texts byte for byte,
// so that dashboards and alerts written for tritonserver work unchanged.
const (
	nameSuccess     = "nv_inference_request_success"
	helpSuccess     = "Number of successful inference requests, all batch sizes"
	nameFailure     = "nv_inference_request_failure"
	helpFailure     = "Number of failed inference requests, all batch sizes"
	nameCount       = "nv_inference_count"
	helpCount       = "Number of inferences performed (does not include cached requests)"
	nameExecCount   = "nv_inference_exec_count"
	helpExecCount   = "Number of model executions performed (does not include cached requests)"
	nameRequestDur  = "nv_inference_request_duration_us"
	helpRequestDur  = "Cumulative inference request duration in microseconds (includes cached requests)"
	nameQueueDur    = "nv_inference_queue_duration_us"
	helpQueueDur    = "Cumulative inference queuing duration in microseconds (includes cached requests)"
	nameInputDur    = "nv_inference_compute_input_duration_us"
	helpInputDur    = "Cumulative compute input duration in microseconds (does not include cached requests)"
	nameInferDur    = "nv_inference_compute_infer_duration_us"
	helpInferDur    = "Cumulative compute inference duration in microseconds (does not include cached requests)"
	nameOutputDur   = "nv_inference_compute_output_duration_us"
	helpOutputDur   = "Cumulative inference compute output duration in microseconds (does not include cached requests)"
	namePending     = "nv_inference_pending_request_count"
	helpPending     = "Instantaneous number of pending requests awaiting execution per-model."
	nameLoadTime    = "nv_model_load_duration_secs"
	helpLoadTime    = "Model load time in seconds"
	nameCacheHits   = "nv_cache_num_hits_per_model"
	helpCacheHits   = "Number of cache hits per model"
	nameCacheMisses = "nv_cache_num_misses_per_model"
	helpCacheMisses = "Number of cache misses per model"
	nameCacheHitDur = "nv_cache_hit_duration_per_model"
	helpCacheHitDur = "Total cache hit duration per model, in microseconds"
	nameCacheMisDur = "nv_cache_miss_duration_per_model"
	helpCacheMisDur = "Total cache miss (insert+lookup) duration per model, in microseconds"

	nameFirstResponse = "nv_inference_first_response_histogram_ms"
	helpFirstResponse = "Duration from request to first response in milliseconds"
	nameRequestSum    = "nv_inference_request_summary_us"
	helpRequestSum    = "Summary of inference request duration in microseconds (includes cached requests)"
	nameQueueSum      = "nv_inference_queue_summary_us"
	helpQueueSum      = "Summary of inference queuing duration in microseconds (includes cached requests)"
	nameInputSum      = "nv_inference_compute_input_summary_us"
	helpInputSum      = "Cumulative compute input duration in microseconds (does not include cached requests)"
	nameInferSum      = "nv_inference_compute_infer_summary_us"
	helpInferSum      = "Cumulative compute inference duration in microseconds (does not include cached requests)"
	nameOutputSum     = "nv_inference_compute_output_summary_us"
	helpOutputSum     = "Cumulative inference compute output duration in microseconds (does not include cached requests)"

	nameGPUUtil     = "nv_gpu_utilization"
	helpGPUUtil     = "GPU utilization rate [0.0 - 1.0)"
	nameGPUMemTotal = "nv_gpu_memory_total_bytes"
	helpGPUMemTotal = "GPU total memory, in bytes"
	nameGPUMemUsed  = "nv_gpu_memory_used_bytes"
	helpGPUMemUsed  = "GPU used memory, in bytes"
	nameGPUPower    = "nv_gpu_power_usage"
	helpGPUPower    = "GPU power usage in watts"
	nameGPULimit    = "nv_gpu_power_limit"
	helpGPULimit    = "GPU power management limit in watts"
	nameGPUEnergy   = "nv_energy_consumption"
	helpGPUEnergy   = "GPU energy consumption in joules since the Triton Server started"

	nameCPUUtil     = "nv_cpu_utilization"
	helpCPUUtil     = "CPU utilization rate [0.0 - 1.0]"
	nameCPUMemTotal = "nv_cpu_memory_total_bytes"
	helpCPUMemTotal = "CPU total memory (RAM), in bytes"
	nameCPUMemUsed  = "nv_cpu_memory_used_bytes"
	helpCPUMemUsed  = "CPU used memory (RAM), in bytes"
	namePinnedTotal = "nv_pinned_memory_pool_total_bytes"
	helpPinnedTotal = "Pinned memory pool total memory size, in bytes"
	namePinnedUsed  = "nv_pinned_memory_pool_used_bytes"
	helpPinnedUsed  = "Pinned memory pool used memory size, in bytes"
)

// Families of our own, beyond Triton's; their names start with tritongo_.
const (
	nameDropped        = "tritongo_metrics_dropped_model_versions"
	helpDropped        = "Number of model versions whose series the collector does not export because of its MaxSeries bound"
	nameLatencyDropped = "tritongo_latency_dropped_model_versions"
	helpLatencyDropped = "Number of model versions whose latency distributions are not recorded because of the MaxSeries bound"
	nameStage          = "tritongo_request_stage_seconds"
	helpStage          = "Duration of each stage of successful inference requests (request, queue, compute_input, compute_infer, compute_output), in seconds"
)

// Families of the deadline-aware schedule (triton.ModelStats.Shed and
// Estimates).
const (
	nameShed     = "tritongo_inference_shed_total"
	helpShed     = "Number of inference requests that ended without an answer because of time, by reason (refused_admission, refused_batch: the deadline-aware schedule refused them; deadline_queued, cancelled_queued, deadline_executing, cancelled_executing: their context ended while queued or executing)"
	nameEstimate = "tritongo_batch_execution_estimate_seconds"
	helpEstimate = "The dynamic batcher's estimate of a batch's execution time, per instance group: a batch of n rows is predicted to take fixed + n*per_row + margin seconds (term)"
)

// Families of the models' memory and lifecycle (triton.Server.Memory).
const (
	nameMemBudget   = "tritongo_model_memory_budget_bytes"
	helpMemBudget   = "Memory budget of the loaded models, in bytes (0: none)"
	nameMemResident = "tritongo_model_memory_resident_bytes"
	helpMemResident = "Memory held by the loaded model versions, retiring ones included, in bytes"
	nameMemModel    = "tritongo_model_memory_bytes"
	helpMemModel    = "Memory held by a loaded model version, in bytes (what its backend reports, or the process's growth while it loaded)"
	nameLoads       = "tritongo_model_loads_total"
	helpLoads       = "Number of model loads that published versions, by trigger (startup, explicit, poll, on_demand)"
	nameEvictions   = "tritongo_model_evictions_total"
	helpEvictions   = "Number of models unloaded by the server, by reason (memory_budget, keep_alive)"
	nameThrashes    = "tritongo_model_thrash_total"
	helpThrashes    = "Number of model loads within a minute of the model's eviction"
	nameDemandWait  = "tritongo_model_on_demand_wait_seconds"
	helpDemandWait  = "Time requests waited for their model to load on demand, in seconds"
)

// Label names.
const (
	labelModel   = "model"
	labelVersion = "version"
	labelReason  = "reason"
	labelGPU     = "gpu_uuid"
	labelStage   = "stage"
	labelTrigger = "trigger"
	labelGroup   = "group"
	labelTerm    = "term"
)

// defaultMaxSeries bounds the model versions a Collector or Latencies
// exports when its config leaves MaxSeries at 0.
const defaultMaxSeries = 1000
