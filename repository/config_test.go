package repository_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// TestParseConfigSyntax checks the text-format spellings found in real
// config.pbtxt files. Each case lists spellings that must all parse to the
// same config, and a check on the result.
func TestParseConfigSyntax(t *testing.T) {
	tests := []struct {
		name  string
		forms []string
		check func(*modelconfig.ModelConfig) bool
	}{
		{
			name:  "scalars",
			forms: []string{`name: "m" max_batch_size: 8`, "name:\"m\"\nmax_batch_size:8", `name : "m" , max_batch_size : 8 ;`, `name: 'm' max_batch_size: 0x8`},
			check: func(c *modelconfig.ModelConfig) bool { return c.Name == "m" && c.MaxBatchSize == 8 },
		},
		{
			name:  "adjacent strings concatenate",
			forms: []string{`name: "res" "net"`, `name: "resnet"`},
			check: func(c *modelconfig.ModelConfig) bool { return c.Name == "resnet" },
		},
		{
			name:  "message with and without colon",
			forms: []string{`response_cache { enable: true }`, `response_cache: { enable: true }`, `response_cache < enable: true >`},
			check: func(c *modelconfig.ModelConfig) bool { return c.GetResponseCache().GetEnable() },
		},
		{
			name:  "empty message",
			forms: []string{`dynamic_batching {}`, `dynamic_batching: {}`, `dynamic_batching { }`},
			check: func(c *modelconfig.ModelConfig) bool { return c.GetDynamicBatching() != nil },
		},
		{
			name: "repeated messages as blocks or list",
			forms: []string{
				`input { name: "a" } input { name: "b" }`,
				`input [ { name: "a" }, { name: "b" } ]`,
				`input: [ { name: "a" }, { name: "b" } ]`,
				`input [ { name: "a" } ] input { name: "b" }`,
			},
			check: func(c *modelconfig.ModelConfig) bool {
				return len(c.Input) == 2 && c.Input[0].Name == "a" && c.Input[1].Name == "b"
			},
		},
		{
			name:  "scalar lists",
			forms: []string{`input { dims: [ 3, 224, 224 ] }`, `input { dims: 3 dims: 224 dims: 224 }`, `input { dims:[3,224,224] }`, `input { dims: [ 3 ] dims: [ 224, 224 ] }`},
			check: func(c *modelconfig.ModelConfig) bool { return len(c.Input[0].Dims) == 3 && c.Input[0].Dims[2] == 224 },
		},
		{
			name:  "negative and spaced minus",
			forms: []string{`input { dims: [ -1, 4 ] }`, `input { dims: [ - 1, 4 ] }`},
			check: func(c *modelconfig.ModelConfig) bool { return c.Input[0].Dims[0] == -1 },
		},
		{
			name:  "empty list",
			forms: []string{`input { reshape: { shape: [ ] } }`, `input { reshape { shape: [] } }`, `input { reshape {} }`},
			check: func(c *modelconfig.ModelConfig) bool {
				return c.Input[0].Reshape != nil && len(c.Input[0].Reshape.Shape) == 0
			},
		},
		{
			name: "string map in both forms",
			forms: []string{
				`metric_tags { key: "a" value: "1" } metric_tags { key: "b" value: "2" }`,
				`metric_tags [ { key: "a", value: "1" }, { key: "b", value: "2" } ]`,
				`metric_tags: { key: "b" value: "2" } metric_tags: [ { key: "a" value: "1" } ]`,
			},
			check: func(c *modelconfig.ModelConfig) bool { return c.MetricTags["a"] == "1" && c.MetricTags["b"] == "2" },
		},
		{
			name: "message map in both forms",
			forms: []string{
				`parameters { key: "k" value: { string_value: "v" } }`,
				`parameters: { key: "k", value { string_value: "v" } }`,
				`parameters [ { key: "k" value: { string_value: "v" } } ]`,
			},
			check: func(c *modelconfig.ModelConfig) bool { return c.Parameters["k"].GetStringValue() == "v" },
		},
		{
			name: "uint64 map keys",
			forms: []string{
				`dynamic_batching { priority_queue_policy { key: 1 value { max_queue_size: 3 } } }`,
				`dynamic_batching { priority_queue_policy [ { key: 0x1, value: { max_queue_size: 3 } } ] }`,
			},
			check: func(c *modelconfig.ModelConfig) bool {
				return c.GetDynamicBatching().GetPriorityQueuePolicy()[1].GetMaxQueueSize() == 3
			},
		},
		{
			name:  "enums by name or number",
			forms: []string{`input { data_type: TYPE_FP32 format: FORMAT_NCHW }`, `input { data_type: 11 format: 2 }`},
			check: func(c *modelconfig.ModelConfig) bool {
				return c.Input[0].DataType == modelconfig.DataType_TYPE_FP32 && c.Input[0].Format == modelconfig.ModelInput_FORMAT_NCHW
			},
		},
		{
			name:  "true literals",
			forms: []string{`response_cache { enable: true }`, `response_cache { enable: True }`, `response_cache { enable: t }`, `response_cache { enable: 1 }`},
			check: func(c *modelconfig.ModelConfig) bool { return c.GetResponseCache().GetEnable() },
		},
		{
			name:  "false literals",
			forms: []string{`response_cache { enable: false }`, `response_cache { enable: False }`, `response_cache { enable: f }`, `response_cache { enable: 0 }`},
			check: func(c *modelconfig.ModelConfig) bool {
				return c.GetResponseCache() != nil && !c.GetResponseCache().GetEnable()
			},
		},
		{
			name:  "bool lists",
			forms: []string{`sequence_batching { control_input { control { bool_false_true: [ false, true ] } } }`, `sequence_batching { control_input { control { bool_false_true: [ 0, 1 ] } } }`},
			check: func(c *modelconfig.ModelConfig) bool {
				b := c.GetSequenceBatching().GetControlInput()[0].GetControl()[0].GetBoolFalseTrue()
				return len(b) == 2 && !b[0] && b[1]
			},
		},
		{
			name:  "floats",
			forms: []string{`sequence_batching { direct { minimum_slot_utilization: 0.5 } }`, `sequence_batching { direct { minimum_slot_utilization: .5 } }`, `sequence_batching { direct { minimum_slot_utilization: 0.5f } }`, `sequence_batching { direct { minimum_slot_utilization: 5e-1 } }`},
			check: func(c *modelconfig.ModelConfig) bool {
				return c.GetSequenceBatching().GetDirect().GetMinimumSlotUtilization() == 0.5
			},
		},
		{
			name: "comments and separators",
			forms: []string{
				"# leading comment\nname: \"m\" # trailing\n# café in a comment\ninput { name: \"a\"; dims: [ 1, 2 ]; };",
				"name: \"m\"\r\ninput {\r\n  name: \"a\",\r\n  dims: [ 1, # inside a list\r\n 2 ]\r\n}\r\n",
			},
			check: func(c *modelconfig.ModelConfig) bool { return c.Name == "m" && c.Input[0].Name == "a" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first *modelconfig.ModelConfig
			for _, form := range tt.forms {
				cfg, err := repository.ParseConfig("test.pbtxt", []byte(form))
				if err != nil {
					t.Errorf("%q: %v", form, err)
					continue
				}
				if !tt.check(cfg) {
					t.Errorf("%q: check failed, parsed as {%s}", form, text(cfg))
				}
				if first == nil {
					first = cfg
				} else if !proto.Equal(first, cfg) {
					t.Errorf("%q parses as {%s}, differently from %q", form, text(cfg), tt.forms[0])
				}
			}
		})
	}
}

// TestParseConfigErrors checks that syntax and schema errors are
// *ConfigError values with the position of the problem, including for the
// spellings Triton's C++ parser rejects as well.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		reason    string
	}{
		{"unknown field", "name: \"m\"\ninput {\n  nmae: \"x\"\n}\n", 3, 3, "unknown field: nmae"},
		{"unknown enum", "input {\n  data_type: TYPE_FLOAT32\n}", 2, 14, "TYPE_FLOAT32"},
		{"field given twice", "name: \"a\"\nname: \"b\"", 2, 1, `"name" is repeated`},
		{"two schedulers", "dynamic_batching {}\nsequence_batching {}", 2, 1, "already set"},
		{"trailing comma in list", "input { dims: [ 1, 2, ] }", 1, 23, "syntax error"},
		{"trailing comma in message list", "input [ { name: \"a\" }, ]", 1, 24, "syntax error"},
		{"TRUE is not a bool", "response_cache { enable: TRUE }", 1, 26, "invalid value for bool"},
		{"negative unsigned", "dynamic_batching { max_queue_delay_microseconds: -5 }", 1, 50, "uint64"},
		{"int32 overflow", "max_batch_size: 2147483648", 1, 17, "int32"},
		{"float for int", "max_batch_size: 1.5", 1, 17, "int32"},
		{"missing colon", "name \"m\"", 1, 1, "syntax error"},
		{"slash comment", "// c\nname: \"m\"", 1, 1, "syntax error"},
		{"unclosed message at end", "name: \"m\"\ninput {\n  dims: [ 1 ]\n", 4, 1, "unexpected EOF"},
		{"unterminated string", "name: \"m", 1, 9, "unexpected EOF"},
		{"invalid UTF-8 in string", "name: \"\xff\"", 1, 7, "UTF-8"},
		{"unbalanced brace", "name: \"m\" }", 1, 11, "syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := repository.ParseConfig("models/m/config.pbtxt", []byte(tt.in))
			if err == nil {
				t.Fatalf("parsed as {%s}, want an error", text(cfg))
			}
			if cfg != nil {
				t.Errorf("config %v returned with error", cfg)
			}
			var ce *repository.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *ConfigError", err, err)
			}
			if ce.Path != "models/m/config.pbtxt" || ce.Line != tt.line || ce.Col != tt.col {
				t.Errorf("position = %s:%d:%d, want models/m/config.pbtxt:%d:%d (%v)", ce.Path, ce.Line, ce.Col, tt.line, tt.col, err)
			}
			if !strings.Contains(ce.Err.Error(), tt.reason) {
				t.Errorf("reason %q does not contain %q", ce.Err, tt.reason)
			}
			if strings.Contains(err.Error(), "proto:") {
				t.Errorf("message %q keeps prototext's prefix", err)
			}
			wantPrefix := "models/m/config.pbtxt:" + itoa(tt.line) + ":" + itoa(tt.col) + ": "
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Errorf("message %q does not start with %q", err, wantPrefix)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestConfigErrorFormat(t *testing.T) {
	reason := errors.New("bad thing")
	tests := []struct {
		name string
		err  repository.ConfigError
		want string
	}{
		{"everything", repository.ConfigError{Path: "m/config.pbtxt", Line: 3, Col: 7, Field: "input[0].dims", Err: reason}, "m/config.pbtxt:3:7: input[0].dims: bad thing"},
		{"no position", repository.ConfigError{Path: "m/config.pbtxt", Field: "name", Err: reason}, "m/config.pbtxt: name: bad thing"},
		{"line only", repository.ConfigError{Path: "p", Line: 2, Err: reason}, "p:2: bad thing"},
		{"no field", repository.ConfigError{Path: "p", Line: 2, Col: 1, Err: reason}, "p:2:1: bad thing"},
		{"no path", repository.ConfigError{Field: "max_batch_size", Err: reason}, "max_batch_size: bad thing"},
		{"no path with line", repository.ConfigError{Line: 4, Col: 2, Err: reason}, "line 4:2: bad thing"},
		{"reason only", repository.ConfigError{Err: reason}, "bad thing"},
		{"nil reason", repository.ConfigError{Path: "p"}, "p: invalid model configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if tt.err.Err != nil && !errors.Is(&tt.err, reason) {
				t.Error("Unwrap does not reach the reason")
			}
		})
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "named/1/m", "unnamed/1/m", "missing/1/model.onnx", "broken/1/m")
	files := map[string]string{
		"named":   "name: \"named\"\nbackend: \"onnxruntime\"\n",
		"unnamed": "backend: \"python\"\n",
		"broken":  "name: \"broken\"\ninput {\n  dims: [ 1,, 2 ]\n}\n",
	}
	for m, body := range files {
		writeFile(t, filepath.Join(dir, m, repository.ConfigFile), body)
	}
	models, err := repository.Scan([]repository.Root{repository.DirRoot(dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]repository.ModelDir{}
	for _, m := range models {
		byName[m.Name] = m
	}
	tests := []struct {
		model     string
		found     bool
		name      string
		backend   string
		errSubstr string
	}{
		{model: "named", found: true, name: "named", backend: "onnxruntime"},
		{model: "unnamed", found: true, name: "unnamed", backend: "python"},
		{model: "missing", found: false, name: "missing"},
		{model: "broken", found: true, errSubstr: filepath.Join(dir, "broken", "config.pbtxt") + ":3:"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			cfg, found, err := repository.ReadConfig(byName[tt.model])
			if found != tt.found {
				t.Errorf("found = %v, want %v", found, tt.found)
			}
			if tt.errSubstr != "" {
				var ce *repository.ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("err = %v, want a *ConfigError containing %q", err, tt.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GetName() != tt.name || cfg.GetBackend() != tt.backend {
				t.Errorf("config = {%s}, want name %q backend %q", text(cfg), tt.name, tt.backend)
			}
		})
	}
}

func TestConfigFileFor(t *testing.T) {
	fsys := fstest.MapFS{
		"m/config.pbtxt":         {Data: []byte(`name: "m" backend: "default"`)},
		"m/configs/h100.pbtxt":   {Data: []byte(`name: "m" backend: "h100"`)},
		"m/configs/folder.pbtxt": {Mode: fs.ModeDir},
		"m/1/model.onnx":         {},
		"n/1/model.onnx":         {},
	}
	models, err := repository.Scan([]repository.Root{repository.FSRoot(fsys)}, nil)
	if err != nil || len(models) != 2 {
		t.Fatalf("Scan = %v, %v", models, err)
	}
	m, n := models[0], models[1]
	for _, tc := range []struct {
		md         repository.ModelDir
		name, file string
		backend    string
		found      bool
	}{
		{m, "", "config.pbtxt", "default", true},
		{m, "h100", "configs/h100.pbtxt", "h100", true},
		{m, "a100", "config.pbtxt", "default", true}, // no such file: config.pbtxt, as Triton
		{m, "folder", "config.pbtxt", "default", true},
		{n, "h100", "config.pbtxt", "", false},
	} {
		file := repository.ConfigFileFor(tc.md, tc.name)
		if file != tc.file {
			t.Errorf("%s with name %q: file %q, want %q", tc.md.Name, tc.name, file, tc.file)
			continue
		}
		cfg, found, err := repository.ReadConfigFile(tc.md, file)
		if err != nil || found != tc.found || cfg.GetBackend() != tc.backend || cfg.GetName() != tc.md.Name {
			t.Errorf("%s %s: %v, found %v, %v", tc.md.Name, file, cfg, found, err)
		}
	}
	if p := m.Path("configs/h100.pbtxt"); p != "m/configs/h100.pbtxt" {
		t.Errorf("Path = %q", p)
	}
	broken := fstest.MapFS{"m/configs/bad.pbtxt": {Data: []byte("name: ")}, "m/1/x": {}}
	models, _ = repository.Scan([]repository.Root{repository.FSRoot(broken)}, nil)
	_, _, err = repository.ReadConfigFile(models[0], repository.ConfigFileFor(models[0], "bad"))
	var ce *repository.ConfigError
	if !errors.As(err, &ce) || ce.Path != "m/configs/bad.pbtxt" {
		t.Errorf("syntax error %v does not name configs/bad.pbtxt", err)
	}
}
