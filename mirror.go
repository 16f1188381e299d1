package triton

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/triton-go/triton/repository"
)

// Mirror is a model repository kept elsewhere, in object storage say,
// whose models the server reads from local copies. Package cloudrepo
// provides one for Triton's s3://, gs:// and as:// repository URLs.
//
// The server scans Dir as it scans a local repository, and calls Sync
// before it reads: for all models at start (only the startup models in
// [ControlExplicit] mode), at every poll in [ControlPoll] mode, and for
// the model a [Server.Load] names (and the composing models of an
// ensemble it loads). A copy must change atomically: the server may read
// Dir while Sync runs, and must never see a model half copied.
type Mirror interface {
	// Dir is the local folder that holds the copies, laid out as a model
	// repository.
	Dir() string
	// Sync brings the named models, or all of the repository's models when
	// none are named, up to date in Dir. A model that is not in the
	// repository is not an error (it is not found afterwards). A model
	// whose copy cannot be completed keeps its previous copy, and the error
	// says which model, where it lives and why.
	Sync(ctx context.Context, models ...string) error
	// Models lists the names of the models the last look at the repository
	// found, copied or not, sorted.
	Models() []string
}

// WithMirror adds a mirrored model repository (see [Mirror]); the server
// does not close it. A model name must be unique across all repositories.
func WithMirror(m Mirror) Option {
	return optionFunc(func(o *options) error {
		if m == nil {
			return errors.New("WithMirror: nil mirror")
		}
		if m.Dir() == "" {
			return errors.New("WithMirror: the mirror has no local folder")
		}
		o.mirrors = append(o.mirrors, m)
		o.roots = append(o.roots, repository.DirRoot(m.Dir()))
		return nil
	})
}

// syncMirrors brings the named models (all when none) of every mirror up
// to date, returning the mirrors' errors joined.
func (s *Server) syncMirrors(ctx context.Context, models ...string) error {
	var errs []error
	for _, m := range s.opts.mirrors {
		if err := m.Sync(ctx, models...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// syncForLoad syncs the one model a load reads, as an error of the load:
// Unavailable, since the repository could not be read (a model that
// serves keeps serving its copy).
func (s *Server) syncForLoad(ctx context.Context, model string) error {
	if len(s.opts.mirrors) == 0 {
		return nil
	}
	if err := s.syncMirrors(ctx, model); err != nil {
		s.log.Warn("copying a model from its repository failed", zap.String("model", model), zap.Error(err))
		return &Error{Code: Unavailable, Model: model, Err: fmt.Errorf("failed to load '%s': %w", model, err)}
	}
	return nil
}

// mirroredModels lists the models of every mirror.
func (s *Server) mirroredModels() []string {
	var out []string
	for _, m := range s.opts.mirrors {
		out = append(out, m.Models()...)
	}
	return out
}
