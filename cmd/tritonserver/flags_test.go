package main

import (
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/keepalive"
)

// tritonFlag is one option of tritonserver's command line parser
// (src/command_line_parser.cc), with a valid value ("" for the two that
// take none) and whether this server warns that it has no effect here.
type tritonFlag struct {
	name, value string
	warns       bool
}

// tritonFlags is every option tritonserver's parser accepts, in the order
// of its --help, so that none is forgotten.
var tritonFlags = []tritonFlag{
	{"help", "", false},
	// Server
	{"id", "my-triton", false},
	{"exit-timeout-secs", "5", false},
	// Logging
	{"log-verbose", "1", false},
	{"log-info", "true", false},
	{"log-warning", "true", false},
	{"log-error", "true", false},
	{"log-format", "ISO8601", false},
	{"log-file", "/tmp/triton.log", false},
	// Model repository
	{"model-store", "/models", false},
	{"model-repository", "/models", false},
	{"exit-on-error", "false", false},
	{"disable-auto-complete-config", "", false},
	{"strict-readiness", "false", false},
	{"model-control-mode", "explicit", false},
	{"repository-poll-secs", "5", false},
	{"load-model", "m", false},
	{"model-config-name", "h100", false},
	{"model-load-thread-count", "8", false},
	{"model-load-retry-count", "2", false},
	{"model-namespacing", "true", true},
	{"enable-peer-access", "true", true},
	// HTTP
	{"allow-http", "true", false},
	{"http-address", "127.0.0.1", false},
	{"http-port", "9000", false},
	{"reuse-http-port", "true", false},
	{"http-header-forward-pattern", "x-.*", false},
	{"http-thread-count", "16", true},
	{"http-max-input-size", "1048576", false},
	{"http-restricted-api", "model-repository:admin-key=secret", false},
	// GRPC
	{"allow-grpc", "true", false},
	{"grpc-address", "127.0.0.1", false},
	{"grpc-port", "9001", false},
	{"reuse-grpc-port", "true", false},
	{"grpc-header-forward-pattern", "x-.*", false},
	{"grpc-infer-thread-count", "4", true},
	{"grpc-infer-allocation-pool-size", "16", true},
	{"grpc-max-response-pool-size", "16", true},
	{"grpc-use-ssl", "false", false},
	{"grpc-use-ssl-mutual", "false", false},
	{"grpc-server-cert", "/certs/server.crt", false},
	{"grpc-server-key", "/certs/server.key", false},
	{"grpc-root-cert", "/certs/ca.crt", false},
	{"grpc-infer-response-compression-level", "high", false},
	{"grpc-keepalive-time", "10000", false},
	{"grpc-keepalive-timeout", "5000", false},
	{"grpc-keepalive-permit-without-calls", "true", false},
	{"grpc-http2-max-pings-without-data", "0", true},
	{"grpc-http2-min-recv-ping-interval-without-data", "10000", false},
	{"grpc-http2-max-ping-strikes", "0", true},
	{"grpc-max-connection-age", "60000", false},
	{"grpc-max-connection-age-grace", "5000", false},
	{"grpc-restricted-protocol", "model-repository:admin-key=secret", false},
	// SageMaker and Vertex AI
	{"allow-sagemaker", "true", true},
	{"sagemaker-port", "8080", true},
	{"sagemaker-safe-port-range", "8000-8002", true},
	{"sagemaker-thread-count", "8", true},
	{"allow-vertex-ai", "true", true},
	{"vertex-ai-port", "8080", true},
	{"vertex-ai-thread-count", "8", true},
	{"vertex-ai-default-model", "m", true},
	// Metrics
	{"allow-metrics", "true", false},
	{"allow-gpu-metrics", "false", false},
	{"allow-cpu-metrics", "true", false},
	{"metrics-address", "127.0.0.1", false},
	{"metrics-port", "9002", false},
	{"metrics-interval-ms", "500", false},
	{"metrics-config", "summary_latencies=true", false},
	// Tracing
	{"trace-config", "triton,file=/tmp/trace.json", false},
	// Response cache
	{"cache-config", "local,size=1048576", false},
	{"cache-directory", "/opt/tritonserver/caches", true},
	// Rate limiter
	{"rate-limit", "execution_count", false},
	{"rate-limit-resource", "R1:4:0", false},
	// Memory and devices
	{"pinned-memory-pool-byte-size", "268435456", true},
	{"cuda-memory-pool-byte-size", "0:67108864", true},
	{"cuda-virtual-address-size", "0:1073741824", true},
	{"min-supported-compute-capability", "6.0", true},
	{"buffer-manager-thread-count", "2", true},
	{"host-policy", "gpu0,numa-node=0", true},
	{"model-load-gpu-limit", "0:0.8", true},
	{"allow-client-shm", "true", false},
	// Backends and repository agents
	{"backend-directory", "/opt/tritonserver/backends", true},
	{"backend-config", "onnxruntime,default-max-batch-size=8", false},
	{"repoagent-directory", "/opt/tritonserver/repoagents", true},
	// Deprecated in tritonserver
	{"strict-model-config", "false", false},
	{"response-cache-byte-size", "1048576", false},
	{"trace-file", "/tmp/trace.json", false},
	{"trace-level", "TIMESTAMPS", false},
	{"trace-rate", "1000", false},
	{"trace-count", "-1", false},
	{"trace-log-frequency", "0", false},
}

// ownFlags are the options this server has beyond tritonserver's. None is
// a prefix of one of tritonserver's, so every abbreviation that
// tritonserver takes means the same here.
var ownFlags = []tritonFlag{
	{"exit-drain-secs", "10", false},
	{"model-memory-budget", "4Gi", false},
	{"model-load-on-demand", "true", false},
	{"model-keep-alive", "5m", false},
	{"deadline-aware-batching", "true", false},
}

// TestEveryTritonFlag checks that the parser has exactly tritonserver's
// options and ownFlags, and that each is accepted with a valid value,
// warning exactly when it has no effect here.
func TestEveryTritonFlag(t *testing.T) {
	c := defaultConfig()
	var ours []string
	for _, o := range c.options() {
		ours = append(ours, o.name)
	}
	var theirs []string
	for _, f := range tritonFlags {
		theirs = append(theirs, f.name)
	}
	if len(theirs) != 91 {
		t.Errorf("%d options, want tritonserver's 91", len(theirs))
	}
	want := slices.Clone(theirs)
	for _, f := range ownFlags {
		want = append(want, f.name)
		for _, name := range theirs {
			if strings.HasPrefix(name, f.name) {
				t.Errorf("--%s is a prefix of tritonserver's --%s", f.name, name)
			}
		}
	}
	slices.Sort(ours)
	slices.Sort(want)
	if !slices.Equal(ours, want) {
		t.Errorf("the parser's options are not tritonserver's and ownFlags:\n ours %v\n want %v", ours, want)
	}
	for _, f := range slices.Concat(tritonFlags, ownFlags) {
		if f.name == "help" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			args := []string{"--model-repository=/m", "--model-control-mode=explicit", "--grpc-server-cert=c", "--grpc-server-key=k", "--grpc-root-cert=r"}
			arg := "--" + f.name
			if f.value != "" {
				arg += "=" + f.value
			}
			args = append(args, arg)
			if !strings.HasSuffix(f.name, "-restricted-api") && !strings.HasSuffix(f.name, "-restricted-protocol") {
				args = append(args, arg) // a repeated flag still warns once
			}
			c, err := parseFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var warned []string
			for _, w := range c.warnings {
				warned = append(warned, w.flag)
				if w.reason == "" {
					t.Errorf("warning for --%s gives no reason", w.flag)
				}
			}
			if want := []string(nil); f.warns {
				want = []string{f.name}
				if !slices.Equal(warned, want) {
					t.Errorf("warnings %v, want exactly one for --%s", warned, f.name)
				}
			} else if len(warned) > 0 {
				t.Errorf("--%s=%s is implemented, yet warns %v", f.name, f.value, c.warnings)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{
		"--model-repository=/a", "--model-store", "/b", "--model-control-mode=EXPLICIT", "--load-model=m1", "--load-model", "m2",
		"--exit-timeout-secs", "5", "--http-port=9000", "--allow-grpc", "OFF", "--metrics-config=summary_latencies=true",
		"--http-restricted-api=model-repository,statistics:admin-key=secret", "--backend-config=onnxruntime,default-max-batch-size=8",
		"--backend-config=default-max-batch-size=2", "--rate-limit=Execution_Count", "--rate-limit-resource=R1:4:0", "--log-format=ISO8601",
		"--strict-model-config", "1", "--id", "edge-7", "--http-max-input-size=1024", "--grpc-infer-response-compression-level=HIGH",
		"--http-header-forward-pattern", "x-tenant-.*", "--grpc-header-forward-pattern=^x-",
		"--model-load-thread-count=0", "--model-load-retry-count", "3", "--model-config-name=h100", "--metrics-interval-ms=250",
		"--log-info=false", "--log-warning", "On", "--log-verbose=true", "--log-file=/var/log/triton.log",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.repositories, ",") != "/a,/b" || c.controlMode != "explicit" || strings.Join(c.loadModels, ",") != "m1,m2" ||
		c.exitTimeout != 5*time.Second || c.httpPort != 9000 || c.allowGRPC || !c.allowHTTP || c.metricsPort != 8002 ||
		!c.metricsConfig.summaryLatencies || c.rateLimit != "execution_count" || c.logFormat != "ISO8601" || !c.strictModelConfig ||
		c.id != "edge-7" || c.httpMaxInputSize != 1024 || c.grpcCompressionLevel != "high" || c.metricsInterval != 250*time.Millisecond ||
		c.logInfo || !c.logWarning || c.logVerbose != 1 || c.logFile != "/var/log/triton.log" {
		t.Errorf("parsed %+v", c)
	}
	if c.modelLoadThreads != 1 || c.modelLoadRetries != 3 || c.modelConfigName != "h100" {
		t.Errorf("model loading: %d threads, %d retries, config %q", c.modelLoadThreads, c.modelLoadRetries, c.modelConfigName)
	}
	// Header names match case-insensitively, as in tritonserver.
	if c.httpHeaderForward == nil || !c.httpHeaderForward.MatchString("X-Tenant-Id") || c.httpHeaderForward.MatchString("authorization") {
		t.Errorf("http forward pattern %v", c.httpHeaderForward)
	}
	if c.grpcHeaderForward == nil || !c.grpcHeaderForward.MatchString("X-Request") {
		t.Errorf("grpc forward pattern %v", c.grpcHeaderForward)
	}
	if len(c.restrictedAPIs) != 1 || strings.Join(c.restrictedAPIs[0].categories, ",") != "model-repository,statistics" ||
		c.restrictedAPIs[0].key != "admin-key" || c.restrictedAPIs[0].value != "secret" {
		t.Errorf("restricted APIs %+v", c.restrictedAPIs)
	}
	if n, ok, err := c.backendInt("onnxruntime", "default-max-batch-size"); n != 8 || !ok || err != nil {
		t.Errorf("onnxruntime default-max-batch-size %d %v %v", n, ok, err)
	}
	if n, ok, _ := c.backendInt("other", "default-max-batch-size"); n != 2 || !ok {
		t.Errorf("global backend config %d %v", n, ok)
	}

	defaults, err := parseFlags([]string{"--model-repository=/m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if defaults.httpPort != 8000 || defaults.grpcPort != 8001 || defaults.metricsPort != 8002 || !defaults.exitOnError ||
		!defaults.strictReadiness || defaults.strictModelConfig || defaults.exitTimeout != 30*time.Second || defaults.exitDrain != 5*time.Second || defaults.controlMode != "none" ||
		defaults.metricsAddress != "0.0.0.0" || defaults.modelLoadThreads != 4 || defaults.grpcCompressionLevel != "none" ||
		!defaults.metricsConfig.counterLatencies || !defaults.metricsConfig.stageHistograms || defaults.metricsInterval != 2*time.Second ||
		!defaults.logInfo || !defaults.logWarning || !defaults.logError || len(defaults.warnings) != 0 {
		t.Errorf("defaults %+v", defaults)
	}
}

func TestFlagSyntax(t *testing.T) {
	for name, tc := range map[string]struct {
		args  []string
		check func(config) bool
	}{
		"bool after a space":        {[]string{"--strict-model-config", "false"}, func(c config) bool { return !c.strictModelConfig }},
		"bool ON":                   {[]string{"--strict-model-config=ON"}, func(c config) bool { return c.strictModelConfig }},
		"bool 0":                    {[]string{"--allow-http=0"}, func(c config) bool { return !c.allowHTTP }},
		"bool TRUE":                 {[]string{"--allow-client-shm", "TRUE"}, func(c config) bool { return c.allowClientShm }},
		"enum in capitals":          {[]string{"--model-control-mode=POLL"}, func(c config) bool { return c.controlMode == "poll" }},
		"value that looks a flag":   {[]string{"--id", "--x"}, func(c config) bool { return c.id == "--x" }},
		"value with =":              {[]string{"--id=a=b"}, func(c config) bool { return c.id == "a=b" }},
		"empty value":               {[]string{"--id="}, func(c config) bool { return c.id == "" }},
		"unambiguous prefix":        {[]string{"--exit-timeout=7"}, func(c config) bool { return c.exitTimeout == 7*time.Second }},
		"no value":                  {[]string{"--disable-auto-complete-config"}, func(c config) bool { return c.strictModelConfig }},
		"disable overrides strict":  {[]string{"--disable-auto-complete-config", "--strict-model-config=false"}, func(c config) bool { return c.strictModelConfig }},
		"last one wins":             {[]string{"--http-port=1", "--http-port", "2"}, func(c config) bool { return c.httpPort == 2 }},
		"metrics on the http addr":  {[]string{"--http-address=10.0.0.1"}, func(c config) bool { return c.metricsAddress == "10.0.0.1" }},
		"mutual implies ssl":        {[]string{"--grpc-use-ssl-mutual=true", "--grpc-server-cert=c", "--grpc-server-key=k", "--grpc-root-cert=r"}, func(c config) bool { return c.grpcTLS.use && c.grpcTLS.mutual }},
		"cache-config is the cache": {[]string{"--cache-config", "local,size=4096"}, func(c config) bool { return c.responseCacheBytes == 4096 }},
		"quantiles": {[]string{"--metrics-config", "summary_quantiles=0.5:0.05,0.99:0.001"}, func(c config) bool {
			return maps.Equal(c.metricsConfig.quantiles, map[float64]float64{0.5: 0.05, 0.99: 0.001})
		}},
		"counters off":             {[]string{"--metrics-config=counter_latencies=false"}, func(c config) bool { return !c.metricsConfig.counterLatencies }},
		"stage histograms off":     {[]string{"--metrics-config=stage_histograms=false"}, func(c config) bool { return !c.metricsConfig.stageHistograms }},
		"gpu metrics need metrics": {[]string{"--allow-metrics=false"}, func(c config) bool { return !c.allowGPUMetrics && !c.allowCPUMetrics }},
		"same port, one disabled":  {[]string{"--grpc-port=8000", "--allow-grpc=false"}, func(c config) bool { return !c.allowGRPC }},
		"ports 0 never collide":    {[]string{"--http-port=0", "--grpc-port=0", "--metrics-port=0"}, func(c config) bool { return c.httpPort == 0 }},
		"sagemaker off is no news": {[]string{"--allow-sagemaker=false"}, func(c config) bool { return len(c.warnings) == 0 }},
		"budget in Gi":             {[]string{"--model-memory-budget=4Gi"}, func(c config) bool { return c.memoryBudget == 4<<30 }},
		"budget in bytes":          {[]string{"--model-memory-budget", "1500000"}, func(c config) bool { return c.memoryBudget == 1_500_000 }},
		"budget in GB":             {[]string{"--model-memory-budget=1.5GB"}, func(c config) bool { return c.memoryBudget == 1_500_000_000 }},
		"budget in MiB":            {[]string{"--model-memory-budget=512MiB"}, func(c config) bool { return c.memoryBudget == 512<<20 }},
		"keep-alive in seconds":    {[]string{"--model-keep-alive=30"}, func(c config) bool { return c.keepAlive == 30*time.Second && c.keepAliveSet }},
		"keep-alive never":         {[]string{"--model-keep-alive=-1"}, func(c config) bool { return c.keepAlive < 0 && c.keepAliveSet }},
		"on demand":                {[]string{"--model-control-mode=explicit", "--model-load-on-demand=true"}, func(c config) bool { return c.loadOnDemand }},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := parseFlags(append([]string{"--model-repository=/m"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("%v parsed as %+v", tc.args, c)
			}
		})
	}
}

// TestProgramNameFirst: args that start with the program's own name, as
// manifests for Triton's image pass them (KServe's Triton runtime), parse
// as the flags after it; anywhere else the name is a stray argument.
func TestProgramNameFirst(t *testing.T) {
	kserve := []string{"tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080", "--allow-grpc=true", "--allow-http=true"}
	for _, args := range [][]string{kserve, append([]string{"/opt/tritonserver/bin/tritonserver"}, kserve[1:]...)} {
		c, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if len(c.repositories) != 1 || c.repositories[0] != "/mnt/models" || c.httpPort != 8080 || c.grpcPort != 9000 {
			t.Errorf("%v parsed as %+v", args, c)
		}
	}
	_, err := parseFlags([]string{"--model-store=/m", "tritonserver"}, io.Discard)
	if err == nil || err.Error() != "Unexpected argument: tritonserver" {
		t.Errorf("the name after a flag: %v, want tritonserver's Unexpected argument", err)
	}
}

func TestFlagErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string // the error, exactly
	}{
		"no repository":          {[]string{}, "--model-repository must be specified"},
		"bad mode":               {[]string{"--model-control-mode=sometimes"}, "Bad option: \"--model-control-mode\".\ninvalid argument for --model-control-mode"},
		"bad bool":               {[]string{"--strict-model-config", "maybe"}, "Bad option: \"--strict-model-config\".\ninvalid value for bool option: maybe"},
		"bad int":                {[]string{"--http-port=80x"}, "Bad option: \"--http-port\".\nInvalid option value. Got 80x"},
		"negative drain":         {[]string{"--exit-drain-secs=-1"}, "Bad option: \"--exit-drain-secs\".\nmust be 0 or more seconds, got -1"},
		"int out of range":       {[]string{"--grpc-port=99999999999"}, "Bad option: \"--grpc-port\".\nProvided option value is out of bound. Got 99999999999"},
		"load without explicit":  {[]string{"--load-model=x"}, "Error: Use of '--load-model' requires setting '--model-control-mode=explicit' as well."},
		"bad budget":             {[]string{"--model-memory-budget=lots"}, "Bad option: \"--model-memory-budget\".\ninvalid argument for --model-memory-budget: \"lots\" is not a size in bytes (4294967296, 4Gi, 512Mi, 2G)"},
		"negative budget":        {[]string{"--model-memory-budget=-1Gi"}, "Bad option: \"--model-memory-budget\".\ninvalid argument for --model-memory-budget: \"-1Gi\" is not a size in bytes (4294967296, 4Gi, 512Mi, 2G)"},
		"bad keep-alive":         {[]string{"--model-keep-alive=soon"}, "Bad option: \"--model-keep-alive\".\ninvalid argument for --model-keep-alive: \"soon\" is neither a duration (\"5m\", \"30s\") nor a number of seconds"},
		"on demand not explicit": {[]string{"--model-load-on-demand=true"}, "Error: Use of '--model-load-on-demand' requires setting '--model-control-mode=explicit' as well."},
		"bad rate limit":         {[]string{"--rate-limit=always"}, "Bad option: \"--rate-limit\".\ninvalid argument for --rate-limit"},
		"bad resource":           {[]string{"--rate-limit-resource=R1"}, "Bad option: \"--rate-limit-resource\".\n--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got R1"},
		"bad metrics config":     {[]string{"--metrics-config=summary_latencies"}, "Bad option: \"--metrics-config\".\n--metrics-config option format is <setting>=<value>. Got summary_latencies"},
		"unknown metrics key":    {[]string{"--metrics-config=summary_latency=true"}, "Bad option: \"--metrics-config\".\nunknown --metrics-config setting \"summary_latency\": want counter_latencies, summary_latencies, histogram_latencies, summary_quantiles or stage_histograms"},
		"bad metrics value":      {[]string{"--metrics-config=histogram_latencies=yes"}, "Bad option: \"--metrics-config\".\n--metrics-config histogram_latencies=yes: invalid value for bool option: yes"},
		"bad quantiles":          {[]string{"--metrics-config=summary_quantiles=1.5:0.1"}, "Bad option: \"--metrics-config\".\n--metrics-config summary_quantiles=1.5:0.1: summary_quantiles=1.5:0.1: want <quantile>:<error>,..."},
		"bad backend config":     {[]string{"--backend-config=onnxruntime"}, "Bad option: \"--backend-config\".\n--backend-config option format is '<backend name>,<setting>=<value>'. Got onnxruntime"},
		"no backend":             {[]string{"--backend-config=,a=b"}, "Bad option: \"--backend-config\".\nNo backend specified. --backend-config option format is <backend name>,<setting>=<value> or <setting>=<value>. Got ,a=b"},
		"bad restricted api":     {[]string{"--http-restricted-api=admin"}, "Bad option: \"--http-restricted-api\".\n--http-restricted-api option format is '<config name>:<setting>=<value>'. Got admin"},
		"unknown category":       {[]string{"--http-restricted-api=models:k=v"}, "Bad option: \"--http-restricted-api\".\nunknown restricted api 'models'"},
		"category twice":         {[]string{"--grpc-restricted-protocol=health:k=v", "--grpc-restricted-protocol=health,trace:a=b"}, "Bad option: \"--grpc-restricted-protocol\".\nrestricted protocol 'health' can not be specified in multiple config groups"},
		"bad log format":         {[]string{"--log-format=json"}, "Bad option: \"--log-format\".\ninvalid argument for --log-format"},
		"log format case":        {[]string{"--log-format=iso8601"}, "Bad option: \"--log-format\".\ninvalid argument for --log-format"},
		"unknown flag":           {[]string{"--no-such-flag"}, "unrecognized option '--no-such-flag'"},
		"ambiguous prefix":       {[]string{"--grpc-keepalive=1"}, "option '--grpc-keepalive' is ambiguous"},
		"missing value":          {[]string{"--http-port"}, "option '--http-port' requires an argument"},
		"value not allowed":      {[]string{"--disable-auto-complete-config=true"}, "option '--disable-auto-complete-config' doesn't allow an argument"},
		"stray argument":         {[]string{"extra"}, "Unexpected argument: extra"},
		"single dash":            {[]string{"-http-port=1"}, "Unexpected argument: -http-port=1"},
		"poll without interval":  {[]string{"--model-control-mode=poll", "--repository-poll-secs=0"}, "--repository-poll-secs must be positive in poll mode"},
		"max input size 0":       {[]string{"--http-max-input-size=0"}, "Bad option: \"--http-max-input-size\".\nError: --http-max-input-size must be greater than 0."},
		"empty config name":      {[]string{"--model-config-name="}, "Bad option: \"--model-config-name\".\nError: empty argument for --model-config-name"},
		"bad compression":        {[]string{"--grpc-infer-response-compression-level=max"}, "Bad option: \"--grpc-infer-response-compression-level\".\ninvalid argument for --grpc_infer_response_compression_level"},
		"bad forward pattern":    {[]string{"--grpc-header-forward-pattern=("}, "Bad option: \"--grpc-header-forward-pattern\".\ninvalid regular expression \"(\": error parsing regexp: missing closing ): `(?i)(`"},
		"thread count range":     {[]string{"--grpc-infer-thread-count=1"}, "Bad option: \"--grpc-infer-thread-count\".\ninvalid argument for --grpc_infer_thread_count. Must be in the range 2 to 128."},
		"bad pair":               {[]string{"--cuda-memory-pool-byte-size=67108864"}, "Bad option: \"--cuda-memory-pool-byte-size\".\nCannot parse pair option due to incorrect number of inputs.--<pair option> argument requires format <first>:<second>. Found: 67108864"},
		"bad trace level":        {[]string{"--trace-level=ALL"}, "Bad option: \"--trace-level\".\ninvalid value for trace level option: all"},
		"bad trace mode":         {[]string{"--trace-config=zipkin,rate=1"}, "Bad option: \"--trace-config\".\ninvalid value for trace mode option: zipkin. Available options are \"triton\" and \"opentelemetry\""},
		"two cache flags":        {[]string{"--response-cache-byte-size=10", "--cache-config=local,size=10"}, "Bad option: \"--cache-config\".\nError: Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other."},
		"same port":              {[]string{"--grpc-port=8000"}, "The server cannot listen to HTTP requests and GRPC requests at the same address and port 0.0.0.0:8000"},
		"ssl without files":      {[]string{"--grpc-use-ssl=true"}, "--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key"},
		"mutual without root":    {[]string{"--grpc-use-ssl-mutual=1", "--grpc-server-cert=c", "--grpc-server-key=k"}, "--grpc-use-ssl-mutual needs --grpc-root-cert, the certificates that sign the clients'"},
	} {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if name != "no repository" {
				args = append([]string{"--model-repository=/m"}, args...)
			}
			_, err := parseFlags(args, io.Discard)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestCloudRepository: s3://, gs:// and as:// repositories are read
// (package cloudrepo; served by TestObjectStorageRepository), beside local
// folders; another scheme is refused, naming it.
func TestCloudRepository(t *testing.T) {
	urls := []string{"s3://bucket/models", "gs://bucket/models", "as://account/container/models", "s3://https://minio:9000/b/m"}
	c, err := parseFlags(append([]string{"--model-repository=/local"}, prefixed("--model-repository=", urls)...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.localRepositories(); !slices.Equal(got, []string{"/local"}) {
		t.Errorf("local repositories %q", got)
	}
	_, err = parseFlags([]string{"--model-repository=http://host/models"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "http:// storage is not supported") || !strings.Contains(err.Error(), "http://host/models") {
		t.Errorf("http://: %v", err)
	}
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := parseFlags([]string{"--help"}, &out)
	if !errors.Is(err, errHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, f := range tritonFlags {
		if !strings.Contains(out.String(), "  --"+f.name+"\n") {
			t.Errorf("--help does not list --%s", f.name)
		}
	}
}

// TestKeepalive checks the mapping of the keepalive flags to grpc-go's
// parameters, with tritonserver's defaults.
func TestKeepalive(t *testing.T) {
	c, err := parseFlags([]string{"--model-repository=/m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	params, policy := keepaliveOptions(c.grpcKeepalive)
	if params != (keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}) ||
		policy != (keepalive.EnforcementPolicy{MinTime: 5 * time.Minute}) {
		t.Errorf("defaults: %+v %+v", params, policy)
	}
	c, err = parseFlags([]string{"--model-repository=/m", "--grpc-keepalive-time", "10000", "--grpc-keepalive-timeout=3000",
		"--grpc-keepalive-permit-without-calls=1", "--grpc-http2-min-recv-ping-interval-without-data=15000",
		"--grpc-max-connection-age=60000", "--grpc-max-connection-age-grace=2000", "--grpc-http2-max-ping-strikes=2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	params, policy = keepaliveOptions(c.grpcKeepalive)
	if params != (keepalive.ServerParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, MaxConnectionAge: time.Minute, MaxConnectionAgeGrace: 2 * time.Second}) ||
		policy != (keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}) {
		t.Errorf("set: %+v %+v", params, policy)
	}
	if len(c.warnings) != 0 {
		t.Errorf("grpc-go's own number of ping strikes warns: %v", c.warnings)
	}
}

func TestParseQuantiles(t *testing.T) {
	q, err := parseQuantiles("0.5:0.05,0.99:0.001")
	if err != nil || q[0.5] != 0.05 || q[0.99] != 0.001 || len(q) != 2 {
		t.Fatalf("%v %v", q, err)
	}
	for _, bad := range []string{"0.5", "1.5:0.1", "x:0.1", "0.5:-1"} {
		if _, err := parseQuantiles(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
