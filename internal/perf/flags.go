package perf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// flags.go is perf_analyzer's option table (src/command_line_parser.cc):
// the same names, letters, defaults, checks in the same order, and the
// same error texts, because scripts and Model Analyzer match on them.
// Where a check depends on a feature this tool lacks, the option is either
// accepted with a warning (it changes nothing that is measured) or refused
// with an error naming it.

// usageError is a failure perf_analyzer reports through Usage: the
// synopsis, then "Error: <msg>", exit status 99.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errVersion and errHelp end parsing successfully after --version or
// --help printed what they print.
var (
	errVersion = errors.New("version")
	errHelp    = errors.New("help")
)

// errInvalidNumber is a value std::stoi and friends reject; the option's
// handler turns it into "Failed to parse <opt>. Invalid value provided: <v>".
var errInvalidNumber = errors.New("invalid number")

// option is one entry of the table: how it is spelled and what it does.
// set gets the value and the event (for the option's name as given).
type option struct {
	optDef
	set func(c *Config, v string, e optEvent) error
}

// ignored returns a handler that accepts an option and records why it has
// no effect here.
func ignored(reason string) func(*Config, string, optEvent) error {
	return func(c *Config, _ string, e optEvent) error {
		c.warn(e.name(), reason)
		return nil
	}
}

// unsupported returns a handler that refuses an option this tool does not
// implement.
func unsupported(what string) func(*Config, string, optEvent) error {
	return func(_ *Config, _ string, e optEvent) error {
		return usagef("%s (%s) is not supported by this perf_analyzer.", e.name(), what)
	}
}

func (c *Config) warn(flag, reason string) {
	w := "WARNING: " + flag + " is accepted for compatibility and has no effect here: " + reason
	for _, have := range c.warnings {
		if have == w {
			return
		}
	}
	c.warnings = append(c.warnings, w)
}

// setLoadMode records the load mode an option selects, or reports the clash
// with the one already selected. perf_analyzer's to_string has no case for
// RequestRate and throws std::invalid_argument, which its parser reports as
// an invalid value of the option being read; that quirk is kept.
func (c *Config) setLoadMode(m LoadMode, e optEvent) error {
	if c.Mode != modeNone {
		if c.Mode == RequestRate {
			return usagef("Failed to parse %s. Invalid value provided: %s", e.name(), e.value)
		}
		return usagef("Cannot use both %s and %s inference load modes.", c.Mode, modeName(m))
	}
	c.Mode = m
	return nil
}

func modeName(m LoadMode) string {
	if m == RequestRate {
		return "RequestRate"
	}
	return m.String()
}

const (
	noGoroutineThreads = "requests are sent from goroutines, as many as the load needs; there are no threads to size"
	noMetrics          = "GPU metrics are not collected (no CSV GPU columns)"
	noTrace            = "tracing is configured on the server (tritonserver --trace-config)"
)

// options is perf_analyzer's table, bound to nothing: handlers get the
// Config. The deprecation warnings and their texts are perf_analyzer's.
func options() []option {
	// -t, -c and -d do not set a load mode; they only refuse to follow
	// one (and --request-rate-range's clash is the quirk above).
	depConcurrency := func(c *Config, e optEvent) error {
		switch c.Mode {
		case modeNone:
		case RequestRate:
			return invalidValue(e)
		default:
			return usagef("Cannot use both %s and DeprecatedConcurrency inference load modes.", c.Mode)
		}
		c.deprecatedConcurrency = true
		return nil
	}
	return []option{
		{optDef{long: "streaming", arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.Streaming = true; return nil }},
		{optDef{long: "max-threads", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --max-threads. The value must be > 0.")
			c.MaxThreads, c.maxThreadsSet = n, true
			if err == nil {
				c.warn(e.name(), noGoroutineThreads)
			}
			return err
		}},
		{optDef{long: "sequence-length", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := stoi(v)
			if err != nil {
				return invalidValue(e)
			}
			if n > 0 {
				c.SequenceLength = uint64(n)
			} else {
				c.pendingStderr = append(c.pendingStderr, "WARNING: The sequence length must be > 0. Perf Analyzer will use default value if it is measuring on sequence model.")
			}
			c.sequenceLengthSet = true
			return nil
		}},
		{optDef{long: "percentile", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			c.Percentile = atoi(v)
			return nil
		}},
		{optDef{long: "data-directory", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			c.pendingStderr = append(c.pendingStderr, "Warning: --data-directory is deprecated and will be removed in an upcoming version. Use --input-data instead.")
			c.UserData = append(c.UserData, v)
			return nil
		}},
		{optDef{long: "shape", arg: requiredArg}, setShape},
		{optDef{long: "measurement-interval", short: 'p', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --measurement-interval (-p). The value must be > 0 msec.")
			c.Interval = time.Duration(n) * time.Millisecond
			return err
		}},
		{optDef{long: "concurrency-range", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(Concurrency, e); err != nil {
				return err
			}
			parts := strings.Split(v, ":")
			if len(parts) > 3 {
				return usagef("Failed to parse --concurrency-range. The value does not match <start:end:step>.")
			}
			for i, p := range parts {
				n, err := stoull(p)
				if err != nil {
					return invalidValue(e)
				}
				switch i {
				case 0:
					c.Concurrency.Start = n
				case 1:
					c.Concurrency.End = n
				case 2:
					c.Concurrency.Step = n
				}
			}
			return nil
		}},
		{optDef{long: "latency-threshold", short: 'l', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := stoi(v)
			switch {
			case err != nil:
				return invalidValue(e)
			case n < 0:
				return usagef("Failed to parse --latency-threshold (-l). The value must be >= 0 msecs.")
			}
			c.LatencyThresholdMS = uint64(n)
			return nil
		}},
		{optDef{long: "stability-percentage", short: 's', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			f, err := stof(v)
			switch {
			case err != nil:
				return invalidValue(e)
			case !(f >= 0):
				return usagef("Failed to parse --stability-percentage (-s). The value must be >= 0.0.")
			}
			c.Stability = float64(float32(f)) / 100
			return nil
		}},
		{optDef{long: "max-trials", short: 'r', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --max-trials (-r). The value must be > 0.")
			c.MaxTrials = n
			return err
		}},
		{optDef{long: "input-data", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			if _, err := os.Stat(v); err == nil {
				c.UserData = append(c.UserData, v)
				return nil
			}
			switch v {
			case "zero":
				c.ZeroInput = true
			case "random":
			default:
				return usagef("Failed to parse --input-data. Unsupported type provided: '%s'. The available options are 'zero', 'random', path to a directory, or a json file.", v)
			}
			return nil
		}},
		{optDef{long: "string-length", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --string-length. The value must be > 0")
			c.StringLength = n
			return err
		}},
		{optDef{long: "string-data", arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.StringData = v; return nil }},
		{optDef{long: "async", short: 'a', arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.Async = true; return nil }},
		{optDef{long: "sync", arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.forcedSync = true; return nil }},
		{optDef{long: "request-rate-range", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(RequestRate, e); err != nil {
				return err
			}
			parts := strings.Split(v, ":")
			if len(parts) > 3 {
				return usagef("Failed to parse --request-rate-range. The value does not match <start:end:step>.")
			}
			for i, p := range parts {
				f, err := stod(p)
				if err != nil {
					return invalidValue(e)
				}
				switch i {
				case 0:
					c.RequestRate.Start = f
				case 1:
					c.RequestRate.End = f
				case 2:
					c.RequestRate.Step = f
				}
			}
			return nil
		}},
		{optDef{long: "num-of-sequences", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --num-of-sequences. The value must be > 0.")
			c.NumOfSequences = n
			return err
		}},
		{optDef{long: "binary-search", arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.BinarySearch = true; return nil }},
		{optDef{long: "request-distribution", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			switch v {
			case "poisson":
				c.Distribution = Poisson
			case "constant":
				c.Distribution = Constant
			default:
				// "posson" is perf_analyzer's typo, kept.
				return usagef("Failed to parse --request-distribution. Unsupported type provided: '%s'. Choices are 'posson' or 'constant'.", v)
			}
			return nil
		}},
		{optDef{long: "request-intervals", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(CustomIntervals, e); err != nil {
				return err
			}
			if fi, err := os.Stat(v); err != nil || fi.IsDir() {
				return usagef("Failed to parse --request-intervals. The value must be a valid file path")
			}
			c.IntervalsFile = v
			return nil
		}},
		{optDef{long: "shared-memory", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			switch v {
			case "system":
				c.SharedMemory = SystemSharedMemory
			case "none":
				c.SharedMemory = NoSharedMemory
			case "cuda":
				// perf_analyzer's own text when built without GPU support.
				return usagef("CUDA shared memory is not supported when building with `cmake -D TRITON_ENABLE_GPU=OFF ...`. Install CUDA runtime library (e.g. `apt install nvidia-cuda-toolkit`) then recompile with `cmake -D TRITON_ENABLE_GPU=ON ...`.")
			default:
				return usagef("Failed to parse --shared-memory. Unsupported type provided: '%s'. The available options are 'system', 'cuda', or 'none'.", v)
			}
			return nil
		}},
		{optDef{long: "output-shared-memory-size", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := stoi(v)
			switch {
			case err != nil:
				return invalidValue(e)
			case n < 0:
				return usagef("Failed to parse --output-shared-memory-size. The value must be >= 0.")
			}
			c.OutputShmSize = uint64(n)
			return nil
		}},
		{optDef{long: "service-kind", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			switch v {
			case "triton", "triton_c_api":
				c.ServiceKind = v
			case "tfserving", "torchserve", "openai", "dynamic_grpc":
				return usagef("--service-kind=%s is not supported by this perf_analyzer; it speaks to Triton servers ('triton') and runs one in-process ('triton_c_api').", v)
			default:
				return usagef("Failed to parse --service-kind. Unsupported type provided: '%s'. The available options are 'triton', 'tfserving', 'torchserve', or 'triton_c_api'.", v)
			}
			return nil
		}},
		{optDef{long: "model-signature-name", arg: requiredArg}, ignored("it applies to TensorFlow Serving only")},
		{optDef{long: "grpc-compression-algorithm", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			switch v {
			case "none", "deflate", "gzip":
			default:
				return usagef("Failed to parse --grpc-compression-algorithm. Unsupported type provided: '%s'. The available options are 'gzip', 'deflate', or 'none'.", v)
			}
			c.grpcCompression = true
			c.remote.compression = v
			return nil
		}},
		{optDef{long: "measurement-mode", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			switch v {
			case "time_windows":
				c.CountWindows = false
			case "count_windows":
				c.CountWindows = true
			default:
				return usagef("Failed to parse --measurement-mode. Unsupported type provided: '%s'. The available options are 'time_windows' or 'count_windows'.", v)
			}
			return nil
		}},
		{optDef{long: "measurement-request-count", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse --measurement-request-count. The value must be > 0.")
			c.WindowRequestCount = n
			return err
		}},
		{optDef{long: "triton-server-directory", arg: requiredArg}, ignored("the in-process server is compiled into this binary")},
		{optDef{long: "model-repository", arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.ModelRepository = v; return nil }},
		{optDef{long: "sequence-id-range", arg: requiredArg}, setSequenceIDRange},
		{optDef{long: "ssl-grpc-use-ssl", arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.remote.grpcSSL = true; return nil }},
		{optDef{long: "ssl-grpc-root-certifications-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.grpcRoot })},
		{optDef{long: "ssl-grpc-private-key-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.grpcKey })},
		{optDef{long: "ssl-grpc-certificate-chain-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.grpcChain })},
		{optDef{long: "ssl-https-verify-peer", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			n := atoi(v)
			if n != 0 && n != 1 {
				return usagef("Failed to parse --ssl-https-verify-peer. The value must be either 0 or 1.")
			}
			c.remote.verifyPeer, c.remote.https = n, true
			return nil
		}},
		{optDef{long: "ssl-https-verify-host", arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			n := atoi(v)
			if n < 0 || n > 2 {
				return usagef("Failed to parse --ssl-https-verify-host. The value must be either 0, 1, or 2.")
			}
			c.remote.verifyHost, c.remote.https = n, true
			return nil
		}},
		{optDef{long: "ssl-https-ca-certificates-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.caFile })},
		{optDef{long: "ssl-https-client-certificate-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.certFile })},
		{optDef{long: "ssl-https-client-certificate-type", arg: requiredArg}, tlsType(func(c *Config) *string { return &c.remote.certType })},
		{optDef{long: "ssl-https-private-key-file", arg: requiredArg}, tlsFile(func(c *Config) *string { return &c.remote.keyFile })},
		{optDef{long: "ssl-https-private-key-type", arg: requiredArg}, tlsType(func(c *Config) *string { return &c.remote.keyType })},
		{optDef{long: "verbose-csv", arg: noArg}, func(c *Config, _ string, _ optEvent) error { c.VerboseCSV = true; return nil }},
		{optDef{long: "report", arg: requiredArg, exact: true}, func(c *Config, v string, _ optEvent) error { c.ReportDir = v; return nil }},
		{optDef{long: "advise", arg: noArg, exact: true}, func(c *Config, _ string, _ optEvent) error { c.Advise = true; return nil }},
		{optDef{long: "latency-budget", arg: requiredArg, exact: true}, setLatencyBudget},
		{optDef{long: "enable-mpi", arg: noArg}, ignored("multi-model MPI runs are not supported; run one perf_analyzer per model")},
		{optDef{long: "trace-level", arg: requiredArg}, ignored(noTrace)},
		{optDef{long: "trace-rate", arg: requiredArg}, ignored(noTrace)},
		{optDef{long: "trace-count", arg: requiredArg}, ignored(noTrace)},
		{optDef{long: "log-frequency", arg: requiredArg}, ignored(noTrace)},
		{optDef{long: "collect-metrics", arg: noArg}, func(c *Config, _ string, e optEvent) error {
			c.collectMetrics = true
			c.warn(e.name(), noMetrics)
			return nil
		}},
		{optDef{long: "metrics-url", arg: requiredArg}, func(c *Config, _ string, _ optEvent) error { c.metricsURLSet = true; return nil }},
		{optDef{long: "metrics-interval", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if _, err := positive(v, e, "Failed to parse --metrics-interval. The value must be > 0 msecs."); err != nil {
				return err
			}
			c.metricsIntervalSet = true
			return nil
		}},
		{optDef{long: "sequence-length-variation", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			f, err := stod(v)
			if err != nil {
				return invalidValue(e)
			}
			c.SequenceLengthVariation = f
			return nil
		}},
		{optDef{long: "bls-composing-models", arg: requiredArg}, ignored("BLS composing models' statistics are not reported")},
		{optDef{long: "serial-sequences", arg: noArg}, ignored("sequences run concurrently")},
		{optDef{long: "input-tensor-format", arg: requiredArg}, tensorFormat},
		{optDef{long: "output-tensor-format", arg: requiredArg}, tensorFormat},
		{optDef{long: "version", arg: noArg}, func(*Config, string, optEvent) error { return errVersion }},
		{optDef{long: "profile-export-file", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if _, err := os.Stat(v); err == nil {
				return usagef("Failed to parse --profile-export-file. Path must not already exist.")
			}
			c.warn(e.name(), "no profile export is written")
			return nil
		}},
		{optDef{long: "periodic-concurrency-range", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(modePeriodicConcurrency, e); err != nil {
				return err
			}
			return unsupported("periodic concurrency")(c, v, e)
		}},
		{optDef{long: "request-period", arg: requiredArg}, ignored("it applies to --periodic-concurrency-range, which is not supported")},
		{optDef{long: "request-parameter", arg: requiredArg}, setRequestParameter},
		{optDef{long: "endpoint", arg: requiredArg}, ignored("it applies to the OpenAI service kind only")},
		{optDef{long: "request-count", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := stoi(v)
			switch {
			case err != nil:
				return invalidValue(e)
			case n <= 0:
				return usagef("Failed to parse --request-count. The value must be > 0.")
			}
			if c.RequestCount == 0 {
				c.RequestCount = uint64(n)
			}
			return nil
		}},
		{optDef{long: "warmup-request-count", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := stoi(v)
			switch {
			case err != nil:
				return invalidValue(e)
			case n < 0:
				return usagef("Failed to parse --warmup-request-count. The value must be >= 0.")
			}
			c.WarmupRequestCount, c.warmupSet = uint64(n), true
			return nil
		}},
		{optDef{long: "fixed-schedule", arg: noArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(modeFixedSchedule, e); err != nil {
				return err
			}
			return unsupported("fixed schedule")(c, v, e)
		}},
		{optDef{long: "session-concurrency", arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			if err := c.setLoadMode(modeSessionConcurrency, e); err != nil {
				return err
			}
			return unsupported("session concurrency, for OpenAI services")(c, v, e)
		}},
		{optDef{long: "grpc-method", arg: requiredArg}, ignored("it applies to the dynamic gRPC service kind only")},
		{optDef{long: "help", arg: noArg}, func(*Config, string, optEvent) error { return errHelp }},
		{optDef{short: 'v', arg: noArg}, func(c *Config, _ string, _ optEvent) error {
			c.ExtraVerbose = c.Verbose
			c.Verbose = true
			return nil
		}},
		{optDef{short: 'z', arg: noArg}, func(c *Config, _ string, _ optEvent) error {
			c.pendingStderr = append(c.pendingStderr, "Warning: -z is deprecated and will be removed in an upcoming version. Use --input-data=zero instead.")
			c.ZeroInput = true
			return nil
		}},
		{optDef{short: 'd', arg: noArg}, func(c *Config, _ string, e optEvent) error {
			c.pendingStderr = append(c.pendingStderr, "Warning: -d is deprecated and will be removed in an upcoming version. Use --concurrency-range instead.")
			return depConcurrency(c, e)
		}},
		{optDef{short: 'u', arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.URL, c.urlSet = v, true; return nil }},
		{optDef{short: 'm', arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.Model = v; return nil }},
		{optDef{short: 'x', arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.Version = v; return nil }},
		{optDef{short: 'b', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			n, err := positive(v, e, "Failed to parse -b (batch size). The value must be > 0.")
			c.BatchSize, c.batchSizeSet = n, err == nil
			return err
		}},
		{optDef{short: 't', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			c.pendingStderr = append(c.pendingStderr, "Warning: -t is deprecated and will be removed in an upcoming version. Use --concurrency-range instead.")
			if err := depConcurrency(c, e); err != nil {
				return err
			}
			n, err := stoull(v)
			if err != nil {
				return invalidValue(e)
			}
			c.Concurrency.Start = n
			return nil
		}},
		{optDef{short: 'i', arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.Protocol = parseProtocol(v); return nil }},
		{optDef{short: 'H', arg: requiredArg}, func(c *Config, v string, _ optEvent) error {
			// The name is what precedes the first colon, the value the rest
			// (perf_analyzer's parse, which a header without a colon
			// breaks; here its value is empty).
			name, value, _ := strings.Cut(v, ":")
			c.remote.headers = append(c.remote.headers, [2]string{name, value})
			return nil
		}},
		{optDef{short: 'c', arg: requiredArg}, func(c *Config, v string, e optEvent) error {
			c.pendingStderr = append(c.pendingStderr, "Warning: -c is deprecated and will be removed in an upcoming version. Use --concurrency-range instead.")
			if err := depConcurrency(c, e); err != nil {
				return err
			}
			n, err := stoull(v)
			if err != nil {
				return invalidValue(e)
			}
			c.Concurrency.End = n
			return nil
		}},
		{optDef{short: 'f', arg: requiredArg}, func(c *Config, v string, _ optEvent) error { c.CSVFile = v; return nil }},
	}
}

// tensorFormat reads --input-tensor-format and --output-tensor-format:
// either being json makes the HTTP client send and ask for JSON tensors
// (the client has one setting for both).
func tensorFormat(c *Config, v string, e optEvent) error {
	switch strings.ToLower(v) {
	case "binary":
	case "json":
		c.remote.jsonTensors = true
	default:
		return usagef("Failed to parse %s. Unsupported type provided: '%s'. The available options are 'binary' or 'json'.", e.name(), v)
	}
	return nil
}

// tlsFile reads a TLS option naming a file that must exist.
func tlsFile(field func(*Config) *string) func(*Config, string, optEvent) error {
	return func(c *Config, v string, e optEvent) error {
		if fi, err := os.Stat(v); err != nil || fi.IsDir() {
			return usagef("Failed to parse %s. The value must be a valid file path.", e.name())
		}
		*field(c) = v
		if strings.HasPrefix(e.def.long, "ssl-https") {
			c.remote.https = true
		}
		return nil
	}
}

// tlsType reads a certificate or key encoding, PEM or DER.
func tlsType(field func(*Config) *string) func(*Config, string, optEvent) error {
	return func(c *Config, v string, e optEvent) error {
		if v != "PEM" && v != "DER" {
			return usagef("Failed to parse %s. Unsupported type provided: '%s'. The available options are 'PEM' or 'DER'.", e.name(), v)
		}
		*field(c) = v
		c.remote.https = true
		return nil
	}
}

func setShape(c *Config, v string, e optEvent) error {
	i := strings.LastIndex(v, ":")
	if i < 0 {
		return usagef("Failed to parse --shape. There must be a colon after input name.")
	}
	name := v[:i]
	var shape []int64
	for _, p := range strings.Split(v[i+1:], ",") {
		n, err := stoll(p)
		if err != nil {
			return invalidValue(e)
		}
		if n <= 0 {
			return usagef("Failed to parse --shape. The dimensions of input tensor must be > 0.")
		}
		shape = append(shape, n)
	}
	c.Shapes[name] = shape
	return nil
}

func setSequenceIDRange(c *Config, v string, e optEvent) error {
	parts := strings.Split(v, ":")
	if len(parts) > 2 {
		return usagef("Failed to parse --sequence-id-range. The value does not match <start:end>.")
	}
	start, err := stoi(parts[0])
	if err != nil {
		return invalidValue(e)
	}
	end := int64(math.MaxInt64)
	if len(parts) == 2 {
		if end, err = stoi(parts[1]); err != nil {
			return invalidValue(e)
		}
	}
	switch {
	case start < 0 || end < 0:
		return usagef("Failed to parse --sequence-id-range. The range values must be >= 0.")
	case start > end:
		return usagef("Failed to parse --sequence-id-range. The 'end' value must be greater than 'start' value.")
	}
	c.StartSequenceID = uint64(start)
	if len(parts) == 2 {
		c.SequenceIDRange = uint64(end - start)
	}
	return nil
}

// setRequestParameter reads --request-parameter name:value:type, with
// type bool, int or string (perf_analyzer's gRPC-only parameters; here
// every protocol passes them).
func setRequestParameter(c *Config, v string, e optEvent) error {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return usagef("Failed to parse --request-parameter. The value does not match <name:value:type>.")
	}
	name, value, typ := parts[0], parts[1], strings.ToLower(parts[2])
	var p any
	switch typ {
	case "string":
		p = value
	case "bool":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return invalidValue(e)
		}
		p = b
	case "int":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return invalidValue(e)
		}
		p = n
	default:
		return usagef("Failed to parse --request-parameter. Unsupported type: '%s'. The available types are 'bool', 'int' or 'string'.", typ)
	}
	if c.RequestParameters == nil {
		c.RequestParameters = map[string]any{}
	}
	c.RequestParameters[name] = p
	return nil
}

// invalidValue is perf_analyzer's report of a value std::stoi & co. could
// not read.
func invalidValue(e optEvent) error {
	return usagef("Failed to parse %s. Invalid value provided: %s", e.name(), e.value)
}

// positive reads a count that must be > 0 (std::stoi(v) > 0, then
// std::stoull(v)).
func positive(v string, e optEvent, msg string) (uint64, error) {
	n, err := stoi(v)
	switch {
	case err != nil:
		return 0, invalidValue(e)
	case n <= 0:
		return 0, &usageError{msg}
	}
	return uint64(n), nil
}

// The number readers below follow the C++ library functions perf_analyzer
// calls: leading white space is skipped, a sign is allowed, the longest
// numeric prefix is read and the rest of the string ignored ("5ms" is 5);
// no digits at all is an error. Out-of-range values, which crash
// perf_analyzer (std::out_of_range is not caught), are errors here; so are
// negative values for the unsigned readers, which C++ would wrap around.

func numericPrefix(s string, allowSign bool) (string, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	i := 0
	if allowSign && i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i {
		return "", false
	}
	return s[:j], true
}

// stoi is std::stoi: an int (32 bits).
func stoi(s string) (int64, error) {
	p, ok := numericPrefix(s, true)
	if !ok {
		return 0, errInvalidNumber
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return 0, errInvalidNumber
	}
	return n, nil
}

// stoll is std::stoll.
func stoll(s string) (int64, error) {
	p, ok := numericPrefix(s, true)
	if !ok {
		return 0, errInvalidNumber
	}
	n, err := strconv.ParseInt(p, 10, 64)
	if err != nil {
		return 0, errInvalidNumber
	}
	return n, nil
}

// stoull is std::stoull, refusing negative values.
func stoull(s string) (uint64, error) {
	p, ok := numericPrefix(s, true)
	if !ok || p[0] == '-' {
		return 0, errInvalidNumber
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(p, "+"), 10, 64)
	if err != nil {
		return 0, errInvalidNumber
	}
	return n, nil
}

// atoi is std::atoi: 0 when there is no number.
func atoi(s string) int {
	n, err := stoi(s)
	if err != nil {
		return 0
	}
	return int(n)
}

// stod is std::stod: the longest prefix strtod reads (decimal, with an
// optional exponent, or inf/nan).
func stod(s string) (float64, error) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	best := -1
	var val float64
	// strtod's decimal syntax: sign, digits, optional point and digits,
	// optional exponent. Try the longest candidate prefixes first.
	end := decimalPrefixLen(s)
	if end > 0 {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil || errors.Is(err, strconv.ErrRange) {
			best, val = end, f
		}
	}
	if best < 0 {
		t := strings.ToLower(strings.TrimLeft(s, "+-"))
		for _, w := range []string{"infinity", "inf", "nan"} {
			if strings.HasPrefix(t, w) {
				f, _ := strconv.ParseFloat(s[:len(s)-len(t)]+w, 64)
				return f, nil
			}
		}
		return 0, errInvalidNumber
	}
	if math.IsInf(val, 0) {
		return 0, errInvalidNumber // std::out_of_range
	}
	return val, nil
}

// stof is std::stof.
func stof(s string) (float64, error) {
	f, err := stod(s)
	if err == nil && math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
		return 0, errInvalidNumber
	}
	return f, err
}

// decimalPrefixLen is the length of the longest prefix of s in strtod's
// decimal syntax.
func decimalPrefixLen(s string) int {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	return i
}

// ParseArgs reads perf_analyzer's command line (without the program name).
// Failures come back as errors whose text is perf_analyzer's; [Main]
// prints them, with the synopsis where perf_analyzer prints it, and exits
// 99. Warnings for options that have no effect here are printed to
// stderr by Main, not returned.
func ParseArgs(args []string) (Config, error) {
	c := defaultConfig()
	opts := options()
	defs := make([]optDef, len(opts))
	for i := range opts {
		defs[i] = opts[i].optDef
	}
	events, rest, err := scan(args, defs)
	for _, e := range events {
		// The handler of the option at the same index as its definition.
		o := &opts[indexOf(defs, e.def)]
		if herr := o.set(&c, e.value, e); herr != nil {
			return c, herr
		}
	}
	if err != nil {
		return c, err
	}
	for _, w := range rest {
		c.pendingStderr = append(c.pendingStderr, "WARNING: ignoring the argument '"+w+"', which is not an option")
	}
	c.finish()
	return c, c.verify()
}

func indexOf(defs []optDef, d *optDef) int {
	for i := range defs {
		if &defs[i] == d {
			return i
		}
	}
	panic("perf: option not in its table")
}

// finish applies the defaults that depend on several options, after the
// last one is read (the end of ParseCommandLine).
func (c *Config) finish() {
	if c.Mode == modeNone || c.deprecatedConcurrency {
		c.Mode = Concurrency
	}
	if !c.urlSet && c.Protocol == GRPC {
		c.URL = "localhost:8001"
	}
	if !c.maxThreadsSet && c.Mode == Concurrency {
		c.MaxThreads = max(16, c.Concurrency.End)
	}
	if c.Mode == CustomIntervals {
		c.BinarySearch = false
	}
	if c.RequestCount != 0 {
		c.CountWindows = true
		c.WindowRequestCount = c.RequestCount
	}
}

// verify is perf_analyzer's VerifyOptions, in its order, for the options
// this tool has.
func (c *Config) verify() error {
	if c.Model == "" {
		return usagef("Failed to parse -m (model name). The value must be specified.")
	}
	if c.Concurrency.Start == 0 {
		return usagef("The start of the search range must be > 0")
	}
	if !(c.RequestRate.Start > 0) {
		return usagef("Failed to parse --request-rate-range. The start of the search range must be > 0.")
	}
	if c.ServiceKind == "triton_c_api" {
		c.Protocol = InProcess
	}
	if c.Protocol == unknownProtocol {
		return usagef("Failed to parse -i (protocol). The value should be either HTTP or gRPC.")
	}
	if c.Streaming && c.Protocol != GRPC && c.Protocol != InProcess {
		return usagef("Streaming is only allowed with gRPC protocol and Triton C API.")
	}
	if c.grpcCompression && c.Protocol != GRPC {
		return usagef("Using compression algorithm is only allowed with gRPC protocol.")
	}
	if c.SequenceLengthVariation < 0 {
		return usagef("Failed to parse --sequence-length-variation. The value must be >= 0.0.")
	}
	if c.StartSequenceID == 0 {
		c.StartSequenceID = 1
		c.pendingStderr = append(c.pendingStderr, "WARNING: using an invalid start sequence id. Perf Analyzer will use default value if it is measuring on sequence model.")
	}
	if c.Percentile != -1 && (c.Percentile > 99 || c.Percentile < 1) {
		return usagef("Failed to parse --percentile. The value must be -1 for not reporting or in range (0, 100).")
	}
	if c.ZeroInput && len(c.UserData) > 0 {
		return usagef("The -z flag cannot be set when --data-directory is provided.")
	}
	if c.Async && c.forcedSync {
		return usagef("Cannot specify --async and --sync simultaneously.")
	}
	if (c.Concurrency.End == 0 || c.RequestRate.End == 0) && c.LatencyThresholdMS == 0 {
		return usagef("The end of the search range and the latency limit can not be both 0 (or 0.0) simultaneously")
	}
	if (c.Concurrency.End == 0 || c.RequestRate.End == 0) && c.BinarySearch {
		return usagef("The end of the range can not be 0 (or 0.0) for binary search mode.")
	}
	if c.BinarySearch && c.LatencyThresholdMS == 0 {
		return usagef("The --latency-threshold cannot be 0 for binary search mode.")
	}
	if (c.Concurrency.End < c.Concurrency.Start || c.RequestRate.End < c.RequestRate.Start) && c.BinarySearch {
		return usagef("The end of the range can not be less than start of the range for binary search mode.")
	}
	if c.WarmupRequestCount != 0 {
		if c.Mode == Concurrency && c.Concurrency.Start < c.Concurrency.End {
			return usagef("--warmup-request-count not supported with multiple concurrency values in one run")
		}
		if c.Mode == RequestRate && c.RequestRate.Start < c.RequestRate.End {
			return usagef("--warmup-request-count not supported with multiple request rate values in one run")
		}
	}
	if c.RequestCount != 0 {
		if c.Mode == Concurrency {
			if c.RequestCount < c.Concurrency.Start {
				return usagef("--request-count can not be less than concurrency")
			}
			if c.Concurrency.Start < c.Concurrency.End {
				return usagef("--request-count not supported with multiple concurrency values in one run")
			}
		}
		if c.Mode == RequestRate {
			if float64(c.RequestCount) < math.Trunc(c.RequestRate.Start) {
				return usagef("--request-count can not be less than request rate")
			}
			if c.RequestRate.Start < c.RequestRate.End {
				return usagef("--request-count not supported with multiple request rate values in one run")
			}
		}
	}
	if c.ServiceKind == "triton_c_api" && c.ModelRepository == "" {
		return usagef("--model-repository should not be empty when using service-kind=triton_c_api.")
	}
	if c.Protocol == InProcess && c.ModelRepository == "" {
		return usagef("--model-repository should not be empty when using -i inprocess.")
	}
	if c.collectMetrics && c.Protocol == InProcess {
		return usagef("Server-side metric collection is only supported with Triton client backend.")
	}
	if c.metricsURLSet && !c.collectMetrics {
		return usagef("Must specify --collect-metrics when using the --metrics-url option.")
	}
	if c.metricsIntervalSet && !c.collectMetrics {
		return usagef("Must specify --collect-metrics when using the --metrics-interval option.")
	}
	if c.Protocol == InProcess && c.urlSet {
		c.warn("-u", "the server runs in-process (-i inprocess)")
	}
	if c.Protocol != InProcess && c.ModelRepository != "" {
		c.warn("--model-repository", "it applies to -i inprocess (or --service-kind=triton_c_api) only")
	}
	if c.SharedMemory == SystemSharedMemory && c.Protocol == InProcess {
		c.warn("--shared-memory=system", "in-process requests already pass their tensors without copies")
	}
	if c.Protocol == InProcess && (len(c.remote.headers) > 0 || c.remote.jsonTensors || c.remote.https || c.remote.grpcSSL) {
		c.warn("-H, TLS and tensor-format options", "the server runs in-process (-i inprocess)")
	}
	return c.verifyAdvice()
}

// printUsage writes the synopsis, as perf_analyzer's Usage does before its
// error line.
func printUsage(w io.Writer) {
	io.WriteString(w, synopsis)
}

const synopsis = `Usage: perf_analyzer [options]
==== SYNOPSIS ====
 
	--version 
	-m <model name>
	-x <model version>
	--service-kind <"triton"|"triton_c_api">
	-v
	--help

I. MEASUREMENT PARAMETERS: 
	--async (-a)
	--sync
	--measurement-interval (-p) <measurement window (in msec)>
	--measurement-mode <"time_windows"|"count_windows">
	--measurement-request-count <number of requests>
	--concurrency-range <start:end:step>
	--request-rate-range <start:end:step>
	--request-distribution <"poisson"|"constant">
	--request-intervals <path to file containing time intervals in microseconds>
	--binary-search
	--num-of-sequences <number of concurrent sequences>
	--latency-threshold (-l) <latency threshold (in msec)>
	--stability-percentage (-s) <deviation threshold for stable measurement (in percentage)>
	--max-trials (-r)  <maximum number of measurements for each profiling>
	--percentile <percentile>
	--request-count <number of requests>
	--warmup-request-count <number of warmup requests>
	DEPRECATED OPTIONS
	-t <number of concurrent requests>
	-c <maximum concurrency>
	-d

II. INPUT DATA OPTIONS: 
	-b <batch size>
	--input-data <"zero"|"random"|<path>>
	--shared-memory <"system"|"none">
	--shape <name:shape>
	--sequence-length <length>
	--sequence-length-variation <variation>
	--sequence-id-range <start:end>
	--string-length <length>
	--string-data <string>
	--request-parameter <name:value:type>
	DEPRECATED OPTIONS
	-z
	--data-directory <path>

III. SERVER DETAILS: 
	-u <URL for inference service>
	-i <Protocol used to communicate with inference service: "http"|"grpc"|"inprocess">
	--model-repository <path> (with -i inprocess)

IV. OTHER OPTIONS: 
	-f <filename for storing report in csv format>
	--verbose-csv
	--report <folder for figures (PNG, SVG) and an HTML report>
	--advise (batching advice instead of a measurement)
	--latency-budget <p99=50ms|p95=20ms|avg=10ms> (with --advise)
	--streaming

	-H <HTTP header>
	--grpc-compression-algorithm <"gzip"|"deflate"|"none">
	--input-tensor-format <"binary"|"json">
	--output-tensor-format <"binary"|"json">
	--ssl-grpc-use-ssl
	--ssl-grpc-root-certifications-file <path>
	--ssl-grpc-private-key-file <path>
	--ssl-grpc-certificate-chain-file <path>
	--ssl-https-verify-peer <0|1>
	--ssl-https-verify-host <0|1|2>
	--ssl-https-ca-certificates-file <path>
	--ssl-https-client-certificate-file <path>
	--ssl-https-client-certificate-type <"PEM"|"DER">
	--ssl-https-private-key-file <path>
	--ssl-https-private-key-type <"PEM"|"DER">
	--output-shared-memory-size <size in bytes>

Accepted for compatibility, with a warning that they change nothing here:
	--max-threads, --serial-sequences, --trace-level, --trace-rate,
	--trace-count, --log-frequency, --collect-metrics, --metrics-url,
	--metrics-interval, --profile-export-file, --bls-composing-models,
	--model-signature-name, --endpoint, --grpc-method,
	--triton-server-directory, --enable-mpi, --request-period

`
