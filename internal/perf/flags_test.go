package perf

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton/client"
)

func TestParseDefaults(t *testing.T) {
	c, err := ParseArgs([]string{"-m", "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"model":        c.Model == "m",
		"url":          c.URL == "localhost:8000",
		"protocol":     c.Protocol == HTTP,
		"batch":        c.BatchSize == 1,
		"mode":         c.Mode == Concurrency,
		"range":        c.Concurrency == Range[uint64]{1, 1, 1},
		"rate":         c.RequestRate == Range[float64]{1, 1, 1},
		"interval":     c.Interval == 5*time.Second,
		"stability":    c.Stability == 0.1,
		"trials":       c.MaxTrials == 10,
		"percentile":   c.Percentile == -1,
		"latency":      c.LatencyThresholdMS == 0,
		"windows":      !c.CountWindows && c.WindowRequestCount == 50,
		"strings":      c.StringLength == 128,
		"sequence":     c.SequenceLength == 20 && c.SequenceLengthVariation == 20 && c.StartSequenceID == 1,
		"sequences":    c.NumOfSequences == 4,
		"max threads":  c.MaxThreads == 16,
		"distribution": c.Distribution == Constant,
		"kind":         c.ServiceKind == "triton",
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("default %s wrong: %+v", name, c)
		}
	}
	if g, _ := ParseArgs([]string{"-m", "m", "-i", "GRPC"}); g.URL != "localhost:8001" || g.Protocol != GRPC {
		t.Errorf("-i GRPC: url %q protocol %v, want localhost:8001 grpc", g.URL, g.Protocol)
	}
	if g, _ := ParseArgs([]string{"-m", "m", "-i", "grpc", "-u", "h:1"}); g.URL != "h:1" {
		t.Errorf("-u with -i grpc: url %q", g.URL)
	}
}

func TestParseSyntax(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(Config) bool
	}{
		{"long with =", []string{"-m", "m", "--concurrency-range=2:6:2"}, func(c Config) bool { return c.Concurrency == Range[uint64]{2, 6, 2} }},
		{"long with space", []string{"-m", "m", "--concurrency-range", "2:6"}, func(c Config) bool { return c.Concurrency == Range[uint64]{2, 6, 1} }},
		{"prefix", []string{"-m", "m", "--concurrency", "3"}, func(c Config) bool { return c.Concurrency.Start == 3 }},
		{"prefix with =", []string{"-m", "m", "--measurement-int=100"}, func(c Config) bool { return c.Interval == 100*time.Millisecond }},
		{"exact beats longer", []string{"-m", "m", "--sync"}, func(c Config) bool { return c.forcedSync }},
		// Our own options take no prefixes away from perf_analyzer's.
		{"prefix of async beside advise", []string{"-m", "m", "--a"}, func(c Config) bool { return c.Async && !c.Advise }},
		{"prefix of latency-threshold beside latency-budget", []string{"-m", "m", "--lat", "9"}, func(c Config) bool { return c.LatencyThresholdMS == 9 }},
		{"short attached", []string{"-mm", "-b4"}, func(c Config) bool { return c.Model == "m" && c.BatchSize == 4 }},
		{"short cluster", []string{"-vva", "-m", "m"}, func(c Config) bool { return c.Verbose && c.ExtraVerbose && c.Async }},
		{"cluster ending in a value", []string{"-vm", "m"}, func(c Config) bool { return c.Verbose && c.Model == "m" }},
		{"value starting with a dash", []string{"-m", "-x"}, func(c Config) bool { return c.Model == "-x" }},
		{"permuted non-options", []string{"extra", "-m", "m", "more"}, func(c Config) bool {
			return c.Model == "m" && len(c.pendingStderr) == 2
		}},
		{"double dash ends options", []string{"-m", "m", "--", "-b", "4"}, func(c Config) bool { return c.BatchSize == 1 }},
		{"short aliases", []string{"-m", "m", "-p", "250", "-s", "5", "-r", "4", "-l", "30"}, func(c Config) bool {
			return c.Interval == 250*time.Millisecond && c.Stability == float64(float32(5))/100 && c.MaxTrials == 4 && c.LatencyThresholdMS == 30
		}},
		{"numeric prefix", []string{"-m", "m", "-p", " 75ms"}, func(c Config) bool { return c.Interval == 75*time.Millisecond }},
		{"rate range", []string{"-m", "m", "--request-rate-range", "10:40:10"}, func(c Config) bool {
			return c.Mode == RequestRate && c.RequestRate == Range[float64]{10, 40, 10} && c.rangeRate()
		}},
		{"shape splits at the last colon", []string{"-m", "m", "--shape", "a:b:3,4"}, func(c Config) bool {
			s := c.Shapes["a:b"]
			return len(s) == 2 && s[0] == 3 && s[1] == 4
		}},
		{"percentile", []string{"-m", "m", "--percentile=95"}, func(c Config) bool { return c.Percentile == 95 }},
		{"count windows", []string{"-m", "m", "--measurement-mode", "count_windows", "--measurement-request-count", "20"}, func(c Config) bool {
			return c.CountWindows && c.WindowRequestCount == 20
		}},
		{"request count forces count windows", []string{"-m", "m", "--request-count", "30"}, func(c Config) bool {
			return c.CountWindows && c.WindowRequestCount == 30
		}},
		{"sequence id range", []string{"-m", "m", "--sequence-id-range", "5:9"}, func(c Config) bool {
			return c.StartSequenceID == 5 && c.SequenceIDRange == 4
		}},
		{"sequence id start 0 is reset", []string{"-m", "m", "--sequence-id-range", "0"}, func(c Config) bool {
			return c.StartSequenceID == 1 && strings.Contains(strings.Join(c.pendingStderr, "\n"), "invalid start sequence id")
		}},
		{"in-process", []string{"-m", "m", "-i", "inprocess", "--model-repository", "/r"}, func(c Config) bool {
			return c.Protocol == InProcess && c.ModelRepository == "/r"
		}},
		{"triton_c_api is in-process", []string{"-m", "m", "--service-kind=triton_c_api", "--model-repository=/r"}, func(c Config) bool {
			return c.Protocol == InProcess
		}},
		{"deprecated -t", []string{"-m", "m", "-t", "3"}, func(c Config) bool {
			return c.Concurrency.Start == 3 && c.Mode == Concurrency && strings.Contains(c.pendingStderr[0], "-t is deprecated")
		}},
		{"ignored option warns", []string{"-m", "m", "--max-threads", "8", "--trace-level", "OFF"}, func(c Config) bool {
			return len(c.warnings) == 2 && strings.Contains(c.warnings[0], "--max-threads")
		}},
		{"headers", []string{"-m", "m", "-H", "a:b:c", "-Hx:"}, func(c Config) bool {
			h := c.remote.headers
			return len(h) == 2 && h[0] == [2]string{"a", "b:c"} && h[1] == [2]string{"x", ""}
		}},
		{"tensor format", []string{"-m", "m", "--output-tensor-format=json"}, func(c Config) bool { return c.remote.jsonTensors }},
		{"request parameter", []string{"-m", "m", "--request-parameter", "k:3:int"}, func(c Config) bool {
			return c.RequestParameters["k"] == int64(3)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseArgs(tt.args)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", tt.args, err)
			}
			if !tt.check(c) {
				t.Errorf("ParseArgs(%q) = %+v", tt.args, c)
			}
		})
	}
}

// TestParseErrors checks perf_analyzer's error texts: scan errors are
// printed alone, usage errors after the synopsis.
func TestParseErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, []byte("100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args  []string
		msg   string
		usage bool // false: a scan error, printed without the synopsis
	}{
		{[]string{"-q"}, "Error: Invalid short option '-q'", false},
		{[]string{"-m"}, "Error: Invalid short option '-m'", false},
		{[]string{"--bogus"}, "Error: Invalid long option '--bogus'", false},
		{[]string{"--bogus=1"}, "Error: Invalid long option '--bogus=1'", false},
		{[]string{"--m", "x"}, "Error: Invalid long option '--m'", false}, // ambiguous
		{[]string{"-m", "x", "--shape"}, "Error: Missing value for option '--shape'", false},
		{[]string{"-m", "x", "--streaming=1"}, "Error: Missing value for option '--streaming=1'", false},
		{[]string{}, "Failed to parse -m (model name). The value must be specified.", true},
		{[]string{"-m", "x", "-b", "0"}, "Failed to parse -b (batch size). The value must be > 0.", true},
		{[]string{"-m", "x", "-b", "two"}, "Failed to parse -b. Invalid value provided: two", true},
		{[]string{"-m", "x", "--measurement-interval", "x"}, "Failed to parse --measurement-interval. Invalid value provided: x", true},
		{[]string{"-m", "x", "-p", "0"}, "Failed to parse --measurement-interval (-p). The value must be > 0 msec.", true},
		{[]string{"-m", "x", "--concurrency-range", "1:2:3:4"}, "Failed to parse --concurrency-range. The value does not match <start:end:step>.", true},
		{[]string{"-m", "x", "--concurrency-range", "0:2"}, "The start of the search range must be > 0", true},
		{[]string{"-m", "x", "--concurrency-range", "1::2"}, "Failed to parse --concurrency-range. Invalid value provided: 1::2", true},
		{[]string{"-m", "x", "--concurrency-range", "1:0"}, "The end of the search range and the latency limit can not be both 0 (or 0.0) simultaneously", true},
		{[]string{"-m", "x", "--request-rate-range", "1:2:3:4"}, "Failed to parse --request-rate-range. The value does not match <start:end:step>.", true},
		{[]string{"-m", "x", "--request-rate-range", "0"}, "Failed to parse --request-rate-range. The start of the search range must be > 0.", true},
		{[]string{"-m", "x", "--request-rate-range", "10", "--concurrency-range", "4"}, "Failed to parse --concurrency-range. Invalid value provided: 4", true},
		{[]string{"-m", "x", "--concurrency-range", "4", "--request-rate-range", "10"}, "Cannot use both Concurrency and RequestRate inference load modes.", true},
		{[]string{"-m", "x", "--concurrency-range", "4", "--request-intervals", file}, "Cannot use both Concurrency and CustomIntervals inference load modes.", true},
		{[]string{"-m", "x", "--concurrency-range", "4", "-t", "2"}, "Cannot use both Concurrency and DeprecatedConcurrency inference load modes.", true},
		{[]string{"-m", "x", "--request-intervals", "/no/such/file"}, "Failed to parse --request-intervals. The value must be a valid file path", true},
		{[]string{"-m", "x", "--request-distribution", "uniform"}, "Failed to parse --request-distribution. Unsupported type provided: 'uniform'. Choices are 'posson' or 'constant'.", true},
		{[]string{"-m", "x", "--shape", "IN"}, "Failed to parse --shape. There must be a colon after input name.", true},
		{[]string{"-m", "x", "--shape", "IN:3,0"}, "Failed to parse --shape. The dimensions of input tensor must be > 0.", true},
		{[]string{"-m", "x", "--input-data", "nope"}, "Failed to parse --input-data. Unsupported type provided: 'nope'. The available options are 'zero', 'random', path to a directory, or a json file.", true},
		{[]string{"-m", "x", "--input-data", "zero", "--input-data", file}, "The -z flag cannot be set when --data-directory is provided.", true},
		{[]string{"-m", "x", "--string-length", "0"}, "Failed to parse --string-length. The value must be > 0", true},
		{[]string{"-m", "x", "--measurement-mode", "windows"}, "Failed to parse --measurement-mode. Unsupported type provided: 'windows'. The available options are 'time_windows' or 'count_windows'.", true},
		{[]string{"-m", "x", "--measurement-request-count", "0"}, "Failed to parse --measurement-request-count. The value must be > 0.", true},
		{[]string{"-m", "x", "-s", "-1"}, "Failed to parse --stability-percentage (-s). The value must be >= 0.0.", true},
		{[]string{"-m", "x", "-r", "0"}, "Failed to parse --max-trials (-r). The value must be > 0.", true},
		{[]string{"-m", "x", "--percentile", "100"}, "Failed to parse --percentile. The value must be -1 for not reporting or in range (0, 100).", true},
		{[]string{"-m", "x", "--percentile", "abc"}, "Failed to parse --percentile. The value must be -1 for not reporting or in range (0, 100).", true},
		{[]string{"-m", "x", "-l", "-1"}, "Failed to parse --latency-threshold (-l). The value must be >= 0 msecs.", true},
		{[]string{"-m", "x", "--shared-memory", "gpu"}, "Failed to parse --shared-memory. Unsupported type provided: 'gpu'. The available options are 'system', 'cuda', or 'none'.", true},
		{[]string{"-m", "x", "--streaming"}, "Streaming is only allowed with gRPC protocol and Triton C API.", true},
		{[]string{"-m", "x", "-i", "tcp"}, "Failed to parse -i (protocol). The value should be either HTTP or gRPC.", true},
		{[]string{"-m", "x", "--sequence-length-variation", "-1"}, "Failed to parse --sequence-length-variation. The value must be >= 0.0.", true},
		{[]string{"-m", "x", "--sequence-id-range", "1:2:3"}, "Failed to parse --sequence-id-range. The value does not match <start:end>.", true},
		{[]string{"-m", "x", "--sequence-id-range", "-1:2"}, "Failed to parse --sequence-id-range. The range values must be >= 0.", true},
		{[]string{"-m", "x", "--sequence-id-range", "5:2"}, "Failed to parse --sequence-id-range. The 'end' value must be greater than 'start' value.", true},
		{[]string{"-m", "x", "-a", "--sync"}, "Cannot specify --async and --sync simultaneously.", true},
		{[]string{"-m", "x", "--max-threads", "0"}, "Failed to parse --max-threads. The value must be > 0.", true},
		{[]string{"-m", "x", "--num-of-sequences", "0"}, "Failed to parse --num-of-sequences. The value must be > 0.", true},
		{[]string{"-m", "x", "--service-kind", "kserve"}, "Failed to parse --service-kind. Unsupported type provided: 'kserve'. The available options are 'triton', 'tfserving', 'torchserve', or 'triton_c_api'.", true},
		{[]string{"-m", "x", "--binary-search", "--concurrency-range", "1:4"}, "The --latency-threshold cannot be 0 for binary search mode.", true},
		{[]string{"-m", "x", "--binary-search", "-l", "5", "--concurrency-range", "4:1"}, "The end of the range can not be less than start of the range for binary search mode.", true},
		{[]string{"-m", "x", "--warmup-request-count", "5", "--concurrency-range", "1:4"}, "--warmup-request-count not supported with multiple concurrency values in one run", true},
		{[]string{"-m", "x", "--request-count", "2", "--concurrency-range", "4"}, "--request-count can not be less than concurrency", true},
		{[]string{"-m", "x", "--request-count", "0"}, "Failed to parse --request-count. The value must be > 0.", true},
		{[]string{"-m", "x", "--ssl-https-verify-peer", "2"}, "Failed to parse --ssl-https-verify-peer. The value must be either 0 or 1.", true},
		{[]string{"-m", "x", "--ssl-https-verify-host", "3"}, "Failed to parse --ssl-https-verify-host. The value must be either 0, 1, or 2.", true},
		{[]string{"-m", "x", "--ssl-grpc-root-certifications-file", "/no/such"}, "Failed to parse --ssl-grpc-root-certifications-file. The value must be a valid file path.", true},
		{[]string{"-m", "x", "--ssl-https-private-key-type", "P12"}, "Failed to parse --ssl-https-private-key-type. Unsupported type provided: 'P12'. The available options are 'PEM' or 'DER'.", true},
		{[]string{"-m", "x", "--input-tensor-format", "xml"}, "Failed to parse --input-tensor-format. Unsupported type provided: 'xml'. The available options are 'binary' or 'json'.", true},
		{[]string{"-m", "x", "--grpc-compression-algorithm", "lz4"}, "Failed to parse --grpc-compression-algorithm. Unsupported type provided: 'lz4'. The available options are 'gzip', 'deflate', or 'none'.", true},
		{[]string{"-m", "x", "--grpc-compression-algorithm", "gzip"}, "Using compression algorithm is only allowed with gRPC protocol.", true},
		{[]string{"-m", "x", "--metrics-url", "h:8002"}, "Must specify --collect-metrics when using the --metrics-url option.", true},
		{[]string{"-m", "x", "-i", "inprocess"}, "--model-repository should not be empty when using -i inprocess.", true},
		{[]string{"-m", "x", "--service-kind", "triton_c_api"}, "--model-repository should not be empty when using service-kind=triton_c_api.", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := ParseArgs(tt.args)
			if err == nil {
				t.Fatalf("no error, want %q", tt.msg)
			}
			var ue *usageError
			var se *scanError
			switch {
			case errors.As(err, &ue):
				if !tt.usage {
					t.Errorf("usage error %q, want a scan error", err)
				}
			case errors.As(err, &se):
				if tt.usage {
					t.Errorf("scan error %q, want a usage error", err)
				}
			default:
				t.Fatalf("error of type %T: %v", err, err)
			}
			if err.Error() != tt.msg {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tt.msg)
			}
		})
	}
}

// TestMainFlagErrors checks what Main prints and returns for a bad command
// line: the synopsis and "Error: ..." for usage errors, one line for scan
// errors, status 99 either way, and no dialling.
func TestMainFlagErrors(t *testing.T) {
	dial := func(context.Context, *Config) (client.Conn, error) {
		t.Fatal("dialled on a bad command line")
		return nil, nil
	}
	tests := []struct {
		args     []string
		status   int
		synopsis bool
		last     string
	}{
		{[]string{"-m", "x", "-b", "0"}, ExitGeneric, true, "Error: Failed to parse -b (batch size). The value must be > 0."},
		{[]string{"-q"}, ExitGeneric, false, "Error: Invalid short option '-q'"},
		{[]string{"--version"}, ExitSuccess, false, "Perf Analyzer Version "},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		got := Main(context.Background(), tt.args, &out, &errb, dial)
		if got != tt.status {
			t.Errorf("%q: status %d, want %d", tt.args, got, tt.status)
		}
		s := errb.String()
		if strings.Contains(s, "==== SYNOPSIS ====") != tt.synopsis {
			t.Errorf("%q: synopsis printed = %v, want %v:\n%s", tt.args, !tt.synopsis, tt.synopsis, s)
		}
		if !strings.Contains(s, tt.last) {
			t.Errorf("%q: stderr %q lacks %q", tt.args, s, tt.last)
		}
		if strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
			t.Errorf("%q: stack trace on stderr:\n%s", tt.args, s)
		}
	}
	var out, errb bytes.Buffer
	if got := Main(context.Background(), []string{"--help"}, &out, &errb, dial); got != 0 || !strings.Contains(out.String(), "--concurrency-range") {
		t.Errorf("--help: status %d, stdout %q", got, out.String())
	}
}

func TestNumberReaders(t *testing.T) {
	ints := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"5", 5, true}, {" 5ms", 5, true}, {"+7", 7, true}, {"-3", -3, true}, {"x5", 0, false}, {"", 0, false}, {"99999999999", 0, false},
	}
	for _, tt := range ints {
		got, err := stoi(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("stoi(%q) = %d, %v", tt.in, got, err)
		}
	}
	if _, err := stoull("-1"); err == nil {
		t.Error("stoull(-1) accepted")
	}
	floats := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"2.5", 2.5, true}, {"1e3x", 1000, true}, {".5", 0.5, true}, {"5.", 5, true}, {"1e", 1, true}, {"abc", 0, false}, {"-", 0, false},
	}
	for _, tt := range floats {
		got, err := stod(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("stod(%q) = %v, %v", tt.in, got, err)
		}
	}
	if atoi("abc") != 0 || atoi("42abc") != 42 {
		t.Error("atoi")
	}
}
