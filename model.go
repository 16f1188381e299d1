// model.go is the Model handle: one model of a server, by name, for callers
// that send it many requests.

package triton

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/triton-go/triton/modelconfig"
)

// Model is a handle on one model of a [Server], by name. Its methods act
// on the model as it is when they are called: the version a request
// without a version would use (the highest-numbered ready one), or the
// version a request names. A handle follows the model through reloads,
// unloads and loads; it never pins a version, so a retired version drains
// and closes as it would without handles.
//
// A handle only saves [Server.Infer]'s lookup of the model by name on
// every request: it remembers the model's entry in the last table of
// models it read, and looks again only when the server has published a new
// table (any model loaded or unloaded). Handles hold nothing else and need
// no closing; [Server.Model] may be called for a model not loaded yet.
//
// A Model is safe for concurrent use.
type Model struct {
	s    *Server
	name string
	seen atomic.Pointer[handleCache]
}

// handleCache is the entry of a handle's model in one table (nil: the
// table has none).
type handleCache struct {
	table *modelTable
	entry *modelEntry
}

// Model returns a handle on the model named name. The model need not be
// loaded: calls on the handle fail as [Server.Infer] does for a model that
// is not, until it is.
func (s *Server) Model(name string) *Model { return &Model{s: s, name: name} }

// Name returns the model's name.
func (m *Model) Name() string { return m.name }

// entry returns the model's entry in t.
func (m *Model) entry(t *modelTable) *modelEntry {
	if c := m.seen.Load(); c != nil && c.table == t {
		return c.entry
	}
	e := t.models[m.name]
	m.seen.Store(&handleCache{table: t, entry: e})
	return e
}

// Infer runs a request on the model, as [Server.Infer] does. req.Model may
// be empty; a name other than the handle's is InvalidArgument. req.Version
// chooses the version as it does for Server.Infer (0: the one the version
// policy serves).
func (m *Model) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	if err := m.check(req); err != nil {
		return nil, err
	}
	v, err := m.s.enter(ctx, m.name, req.Version, m)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.RequestID = req.ID
		}
		return nil, err
	}
	defer m.s.leave(v)
	return v.infer(ctx, req, fromClient)
}

// check refuses a request the handle cannot send.
func (m *Model) check(req *InferRequest) error {
	if req == nil {
		return &Error{Code: InvalidArgument, Model: m.name, Err: fmt.Errorf("nil request")}
	}
	if req.Model != "" && req.Model != m.name {
		return &Error{Code: InvalidArgument, Model: m.name, RequestID: req.ID,
			Err: fmt.Errorf("request for model '%s' sent through the handle of model '%s'", req.Model, m.name)}
	}
	return nil
}

// Metadata describes the model's current version, as
// [Server.ModelMetadata] does for version 0.
func (m *Model) Metadata() (ModelMetadata, error) { return m.s.ModelMetadata(m.name, 0) }

// Config returns a copy of the configuration of the model's current
// version, as [Server.ModelConfig] does for version 0.
func (m *Model) Config() (*modelconfig.ModelConfig, error) { return m.s.ModelConfig(m.name, 0) }

// Ready reports whether the model has a version ready for inference, as
// [Server.ModelReady] does for version 0.
func (m *Model) Ready(ctx context.Context) bool { return m.s.ModelReady(ctx, m.name, 0) }

// Stats returns the statistics of the model's current version. It fails
// as Infer does when the model has no version to serve.
func (m *Model) Stats() (ModelStats, error) {
	v, _, err := m.s.find(m.name, 0)
	if err != nil {
		return ModelStats{}, err
	}
	return v.snapshot(), nil
}
