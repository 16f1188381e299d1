package python

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/triton-go/triton/backend"
)

// control runs a model-control call of the model.py (pb_utils.load_model,
// unload_model, is_model_ready) on the server, in a goroutine (a load
// takes as long as the model's own load, and the stub's other messages
// must go on), and answers it on the event socket. Its context is the
// batch's that made it, that of the initialize under way (its load's: a
// model's initialize cannot load itself), or the instance's; it ends with
// the stub.
func (in *instance) control(p *proc, m *stubMsg) {
	base := in.ctx
	p.mu.Lock()
	if p.initCtx != nil {
		base = p.initCtx
	}
	p.mu.Unlock()
	if m.Batch != nil {
		if r := in.batch(p, *m.Batch); r != nil {
			base = r.ctx
		}
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(p.ctx, cancel)
	in.wg.Go(func() {
		defer stop()
		defer cancel()
		msg := replyMsg{Op: "reply", Call: m.Call, Final: true}
		ready, err := in.runControl(ctx, m)
		if err != nil {
			msg.Error = &wireError{Msg: errorText(err), Code: tritonCode(err)}
		}
		msg.Ready = ready
		_ = p.async.send(&msg) // a stub that is gone waits for nothing
	})
}

func (in *instance) runControl(ctx context.Context, m *stubMsg) (ready bool, err error) {
	caller := in.m.spec.Caller
	if caller == nil {
		return false, errors.New("this server runs no other models (no Caller)")
	}
	if m.What == "ready" {
		if m.Version == 0 {
			return false, nil // Triton's version 0: no such version
		}
		return caller.ModelReady(ctx, m.Model, max(m.Version, 0)), nil
	}
	mc, ok := caller.(backend.ModelLoader)
	if !ok {
		return false, errors.New("this server does not let its models load or unload models")
	}
	switch m.What {
	case "load":
		files := make(map[string][]byte, len(m.Files))
		for k, v := range m.Files {
			path, ok := strings.CutPrefix(k, "file:")
			if !ok {
				return false, fmt.Errorf("unrecognized load parameter '%s'.", k) // the repository API's words
			}
			files[path] = v
		}
		return false, mc.LoadModel(ctx, m.Model, m.Config, files)
	case "unload":
		return false, mc.UnloadModel(ctx, m.Model, m.Dependents)
	}
	return false, errors.New("unknown model-control call " + m.What)
}
