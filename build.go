// build.go builds model versions: configuration, backend, model,
// instances and warm-up, completely, before anything is published.

package triton

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/ensemble"
	"github.com/triton-go/triton/internal/signature"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/ratelimit"
	"github.com/triton-go/triton/repoagent"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

// buildModel reads, checks and loads every version of one model that its
// version policy selects, without publishing anything. It never fails as a
// whole: failures are recorded in the result, per version where they
// concern one, for the caller to return or, where it returns nothing (the
// poller, a startup that goes on without failed models), to log.
func (s *Server) buildModel(ctx context.Context, src source, known func(string) bool) *modelEntry {
	md := src.dir
	e := &modelEntry{name: md.Name, fingerprint: src.fingerprint, override: src.override != nil}
	log := s.log.With(zap.String("model", md.Name))
	fail := func(ver int64, code Code, err error) {
		err = &Error{Code: code, Model: md.Name, Version: ver, Err: fmt.Errorf("failed to load '%s': %w", md.Name, err)}
		e.failures = append(e.failures, loadFailure{version: ver, err: err})
		s.logFailure(md.Name, ver, err)
	}

	cfgFile := repository.ConfigFileFor(md, s.opts.configName)
	cfg, err := s.readConfig(md, cfgFile, src.override)
	if err != nil {
		fail(0, InvalidArgument, err)
		return e
	}
	agents := s.opts.repoAgents
	if agents == nil {
		agents = repoagent.Builtin()
	}
	if err := repoagent.Run(ctx, repoagent.Model{Name: md.Name, FS: md.FS, Config: cfg, Stat: md.Stat}, agents); err != nil {
		code := CodeOf(err)
		if code == Unknown || code == Internal {
			code = InvalidArgument
		}
		fail(0, code, err)
		return e
	}
	if e.pinned, e.keepAlive, err = s.lifecycleParams(cfg); err != nil {
		fail(0, InvalidArgument, err)
		return e
	}
	name, b, err := s.resolveBackend(md.Path(cfgFile), cfg)
	if err != nil {
		fail(0, InvalidArgument, err)
		return e
	}
	if name == ensembleBackend {
		if err := s.loadComposing(ctx, cfg); err != nil {
			fail(0, CodeOf(err), err)
			return e
		}
	}
	versions := repository.SelectVersions(cfg.GetVersionPolicy(), md.Versions)
	if len(versions) == 0 {
		fail(0, InvalidArgument, fmt.Errorf("at least one version must be available under the version policy of model '%s'", md.Name))
		return e
	}
	for _, n := range slices.Backward(versions) {
		vlog := log.With(zap.Int64("version", n))
		var v *version
		rss := processRSS()
		for try := 0; ; try++ {
			v, err = s.loadVersion(ctx, md, cfgFile, cfg, n, name, b, known, vlog)
			if err == nil || try >= s.opts.loadRetries || ctx.Err() != nil {
				break
			}
			// Triton's --model-load-retry-count: build the version afresh.
			vlog.Warn("model version failed to load; trying again", zap.Int("retry", try+1), zap.Int("retries", s.opts.loadRetries), zap.String("error", err.Error()))
		}
		if err != nil {
			code := CodeOf(err)
			if code == Unknown {
				code = Internal
			}
			fail(n, code, err)
			continue
		}
		if s.life != nil {
			s.account(v, processRSS()-rss)
		}
		e.versions = append(e.versions, v)
	}
	if len(e.versions) > 0 {
		log.Info("model loaded", zap.String("backend", name), zap.Int("versions", len(e.versions)))
	}
	return e
}

// readConfig reads and normalizes a model's configuration (file, relative
// to the model folder: config.pbtxt or the one WithModelConfigName
// chooses), or takes the override a load asked for instead. Either way,
// or without any (a non-strict server loads a model folder without
// config.pbtxt), the backend, platform and default model file missing are
// completed from the model files, as Triton's server-side auto-complete
// does.
func (s *Server) readConfig(md repository.ModelDir, file string, override *modelconfig.ModelConfig) (*modelconfig.ModelConfig, error) {
	var (
		cfg   *modelconfig.ModelConfig
		found = true
		err   error
	)
	if override != nil {
		cfg = proto.CloneOf(override)
		if cfg.GetName() == "" {
			cfg.Name = md.Name
		}
	} else if cfg, found, err = repository.ReadConfigFile(md, file); err != nil {
		return nil, err
	}
	if !found && s.opts.strictConfig {
		return nil, fmt.Errorf("%s: no configuration file, and strict model configuration is on", md.Path(file))
	}
	if err := repository.CompleteBackend(md, cfg); err != nil {
		return nil, err
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	return cfg, nil
}

// logFailure logs a model (version 0) or version that failed to load, as
// Triton does, once, where the failure happens.
func (s *Server) logFailure(model string, ver int64, err error) {
	fields := []zap.Field{zap.String("model", model)}
	if ver > 0 {
		fields = append(fields, zap.Int64("version", ver))
	}
	s.log.Error("failed to load", append(fields, zap.String("error", err.Error()))...)
}

// resolveBackend finds the backend that serves cfg.
func (s *Server) resolveBackend(path string, cfg *modelconfig.ModelConfig) (string, backend.Backend, error) {
	name := cfg.GetBackend()
	if cfg.GetPlatform() == ensembleBackend {
		name = ensembleBackend
	}
	if name == "" && cfg.GetPlatform() != "" {
		return "", nil, fmt.Errorf("%s: platform: unknown platform '%s' for model '%s'; name a backend with 'backend' instead", path, cfg.GetPlatform(), cfg.GetName())
	}
	if name == "" {
		return "", nil, fmt.Errorf("must specify 'platform' or 'backend' for '%s'", cfg.GetName())
	}
	b, ok := s.backendFor(name)
	if !ok || cfg.GetRuntime() == pythonBasedFile {
		if py, found, err := s.pythonBased(cfg); err != nil || found {
			return name, py, err
		}
	}
	if !ok {
		names := backend.Backends()
		for n := range s.opts.backends {
			names = append(names, n)
		}
		slices.Sort(names)
		searched := ""
		if s.opts.backendDir != "" {
			searched = fmt.Sprintf(", nor a Python-based backend (searched: '%s')", filepath.Join(s.opts.backendDir, name, pythonBasedFile))
		}
		return "", nil, fmt.Errorf("unknown backend '%s' for model '%s' (known: %s%s); is the package github.com/triton-go/triton/backend/%s imported?",
			name, cfg.GetName(), strings.Join(slices.Compact(names), ", "), searched, name)
	}
	return name, b, nil
}

// pythonBackend is the backend that runs Python-based backends.
const pythonBackend = "python"

// pythonBasedFile is the file of a Python-based backend in its folder of
// the backend directory, and the runtime of the models it serves.
const pythonBasedFile = "model.py"

// pythonBased finds cfg's backend among the Python-based backends of the
// backend directory (WithBackendDirectory), as Triton does when no backend
// library of that name exists or the config's runtime is "model.py":
// found, it returns the python backend that runs it and sets the runtime.
func (s *Server) pythonBased(cfg *modelconfig.ModelConfig) (backend.Backend, bool, error) {
	name := cfg.GetBackend()
	named := cfg.GetRuntime() == pythonBasedFile
	if s.opts.backendDir == "" || name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		if named {
			return nil, false, fmt.Errorf("unable to find Python backend based backend library '%s' for model '%s': the server has no backend directory (WithBackendDirectory, --backend-directory)",
				pythonBasedFile, cfg.GetName())
		}
		return nil, false, nil
	}
	file := filepath.Join(s.opts.backendDir, name, pythonBasedFile)
	if fi, err := os.Stat(file); err != nil || fi.IsDir() {
		if named {
			return nil, false, fmt.Errorf("unable to find Python backend based backend library '%s' for model '%s', searched: '%s'", pythonBasedFile, cfg.GetName(), file)
		}
		return nil, false, nil
	}
	py, ok := s.backendFor(pythonBackend)
	if !ok {
		return nil, true, fmt.Errorf("model '%s' uses the Python-based backend '%s' (%s), which runs on the python backend; is the package github.com/triton-go/triton/backend/python imported?",
			cfg.GetName(), name, file)
	}
	cfg.Runtime = pythonBasedFile
	return py, true, nil
}

// backendFor returns the backend named name: the server's own first, then
// the process-wide registry.
func (s *Server) backendFor(name string) (backend.Backend, bool) {
	if name == ensembleBackend {
		return ensemble.Backend{}, true
	}
	if b, ok := s.opts.backends[name]; ok {
		return b, true
	}
	return backend.Lookup(name)
}

// loadVersion builds one version completely (config completed and
// validated, model loaded, every instance created and warmed) and starts its
// instances. On failure it releases whatever it had created.
func (s *Server) loadVersion(ctx context.Context, md repository.ModelDir, cfgFile string, base *modelconfig.ModelConfig, n int64, name string, b backend.Backend, known func(string) bool, log *zap.Logger) (*version, error) {
	began := time.Now()
	cfg := proto.CloneOf(base)
	spec := &backend.ModelSpec{Name: md.Name, Version: n, Config: cfg, FS: md.FS, Dir: md.Dir, Logger: log,
		Caller: &caller{s: s, model: md.Name}, Metrics: s.metrics}
	if cfg.GetRuntime() == pythonBasedFile {
		spec.BackendDir = filepath.Join(s.opts.backendDir, cfg.GetBackend())
	}
	if !s.opts.strictConfig {
		completed, err := safeCall(func() (bool, error) { return backend.CompleteConfig(ctx, b, spec) })
		if err != nil {
			return nil, fmt.Errorf("auto-completing the configuration: %w", err)
		}
		if completed {
			repository.Normalize(cfg, repository.NormalizeOptions{})
		}
	}
	if err := repository.Validate(md.Path(cfgFile), cfg, repository.ValidateOptions{ModelName: md.Name, KnownModel: known}); err != nil {
		return nil, withCode(InvalidArgument, err)
	}
	if err := checkRuntime(md, n, name, cfg); err != nil {
		return nil, err
	}
	labels, err := readLabels(md.FS, cfg)
	if err != nil {
		return nil, withCode(InvalidArgument, err)
	}
	sig, err := signature.Compile(cfg)
	if err != nil {
		return nil, withCode(InvalidArgument, err)
	}
	m, err := safeCall(func() (backend.Model, error) { return b.Load(ctx, spec) })
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, withCode(Internal, fmt.Errorf("backend '%s' returned no model", name))
	}
	sig.KeepDataType = func(output string, produced, declared tensor.DataType) bool {
		return backend.KeepDataType(m, output, produced, declared)
	}
	v := newVersion(s.ctx, md.Name, n, cfg, sig, name, m, log)
	v.observers = s.opts.observers
	v.tracer = s.opts.tracer
	v.labels = labels
	if s.cache != nil && cfg.GetResponseCache().GetEnable() {
		v.cache = s.cache
	}
	for gi, g := range cfg.GetInstanceGroup() {
		kind := g.GetKind()
		if kind == modelconfig.ModelInstanceGroup_KIND_GPU {
			_ = v.close(ErrServerClosed)
			return nil, withCode(InvalidArgument, fmt.Errorf("instance group %s of model %s has kind KIND_GPU but no GPUs are available", g.GetName(), md.Name))
		}
		for i := range int(g.GetCount()) {
			ispec := backend.InstanceSpec{Name: fmt.Sprintf("%s_%d", g.GetName(), i), Group: g, Kind: kind, Index: i, DeviceID: -1}
			inst, err := newInstance(ctx, m, ispec)
			if err != nil {
				_ = v.close(ErrServerClosed)
				return nil, fmt.Errorf("instance group %d: %w", gi, err)
			}
			sl := &slot{spec: ispec, inst: inst, passive: g.GetPassive(), group: gi}
			v.pool = append(v.pool, sl)
			if err := s.limit(md.Name, sl, g); err != nil {
				_ = v.close(ErrServerClosed)
				return nil, withCode(InvalidArgument, fmt.Errorf("instance group %s: rate_limiter: %w", g.GetName(), err))
			}
		}
	}
	if name == ensembleBackend {
		// An ensemble has no instance groups: its one instance runs every
		// request, concurrently (see ensemble.Backend).
		ispec := backend.InstanceSpec{Name: md.Name + "_0", Group: &modelconfig.ModelInstanceGroup{Name: md.Name, Count: 1, Kind: modelconfig.ModelInstanceGroup_KIND_CPU}, Kind: modelconfig.ModelInstanceGroup_KIND_CPU, DeviceID: -1}
		inst, err := newInstance(ctx, m, ispec)
		if err != nil {
			_ = v.close(ErrServerClosed)
			return nil, err
		}
		v.pool, v.shared = []*slot{{spec: ispec, inst: inst}}, true
	}
	if v.activeInstances() == 0 {
		_ = v.close(ErrServerClosed)
		return nil, withCode(InvalidArgument, fmt.Errorf("model '%s' has no instance that is not passive", md.Name))
	}
	if err := v.warm(ctx, md); err != nil {
		_ = v.close(ErrServerClosed)
		return nil, fmt.Errorf("model_warmup: %w", err)
	}
	v.stats.loadTime = time.Since(began)
	v.start()
	if cfg.GetSequenceBatching() != nil {
		seq, err := newSequencer(v, md.FS, v.activeInstances())
		if err != nil {
			_ = v.close(ErrServerClosed)
			return nil, withCode(InvalidArgument, err)
		}
		v.seq = seq
	}
	if v.aware, err = s.deadlineAware(cfg); err != nil {
		_ = v.close(ErrServerClosed)
		return nil, withCode(InvalidArgument, err)
	}
	if err := v.startBatcher(); err != nil {
		_ = v.close(ErrServerClosed)
		return nil, withCode(InvalidArgument, err)
	}
	log.Debug("model version loaded", zap.Int("instances", len(v.pool)))
	return v, nil
}

// safeCall runs a backend call, turning a panic into an Internal error.
func safeCall[T any](f func() (T, error)) (res T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = withCode(Internal, fmt.Errorf("backend panic: %v", r))
		}
	}()
	return f()
}

// limit registers an instance with the rate limiter when it is on and the
// instance's group has a rate_limiter.
func (s *Server) limit(model string, sl *slot, g *modelconfig.ModelInstanceGroup) error {
	rl := g.GetRateLimiter()
	if s.limiter == nil || rl == nil {
		return nil
	}
	inst := ratelimit.Instance{Name: model + "/" + sl.spec.Name, Device: max(sl.spec.DeviceID, 0), Priority: rl.GetPriority()}
	for _, r := range rl.GetResources() {
		inst.Resources = append(inst.Resources, ratelimit.Resource{Name: r.GetName(), Count: r.GetCount(), Global: r.GetGlobal()})
	}
	c, err := s.limiter.Register(inst)
	if err != nil {
		return err
	}
	sl.limit = c
	return nil
}

// warm runs the config's model_warmup samples on every instance, before the
// version takes traffic (Triton warms each instance). Any failure fails the
// load.
func (v *version) warm(ctx context.Context, md repository.ModelDir) error {
	samples, err := warmup.Samples(v.cfg, md.FS)
	if err != nil {
		return withCode(InvalidArgument, err)
	}
	for _, s := range v.pool {
		for _, sm := range samples {
			for range sm.Count {
				r := &backend.Request{ID: "warmup " + sm.Name, Inputs: v.sig.ReshapeInputs(sm.Inputs[:0], sm.Inputs), BatchSize: sm.BatchSize}
				wb := backend.NewBatch(v.sig.MaxBatch > 0, r)
				wb.SetLayouts(v.sig.Layouts) // ragged inputs and batch inputs, as in serving
				v.execute(ctx, s, wb)        // a panic fails r
				err := r.Err()
				if err == nil {
					for _, out := range r.Outputs() {
						if _, cerr := v.sig.CheckOutput(out, sm.BatchSize); cerr != nil {
							err = cerr
							break
						}
					}
				}
				if err != nil {
					return withCode(Internal, fmt.Errorf("warm-up sample '%s' failed on instance %s: %w", sm.Name, s.spec.Name, err))
				}
			}
		}
	}
	return nil
}

// checkRuntime checks the config's runtime field (the backend library
// Triton loads for the model) with Triton's rules and messages: a runtime
// whose path leaves the folder it is looked up in is refused, as is one
// that names no library there. Backends here are Go packages, not shared
// libraries, so the only runtime that can be found is the backend's own
// library name, libtriton_<backend>.so, which the Go backend serves; a
// library in the model folder exists but cannot be loaded (Unsupported).
func checkRuntime(md repository.ModelDir, n int64, name string, cfg *modelconfig.ModelConfig) error {
	rt := cfg.GetRuntime()
	if rt == "" || rt == "libtriton_"+name+".so" || rt == pythonBasedFile { // model.py: resolveBackend found the Python-based backend
		return nil
	}
	dirs := []string{md.Path(strconv.FormatInt(n, 10)), md.Path(".")}
	if clean := path.Clean(rt); path.IsAbs(rt) || clean == ".." || strings.HasPrefix(clean, "../") {
		return withCode(InvalidArgument, fmt.Errorf("backend library name '%s' escapes backend directory '%s', for model '%s', check model config runtime field",
			rt, dirs[0], md.Name))
	}
	for _, p := range []string{path.Join(strconv.FormatInt(n, 10), rt), rt} {
		if fi, err := fs.Stat(md.FS, p); err == nil && !fi.IsDir() {
			return withCode(Unsupported, fmt.Errorf("runtime '%s' of model '%s' is a backend library in the model folder (%s); this server runs backends written in Go only, so leave runtime empty to use backend '%s'",
				rt, md.Name, md.Path(p), name))
		}
	}
	return withCode(InvalidArgument, fmt.Errorf("unable to find backend library '%s' for model '%s', searched: '%s' '%s' ",
		rt, md.Name, dirs[0], dirs[1]))
}
