// ensembles.go loads, checks and unloads ensembles with their composing
// models, and purges the cached answers that depend on a changed model.

package triton

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// ensembleBackend is the backend name of models whose platform is
// "ensemble": the server's own ensemble scheduler.
const ensembleBackend = "ensemble"

// loadComposing loads the composing models of an ensemble that are not
// serving yet (their versions must exist before the ensemble can be
// checked against them), as Triton does. Ensembles that use each other in
// a cycle are refused before any lock is taken, so that two loads never
// wait for each other.
func (s *Server) loadComposing(ctx context.Context, cfg *modelconfig.ModelConfig) error {
	if cycle := s.ensembleCycle(cfg); cycle != nil {
		return withCode(InvalidArgument, fmt.Errorf("circular dependency between ensembles: %s", strings.Join(cycle, " → ")))
	}
	var errs []error
	for _, m := range composing(cfg) {
		if s.serving(m) {
			continue
		}
		unlock := s.lock(m)
		var err error
		if !s.serving(m) {
			var src source
			if src, err = s.source(ctx, m, nil); err == nil {
				err = s.loadLocked(ctx, src)
			}
		}
		unlock()
		if CodeOf(err) == NotFound {
			continue // not in the repositories: validation names it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("composing model '%s' of ensemble '%s' failed to load: %w", m, cfg.GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return withCode(InvalidArgument, err)
	}
	return nil
}

// composing lists the models an ensemble's steps name, each once.
func composing(cfg *modelconfig.ModelConfig) []string {
	var names []string
	for _, st := range cfg.GetEnsembleScheduling().GetStep() {
		if m := st.GetModelName(); !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	return names
}

// serving reports whether a model has versions that serve.
func (s *Server) serving(model string) bool {
	e := s.table.Load().models[model]
	return e != nil && e.state == stateServing && len(e.versions) > 0
}

// ensembleCycle returns a cycle of ensembles through cfg's steps (E1 → E2
// → E1), or nil. It reads the configurations of the ensembles it meets
// from the loaded models, else from the repositories.
func (s *Server) ensembleCycle(cfg *modelconfig.ModelConfig) []string {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var path []string
	var visit func(name string, c *modelconfig.ModelConfig) []string
	visit = func(name string, c *modelconfig.ModelConfig) []string {
		state[name] = visiting
		path = append(path, name)
		for _, m := range composing(c) {
			switch state[m] {
			case visiting:
				i := slices.Index(path, m)
				return append(slices.Clone(path[i:]), m)
			case done:
				continue
			}
			if mc := s.ensembleConfig(m); mc != nil {
				if cycle := visit(m, mc); cycle != nil {
					return cycle
				}
			}
		}
		state[name] = done
		path = path[:len(path)-1]
		return nil
	}
	return visit(cfg.GetName(), cfg)
}

// ensembleConfig returns the configuration of model if it is an ensemble
// (loaded, or else in the repositories), otherwise nil.
func (s *Server) ensembleConfig(model string) *modelconfig.ModelConfig {
	if e := s.table.Load().models[model]; e != nil && len(e.versions) > 0 {
		if c := e.versions[0].cfg; c.GetPlatform() == ensembleBackend {
			return c
		}
		return nil
	}
	md, err := repository.Lookup(s.opts.roots, model, nil)
	if err != nil {
		return nil
	}
	c, found, err := repository.ReadConfig(md)
	if err != nil || !found || c.GetPlatform() != ensembleBackend {
		return nil
	}
	return c
}

// unloadComposing unloads the composing models of an unloaded ensemble
// (cfg; nil or not an ensemble: nothing) that no serving ensemble still
// uses, and theirs in turn (unload_dependents).
func (s *Server) unloadComposing(cfg *modelconfig.ModelConfig) {
	if cfg.GetPlatform() != ensembleBackend {
		return
	}
	for _, m := range composing(cfg) {
		if s.usedByEnsemble(m) {
			continue
		}
		unlock := s.lock(m)
		e := s.table.Load().models[m]
		if e == nil || len(e.versions) == 0 {
			unlock()
			continue
		}
		mc := e.versions[0].cfg
		s.unloadLocked(m)
		unlock()
		s.unloadComposing(mc)
	}
}

// usedByEnsemble reports whether a serving ensemble has a step on model.
func (s *Server) usedByEnsemble(model string) bool {
	for _, e := range s.table.Load().models {
		if e.state == stateServing && len(e.versions) > 0 && slices.Contains(composing(e.versions[0].cfg), model) {
			return true
		}
	}
	return false
}

// purge drops the cached answers of a model that changed, and those of
// the ensembles that use it, directly or through other ensembles.
func (s *Server) purge(model string) {
	if s.cache == nil {
		return
	}
	seen := map[string]bool{}
	var visit func(m string)
	visit = func(m string) {
		if seen[m] {
			return
		}
		seen[m] = true
		s.cache.Purge(m)
		for name, e := range s.table.Load().models {
			if len(e.versions) > 0 && slices.Contains(composing(e.versions[0].cfg), m) {
				visit(name)
			}
		}
	}
	visit(model)
}
