package httpapi

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/modelconfig"
)

// configJSON prints a ModelConfig as Triton's core does
// (ModelConfigToJson): protobuf JSON with proto field names and every
// primitive field printed (protojson's EmitDefaultValues is exactly C++'s
// always_print_primitive_fields: unset messages are left out, not printed
// as null as EmitUnpopulated would), enums as names.
var configJSON = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

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

// modelConfigJSON returns the body of the model configuration endpoint. A
// config whose every field has its default value serializes to nothing,
// and Triton then answers an empty body; so does this.
func modelConfigJSON(cfg *modelconfig.ModelConfig) ([]byte, error) {
	if proto.Size(cfg) == 0 {
		return []byte{}, nil
	}
	raw, err := configJSON.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("printing the model configuration: %w", err)
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("reading back the model configuration JSON: %w", err)
	}
	return rewriteInts(make([]byte, 0, len(raw)), v, ""), nil
}

// rewriteInts copies v compactly, turning the strings at int64Fields into
// numbers.
func rewriteInts(b []byte, v jval, path string) []byte {
	switch {
	case v.isObject():
		b = append(b, '{')
		for i, m := range v.members() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, m.key)
			b = append(b, ':')
			seg := string(m.key)
			if mapFields[path] {
				seg = "*"
			}
			child := seg
			if path != "" {
				child = path + "." + seg
			}
			b = rewriteInts(b, m.val, child)
		}
		return append(b, '}')
	case v.isArray():
		b = append(b, '[')
		for i, e := range v.elements() {
			if i > 0 {
				b = append(b, ',')
			}
			b = rewriteInts(b, e, path)
		}
		return append(b, ']')
	case v.isString() && int64Fields[path]:
		s, _ := v.str()
		if strings.HasPrefix(string(s), "-") {
			if n, err := strconv.ParseInt(string(s), 10, 64); err == nil {
				return strconv.AppendInt(b, n, 10)
			}
		} else if n, err := strconv.ParseUint(string(s), 10, 64); err == nil {
			return strconv.AppendUint(b, n, 10)
		}
	}
	return append(b, v...)
}
