// Command tritonserver serves a Triton model repository over HTTP/REST and
// gRPC (the KServe v2 protocol with Triton's extensions) and exports
// Prometheus metrics, with tritonserver's command line, so that existing
// deployments keep their arguments:
//
//	tritonserver --model-repository=/models [--model-control-mode=explicit --load-model=m] \
//	    [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002] [--grpc-use-ssl=true ...] ...
//
// Every option of tritonserver's parser is accepted, with its syntax and
// its error messages (see parseFlags); an option that has no meaning here
// (SageMaker, Vertex AI, CUDA memory pools, ...) is logged once at start
// with the reason.
//
// Tracing follows --trace-config (see trace.go): Triton's trace file
// (triton,file=...) or OpenTelemetry spans over OTLP/HTTP
// (mode=opentelemetry, opentelemetry,url=...) and, beyond tritonserver,
// OTLP/gRPC (opentelemetry,protocol=grpc); the deprecated --trace-file,
// --trace-level, --trace-rate, --trace-count and --trace-log-frequency
// work with tritonserver's warnings.
//
// It serves ONNX models with ONNX Runtime, TorchScript models with libtorch
// (the pytorch backend, whose shim --backend-directory can point at), Python
// models and Triton's Python-based backends (<backend-directory>/<name>/model.py) and,
// for the example repository, Go backends compiled in ("reverse",
// "pixels"; "repeat" and "tokens", decoupled).
//
// SIGTERM shuts it down as a rolling restart needs: for --exit-drain-secs
// (ours, default 5) it reports not ready on /v2/health/ready and gRPC's
// ServerReady while it serves every request, so that the endpoints routing
// to it are withdrawn; then it stops accepting connections and calls, lets
// the requests it took finish within --exit-timeout-secs, closes the
// models (Python stubs included) and exits 0. SIGINT (Ctrl-C) skips the
// drain window. Under Kubernetes, terminationGracePeriodSeconds must cover
// both windows and a margin.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/fil"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/backend/pytorch"
	"github.com/triton-go/triton/cloudrepo"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/internal/repeat"
	"github.com/triton-go/triton/internal/reverse"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/ratelimit"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/sysshm"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, errHelp) {
		return
	}
	if err != nil {
		log.Fatalf("tritonserver: %v", err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	ctx, stop := context.WithCancelCause(context.Background())
	go func() {
		if <-signals == syscall.SIGTERM {
			stop(errTerminated)
		}
		stop(nil)
	}()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		log.Fatalf("tritonserver: %v", err)
	}
}

// errTerminated is the cause of run's ctx ending on SIGTERM, which drains
// before shutting down.
var errTerminated = errors.New("SIGTERM")

// run serves until ctx ends, then shuts down gracefully, after a drain of
// --exit-drain-secs when ctx's cause is errTerminated. It writes the
// addresses it listens on to out ("http listening on [::]:8000"), which is
// how tests that start it on port 0 find it.
func run(ctx context.Context, cfg config, out io.Writer) error {
	logger, level, err := newLogger(cfg)
	if err != nil {
		return err
	}
	defer logger.Sync()
	for _, w := range cfg.warnings {
		logger.Warn("flag has no effect here", zap.String("flag", "--"+w.flag), zap.String("reason", w.reason))
	}

	// One settings store: log and trace settings changed over either
	// protocol are the server's, as in Triton.
	st := settings.NewStore(level)
	st.SetLogFile(cfg.logFile)
	tracer, err := newTracer(cfg.trace, st, logger)
	if err != nil {
		return err
	}
	defer tracer.Close(context.Background()) // after an error; the shutdown below closes it first

	opts, lat, err := serverOptions(cfg, logger)
	if err != nil {
		return err
	}
	// Repositories in object storage: local copies, removed after the
	// server closes (defers run last to first).
	for _, r := range cfg.repositories {
		if !cloudrepo.IsURL(r) {
			continue
		}
		m, err := cloudrepo.Open(ctx, r, cloudrepo.Options{Logger: logger})
		if err != nil {
			return fmt.Errorf("--model-repository: %w", err)
		}
		defer m.Close()
		opts = append(opts, triton.WithMirror(m))
	}
	srv, err := triton.New(append(opts, triton.WithTracer(tracer))...)
	if err != nil {
		return err
	}
	defer srv.Close()

	var servers []*http.Server
	serve := func(name, addr string, reusePort bool, h http.Handler) (net.Addr, error) {
		l, err := listen(ctx, addr, reusePort)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		hs := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second, // slow clients cannot hold connections open forever
			ReadTimeout:       5 * time.Minute,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          zap.NewStdLog(logger.Named(name)),
		}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("serving", zap.String("server", name), zap.Error(err))
			}
		}()
		logger.Info("listening", zap.String("server", name), zap.String("address", l.Addr().String()))
		fmt.Fprintf(out, "%s listening on %s\n", name, l.Addr())
		return l.Addr(), nil
	}

	// One shared-memory registry for both protocols, as in Triton: a region
	// registered over HTTP serves gRPC requests too.
	var shm *sysshm.Registry
	if cfg.allowClientShm {
		shm = sysshm.NewRegistry()
		defer shm.Close()
	}
	if cfg.allowHTTP {
		hopts := []httpapi.Option{httpapi.WithLogger(logger), httpapi.WithSettings(st), httpapi.WithMaxRequestSize(cfg.httpMaxInputSize)}
		for _, r := range cfg.restrictedAPIs {
			for _, cat := range r.categories {
				hopts = append(hopts, httpapi.WithRestrictedAPI(cat, r.key, r.value))
			}
		}
		if shm != nil {
			hopts = append(hopts, httpapi.WithSharedMemory(shm))
		}
		if cfg.httpHeaderForward != nil {
			hopts = append(hopts, httpapi.WithHeaderForwardPattern(cfg.httpHeaderForward))
		}
		h := httpapi.NewHandler(srv, hopts...)
		addr, err := serve("http", net.JoinHostPort(cfg.httpAddress, strconv.Itoa(cfg.httpPort)), cfg.reuseHTTPPort, h)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "try:\n  curl -s localhost:%d/v2/models/text_reverse/infer -d '%s'\n",
			addr.(*net.TCPAddr).Port, `{"inputs":[{"name":"TEXT","shape":[2],"datatype":"BYTES","data":["hello","triton"]}]}`)
	}
	var gs *grpc.Server
	if cfg.allowGRPC {
		gopts := []grpcapi.Option{grpcapi.WithLogger(logger), grpcapi.WithSettings(st)}
		for _, r := range cfg.restrictedProtocols {
			for _, cat := range r.categories {
				gopts = append(gopts, grpcapi.WithRestrictedProtocol(cat, r.key, r.value))
			}
		}
		if shm != nil {
			gopts = append(gopts, grpcapi.WithSharedMemory(shm))
		}
		gopts = append(gopts, grpcapi.WithInferResponseCompressionLevel(cfg.grpcCompressionLevel))
		if cfg.grpcHeaderForward != nil {
			gopts = append(gopts, grpcapi.WithHeaderForwardPattern(cfg.grpcHeaderForward))
		}
		sopts, err := grpcServerOptions(cfg)
		if err != nil {
			return err
		}
		l, err := listen(ctx, net.JoinHostPort(cfg.grpcAddress, strconv.Itoa(cfg.grpcPort)), cfg.reuseGRPCPort)
		if err != nil {
			return fmt.Errorf("grpc: %w", err)
		}
		gs = grpc.NewServer(sopts...)
		grpcapi.New(srv, gopts...).Register(gs)
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := gs.Serve(l); err != nil {
				logger.Error("serving", zap.String("server", "grpc"), zap.Error(err))
			}
		}()
		defer func() { gs.Stop(); <-served }()
		logger.Info("listening", zap.String("server", "grpc"), zap.String("address", l.Addr().String()), zap.Bool("tls", cfg.grpcTLS.use), zap.Bool("mutual-tls", cfg.grpcTLS.mutual))
		fmt.Fprintf(out, "grpc listening on %s\n", l.Addr())
	}
	if cfg.allowMetrics {
		reg := prometheus.NewRegistry()
		col := metrics.NewCollector(srv, metrics.Config{
			DisableCounters: !cfg.metricsConfig.counterLatencies,
			DisableGPU:      !cfg.allowGPUMetrics,
			DisableCPU:      !cfg.allowCPUMetrics,
			Interval:        cfg.metricsInterval,
			Logger:          logger,
		})
		defer col.Close()
		reg.MustRegister(col)
		if lat != nil {
			lat.Attach(srv)
			reg.MustRegister(lat)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		if _, err := serve("metrics", net.JoinHostPort(cfg.metricsAddress, strconv.Itoa(cfg.metricsPort)), false, mux); err != nil {
			return err
		}
	}

	<-ctx.Done()
	// Not ready, still serving: the endpoints that route here go away.
	srv.Drain()
	if errors.Is(context.Cause(ctx), errTerminated) && cfg.exitDrain > 0 {
		logger.Info("draining: not ready, still serving", zap.Duration("exit-drain", cfg.exitDrain))
		time.Sleep(cfg.exitDrain)
	}
	logger.Info("shutting down", zap.Duration("exit-timeout", cfg.exitTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.exitTimeout)
	defer cancel()
	// No new connections or calls; the requests the listeners took finish
	// while the server still serves them.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, hs := range servers {
		wg.Go(func() {
			if err := hs.Shutdown(sctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	if gs != nil {
		// Streams a client keeps open hold GracefulStop until the exit
		// timeout; Stop then ends them.
		wg.Go(func() {
			stopped := make(chan struct{})
			go func() { gs.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-sctx.Done():
				gs.Stop()
				<-stopped
			}
		})
	}
	wg.Wait()
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("in-flight requests did not finish within %v: %w", cfg.exitTimeout, err))
	}
	// The requests have ended: their traces are written or exported.
	if err := tracer.Close(sctx); err != nil {
		errs = append(errs, fmt.Errorf("tracing: %w", err))
	}
	return errors.Join(errs...)
}

// serverOptions turns the flags into server options. The latency observer
// behind --metrics-config summary_latencies, histogram_latencies and
// stage_histograms must exist before the server; it is returned (nil when
// off) for run to register with the metrics.
func serverOptions(cfg config, logger *zap.Logger) ([]triton.Option, *metrics.Latencies, error) {
	opts := []triton.Option{
		triton.WithLogger(logger),
		triton.WithModelRepository(cfg.localRepositories()...),
		triton.WithStrictConfig(cfg.strictModelConfig),
		triton.WithStrictReadiness(cfg.strictReadiness),
		triton.WithExitOnError(cfg.exitOnError),
		triton.WithBackend(reverse.Name, reverse.Backend),
		triton.WithBackend("repeat", &repeat.Backend{}),
		triton.WithBackend("tokens", tokens{}),
		triton.WithBackend(pixels.Name, pixels.Backend),
	}
	opts = append(opts, triton.WithModelLoadThreads(cfg.modelLoadThreads), triton.WithModelLoadRetries(cfg.modelLoadRetries))
	if cfg.id != "" {
		opts = append(opts, triton.WithServerID(cfg.id))
	}
	if cfg.modelConfigName != "" {
		opts = append(opts, triton.WithModelConfigName(cfg.modelConfigName))
	}
	mode := map[string]triton.ControlMode{"none": triton.ControlNone, "poll": triton.ControlPoll, "explicit": triton.ControlExplicit}[cfg.controlMode]
	opts = append(opts, triton.WithModelControl(triton.ModelControl{Mode: mode, PollInterval: time.Duration(cfg.pollSecs) * time.Second}))
	if len(cfg.loadModels) > 0 {
		opts = append(opts, triton.WithStartupModels(cfg.loadModels...))
	}
	opts = append(opts, triton.WithMemoryBudget(cfg.memoryBudget), triton.WithLoadOnDemand(cfg.loadOnDemand),
		triton.WithDeadlineAwareBatching(cfg.deadlineAware))
	if cfg.keepAliveSet {
		opts = append(opts, triton.WithKeepAlive(cfg.keepAlive))
	}
	var ortOpts []onnxruntime.Option
	if n, ok, err := cfg.backendInt("onnxruntime", "default-max-batch-size"); err != nil {
		return nil, nil, err
	} else if ok {
		ortOpts = append(ortOpts, onnxruntime.WithDefaultMaxBatchSize(n))
	}
	opts = append(opts, triton.WithBackend(onnxruntime.Name, onnxruntime.New(ortOpts...)))
	backendDir := cfg.backendDirectory
	if backendDir == "" {
		backendDir = defaultBackendDirectory // where the image's full target puts the shim
	}
	if fi, err := os.Stat(filepath.Join(backendDir, pytorch.Name)); err == nil && fi.IsDir() {
		// Its pytorch folder, where there is one, must hold the shim; a
		// folder of Python-based backends alone leaves the shim's search as it is.
		opts = append(opts, triton.WithBackend(pytorch.Name, pytorch.New(pytorch.WithBackendDirectory(backendDir))))
	}
	opts = append(opts, triton.WithBackendDirectory(backendDir))
	pyOpts, err := python.BackendConfig(cfg.backendConfig["python"])
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, triton.WithBackend(python.Name, python.New(pyOpts...)))
	opts = append(opts, triton.WithBackend(fil.Name, fil.New()))
	if cfg.rateLimit == "execution_count" {
		rl := ratelimit.Config{}
		for _, r := range cfg.rateLimitResources {
			parts := strings.Split(r, ":") // checked by parseFlags
			count, err := strconv.ParseUint(parts[1], 10, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("--rate-limit-resource %q: bad count", r)
			}
			dev := -1
			if len(parts) == 3 {
				dev, _ = strconv.Atoi(parts[2])
			}
			rl.Limits = append(rl.Limits, ratelimit.Limit{Name: parts[0], Count: uint32(count), Device: dev})
		}
		opts = append(opts, triton.WithRateLimiter(rl))
	}
	if cfg.responseCacheBytes > 0 {
		opts = append(opts, triton.WithResponseCache(cfg.responseCacheBytes))
	}
	var lat *metrics.Latencies
	mc := cfg.metricsConfig
	if cfg.allowMetrics && (mc.summaryLatencies || mc.histogramLatencies || mc.stageHistograms) {
		lat = metrics.NewLatencies(metrics.LatencyConfig{
			Summaries:              mc.summaryLatencies,
			Quantiles:              mc.quantiles,
			FirstResponseHistogram: mc.histogramLatencies,
			StageHistograms:        mc.stageHistograms,
		})
		opts = append(opts, triton.WithObserver(lat))
	}
	return opts, lat, nil
}

// newLogger builds the logger from --log-verbose, --log-info,
// --log-warning, --log-error, --log-format and --log-file. zap has one
// level, not one switch per severity: the level is the most verbose
// severity enabled (debug with --log-verbose > 0, then info, warning,
// error; none at all when all are off), which is also how the HTTP and
// gRPC logging extensions change it at run time. --log-file appends to the
// file (created if missing) instead of writing to standard error.
func newLogger(cfg config) (*zap.Logger, *zap.AtomicLevel, error) {
	var level zap.AtomicLevel
	switch {
	case cfg.logVerbose > 0:
		level = zap.NewAtomicLevelAt(zapcore.DebugLevel)
	case cfg.logInfo:
		level = zap.NewAtomicLevelAt(zapcore.InfoLevel)
	case cfg.logWarning:
		level = zap.NewAtomicLevelAt(zapcore.WarnLevel)
	case cfg.logError:
		level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	default:
		level = zap.NewAtomicLevelAt(zapcore.DPanicLevel)
	}
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.Encoding = "console"
	zc.EncoderConfig.EncodeTime = zapcore.RFC3339TimeEncoder
	if cfg.logFormat == "ISO8601" {
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	}
	zc.Sampling = nil
	if cfg.logFile != "" {
		zc.OutputPaths = []string{cfg.logFile}
		zc.ErrorOutputPaths = []string{cfg.logFile}
	}
	l, err := zc.Build()
	if err != nil {
		return nil, nil, fmt.Errorf("--log-file %s: %w", cfg.logFile, err)
	}
	return l, &level, nil
}
