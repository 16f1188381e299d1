package repository_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/repository"
)

// FuzzParseConfig checks that ParseConfig never panics, that its errors
// are *ConfigError values with a sane position, and that whatever parses
// survives a text round trip and goes through Normalize and Validate
// without panicking. Seeds: testdata/fuzz/FuzzParseConfig (the corpus
// configs and broken variants).
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`name: "m" backend: "onnxruntime" max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ -1, 3 ] }`))
	f.Add([]byte("input [ { dims: [ 1, 2, ] } ]"))
	f.Add([]byte("dynamic_batching { priority_queue_policy { key: 0 value { timeout_action: DELAY } } }"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := repository.ParseConfig("fuzz.pbtxt", data)
		if err != nil {
			var ce *repository.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *ConfigError: %v", err, err)
			}
			if ce.Err == nil || ce.Line < 0 || ce.Col < 0 || ce.Path != "fuzz.pbtxt" {
				t.Fatalf("malformed error %#v", ce)
			}
			if cfg != nil {
				t.Fatal("config returned with an error")
			}
			return
		}
		out, err := prototext.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := repository.ParseConfig("again.pbtxt", out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !proto.Equal(cfg, back) {
			t.Fatalf("round trip changed the config:\n before {%s}\n after  {%s}", text(cfg), text(back))
		}
		repository.Normalize(cfg, repository.NormalizeOptions{GPUs: 1})
		_ = repository.Validate("fuzz.pbtxt", cfg, repository.ValidateOptions{ModelName: "m", KnownModel: func(string) bool { return true }})
	})
}
