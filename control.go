// control.go is model control: Load, Unload and Index (Triton's model
// repository extension), the startup load and the poller of the
// repositories (--model-control-mode none, poll and explicit).

package triton

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// source is where a load takes a model from: its folder, and the config
// that replaces config.pbtxt when the load has an override.
type source struct {
	dir         repository.ModelDir
	override    *modelconfig.ModelConfig
	fingerprint uint64
}

// LoadOptions are the overrides of an explicit load (Triton's model
// repository extension).
type LoadOptions struct {
	// Config replaces the model's config.pbtxt for this load: a ModelConfig
	// in JSON, with proto field names, as the repository extension's
	// "config" parameter. Its name, if set, must be the model's. Like a
	// config.pbtxt, it is completed from the model files (those of Files
	// when given): a backend it does not name comes from them.
	Config string
	// Files replaces the model folder for this load: paths relative to the
	// model folder (such as "1/model.onnx") and their contents, as the
	// repository extension's "file:<path>" parameters. It needs Config.
	// Paths are held to the rules of real files, as Triton writes them to
	// a folder: a leading '/' still means the model folder, "." and ".."
	// are resolved and the result must stay inside it, a name has at most
	// 255 bytes and no NUL, a path at most 4096 bytes, and a path cannot be
	// both a file and the folder of another. A load that breaks them fails
	// as in Triton, whose client examples check it: code Internal, message
	// "failed to load '<model>', failed to poll from model repository"; the
	// rule broken is logged and is the message's cause (errors.Unwrap).
	Files map[string][]byte
}

// UnloadOptions are the options of an explicit unload.
type UnloadOptions struct {
	// Dependents also unloads the models loaded along with this one (the
	// composing models of an ensemble), as unload_dependents does.
	Dependents bool
}

var errNotExplicit = errors.New("explicit model load / unload is not allowed if polling is enabled")

// Load loads or reloads a model (Triton's repository extension; only in
// [ControlExplicit] mode). A model already serving keeps serving until the
// new versions are built, warmed and published; then the old ones drain
// their in-flight requests and close in the background. A load that fails
// leaves what was serving untouched; its error is returned and logged, and
// [Server.Index] lists the versions that failed and do not serve (as in
// Triton, a failed reload of a serving version is not listed beside it).
// Loading a model whose files and config have not changed, without
// overrides, does nothing. opts may be nil.
func (s *Server) Load(ctx context.Context, model string, opts *LoadOptions) error {
	if s.opts.control.Mode != ControlExplicit {
		return &Error{Code: Unavailable, Model: model, Err: errNotExplicit}
	}
	if s.closing.Load() {
		return &Error{Code: Unavailable, Model: model, Err: ErrServerClosed}
	}
	s.ops.Add(1)
	defer s.ops.Done()
	ctx, stop := s.bind(ctx)
	defer stop()
	unlock := s.lock(model)
	defer unlock()
	src, err := s.source(ctx, model, opts)
	if err != nil {
		return err
	}
	return s.loadLocked(ctx, src)
}

// Unload unloads a model (only in [ControlExplicit] mode): new requests are
// refused with Unavailable at once, in-flight requests finish, then its
// instances and model close. Unload waits for that, or returns ctx.Err()
// when ctx ends first, the unload going on in the background.
func (s *Server) Unload(ctx context.Context, model string, opts *UnloadOptions) error {
	if err := s.checkUnload(model); err != nil {
		return err
	}
	done, err := s.startUnload(model, opts)
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkUnload says why model cannot be unloaded now, if it cannot.
func (s *Server) checkUnload(model string) error {
	if s.opts.control.Mode != ControlExplicit {
		return &Error{Code: Unavailable, Model: model, Err: errNotExplicit}
	}
	if err := repository.CheckModelName(model); err != nil {
		return &Error{Code: InvalidArgument, Model: model, Err: fmt.Errorf("failed to unload '%s': %w", model, err)}
	}
	if s.closing.Load() {
		return &Error{Code: Unavailable, Model: model, Err: ErrServerClosed}
	}
	return nil
}

// startUnload starts unloading a loaded model in the background; done is
// closed once it has unloaded (and its dependents, with opts.Dependents).
func (s *Server) startUnload(model string, opts *UnloadOptions) (done <-chan struct{}, err error) {
	unlock := s.lock(model)
	e := s.table.Load().models[model]
	if e == nil {
		unlock()
		return nil, &Error{Code: NotFound, Model: model, Err: fmt.Errorf("failed to unload '%s': the model is not loaded", model)}
	}
	var cfg *modelconfig.ModelConfig
	if opts != nil && opts.Dependents && len(e.versions) > 0 {
		cfg = e.versions[0].cfg
	}
	vs := s.markUnloading(model)
	ch := make(chan struct{})
	s.bg.Go(func() {
		defer close(ch)
		s.finishUnload(model, vs, "")
		unlock()
		s.unloadComposing(cfg)
	})
	return ch, nil
}

// bind returns a context that ends with ctx or when the server closes.
func (s *Server) bind(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// lock takes the lifecycle lock of a model and returns its release.
func (s *Server) lock(model string) func() {
	m, _ := s.locks.LoadOrStore(model, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// source resolves a model name (and a load's overrides) to where it loads
// from, after bringing its copy up to date when it lives in a mirrored
// repository.
func (s *Server) source(ctx context.Context, model string, opts *LoadOptions) (source, error) {
	fail := func(code Code, err error) (source, error) {
		return source{}, &Error{Code: code, Model: model, Err: fmt.Errorf("failed to load '%s': %w", model, err)}
	}
	if err := repository.CheckModelName(model); err != nil {
		return fail(InvalidArgument, err)
	}
	var src source
	if opts != nil && opts.Config != "" {
		cfg := &modelconfig.ModelConfig{}
		if err := protojson.Unmarshal([]byte(opts.Config), cfg); err != nil {
			return fail(InvalidArgument, fmt.Errorf("malformed config override: %w", err))
		}
		if cfg.GetName() != "" && cfg.GetName() != model {
			return fail(InvalidArgument, fmt.Errorf("the config override names model '%s'; an override cannot rename a model", cfg.GetName()))
		}
		src.override = cfg
	}
	if opts != nil && len(opts.Files) > 0 {
		if src.override == nil {
			return fail(InvalidArgument, errors.New("file overrides need a config override too"))
		}
		files, err := overrideFiles(model, opts.Files)
		if err == nil {
			var md repository.ModelDir
			if md, err = repository.Lookup([]repository.Root{repository.FSRoot(files)}, model, s.log); err == nil {
				src.dir = md
				return src, nil
			}
		}
		// Triton logs why and answers its clients with its poll failure,
		// which its client examples check.
		s.log.Error("failed to place the load's file overrides", zap.String("model", model), zap.Error(err))
		return source{}, &Error{Code: Internal, Model: model, Err: &pollError{model: model, cause: err}}
	}
	if err := s.syncForLoad(ctx, model); err != nil {
		return source{}, err
	}
	md, err := repository.Lookup(s.opts.roots, model, s.log)
	if err != nil {
		code := InvalidArgument
		if errors.Is(err, fs.ErrNotExist) {
			code = NotFound
		}
		return fail(code, err)
	}
	return s.sourceOf(md, src.override)
}

// sourceOf is the source of a model folder already found, with its
// fingerprint.
func (s *Server) sourceOf(md repository.ModelDir, override *modelconfig.ModelConfig) (source, error) {
	fp, err := repository.Fingerprint(md)
	if err != nil {
		return source{}, &Error{Code: Internal, Model: md.Name, Err: fmt.Errorf("failed to load '%s': %w", md.Name, err)}
	}
	return source{dir: md, override: override, fingerprint: fp}, nil
}

// known reports whether a model name exists in the repositories or is
// loaded (for validating ensembles).
func (s *Server) known() func(string) bool {
	return func(name string) bool {
		if s.table.Load().models[name] != nil {
			return true
		}
		_, err := repository.Lookup(s.opts.roots, name, nil)
		return err == nil
	}
}

// loadLocked builds src's versions and publishes them, replacing (and then
// retiring) what was serving. The model's lifecycle lock must be held.
func (s *Server) loadLocked(ctx context.Context, src source) error {
	name := src.dir.Name
	cur := s.table.Load().models[name]
	if cur != nil && cur.state == stateServing && len(cur.versions) > 0 && len(cur.failures) == 0 &&
		src.override == nil && !cur.override && src.fingerprint == cur.fingerprint {
		return nil // unchanged
	}
	var replaced []*version
	if cur != nil {
		replaced = cur.versions
	}
	budget := s.opts.memoryBudget > 0
	if budget {
		// The estimate is a guess: never more than the budget can give,
		// so that only the version's real size can refuse it.
		if err := s.makeRoom(ctx, name, min(s.estimate(src), s.opts.memoryBudget-s.pinnedBytes(name)), replaced); err != nil {
			s.logFailure(name, 0, err)
			s.update(name, func(old *modelEntry) *modelEntry { // the index says why it is not loaded
				e := &modelEntry{name: name}
				if old != nil {
					c := *old
					e = &c
				}
				if len(e.versions) == 0 {
					e.failures = []loadFailure{{err: err}}
				}
				return e
			})
			return err
		}
		defer s.release(name)
	}
	s.withState(name, stateLoading)
	ctx = context.WithValue(ctx, loadPathKey{}, &callPath{model: name, prev: loading(ctx)})
	built := s.buildModel(ctx, src, s.known())
	var errs []error
	for _, f := range built.failures {
		errs = append(errs, f.err)
	}
	built.attempted = src.fingerprint
	restore := func() {
		s.update(name, func(old *modelEntry) *modelEntry {
			e := &modelEntry{name: name}
			if cur != nil {
				c := *cur
				e = &c
			}
			e.state, e.failures, e.attempted = stateServing, built.failures, src.fingerprint
			return e
		})
	}
	if err := ctx.Err(); err != nil || s.closing.Load() {
		for _, v := range built.versions {
			_ = v.close(ErrServerClosed)
		}
		restore()
		return &Error{Code: Unavailable, Model: name, Err: fmt.Errorf("failed to load '%s': %w", name, cmp.Or(err, ErrServerClosed))}
	}
	if budget && len(built.versions) > 0 {
		// What the versions hold is known now: the room made for the
		// estimate may not be enough.
		if err := s.makeRoom(ctx, name, built.bytes(), replaced); err != nil {
			s.logFailure(name, 0, err)
			for _, v := range built.versions {
				_ = v.close(ErrServerClosed)
			}
			built.versions, built.failures = nil, append(built.failures, loadFailure{err: err})
			errs = append(errs, err)
		}
	}
	if len(built.versions) == 0 || (len(errs) > 0 && cur != nil && len(cur.versions) > 0) {
		// Nothing to serve, or a reload that did not fully succeed: what
		// was serving stays untouched.
		for _, v := range built.versions {
			_ = v.close(ErrServerClosed)
		}
		restore()
		return errors.Join(errs...)
	}
	built.loaded = time.Now()
	built.pinned = built.pinned || s.pinnedAtStartup(name)
	for _, v := range built.versions {
		v.lastUsed.Store(int64(s.clock()))
	}
	var old []*version
	s.update(name, func(e *modelEntry) *modelEntry {
		if e != nil {
			old = e.versions
			s.markRetiring(old)
			for _, n := range served(e) {
				if !slices.ContainsFunc(built.versions, func(v *version) bool { return v.number == n }) {
					built.gone = append(built.gone, n)
				}
			}
		}
		return built
	})
	if budget {
		s.release(name) // the published versions count now
	}
	s.purge(name) // answers of the model as it was must not outlive it
	s.retire(old, true)
	s.loaded(ctx, built)
	if len(old) > 0 {
		s.log.Info("model reloaded", zap.String("model", name), zap.Int("versions", len(built.versions)))
	}
	return errors.Join(errs...)
}

// markRetiring records versions that no longer serve as retiring, so that
// Shutdown waits for their requests too. It is called inside the table
// update that takes them out: at every moment a version is in the table,
// retiring, or closed.
func (s *Server) markRetiring(vs []*version) {
	for _, v := range vs {
		s.retiring.Store(v, struct{}{})
	}
}

// retire drains and closes retiring versions: their admitted requests run
// to their end, unless the server closes first (see Server.Close). It
// returns at once when background is set, otherwise once they are closed.
func (s *Server) retire(vs []*version, background bool) {
	for _, v := range vs {
		run := func() {
			defer s.retiring.Delete(v)
			if err := v.retire(s.ctx); err != nil {
				v.log.Warn("closing a retired version", zap.Error(err))
			}
		}
		if background {
			s.bg.Go(run)
		} else {
			run()
		}
	}
}

// unloadLocked unloads a model: refuse new requests, let in-flight ones
// finish, close. The model's lifecycle lock must be held.
func (s *Server) unloadLocked(name string) {
	s.finishUnload(name, s.markUnloading(name), "")
}

// markUnloading marks a model unloading (it refuses new requests from
// now on) and returns its versions, for finishUnload.
func (s *Server) markUnloading(name string) []*version {
	var vs []*version
	s.update(name, func(old *modelEntry) *modelEntry {
		e := &modelEntry{name: name, state: stateUnloading}
		if old != nil {
			c := *old
			e = &c
			e.state = stateUnloading
			vs = old.versions
			s.markRetiring(vs)
		}
		return e
	})
	return vs
}

// finishUnload retires a model's versions once their in-flight requests
// have finished, and forgets the model; reason is the index's ("" for an
// unload asked for: "unloaded").
func (s *Server) finishUnload(name string, vs []*version, reason string) {
	s.retire(vs, false)
	s.update(name, func(old *modelEntry) *modelEntry {
		e := &modelEntry{name: name, state: stateUnloaded, reason: reason}
		if old != nil {
			e.gone = served(old)
		}
		return e
	})
	s.purge(name)
	if s.life != nil {
		s.life.signalRoom()
	}
	if reason == "" {
		s.log.Info("model unloaded", zap.String("model", name))
	}
}

// pinnedAtStartup reports whether WithStartupModels names model.
func (s *Server) pinnedAtStartup(model string) bool {
	return slices.Contains(s.opts.startupModels, model)
}

// loadStartupModels loads the models the control mode starts with: all of
// them, WithStartupModels' list, or (explicit mode without a list) none.
func (s *Server) loadStartupModels(ctx context.Context) error {
	want := s.opts.startupModels
	all := slices.Equal(want, []string{"*"}) || (len(want) == 0 && s.opts.control.Mode != ControlExplicit)
	if len(s.opts.mirrors) > 0 && (all || len(want) > 0) {
		var names []string // all of them
		if !all {
			names = want
		}
		if err := s.syncMirrors(ctx, names...); err != nil {
			// A model whose copy failed is missing or, named, fails to
			// load below; with exit-on-error that ends the start.
			s.log.Error("copying models from their repository failed", zap.Error(err))
			if s.opts.exitOnError {
				return &Error{Code: Unavailable, Err: err}
			}
		}
	}
	dirs, err := repository.Scan(s.opts.roots, s.log)
	if err != nil {
		return &Error{Code: InvalidArgument, Err: fmt.Errorf("scanning model repository: %w", err)}
	}
	found := make(map[string]repository.ModelDir, len(dirs))
	var names []string
	for _, md := range dirs {
		found[md.Name] = md
		if all {
			names = append(names, md.Name)
		}
	}
	if !all {
		names = want
	}
	errs := make([]error, len(names))
	var g errgroup.Group
	g.SetLimit(s.opts.loadThreads)
	for i, name := range names {
		g.Go(func() error {
			unlock := s.lock(name)
			defer unlock()
			var (
				src source
				err error
			)
			if md, ok := found[name]; ok { // found by the scan: not looked up again
				src, err = s.sourceOf(md, nil)
			} else {
				src, err = s.source(ctx, name, nil)
			}
			if err != nil {
				s.logFailure(name, 0, err)
				s.update(name, func(*modelEntry) *modelEntry {
					return &modelEntry{name: name, failures: []loadFailure{{err: err}}}
				})
				errs[i] = err
				return nil
			}
			errs[i] = s.loadLocked(ctx, src)
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil && s.opts.exitOnError {
		return err
	}
	return nil // the failures are logged where they happen (buildModel)
}

// poll watches the repositories in ControlPoll mode until the server
// closes. A model folder is acted on only when its fingerprint is the same
// at two polls in a row, so files still being copied in are never loaded;
// a loaded model whose folder is gone at two polls in a row is unloaded.
func (s *Server) poll() {
	t := time.NewTicker(s.opts.control.PollInterval)
	defer t.Stop()
	seen := map[string]uint64{} // fingerprints at the previous poll
	gone := map[string]bool{}   // loaded models missing at the previous poll
	for {
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
		if err := s.syncMirrors(s.ctx); err != nil {
			// What failed keeps its previous copy, which keeps serving.
			s.log.Warn("polling the model repository: copying models failed", zap.Error(err))
		}
		dirs, err := repository.Scan(s.opts.roots, s.log)
		if err != nil {
			s.log.Warn("polling the model repository", zap.Error(err))
			continue
		}
		now := map[string]uint64{}
		var g errgroup.Group
		g.SetLimit(s.opts.loadThreads)
		for _, md := range dirs {
			fp, err := repository.Fingerprint(md)
			if err != nil {
				continue // being written or removed: look again next time
			}
			now[md.Name] = fp
			prev, ok := seen[md.Name]
			if !ok || prev != fp {
				continue // changed since the last poll: wait until it settles
			}
			e := s.table.Load().models[md.Name]
			if e != nil && e.attempted == fp && e.state != stateUnloaded {
				continue // loaded from this content already, or failed on it
			}
			g.Go(func() error {
				s.ops.Add(1)
				defer s.ops.Done()
				unlock := s.lock(md.Name)
				defer unlock()
				_ = s.loadLocked(withTrigger(s.ctx, TriggerPoll), source{dir: md, fingerprint: fp}) // failures are logged by buildModel
				return nil
			})
		}
		for name, e := range s.table.Load().models {
			if _, ok := now[name]; ok || e.state == stateUnloaded || len(e.versions) == 0 {
				delete(gone, name)
				continue
			}
			if !gone[name] {
				gone[name] = true // missing once: make sure at the next poll
				continue
			}
			delete(gone, name)
			g.Go(func() error {
				unlock := s.lock(name)
				defer unlock()
				s.unloadLocked(name)
				return nil
			})
		}
		_ = g.Wait()
		seen = now
	}
}

// ModelState is one row of the repository index.
type ModelState struct {
	Name    string
	Version int64  // 0 for a row about the whole model
	State   string // "READY", "LOADING", "UNLOADING", "UNAVAILABLE", or "" for a model never loaded
	Reason  string // why the version is not READY
}

// Index lists every model in the repositories and every model the server
// knows, sorted by name and version, with Triton's rows:
//
//   - a version that serves is READY (UNLOADING while its model unloads;
//     UNAVAILABLE "not ready" when its instances say they are not), also
//     while a reload of it is under way or after one failed: what failed
//     is not listed beside what serves, and a failed reload is reported
//     by its Load call and logged;
//   - a version that served and no longer does (unloaded, or dropped by a
//     reload that serves other versions) is UNAVAILABLE with reason
//     "unloaded";
//   - a version that failed to load and does not serve is UNAVAILABLE with
//     the error as reason;
//   - a model with no version to list has one row of version 0: LOADING
//     while it loads, UNAVAILABLE with the reason when it failed before
//     any version was built (a config that cannot be read, no version under
//     the version policy; Triton lists such a model without state or
//     reason), "" when it was never loaded.
func (s *Server) Index(ctx context.Context) []ModelState {
	var out []ModelState
	t := s.table.Load()
	for _, e := range t.models {
		out = e.index(ctx, out)
	}
	listed := map[string]bool{}
	if dirs, err := repository.Scan(s.opts.roots, nil); err == nil {
		for _, md := range dirs {
			if t.models[md.Name] == nil {
				listed[md.Name] = true
				out = append(out, ModelState{Name: md.Name})
			}
		}
	}
	for _, name := range s.mirroredModels() { // not copied yet (explicit mode)
		if t.models[name] == nil && !listed[name] {
			listed[name] = true
			out = append(out, ModelState{Name: name})
		}
	}
	slices.SortFunc(out, func(a, b ModelState) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	return out
}

// index appends e's rows of the repository index to out.
func (e *modelEntry) index(ctx context.Context, out []ModelState) []ModelState {
	n := len(out)
	for _, v := range e.versions {
		st := ModelState{Name: e.name, Version: v.number, State: "READY"}
		switch {
		case e.state == stateUnloading:
			st.State = "UNLOADING"
		case !v.ready(ctx):
			st.State, st.Reason = "UNAVAILABLE", "not ready"
		}
		out = append(out, st)
	}
	failed := e.failed()
	for _, f := range failed {
		out = append(out, ModelState{Name: e.name, Version: f.version, State: "UNAVAILABLE", Reason: f.err.Error()})
	}
	unloaded := cmp.Or(e.reason, "unloaded")
	for _, g := range e.gone {
		if !e.serves(g) && !slices.ContainsFunc(failed, func(f loadFailure) bool { return f.version == g }) {
			out = append(out, ModelState{Name: e.name, Version: g, State: "UNAVAILABLE", Reason: unloaded})
		}
	}
	if len(out) > n {
		return out
	}
	switch e.state {
	case stateLoading:
		return append(out, ModelState{Name: e.name, State: "LOADING"})
	case stateUnloaded:
		return append(out, ModelState{Name: e.name, State: "UNAVAILABLE", Reason: unloaded})
	}
	return append(out, ModelState{Name: e.name})
}

// failed returns the failures the index lists and readiness counts: those
// of versions that do not serve, and a failure of the whole model when no
// version serves. A failed reload of what serves is not among them (as in
// Triton, the serving version stays READY).
func (e *modelEntry) failed() []loadFailure {
	var out []loadFailure
	for _, f := range e.failures {
		if (f.version == 0 && len(e.versions) == 0) || (f.version != 0 && !e.serves(f.version)) {
			out = append(out, f)
		}
	}
	return out
}

// serves reports whether version n of e serves.
func (e *modelEntry) serves(n int64) bool {
	return slices.ContainsFunc(e.versions, func(v *version) bool { return v.number == n })
}

// served returns the versions e serves or served, ascending.
func served(e *modelEntry) []int64 {
	out := slices.Clone(e.gone)
	for _, v := range e.versions {
		out = append(out, v.number)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pollError is a load whose file overrides could not be placed in a model
// folder (a name too long, a path leaving the folder, ...). Triton fails
// such a load while polling the model's files, and answers every poll
// failure INTERNAL "failed to load 'm', failed to poll from model
// repository", logging the reason; Triton's client example
// simple_grpc_model_control.py checks that code and text, so the message
// is exactly Triton's. The reason is the cause (errors.Unwrap), and the
// server logs it.
type pollError struct {
	model string
	cause error
}

func (e *pollError) Error() string {
	return "failed to load '" + e.model + "', failed to poll from model repository"
}

func (e *pollError) Unwrap() error { return e.cause }

// Limits of real file systems (Linux's NAME_MAX and PATH_MAX) that file
// overrides are held to, as if Triton had written them to disk.
const (
	maxFileName = 255
	maxFilePath = 4096
)

// overrideFiles checks a load's file overrides with the rules Triton's
// (which writes them into a temporary model folder) enforces, with its
// messages, and returns them as the model folder model in a file system.
// As in Triton, a path is taken relative to the model folder even with a
// leading '/', and "." and ".." elements are resolved; the result must stay
// inside the folder.
func overrideFiles(model string, files map[string][]byte) (fstest.MapFS, error) {
	out := fstest.MapFS{}
	clean := make(map[string]string, len(files)) // normalized path → the parameter's path
	for _, p := range slices.Sorted(maps.Keys(files)) {
		param := "file:" + p
		rel := path.Clean(strings.TrimLeft(p, "/"))
		written := path.Join(model, rel)
		switch {
		case strings.ContainsRune(p, 0):
			return nil, fmt.Errorf("Invalid file parameter '%s': a file name cannot contain a NUL byte", param)
		case rel == ".." || strings.HasPrefix(rel, "../"):
			return nil, fmt.Errorf("Invalid file parameter '%s' with normalized path '%s' must stay within model directory.", param, rel)
		case rel == ".":
			return nil, fmt.Errorf("failed to open binary file for write %s: Is a directory", model)
		case len(written) > maxFilePath:
			return nil, fmt.Errorf("failed to open binary file for write %s: File name too long", written)
		}
		for _, elem := range strings.Split(rel, "/") {
			if len(elem) > maxFileName {
				return nil, fmt.Errorf("failed to open binary file for write %s: File name too long", written)
			}
		}
		clean[rel] = p
		out[written] = &fstest.MapFile{Data: files[p]}
	}
	for rel := range clean {
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if _, isFile := clean[dir]; isFile {
				return nil, fmt.Errorf("Invalid file parameter 'file:%s', directory has been created as a file", clean[rel])
			}
		}
	}
	return out, nil
}
