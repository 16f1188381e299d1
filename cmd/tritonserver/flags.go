package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// config is the command line, with tritonserver's flag names so that
// existing deployments keep their arguments.
type config struct {
	repositories      []string
	controlMode       string
	loadModels        []string
	pollSecs          int
	strictModelConfig bool
	strictReadiness   bool
	exitOnError       bool
	exitTimeout       time.Duration

	allowHTTP, allowGRPC, allowMetrics bool
	httpPort, grpcPort, metricsPort    int
	httpAddress, grpcAddress           string
	metricsAddress                     string
	allowGPUMetrics, allowCPUMetrics   bool
	metricsConfig                      map[string]string
	allowClientShm                     bool
	restrictedAPIs                     []restrictedAPI // --http-restricted-api
	restrictedProtocols                []restrictedAPI // --grpc-restricted-protocol

	rateLimit          string
	rateLimitResources []string
	responseCacheBytes int64
	backendConfig      map[string]map[string]string // backend ("" for all) → key → value

	logVerbose int
	logFormat  string
	logInfo    bool
}

// restrictedAPI is one --http-restricted-api or --grpc-restricted-protocol
// flag: <categories>:<key>=<value>.
type restrictedAPI struct {
	categories []string
	key, value string
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// parseFlags reads tritonserver's flags. Flags that tritonserver has and
// this server does not honour are accepted with a warning written to
// warn, so that deployments keep working.
func parseFlags(args []string, warn io.Writer) (config, error) {
	fs := flag.NewFlagSet("tritonserver", flag.ContinueOnError)
	fs.SetOutput(warn)
	var (
		c                                              config
		repos, loads, restricted, metricsCfg, backends list
		resources, restrictedGRPC                      list
		exitSecs                                       int
	)
	fs.Var(&repos, "model-repository", "model repository folder (repeatable)")
	fs.Var(&repos, "model-store", "alias of --model-repository")
	fs.StringVar(&c.controlMode, "model-control-mode", "none", "none, poll or explicit")
	fs.Var(&loads, "load-model", "model to load at start in explicit mode (repeatable; * for all)")
	fs.IntVar(&c.pollSecs, "repository-poll-secs", 15, "poll interval in poll mode, seconds")
	fs.BoolVar(&c.strictModelConfig, "strict-model-config", false, "require complete config.pbtxt files (no auto-complete)")
	fs.BoolVar(&c.strictReadiness, "strict-readiness", true, "ready only when every model is ready")
	fs.BoolVar(&c.exitOnError, "exit-on-error", true, "exit when a model fails to load at start")
	fs.IntVar(&exitSecs, "exit-timeout-secs", 30, "how long shutdown waits for in-flight requests, seconds")
	fs.BoolVar(&c.allowHTTP, "allow-http", true, "serve the HTTP/REST protocol")
	fs.BoolVar(&c.allowGRPC, "allow-grpc", true, "serve the gRPC protocol")
	fs.BoolVar(&c.allowMetrics, "allow-metrics", true, "serve Prometheus metrics")
	fs.IntVar(&c.httpPort, "http-port", 8000, "HTTP port")
	fs.IntVar(&c.grpcPort, "grpc-port", 8001, "gRPC port")
	fs.IntVar(&c.metricsPort, "metrics-port", 8002, "metrics port")
	fs.StringVar(&c.httpAddress, "http-address", "0.0.0.0", "HTTP address")
	fs.StringVar(&c.grpcAddress, "grpc-address", "0.0.0.0", "gRPC address")
	fs.StringVar(&c.metricsAddress, "metrics-address", "0.0.0.0", "metrics address")
	fs.BoolVar(&c.allowGPUMetrics, "allow-gpu-metrics", true, "GPU metrics (where a driver exists)")
	fs.BoolVar(&c.allowCPUMetrics, "allow-cpu-metrics", true, "CPU metrics")
	fs.Var(&metricsCfg, "metrics-config", "<key>=<value>: counter_latencies, summary_latencies, histogram_latencies, summary_quantiles (repeatable)")
	fs.BoolVar(&c.allowClientShm, "allow-client-shm", false, "allow system shared-memory registration")
	fs.Var(&restricted, "http-restricted-api", "<category>[,<category>...]:<key>=<value> (repeatable)")
	fs.Var(&restrictedGRPC, "grpc-restricted-protocol", "<category>[,<category>...]:<key>=<value> (repeatable)")
	fs.StringVar(&c.rateLimit, "rate-limit", "off", "off or execution_count")
	fs.Var(&resources, "rate-limit-resource", "<name>:<count>[:<device>] (repeatable)")
	fs.Int64Var(&c.responseCacheBytes, "response-cache-byte-size", 0, "response cache size in bytes")
	fs.Var(&backends, "backend-config", "[<backend>,]<key>=<value> (repeatable), e.g. onnxruntime,default-max-batch-size=8")
	fs.IntVar(&c.logVerbose, "log-verbose", 0, "verbose logging level (0 off)")
	fs.StringVar(&c.logFormat, "log-format", "default", "default or ISO8601")
	fs.BoolVar(&c.logInfo, "log-info", true, "log informational messages")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.repositories, c.loadModels, c.rateLimitResources = repos, loads, resources
	c.exitTimeout = time.Duration(exitSecs) * time.Second
	if len(c.repositories) == 0 {
		return c, errors.New("--model-repository is required")
	}
	switch c.controlMode {
	case "none", "poll", "explicit":
	default:
		return c, fmt.Errorf("--model-control-mode must be none, poll or explicit, got %q", c.controlMode)
	}
	if len(c.loadModels) > 0 && c.controlMode != "explicit" {
		return c, errors.New("--load-model needs --model-control-mode=explicit")
	}
	if c.pollSecs <= 0 && c.controlMode == "poll" {
		return c, errors.New("--repository-poll-secs must be positive in poll mode")
	}
	switch c.rateLimit {
	case "off", "execution_count":
	default:
		return c, fmt.Errorf("--rate-limit must be off or execution_count, got %q", c.rateLimit)
	}
	if c.logFormat != "default" && c.logFormat != "ISO8601" {
		return c, fmt.Errorf("--log-format must be default or ISO8601, got %q", c.logFormat)
	}
	c.metricsConfig = map[string]string{}
	for _, kv := range metricsCfg {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("--metrics-config %q: want <key>=<value>", kv)
		}
		c.metricsConfig[k] = v
	}
	c.backendConfig = map[string]map[string]string{}
	for _, bc := range backends {
		name, kv := "", bc
		if b, rest, ok := strings.Cut(bc, ","); ok {
			name, kv = b, rest
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("--backend-config %q: want [<backend>,]<key>=<value>", bc)
		}
		if c.backendConfig[name] == nil {
			c.backendConfig[name] = map[string]string{}
		}
		c.backendConfig[name][k] = v
	}
	var err error
	if c.restrictedAPIs, err = parseRestrictions("http-restricted-api", restricted); err != nil {
		return c, err
	}
	if c.restrictedProtocols, err = parseRestrictions("grpc-restricted-protocol", restrictedGRPC); err != nil {
		return c, err
	}
	return c, nil
}

// parseRestrictions reads the values of a restriction flag.
func parseRestrictions(flag string, values []string) ([]restrictedAPI, error) {
	var out []restrictedAPI
	for _, r := range values {
		cats, kv, ok := strings.Cut(r, ":")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || cats == "" || k == "" {
			return nil, fmt.Errorf("--%s %q: want <category>[,<category>...]:<key>=<value>", flag, r)
		}
		out = append(out, restrictedAPI{categories: strings.Split(cats, ","), key: k, value: v})
	}
	return out, nil
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
