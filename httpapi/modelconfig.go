package httpapi

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/modelconfig"
)

// configJSON prints a ModelConfig as Triton's core does
// (ModelConfigToJson): protobuf JSON with proto field names and every
// primitive field printed (protojson's EmitDefaultValues is exactly C++'s
// always_print_primitive_fields: unset messages are left out, not printed
// as null as EmitUnpopulated would), enums as names.
var configJSON = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}

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

// rewriteInts copies v compactly, turning the strings of
// [modelconfig.JSONNumberField] into numbers.
func rewriteInts(b []byte, v jval, path string) []byte {
	switch {
	case v.isObject():
		b = append(b, '{')
		for i, m := range v.members() {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, m.key)
			b = append(b, ':')
			seg := string(m.key)
			if modelconfig.JSONMapField(path) {
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
	case v.isString() && modelconfig.JSONNumberField(path):
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
