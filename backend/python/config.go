package python

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/modelconfig"
)

// configJSON prints a model configuration as Triton hands it to a Python
// model (args["model_config"], auto_complete_config): protobuf JSON with
// proto field names and every primitive field, enums as names, and the
// 64-bit fields Triton prints as numbers as numbers.
func configJSON(cfg *modelconfig.ModelConfig) (string, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("printing the model configuration: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("reading back the model configuration JSON: %w", err)
	}
	out, err := json.Marshal(numbers(v, ""))
	return string(out), err
}

// numbers turns the strings of the int64 fields Triton prints as numbers
// into numbers.
func numbers(v any, path string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			seg := k
			if modelconfig.JSONMapField(path) {
				seg = "*"
			}
			if path != "" {
				seg = path + "." + seg
			}
			x[k] = numbers(e, seg)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e, path)
		}
	case string:
		if modelconfig.JSONNumberField(path) {
			if _, err := strconv.ParseInt(strings.TrimPrefix(x, "-"), 10, 64); err == nil {
				return json.Number(x)
			}
		}
	}
	return v
}

// parseConfigJSON reads back a configuration auto_complete_config
// returned, into cfg (replacing it).
func parseConfigJSON(model, text string, cfg *modelconfig.ModelConfig) error {
	var next modelconfig.ModelConfig
	if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(text), &next); err != nil {
		return fmt.Errorf("auto_complete_config function in model '%s' returned a configuration that is not valid: %w", model, err)
	}
	proto.Reset(cfg)
	proto.Merge(cfg, &next)
	return nil
}
