package modelconfig

// int64Fields are the 64-bit fields Triton rewrites from JSON strings to
// numbers, as paths of member names ("*" stands for a key of one of the
// maps in mapFields); arrays are transparent. Every other 64-bit field
// stays a string, as proto3's JSON mapping prints it (secondary device ids,
// CUDA graph shapes, initial state dims: Triton misses those too).
var int64Fields = map[string]bool{
	"input.dims":                                    true,
	"input.reshape.shape":                           true,
	"output.dims":                                   true,
	"output.reshape.shape":                          true,
	"version_policy.specific.versions":              true,
	"dynamic_batching.max_queue_delay_microseconds": true,
	"dynamic_batching.priority_levels":              true,
	"dynamic_batching.default_priority_level":       true,
	"dynamic_batching.default_queue_policy.default_timeout_microseconds":    true,
	"dynamic_batching.priority_queue_policy.*.default_timeout_microseconds": true,
	"sequence_batching.max_sequence_idle_microseconds":                      true,
	"sequence_batching.oldest.max_queue_delay_microseconds":                 true,
	"sequence_batching.direct.max_queue_delay_microseconds":                 true,
	"sequence_batching.state.dims":                                          true,
	"ensemble_scheduling.step.model_version":                                true,
	"model_warmup.inputs.*.dims":                                            true,
}

var mapFields = map[string]bool{
	"dynamic_batching.priority_queue_policy": true,
	"model_warmup.inputs":                    true,
}

// JSONNumberField reports whether the field at path (member names joined
// by ".", arrays transparent, a key of a map that JSONMapField names as
// "*") is a 64-bit field that Triton prints as a JSON number in the model
// configuration JSON of its API and of its backends, where proto3's JSON
// mapping prints a string.
func JSONNumberField(path string) bool { return int64Fields[path] }

// JSONMapField reports whether the member at path is a map, whose keys
// are not field names (see JSONNumberField).
func JSONMapField(path string) bool { return mapFields[path] }
