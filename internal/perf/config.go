package perf

import (
	"strings"
	"time"

	"github.com/triton-go/triton/internal/advisor"
)

// Protocol is how the tool reaches the server (-i).
type Protocol uint8

const (
	// HTTP is KServe v2 over HTTP/REST (-i http, the default).
	HTTP Protocol = iota
	// GRPC is KServe v2 over gRPC (-i grpc).
	GRPC
	// InProcess runs the server inside the tool (-i inprocess, or
	// --service-kind=triton_c_api as perf_analyzer spells its in-process
	// mode) over --model-repository.
	InProcess
	// unknownProtocol is what -i gives for anything else; the check after
	// parsing reports it, as perf_analyzer does.
	unknownProtocol
)

func (p Protocol) String() string {
	switch p {
	case HTTP:
		return "http"
	case GRPC:
		return "grpc"
	case InProcess:
		return "inprocess"
	}
	return "unknown"
}

// parseProtocol reads -i, case-insensitively.
func parseProtocol(s string) Protocol {
	switch strings.ToLower(s) {
	case "http":
		return HTTP
	case "grpc":
		return GRPC
	case "inprocess":
		return InProcess
	}
	return unknownProtocol
}

// LoadMode is how the load is generated.
type LoadMode uint8

const (
	modeNone LoadMode = iota
	// Concurrency keeps N requests outstanding (--concurrency-range).
	Concurrency
	// RequestRate sends requests on a schedule (--request-rate-range).
	RequestRate
	// CustomIntervals sends requests on the gaps of a file
	// (--request-intervals).
	CustomIntervals
	modePeriodicConcurrency
	modeSessionConcurrency
	modeFixedSchedule
)

// String is perf_analyzer's name for the mode, as its "Cannot use both"
// message spells it. RequestRate has none there (see flags.go).
func (m LoadMode) String() string {
	switch m {
	case modeNone:
		return "None"
	case Concurrency:
		return "Concurrency"
	case CustomIntervals:
		return "CustomIntervals"
	case modePeriodicConcurrency:
		return "PeriodicConcurrency"
	case modeSessionConcurrency:
		return "SessionConcurrency"
	case modeFixedSchedule:
		return "FixedSchedule"
	}
	return ""
}

// Distribution is the gap between scheduled requests in rate mode.
type Distribution uint8

const (
	// Constant sends every 1/rate seconds.
	Constant Distribution = iota
	// Poisson draws exponential gaps from a fixed-seed generator, so the
	// schedule is the same on every run (perf_analyzer's mt19937 with its
	// default seed; see schedule.go).
	Poisson
)

// SharedMemory is --shared-memory.
type SharedMemory uint8

const (
	NoSharedMemory SharedMemory = iota
	SystemSharedMemory
)

// Range is a search range (--concurrency-range, --request-rate-range).
// End 0 means no end: the search goes on until -l stops it.
type Range[T uint64 | float64] struct {
	Start, End, Step T
}

// Config is the parsed command line: perf_analyzer's parameters with its
// defaults. The zero value is not useful; [ParseArgs] returns one.
type Config struct {
	Model   string // -m
	Version string // -x; "" is the server's choice (the latest version)
	URL     string // -u, without a scheme
	urlSet  bool

	Protocol        Protocol
	ServiceKind     string // --service-kind: "triton" or "triton_c_api"
	ModelRepository string // --model-repository (in-process)

	BatchSize    uint64 // -b
	batchSizeSet bool

	Mode          LoadMode
	Concurrency   Range[uint64]
	RequestRate   Range[float64]
	Distribution  Distribution
	IntervalsFile string // --request-intervals
	BinarySearch  bool

	// Shapes are --shape values by input name, without the batch
	// dimension.
	Shapes map[string][]int64
	// UserData are --input-data paths (JSON files or directories), in
	// order.
	UserData     []string
	ZeroInput    bool
	StringLength uint64
	StringData   string

	Interval           time.Duration // -p, --measurement-interval
	CountWindows       bool          // --measurement-mode count_windows
	WindowRequestCount uint64        // --measurement-request-count
	Stability          float64       // -s, as a fraction (10% is 0.1)
	MaxTrials          uint64        // -r
	Percentile         int           // --percentile; -1 is the average
	LatencyThresholdMS uint64        // -l; 0 is no limit

	SharedMemory  SharedMemory
	OutputShmSize uint64 // --output-shared-memory-size, bytes per output
	Streaming     bool
	Async         bool
	forcedSync    bool
	MaxThreads    uint64
	maxThreadsSet bool

	SequenceLength          uint64
	sequenceLengthSet       bool
	SequenceLengthVariation float64 // percent
	StartSequenceID         uint64
	SequenceIDRange         uint64 // ids are start + n mod range
	NumOfSequences          uint64

	// RequestCount, when set, measures exactly that many requests in one
	// window (--request-count).
	RequestCount uint64
	// WarmupRequestCount is --warmup-request-count; warmupSet reports that
	// it was given (0 then turns the default warm-up off).
	WarmupRequestCount uint64
	warmupSet          bool

	// RequestParameters are --request-parameter values.
	RequestParameters map[string]any

	// Advise runs the batching advisor instead of a measurement
	// (--advise, ours; advise.go), with LatencyBudget (--latency-budget;
	// the zero value: none).
	Advise        bool
	LatencyBudget advisor.Budget

	CSVFile    string // -f
	VerboseCSV bool
	// ReportDir is --report (ours): the folder of the figures and the
	// HTML page (package perfreport); "" writes none.
	ReportDir string
	Verbose   bool // -v
	// ExtraVerbose is -v -v.
	ExtraVerbose bool

	// warnings are printed to stderr before the run: options accepted for
	// compatibility that have no effect here, each with the reason.
	warnings []string
	// pendingStderr are perf_analyzer's own warnings while parsing
	// (deprecated options, a sequence length of 0), printed before the
	// warnings above.
	pendingStderr []string

	// remote holds the client settings: -H, TLS, compression, tensor
	// format (remote.go).
	remote remoteSettings

	deprecatedConcurrency bool // -t, -c or -d
	grpcCompression       bool
	collectMetrics        bool
	metricsURLSet         bool
	metricsIntervalSet    bool
}

// defaultConfig is perf_analyzer's PerfAnalyzerParameters defaults.
func defaultConfig() Config {
	return Config{
		URL:                     "localhost:8000",
		Protocol:                HTTP,
		ServiceKind:             "triton",
		BatchSize:               1,
		Concurrency:             Range[uint64]{1, 1, 1},
		RequestRate:             Range[float64]{1, 1, 1},
		Shapes:                  map[string][]int64{},
		StringLength:            128,
		Interval:                5000 * time.Millisecond,
		WindowRequestCount:      50,
		Stability:               0.1,
		MaxTrials:               10,
		Percentile:              -1,
		MaxThreads:              4,
		SequenceLength:          20,
		SequenceLengthVariation: 20,
		StartSequenceID:         1,
		SequenceIDRange:         1<<32 - 1,
		NumOfSequences:          4,
		OutputShmSize:           100 * 1024,
		remote:                  remoteSettings{verifyPeer: 1, verifyHost: 2, certType: "PEM", keyType: "PEM"},
	}
}

// rangeRate reports whether the run measures request rates (the first CSV
// column is "Request Rate" and steps are announced by rate).
func (c *Config) rangeRate() bool { return c.Mode != Concurrency }
