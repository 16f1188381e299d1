package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/cloudrepo"
	"github.com/triton-go/triton/internal/wire"
)

// config is the command line, with tritonserver's flag names so that
// existing deployments keep their arguments.
type config struct {
	id                  string
	repositories        []string
	controlMode         string // none, poll or explicit
	loadModels          []string
	pollSecs            int
	strictModelConfig   bool // --strict-model-config, or --disable-auto-complete-config
	disableAutoComplete bool
	strictReadiness     bool
	exitOnError         bool
	exitTimeout         time.Duration
	exitDrain           time.Duration // --exit-drain-secs (ours): not ready, still serving, after SIGTERM
	// Ours: --model-memory-budget (bytes, 0 none), --model-load-on-demand,
	// --model-keep-alive (keepAliveSet: given).
	memoryBudget int64
	loadOnDemand bool
	keepAlive    time.Duration
	keepAliveSet bool
	// Ours: --deadline-aware-batching (default true).
	deadlineAware bool

	// Parsed and checked here, passed to the libraries where main.go
	// says "wired at merge": --model-load-thread-count,
	// --model-load-retry-count, --model-config-name,
	// --http-header-forward-pattern, --grpc-header-forward-pattern,
	// --grpc-infer-response-compression-level.
	modelLoadThreads     int
	modelLoadRetries     int
	modelConfigName      string
	httpHeaderForward    *regexp.Regexp // nil: none forwarded
	grpcHeaderForward    *regexp.Regexp
	grpcCompressionLevel string // none, low, medium or high

	allowHTTP, allowGRPC, allowMetrics bool
	httpPort, grpcPort, metricsPort    int
	httpAddress, grpcAddress           string
	metricsAddress                     string // "": --http-address
	reuseHTTPPort, reuseGRPCPort       bool
	httpMaxInputSize                   int64 // 0: httpapi's default
	grpcTLS                            tlsFiles
	grpcKeepalive                      keepaliveFlags
	allowGPUMetrics, allowCPUMetrics   bool
	metricsInterval                    time.Duration
	metricsConfig                      metricsConfig
	allowClientShm                     bool
	restrictedAPIs                     []restrictedAPI // --http-restricted-api
	restrictedProtocols                []restrictedAPI // --grpc-restricted-protocol

	rateLimit          string // off or execution_count
	rateLimitResources []string
	responseCacheBytes int64
	backendConfig      map[string]map[string]string // backend ("" for all) → key → value
	backendDirectory   string                       // --backend-directory: Python-based backends (<dir>/<name>/model.py) and the pytorch backend's shim

	logVerbose                    int
	logFormat                     string
	logInfo, logWarning, logError bool
	logFile                       string

	traceFlags traceFlags // the --trace-* flags as given
	trace      traceSetup // what they come to, once all flags are read

	// warnings are the flags given that have no effect here, each once,
	// with the reason: run logs them when the logger exists.
	warnings []flagWarning
}

// flagWarning is a flag that is accepted but has no effect here.
type flagWarning struct{ flag, reason string }

// tlsFiles are the gRPC TLS flags: PEM files, and whether to ask clients
// for certificates signed by the root.
type tlsFiles struct {
	use, mutual          bool
	cert, key, rootCerts string
}

// keepaliveFlags are the gRPC keepalive and HTTP/2 ping flags, in
// milliseconds, with Triton's defaults.
type keepaliveFlags struct {
	timeMS, timeoutMS                int
	permitWithoutCalls               bool
	maxPingsWithoutData              int
	minRecvPingIntervalWithoutDataMS int
	maxPingStrikes                   int
	maxConnectionAgeMS, ageGraceMS   int
}

// metricsConfig is --metrics-config.
type metricsConfig struct {
	counterLatencies   bool // counter_latencies, default true
	summaryLatencies   bool // summary_latencies
	histogramLatencies bool // histogram_latencies
	quantiles          map[float64]float64
	stageHistograms    bool // stage_histograms, ours, default true
}

// restrictedAPI is one --http-restricted-api or --grpc-restricted-protocol
// flag: <categories>:<key>=<value>.
type restrictedAPI struct {
	categories []string
	key, value string
}

// option is one flag of the table: its name, whether it takes a value,
// and what to do with the value.
type option struct {
	name       string
	takesValue bool
	set        func(v string) error
}

// defaultConfig is the configuration without flags: tritonserver's
// defaults.
func defaultConfig() config {
	return config{
		controlMode: "none", pollSecs: 15, strictReadiness: true, exitOnError: true, exitTimeout: 30 * time.Second, exitDrain: defaultExitDrain,
		modelLoadThreads: 4, grpcCompressionLevel: "none",
		allowHTTP: true, allowGRPC: true, allowMetrics: true, deadlineAware: true,
		httpPort: 8000, grpcPort: 8001, metricsPort: 8002,
		httpAddress: "0.0.0.0", grpcAddress: "0.0.0.0",
		grpcKeepalive: keepaliveFlags{timeMS: 7200000, timeoutMS: 20000, maxPingsWithoutData: 2,
			minRecvPingIntervalWithoutDataMS: 300000, maxPingStrikes: 2},
		allowGPUMetrics: true, allowCPUMetrics: true, metricsInterval: 2 * time.Second,
		metricsConfig: metricsConfig{counterLatencies: true, stageHistograms: true},
		rateLimit:     "off", backendConfig: map[string]map[string]string{},
		logFormat: "default", logInfo: true, logWarning: true, logError: true,
		traceFlags: newTraceFlags(),
	}
}

// defaultExitDrain is --exit-drain-secs's default: how long the server
// reports not ready after SIGTERM while it still serves, for the endpoints
// that route to it to be withdrawn (Kubernetes removes a terminating pod's
// endpoints in parallel with signalling it; load balancers and kube-proxy
// follow within seconds).
const defaultExitDrain = 5 * time.Second

// defaultBackendDirectory is tritonserver's --backend-directory default,
// where Python-based backends are looked for unless the flag says.
const defaultBackendDirectory = "/opt/tritonserver/backends"

// Reasons for the flags that are accepted and have no effect here.
const (
	noSageMaker = "the SageMaker endpoint is not served"
	noVertex    = "the Vertex AI endpoint is not served"
	noCUDAPools = "this server keeps no pinned or CUDA memory pools: tensors live in Go memory and backends manage device memory"
	noDevices   = "this server does not manage GPUs itself: the backends' runtimes do"
	noDirs      = "backends are compiled into this binary; only Python-based backends (<dir>/<name>/model.py) and the pytorch backend's shim (<dir>/pytorch/libtriton_pytorch.so) are looked for there"
	noThreads   = "requests are served on goroutines, as many as there are connections and calls; there is no thread pool to size"
	noPools     = "requests and responses are allocated per call and collected by Go's garbage collector; there is no pool to size"
)

// options is the table of tritonserver's flags, in the order of
// tritonserver's --help, each bound to c.
func (c *config) options() []option {
	unsupported := func(name, reason string) func(string) error {
		return func(string) error { c.warn(name, reason); return nil }
	}
	var cacheSize, cacheConfig bool // the two cache flags exclude each other
	return append([]option{
		{"help", false, func(string) error { return errHelp }},
		// Server
		{"id", true, str(&c.id)},
		{"exit-timeout-secs", true, func(v string) error {
			n, err := parseInt(v)
			c.exitTimeout = time.Duration(max(n, 0)) * time.Second
			return err
		}},
		{"exit-drain-secs", true, func(v string) error {
			n, err := parseInt(v)
			if err == nil && n < 0 {
				err = fmt.Errorf("must be 0 or more seconds, got %d", n)
			}
			c.exitDrain = time.Duration(n) * time.Second
			return err
		}},
		// Logging
		{"log-verbose", true, func(v string) error {
			switch strings.ToLower(v) {
			case "true":
				c.logVerbose = 1
			case "false":
				c.logVerbose = 0
			default:
				n, err := parseInt(v)
				c.logVerbose = n
				return err
			}
			return nil
		}},
		{"log-info", true, boolean(&c.logInfo)},
		{"log-warning", true, boolean(&c.logWarning)},
		{"log-error", true, boolean(&c.logError)},
		{"log-format", true, func(v string) error {
			if v != "default" && v != "ISO8601" {
				return errors.New("invalid argument for --log-format")
			}
			c.logFormat = v
			return nil
		}},
		{"log-file", true, str(&c.logFile)},
		// Model repository
		{"model-store", true, addTo(&c.repositories)},
		{"model-repository", true, addTo(&c.repositories)},
		{"exit-on-error", true, boolean(&c.exitOnError)},
		{"disable-auto-complete-config", false, func(string) error { c.disableAutoComplete = true; return nil }},
		{"strict-readiness", true, boolean(&c.strictReadiness)},
		{"model-control-mode", true, enum(&c.controlMode, "model-control-mode", "none", "poll", "explicit")},
		{"repository-poll-secs", true, integer(&c.pollSecs)},
		{"load-model", true, addTo(&c.loadModels)},
		{"model-config-name", true, func(v string) error {
			if v == "" {
				return errors.New("Error: empty argument for --model-config-name")
			}
			c.modelConfigName = v
			return nil
		}},
		{"model-load-thread-count", true, func(v string) error {
			n, err := parseInt(v)
			c.modelLoadThreads = max(n, 1)
			return err
		}},
		{"model-load-retry-count", true, func(v string) error {
			n, err := parseInt(v)
			c.modelLoadRetries = max(n, 0)
			return err
		}},
		{"model-memory-budget", true, func(v string) error {
			n, err := parseByteSize(v)
			if err != nil {
				return fmt.Errorf("invalid argument for --model-memory-budget: %q is not a size in bytes (4294967296, 4Gi, 512Mi, 2G)", v)
			}
			c.memoryBudget = n
			return nil
		}},
		{"model-load-on-demand", true, boolean(&c.loadOnDemand)},
		{"model-keep-alive", true, func(v string) error {
			d, err := triton.ParseKeepAlive(v)
			if err != nil {
				return fmt.Errorf("invalid argument for --model-keep-alive: %w", err)
			}
			c.keepAlive, c.keepAliveSet = d, true
			return nil
		}},
		{"deadline-aware-batching", true, boolean(&c.deadlineAware)},
		{"model-namespacing", true, warnIfTrue(c, "model-namespacing", "model names must be unique across the repositories; namespacing is not supported")},
		{"enable-peer-access", true, warnIfTrue(c, "enable-peer-access", noDevices)},
		// HTTP
		{"allow-http", true, boolean(&c.allowHTTP)},
		{"http-address", true, str(&c.httpAddress)},
		{"http-port", true, integer(&c.httpPort)},
		{"reuse-http-port", true, boolean(&c.reuseHTTPPort)},
		{"http-header-forward-pattern", true, pattern(&c.httpHeaderForward)},
		{"http-thread-count", true, typed(parseInt, unsupported("http-thread-count", noThreads))},
		{"http-max-input-size", true, func(v string) error {
			n, err := parseInt64(v)
			if err == nil && n <= 0 {
				return errors.New("Error: --http-max-input-size must be greater than 0.")
			}
			c.httpMaxInputSize = n
			return err
		}},
		{"http-restricted-api", true, restriction(&c.restrictedAPIs, "http-restricted-api", "api")},
		// GRPC
		{"allow-grpc", true, boolean(&c.allowGRPC)},
		{"grpc-address", true, str(&c.grpcAddress)},
		{"grpc-port", true, integer(&c.grpcPort)},
		{"reuse-grpc-port", true, boolean(&c.reuseGRPCPort)},
		{"grpc-header-forward-pattern", true, pattern(&c.grpcHeaderForward)},
		{"grpc-infer-thread-count", true, func(v string) error {
			n, err := parseInt(v)
			if err == nil && (n < 2 || n > 128) {
				return errors.New("invalid argument for --grpc_infer_thread_count. Must be in the range 2 to 128.")
			}
			c.warn("grpc-infer-thread-count", noThreads)
			return err
		}},
		{"grpc-infer-allocation-pool-size", true, typed(parseInt, unsupported("grpc-infer-allocation-pool-size", noPools))},
		{"grpc-max-response-pool-size", true, func(v string) error {
			n, err := parseInt(v)
			if err == nil && n <= 0 {
				return errors.New("Error: --grpc-max-response-pool-size must be greater than 0.")
			}
			c.warn("grpc-max-response-pool-size", noPools)
			return err
		}},
		{"grpc-use-ssl", true, boolean(&c.grpcTLS.use)},
		{"grpc-use-ssl-mutual", true, func(v string) error {
			c.grpcTLS.use = true // as in tritonserver, whatever the value
			return boolean(&c.grpcTLS.mutual)(v)
		}},
		{"grpc-server-cert", true, str(&c.grpcTLS.cert)},
		{"grpc-server-key", true, str(&c.grpcTLS.key)},
		{"grpc-root-cert", true, str(&c.grpcTLS.rootCerts)},
		{"grpc-infer-response-compression-level", true, func(v string) error {
			l := strings.ToLower(v)
			if !slices.Contains([]string{"none", "low", "medium", "high"}, l) {
				return errors.New("invalid argument for --grpc_infer_response_compression_level")
			}
			c.grpcCompressionLevel = l
			return nil
		}},
		{"grpc-keepalive-time", true, integer(&c.grpcKeepalive.timeMS)},
		{"grpc-keepalive-timeout", true, integer(&c.grpcKeepalive.timeoutMS)},
		{"grpc-keepalive-permit-without-calls", true, boolean(&c.grpcKeepalive.permitWithoutCalls)},
		{"grpc-http2-max-pings-without-data", true, integer(&c.grpcKeepalive.maxPingsWithoutData)},
		{"grpc-http2-min-recv-ping-interval-without-data", true, integer(&c.grpcKeepalive.minRecvPingIntervalWithoutDataMS)},
		{"grpc-http2-max-ping-strikes", true, integer(&c.grpcKeepalive.maxPingStrikes)},
		{"grpc-max-connection-age", true, integer(&c.grpcKeepalive.maxConnectionAgeMS)},
		{"grpc-max-connection-age-grace", true, integer(&c.grpcKeepalive.ageGraceMS)},
		{"grpc-restricted-protocol", true, restriction(&c.restrictedProtocols, "grpc-restricted-protocol", "protocol")},
		// SageMaker and Vertex AI
		{"allow-sagemaker", true, warnIfTrue(c, "allow-sagemaker", noSageMaker)},
		{"sagemaker-port", true, typed(parseInt, unsupported("sagemaker-port", noSageMaker))},
		{"sagemaker-safe-port-range", true, func(v string) error {
			if _, _, err := parsePair(v, "-", parseInt, parseInt); err != nil {
				return err
			}
			c.warn("sagemaker-safe-port-range", noSageMaker)
			return nil
		}},
		{"sagemaker-thread-count", true, typed(parseInt, unsupported("sagemaker-thread-count", noSageMaker))},
		{"allow-vertex-ai", true, warnIfTrue(c, "allow-vertex-ai", noVertex)},
		{"vertex-ai-port", true, typed(parseInt, unsupported("vertex-ai-port", noVertex))},
		{"vertex-ai-thread-count", true, typed(parseInt, unsupported("vertex-ai-thread-count", noVertex))},
		{"vertex-ai-default-model", true, unsupported("vertex-ai-default-model", noVertex)},
		// Metrics
		{"allow-metrics", true, boolean(&c.allowMetrics)},
		{"allow-gpu-metrics", true, boolean(&c.allowGPUMetrics)},
		{"allow-cpu-metrics", true, boolean(&c.allowCPUMetrics)},
		{"metrics-address", true, str(&c.metricsAddress)},
		{"metrics-port", true, integer(&c.metricsPort)},
		{"metrics-interval-ms", true, func(v string) error {
			n, err := parseInt(v)
			c.metricsInterval = time.Duration(max(n, 0)) * time.Millisecond
			return err
		}},
		{"metrics-config", true, c.metricsConfig.set},
		// Tracing
		{"trace-config", true, c.traceFlags.addLine},
		// Response cache
		{"cache-config", true, func(v string) error {
			cacheConfig = true
			if cacheSize {
				return errCacheFlags
			}
			return c.setCacheConfig(v)
		}},
		{"cache-directory", true, unsupported("cache-directory", "the local response cache is built in; there are no cache libraries to search for")},
		// Rate limiter
		{"rate-limit", true, enum(&c.rateLimit, "rate-limit", "execution_count", "off")},
		{"rate-limit-resource", true, func(v string) error {
			if err := checkRateLimitResource(v); err != nil {
				return err
			}
			c.rateLimitResources = append(c.rateLimitResources, v)
			return nil
		}},
		// Memory and devices
		{"pinned-memory-pool-byte-size", true, typed(parseInt64, unsupported("pinned-memory-pool-byte-size", noCUDAPools))},
		{"cuda-memory-pool-byte-size", true, pair(":", parseInt, parseUint64, unsupported("cuda-memory-pool-byte-size", noCUDAPools))},
		{"cuda-virtual-address-size", true, pair(":", parseInt, parseUint64, unsupported("cuda-virtual-address-size", noCUDAPools))},
		{"min-supported-compute-capability", true, typed(parseFloat, unsupported("min-supported-compute-capability", noDevices))},
		{"buffer-manager-thread-count", true, typed(parseInt, unsupported("buffer-manager-thread-count", noThreads))},
		{"host-policy", true, func(v string) error {
			if _, _, _, err := parseGeneric(v, ",", "=", "host-policy", "policy name"); err != nil {
				return err
			}
			c.warn("host-policy", "NUMA nodes and CPU cores are left to the Go scheduler and the backends' runtimes")
			return nil
		}},
		{"model-load-gpu-limit", true, pair(":", parseInt, parseFloat, unsupported("model-load-gpu-limit", noDevices))},
		{"allow-client-shm", true, boolean(&c.allowClientShm)},
		// Backends and repository agents
		{"backend-directory", true, func(v string) error {
			c.backendDirectory = v
			c.warn("backend-directory", noDirs)
			return nil
		}},
		{"backend-config", true, c.setBackendConfig},
		{"repoagent-directory", true, unsupported("repoagent-directory", "repository agent libraries are not loaded; Triton's checksum agent is built in")},
		// Deprecated in tritonserver, and still honoured there
		{"strict-model-config", true, boolean(&c.strictModelConfig)},
		{"response-cache-byte-size", true, func(v string) error {
			cacheSize = true
			if cacheConfig {
				return errCacheFlags
			}
			n, err := parseInt64(v)
			c.responseCacheBytes = n
			return err
		}},
	}, c.traceFlags.deprecated()...)
}

var (
	// errHelp is --help: parseFlags prints the flags and returns it.
	errHelp       = errors.New("flag: help requested")
	errCacheFlags = errors.New("Error: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.")
)

// parseFlags reads tritonserver's command line, as tritonserver's
// getopt_long parser does: every option tritonserver accepts, as
// --name=value or --name value, an unambiguous prefix of a name standing
// for it; booleans true, false, on, off, 1 or 0 in any case; enum values
// (--model-control-mode, --rate-limit, ...) in any case; errors worded as
// tritonserver words them.
//
// Each flag either works as in tritonserver, or is accepted with one
// warning that says why it has no effect here (in c.warnings, logged by
// run): the SageMaker and Vertex AI endpoints, CUDA and pinned memory
// pools and other device settings, thread and pool sizes, backend, cache
// and repository-agent directories, model namespacing. The README's
// "cmd/tritonserver's flags" section lists them. --help writes the flag
// names to usage and returns errHelp. usage is standard error: the
// --trace-* flags write tritonserver's warnings there too (deprecated
// flags, and --trace-config overriding them; see trace.go).
//
// A first argument "tritonserver" (or a path ending in /tritonserver) is
// the program's own name and is skipped: manifests written for Triton's
// image pass the command in args, as Triton's entry point script runs them
// (KServe's Triton runtime: args: [tritonserver, --model-store=...]), and
// this server's image has tritonserver itself as its entry point.
func parseFlags(args []string, usage io.Writer) (config, error) {
	if len(args) > 0 && (args[0] == "tritonserver" || strings.HasSuffix(args[0], "/tritonserver")) {
		args = args[1:]
	}
	c := defaultConfig()
	c.traceFlags.stderr = usage
	opts := c.options()
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			if i+1 < len(args) {
				return c, fmt.Errorf("Unexpected argument: %s", args[i+1])
			}
			break
		}
		if !strings.HasPrefix(arg, "--") {
			return c, fmt.Errorf("Unexpected argument: %s", arg)
		}
		name, value, hasValue := strings.Cut(arg[2:], "=")
		o, err := lookup(opts, name)
		if err != nil {
			return c, err
		}
		switch {
		case !o.takesValue && hasValue:
			return c, fmt.Errorf("option '--%s' doesn't allow an argument", o.name)
		case o.takesValue && !hasValue:
			if i+1 == len(args) {
				return c, fmt.Errorf("option '--%s' requires an argument", o.name)
			}
			i++
			value = args[i]
		}
		if err := o.set(value); err != nil {
			if err == errHelp {
				for _, o := range opts {
					fmt.Fprintf(usage, "  --%s\n", o.name)
				}
				return c, err
			}
			return c, fmt.Errorf("Bad option: \"--%s\".\n%w", o.name, err)
		}
	}
	var err error
	if c.trace, err = c.traceFlags.resolve(); err != nil {
		return c, err
	}
	return c, c.check()
}

// lookup finds the option called name, or the one name abbreviates.
func lookup(opts []option, name string) (option, error) {
	var found []option
	for _, o := range opts {
		if o.name == name {
			return o, nil
		}
		if name != "" && strings.HasPrefix(o.name, name) {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return option{}, fmt.Errorf("unrecognized option '--%s'", name)
	case 1:
		return found[0], nil
	}
	return option{}, fmt.Errorf("option '--%s' is ambiguous", name)
}

// localRepositories lists the --model-repository folders, without the
// object-storage URLs.
func (c *config) localRepositories() []string {
	var dirs []string
	for _, r := range c.repositories {
		if !cloudrepo.IsURL(r) {
			dirs = append(dirs, r)
		}
	}
	return dirs
}

// check validates what depends on several flags, once all are read.
func (c *config) check() error {
	if len(c.repositories) == 0 {
		return errors.New("--model-repository must be specified")
	}
	for _, r := range c.repositories {
		if scheme, _, ok := strings.Cut(r, "://"); ok && !cloudrepo.IsURL(r) {
			return fmt.Errorf("--model-repository %s: %s:// storage is not supported: give a local folder or an s3://, gs:// or as:// URL", r, scheme)
		}
	}
	if len(c.loadModels) > 0 && c.controlMode != "explicit" {
		return errors.New("Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well.")
	}
	if c.loadOnDemand && c.controlMode != "explicit" {
		return errors.New("Error: Use of '--model-load-on-demand' requires setting '--model-control-mode=explicit' as well.")
	}
	if c.pollSecs <= 0 && c.controlMode == "poll" {
		return errors.New("--repository-poll-secs must be positive in poll mode")
	}
	c.strictModelConfig = c.strictModelConfig || c.disableAutoComplete
	if c.metricsAddress == "" {
		c.metricsAddress = c.httpAddress
	}
	c.allowGPUMetrics = c.allowGPUMetrics && c.allowMetrics
	c.allowCPUMetrics = c.allowCPUMetrics && c.allowMetrics
	if t := c.grpcTLS; t.use && c.allowGRPC {
		if t.cert == "" || t.key == "" {
			return errors.New("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key")
		}
		if t.mutual && t.rootCerts == "" {
			return errors.New("--grpc-use-ssl-mutual needs --grpc-root-cert, the certificates that sign the clients'")
		}
	}
	k := c.grpcKeepalive
	if k.maxPingStrikes != 2 {
		c.warn("grpc-http2-max-ping-strikes", "grpc-go closes a connection after its third bad ping; the number is fixed")
	}
	if k.maxPingsWithoutData != 2 {
		c.warn("grpc-http2-max-pings-without-data", "grpc-go's server does not bound the keepalive pings it sends without data")
	}
	return c.checkPorts()
}

// checkPorts refuses two servers on one address and port, as tritonserver
// does; port 0 (any free port) never collides.
func (c *config) checkPorts() error {
	type endpoint struct {
		name, addr string
		port       int
	}
	var eps []endpoint
	if c.allowHTTP {
		eps = append(eps, endpoint{"HTTP", c.httpAddress, c.httpPort})
	}
	if c.allowGRPC {
		eps = append(eps, endpoint{"GRPC", c.grpcAddress, c.grpcPort})
	}
	if c.allowMetrics {
		eps = append(eps, endpoint{"metrics", c.metricsAddress, c.metricsPort})
	}
	for i, a := range eps {
		for _, b := range eps[i+1:] {
			if a.addr == b.addr && a.port == b.port && a.port != 0 {
				return fmt.Errorf("The server cannot listen to %s requests and %s requests at the same address and port %s:%d", a.name, b.name, a.addr, a.port)
			}
		}
	}
	return nil
}

// warn records that flag has no effect here, once per flag.
func (c *config) warn(flag, reason string) {
	if !slices.ContainsFunc(c.warnings, func(w flagWarning) bool { return w.flag == flag }) {
		c.warnings = append(c.warnings, flagWarning{flag, reason})
	}
}

// Handlers for the common kinds of value.

func str(p *string) func(string) error { return func(v string) error { *p = v; return nil } }

// addTo adds a value to a set (kept in the order given), as tritonserver
// keeps repositories and startup models.
func addTo(p *[]string) func(string) error {
	return func(v string) error {
		if !slices.Contains(*p, v) {
			*p = append(*p, v)
		}
		return nil
	}
}

func boolean(p *bool) func(string) error {
	return func(v string) (err error) { *p, err = parseBool(v); return err }
}

func integer(p *int) func(string) error {
	return func(v string) (err error) { *p, err = parseInt(v); return err }
}

// enum accepts one of values, in any case, stored in lower case.
func enum(p *string, flag string, values ...string) func(string) error {
	return func(v string) error {
		l := strings.ToLower(v)
		if !slices.Contains(values, l) {
			return fmt.Errorf("invalid argument for --%s", flag)
		}
		*p = l
		return nil
	}
}

// pattern reads a header-forwarding regular expression, matched against
// header names case-insensitively as tritonserver does.
func pattern(p **regexp.Regexp) func(string) error {
	return func(v string) error {
		re, err := regexp.Compile("(?i)" + v)
		if err != nil {
			return fmt.Errorf("invalid regular expression %q: %v", v, err)
		}
		*p = re
		return nil
	}
}

// typed checks the value with parse, then calls then.
func typed[T any](parse func(string) (T, error), then func(string) error) func(string) error {
	return func(v string) error {
		if _, err := parse(v); err != nil {
			return err
		}
		return then(v)
	}
}

// pair checks a <first><delim><second> value, then calls then.
func pair[A, B any](delim string, pa func(string) (A, error), pb func(string) (B, error), then func(string) error) func(string) error {
	return func(v string) error {
		if _, _, err := parsePair(v, delim, pa, pb); err != nil {
			return err
		}
		return then(v)
	}
}

// warnIfTrue reads a boolean flag whose true has no effect here.
func warnIfTrue(c *config, flag, reason string) func(string) error {
	return func(v string) error {
		b, err := parseBool(v)
		if b {
			c.warn(flag, reason)
		}
		return err
	}
}

// Value parsers, with tritonserver's messages.

// byteUnits are the suffixes parseByteSize reads, as Kubernetes writes
// memory quantities (Ki, Mi, ... binary; k, M, ... decimal) and as
// people do (KiB, MB, ...).
var byteUnits = map[string]int64{
	"": 1, "B": 1,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// parseByteSize reads a size in bytes: a whole number, or a number (a
// fraction allowed) with one of byteUnits; not negative, at most 2^63-1.
func parseByteSize(v string) (int64, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(v)
	}
	unit, ok := byteUnits[v[i:]]
	if !ok || i == 0 {
		return 0, fmt.Errorf("not a size: %q", v)
	}
	f, err := strconv.ParseFloat(v[:i], 64)
	if err != nil {
		return 0, err
	}
	n := f * float64(unit)
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("too large: %q", v)
	}
	return int64(n), nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "on", "1":
		return true, nil
	case "false", "off", "0":
		return false, nil
	}
	return false, errors.New("invalid value for bool option: " + v)
}

func parseInt(v string) (int, error) {
	n, err := parseNumber(v, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 32) })
	return int(n), err
}

func parseInt64(v string) (int64, error) {
	return parseNumber(v, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

func parseUint64(v string) (uint64, error) {
	return parseNumber(v, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) })
}

func parseFloat(v string) (float64, error) {
	f, err := parseNumber(v, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return 0, fmt.Errorf("Invalid option value. Got %s", v)
	}
	return f, err
}

func parseNumber[T any](v string, parse func(string) (T, error)) (T, error) {
	n, err := parse(strings.TrimSpace(v))
	if errors.Is(err, strconv.ErrRange) {
		return n, fmt.Errorf("Provided option value is out of bound. Got %s", v)
	}
	if err != nil {
		return n, fmt.Errorf("Invalid option value. Got %s", v)
	}
	return n, nil
}

// parsePair reads <first><delim><second>.
func parsePair[A, B any](v, delim string, pa func(string) (A, error), pb func(string) (B, error)) (A, B, error) {
	var (
		a A
		b B
	)
	first, second, ok := strings.Cut(v, delim)
	if !ok {
		return a, b, fmt.Errorf("Cannot parse pair option due to incorrect number of inputs.--<pair option> argument requires format <first>%s<second>. Found: %s", delim, v)
	}
	a, err := pa(first)
	if err != nil {
		return a, b, err
	}
	b, err = pb(second)
	return a, b, err
}

// parseGeneric reads <name><first><setting><second><value>, all three
// non-empty.
func parseGeneric(v, first, second, flag, what string) (name, setting, value string, err error) {
	name, rest, ok1 := strings.Cut(v, first)
	setting, value, ok2 := strings.Cut(rest, second)
	if !ok1 || !ok2 || name == "" || setting == "" || value == "" {
		return "", "", "", fmt.Errorf("--%s option format is '<%s>%s<setting>%s<value>'. Got %s", flag, what, first, second, v)
	}
	return name, setting, value, nil
}

// restriction reads --http-restricted-api or --grpc-restricted-protocol:
// <category>[,<category>...]:<key>=<value>, each category known and in
// one flag only.
func restriction(p *[]restrictedAPI, flag, kind string) func(string) error {
	return func(v string) error {
		cats, key, value, err := parseGeneric(v, ":", "=", flag, "config name")
		if err != nil {
			return err
		}
		r := restrictedAPI{key: key, value: value}
		for cat := range strings.SplitSeq(cats, ",") {
			if _, ok := wire.ParseCategory(cat); !ok {
				return fmt.Errorf("unknown restricted %s '%s'", kind, cat)
			}
			for _, other := range *p {
				if slices.Contains(other.categories, cat) {
					return fmt.Errorf("restricted %s '%s' can not be specified in multiple config groups", kind, cat)
				}
			}
			r.categories = append(r.categories, cat)
		}
		*p = append(*p, r)
		return nil
	}
}

// set reads one --metrics-config <setting>=<value>. tritonserver's keys
// are counter_latencies, summary_latencies, histogram_latencies and
// summary_quantiles; stage_histograms (tritongo_request_stage_seconds) is
// ours. Any other key is an error.
func (m *metricsConfig) set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || key == "" || value == "" || strings.Contains(key, ",") {
		return fmt.Errorf("--metrics-config option format is <setting>=<value>. Got %s", v)
	}
	var err error
	switch key {
	case "counter_latencies":
		m.counterLatencies, err = parseBool(value)
	case "summary_latencies":
		m.summaryLatencies, err = parseBool(value)
	case "histogram_latencies":
		m.histogramLatencies, err = parseBool(value)
	case "stage_histograms":
		m.stageHistograms, err = parseBool(value)
	case "summary_quantiles":
		m.quantiles, err = parseQuantiles(value)
	default:
		return fmt.Errorf("unknown --metrics-config setting %q: want counter_latencies, summary_latencies, histogram_latencies, summary_quantiles or stage_histograms", key)
	}
	if err != nil {
		return fmt.Errorf("--metrics-config %s: %w", v, err)
	}
	return nil
}

// parseQuantiles reads summary_quantiles="0.5:0.05,0.9:0.01".
func parseQuantiles(s string) (map[float64]float64, error) {
	out := map[float64]float64{}
	for kv := range strings.SplitSeq(s, ",") {
		q, e, ok := strings.Cut(kv, ":")
		qf, err1 := strconv.ParseFloat(q, 64)
		ef, err2 := strconv.ParseFloat(e, 64)
		if !ok || err1 != nil || err2 != nil || qf <= 0 || qf >= 1 || ef < 0 {
			return nil, fmt.Errorf("summary_quantiles=%s: want <quantile>:<error>,...", s)
		}
		out[qf] = ef
	}
	return out, nil
}

// setCacheConfig reads --cache-config <cache>,<setting>=<value>: the
// local cache's size is the response cache's size; other caches and
// settings are accepted with a warning.
func (c *config) setCacheConfig(v string) error {
	name, rest, ok := strings.Cut(v, ",")
	if !ok || name == "" {
		return fmt.Errorf("No cache specified. --cache-config option format is <cache name>,<setting>=<value>. Got %s", v)
	}
	setting, value, ok := strings.Cut(rest, "=")
	if !ok || setting == "" || value == "" {
		return fmt.Errorf("--cache-config option format is '<cache name>,<setting>=<value>'. Got %s", v)
	}
	if name != "local" || setting != "size" {
		c.warn("cache-config", fmt.Sprintf("%s,%s: only the local cache's size is supported", name, setting))
		return nil
	}
	n, err := parseInt64(value)
	c.responseCacheBytes = n
	return err
}

// setBackendConfig reads --backend-config [<backend>,]<setting>=<value>.
// Settings no backend here reads are accepted with a warning.
func (c *config) setBackendConfig(v string) error {
	name, kv := "", v
	if i := strings.Index(v, ","); i == 0 {
		return fmt.Errorf("No backend specified. --backend-config option format is <backend name>,<setting>=<value> or <setting>=<value>. Got %s", v)
	} else if eq := strings.Index(v, "="); i > 0 && (eq < 0 || i < eq) {
		name, kv = v[:i], v[i+1:]
	}
	key, value, ok := strings.Cut(kv, "=")
	if !ok || key == "" || value == "" {
		return fmt.Errorf("--backend-config option format is '<backend name>,<setting>=<value>'. Got %s", v)
	}
	if name != "python" && (key != "default-max-batch-size" || (name != "" && name != "onnxruntime")) {
		c.warn("backend-config", fmt.Sprintf("%s: only default-max-batch-size (for onnxruntime, or for every backend) and the python backend's settings are read here", v))
	}
	if c.backendConfig[name] == nil {
		c.backendConfig[name] = map[string]string{}
	}
	c.backendConfig[name][key] = value
	return nil
}

// checkRateLimitResource checks <name>:<count>[:<device>].
func checkRateLimitResource(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got %s", v)
	}
	for _, p := range parts[1:] {
		if _, err := parseInt(p); err != nil {
			return err
		}
	}
	return nil
}

// backendInt reads an integer --backend-config for a backend (or for all).
func (c *config) backendInt(backend, key string) (int, bool, error) {
	for _, b := range []string{backend, ""} {
		if v, ok := c.backendConfig[b][key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, false, fmt.Errorf("--backend-config %s=%s: not an integer", key, v)
			}
			return n, true, nil
		}
	}
	return 0, false, nil
}
