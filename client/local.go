package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/sysshm"
)

// Interface guards.
var (
	_ Inferer = (*triton.Server)(nil)
	_ Inferer = (*triton.Model)(nil)

	_ Conn               = (*local)(nil)
	_ Repository         = (*local)(nil)
	_ SystemSharedMemory = (*local)(nil)
)

// Local returns a connection to srv in this process: each method calls the
// server's method of the same meaning, with no encoding and no copies
// (Infer is srv.Infer), so that code written against [Conn] runs against
// an embedded server unchanged. The connection also implements
// [Repository] and [SystemSharedMemory]; its shared-memory regions live in
// a registry of its own (the server itself knows no regions; the
// adapters hold theirs), which Close releases. Close does not close srv,
// which stays the caller's. It panics on a nil server.
func Local(srv *triton.Server) Conn {
	if srv == nil {
		panic("client: Local with a nil server")
	}
	return &local{srv: srv, shm: sysshm.NewRegistry()}
}

type local struct {
	srv    *triton.Server
	shm    *sysshm.Registry
	closed atomic.Bool
}

// check refuses calls on a closed connection, as the remote clients do.
func (l *local) check(a about) error {
	if l.closed.Load() {
		return localError(triton.Unavailable, a, errClosed)
	}
	return nil
}

func (l *local) Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	if req == nil {
		return l.srv.Infer(ctx, req) // the server's error
	}
	if err := l.check(aboutRequest(req)); err != nil {
		return nil, err
	}
	p, ok, err := regions(req)
	if err != nil {
		return nil, err
	}
	if !ok {
		return l.srv.Infer(ctx, req)
	}
	r, outs, release, err := l.place(req, p)
	if err != nil {
		return nil, err
	}
	defer release()
	resp, err := l.srv.Infer(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp, writeRegions(req, resp, outs)
}

func (l *local) InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
	if req == nil {
		return l.srv.InferStream(ctx, req)
	}
	p, ok, err := regions(req)
	if err == nil {
		err = l.check(aboutRequest(req))
	}
	if err != nil {
		return func(yield func(*triton.InferResponse, error) bool) { yield(nil, err) }
	}
	if !ok {
		return l.srv.InferStream(ctx, req)
	}
	return func(yield func(*triton.InferResponse, error) bool) {
		r, outs, release, err := l.place(req, p)
		if err != nil {
			yield(nil, err)
			return
		}
		defer release()
		for resp, err := range l.srv.InferStream(ctx, r) {
			if err == nil {
				err = writeRegions(req, resp, outs)
			}
			if err != nil {
				resp = nil
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// place returns the request the server runs for req: inputs read from
// their regions (copied out, as the adapters do), parameters without the
// regions. outs are the views of the output regions, which release
// releases.
func (l *local) place(req *triton.InferRequest, p placement) (*triton.InferRequest, map[string][]byte, func(), error) {
	a := aboutRequest(req)
	r := *req
	r.Parameters = p.params
	if len(p.inputs) > 0 {
		r.Inputs = slices.Clone(req.Inputs)
		for i := range r.Inputs {
			reg, ok := p.inputs[r.Inputs[i].Name]
			if !ok {
				continue
			}
			data, err := wire.ReadSHM(l.shm, reg.Name, reg.Offset, reg.ByteSize)
			if err != nil {
				return nil, nil, nil, withAbout(a, err)
			}
			r.Inputs[i].Data = data
		}
	}
	var releases []func()
	release := func() {
		for _, f := range releases {
			f()
		}
	}
	outs := make(map[string][]byte, len(p.outputs))
	for name, reg := range p.outputs {
		view, rel, err := l.shm.Use(reg.Name, reg.Offset, reg.ByteSize)
		if err != nil {
			release()
			return nil, nil, nil, withAbout(a, wire.SHMError(err))
		}
		releases = append(releases, rel)
		outs[name] = view
	}
	return &r, outs, release, nil
}

// writeRegions copies the outputs of resp that go to regions into them
// and leaves them without Data, as a remote server answers.
func writeRegions(req *triton.InferRequest, resp *triton.InferResponse, outs map[string][]byte) error {
	if len(outs) == 0 {
		return nil
	}
	for i := range resp.Outputs {
		t := &resp.Outputs[i]
		view, ok := outs[t.Name]
		if !ok {
			continue
		}
		if len(t.Data) > len(view) {
			return localError(triton.InvalidArgument, aboutRequest(req), fmt.Errorf(
				"shared memory size specified with the request for output '%s' (%d bytes) should be at least %d bytes to hold the results",
				t.Name, len(view), len(t.Data)))
		}
		if _, err := sysshm.Copy(view, t.Data); err != nil {
			return withAbout(aboutRequest(req), wire.SHMError(err))
		}
		t.Data = nil
	}
	return nil
}

// withAbout fills in what an adapter-made error concerns.
func withAbout(a about, err error) error {
	if e, ok := errors.AsType[*triton.Error](err); ok && e.Model == "" {
		return &triton.Error{Code: e.Code, Model: a.model, Version: a.version, RequestID: a.id, Err: e.Err}
	}
	return err
}

func (l *local) ServerMetadata(ctx context.Context) (triton.ServerMetadata, error) {
	if err := l.check(about{}); err != nil {
		return triton.ServerMetadata{}, err
	}
	md := l.srv.Metadata()
	md.Extensions = wire.Extensions(md.Extensions, true)
	return md, nil
}

func (l *local) ServerReady(ctx context.Context) (bool, error) {
	return l.srv.Ready(ctx), l.check(about{})
}

func (l *local) ServerLive(ctx context.Context) (bool, error) {
	return l.srv.Live(), l.check(about{})
}

func (l *local) ModelReady(ctx context.Context, model string, version int64) (bool, error) {
	return l.srv.ModelReady(ctx, model, version), l.check(about{model: model, version: version})
}

func (l *local) ModelMetadata(ctx context.Context, model string, version int64) (triton.ModelMetadata, error) {
	if err := l.check(about{model: model, version: version}); err != nil {
		return triton.ModelMetadata{}, err
	}
	return l.srv.ModelMetadata(model, version)
}

func (l *local) ModelConfig(ctx context.Context, model string, version int64) (*modelconfig.ModelConfig, error) {
	if err := l.check(about{model: model, version: version}); err != nil {
		return nil, err
	}
	return l.srv.ModelConfig(model, version)
}

func (l *local) ModelStatistics(ctx context.Context, model string, version int64) ([]triton.ModelStats, error) {
	if err := l.check(about{model: model, version: version}); err != nil {
		return nil, err
	}
	return l.srv.Stats(model, version)
}

func (l *local) Load(ctx context.Context, model string, opts *triton.LoadOptions) error {
	if err := l.check(about{model: model}); err != nil {
		return err
	}
	return l.srv.Load(ctx, model, opts)
}

func (l *local) Unload(ctx context.Context, model string, opts *triton.UnloadOptions) error {
	if err := l.check(about{model: model}); err != nil {
		return err
	}
	return l.srv.Unload(ctx, model, opts)
}

func (l *local) Index(ctx context.Context) ([]triton.ModelState, error) {
	if err := l.check(about{}); err != nil {
		return nil, err
	}
	return l.srv.Index(ctx), nil
}

func (l *local) RegisterSystemSharedMemory(ctx context.Context, name, key string, offset, size uint64) error {
	if err := l.shm.Register(name, key, offset, size); err != nil {
		return wire.SHMError(err)
	}
	return nil
}

func (l *local) UnregisterSystemSharedMemory(ctx context.Context, name string) error {
	var err error
	if name == "" {
		err = l.shm.UnregisterAll()
	} else if err = l.shm.Unregister(name); errors.Is(err, sysshm.ErrNotFound) {
		err = nil // as Triton and the adapters answer
	}
	if err != nil {
		return wire.SHMError(err)
	}
	return nil
}

func (l *local) SystemSharedMemoryStatus(ctx context.Context, name string) ([]sysshm.Region, error) {
	regions, err := l.shm.Status(name)
	if err != nil {
		return nil, &triton.Error{Code: triton.NotFound, Err: fmt.Errorf("Unable to find system shared memory region: '%s'", name)}
	}
	return regions, nil
}

// Close releases the connection's shared-memory regions (the memory of
// regions that requests still use is unmapped when they finish); later
// calls fail with Unavailable. The server is not closed. Close is
// idempotent.
func (l *local) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	return l.shm.Close()
}
