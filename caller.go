// caller.go is the backend.Caller every model gets: requests from Go
// backends to other models (BLS), with call-cycle detection.

package triton

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
)

// caller is the [backend.Caller] the server hands to one model: requests
// it makes run on the server as its own Infer does, with the calling model
// added to the call path carried by ctx. A request for a model already on
// that path is a call cycle (A → B → A) and fails at once: waited for, it
// could never finish, since the first model's instance is busy waiting on
// it.
//
// The path follows the ctx a backend passes to Infer. A dynamically
// batched model runs a batch with the ctx of the batch's first request, so
// a cycle through such a model is seen on that request's path.
type caller struct {
	s     *Server
	model string
}

var _ backend.Caller = (*caller)(nil)

// callPath is one model of a call path, linked to the model that called it.
type callPath struct {
	model string
	prev  *callPath
}

type callPathKey struct{}

func (c *caller) Infer(ctx context.Context, req *InferRequest) (*InferResponse, error) {
	ctx, err := c.enter(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.s.infer(ctx, req, fromModel)
}

func (c *caller) InferStream(ctx context.Context, req *InferRequest) iter.Seq2[*InferResponse, error] {
	return func(yield func(*InferResponse, error) bool) {
		ctx, err := c.enter(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		c.s.inferStream(ctx, req, fromModel)(yield)
	}
}

// enter adds the calling model to the call path in ctx, refusing a call
// cycle.
func (c *caller) enter(ctx context.Context, req *InferRequest) (context.Context, error) {
	if req == nil {
		return nil, &Error{Code: InvalidArgument, Err: fmt.Errorf("nil request from model '%s'", c.model)}
	}
	prev, _ := ctx.Value(callPathKey{}).(*callPath)
	path := &callPath{model: c.model, prev: prev}
	for p := path; p != nil; p = p.prev {
		if p.model == req.Model {
			return nil, &Error{Code: Internal, Model: req.Model, RequestID: req.ID,
				Err: fmt.Errorf("call cycle: %s; a model cannot call a model that is waiting for it", path.describe(req.Model))}
		}
	}
	return context.WithValue(ctx, callPathKey{}, path), nil
}

// describe prints the path from its first model, followed by next:
// "A → B → A".
func (p *callPath) describe(next string) string {
	names := []string{next}
	for ; p != nil; p = p.prev {
		names = append(names, p.model)
	}
	slices.Reverse(names)
	return strings.Join(names, " → ")
}

func (c *caller) ModelConfig(model string, version int64) (*modelconfig.ModelConfig, error) {
	return c.s.ModelConfig(model, version)
}

func (c *caller) ModelReady(ctx context.Context, model string, version int64) bool {
	return c.s.ModelReady(ctx, model, version)
}

var _ backend.ModelLoader = (*caller)(nil)

// loadPathKey is the ctx key of the loads in progress a call is made from
// (a model's initialize runs inside its load): a *callPath of models.
type loadPathKey struct{}

// loading returns the loads ctx was made inside, innermost first.
func loading(ctx context.Context) *callPath {
	p, _ := ctx.Value(loadPathKey{}).(*callPath)
	return p
}

// waitedOn refuses a load or unload of a model whose load the call is made
// from: it holds that model's lifecycle lock and waits for the call.
func (c *caller) waitedOn(ctx context.Context, what, model string) error {
	for p := loading(ctx); p != nil; p = p.prev {
		if p.model == model {
			return &Error{Code: Internal, Model: model, Err: fmt.Errorf("failed to %s '%s' from model '%s': the load of '%s' is waiting for this call (loads: %s)",
				what, model, c.model, model, loading(ctx).describe(model))}
		}
	}
	return nil
}

func (c *caller) LoadModel(ctx context.Context, model, config string, files map[string][]byte) error {
	if err := c.waitedOn(ctx, "load", model); err != nil {
		return err
	}
	return c.s.Load(ctx, model, &LoadOptions{Config: config, Files: files})
}

func (c *caller) UnloadModel(ctx context.Context, model string, dependents bool) error {
	if err := c.waitedOn(ctx, "unload", model); err != nil {
		return err
	}
	if err := c.s.checkUnload(model); err != nil {
		return err
	}
	_, err := c.s.startUnload(model, &UnloadOptions{Dependents: dependents})
	if CodeOf(err) == NotFound {
		return nil // as Triton's TRITONSERVER_ServerUnloadModel: nothing to do
	}
	return err
}
