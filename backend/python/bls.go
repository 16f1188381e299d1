package python

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// bls runs a BLS request of the model (InferenceRequest.exec) on the
// server, in a goroutine: inputs are read in place in the stub's region,
// outputs written to the server's region. The request's context is the
// batch's that made it (its deadline, its cancellation, the call path that
// detects cycles), or the instance's for a request made outside a batch;
// it ends with the stub.
func (in *instance) bls(p *proc, m *stubMsg) {
	inputs, err := blsInputs(p, m.Inputs)
	if err != nil {
		in.reply(p, m.Call, m.Model, nil, err, true)
		in.releaseInputs(p, m)
		return
	}
	base := in.ctx
	if m.Batch != nil {
		if r := in.batch(p, *m.Batch); r != nil {
			base = r.ctx
		}
	}
	ctx, cancel := context.WithCancel(base)
	stop := context.AfterFunc(p.ctx, cancel)
	in.mu.Lock()
	if in.calls == nil {
		in.calls = map[uint64]context.CancelFunc{}
	}
	in.calls[m.Call] = cancel
	var cr *credit
	if m.Decoupled {
		cr = &credit{n: sendWindow, more: make(chan struct{}, 1)}
		if in.credits == nil {
			in.credits = map[uint64]*credit{}
		}
		in.credits[m.Call] = cr
	}
	in.mu.Unlock()
	p.users.Add(1)
	in.wg.Go(func() {
		defer p.users.Done()
		defer func() {
			stop()
			cancel()
			in.mu.Lock()
			delete(in.calls, m.Call)
			delete(in.credits, m.Call)
			in.mu.Unlock()
		}()
		in.runBLS(ctx, p, m, inputs, cr)
	})
}

// credit is what the server may still send a decoupled BLS request's
// iterator in the stub: sendWindow responses ahead of those the model has
// taken, which the stub reports (bls_credit) sendWindow/2 at a time, so
// that a model that iterates slowly holds back the called model's stream
// (its Sender blocks) rather than piling responses up in the stub.
type credit struct {
	mu   sync.Mutex
	n    int
	more chan struct{} // signalled when n grows
}

func (c *credit) give(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// take spends one credit, waiting for one while there is none; false
// when ctx ends first.
func (c *credit) take(ctx context.Context) bool {
	if c == nil {
		return true // not a decoupled request: one reply, the final one
	}
	for {
		c.mu.Lock()
		if c.n > 0 {
			c.n--
			c.mu.Unlock()
			return true
		}
		c.mu.Unlock()
		if blsWaitHook != nil {
			blsWaitHook()
		}
		select {
		case <-c.more:
		case <-ctx.Done():
			return false
		}
	}
}

// blsWaitHook, when set (by tests), is called each time a decoupled BLS
// request waits for credits.
var blsWaitHook func()

// blsCredit gives a decoupled BLS request the credits its iterator
// returned.
func (in *instance) blsCredit(call uint64, n int) {
	in.mu.Lock()
	cr := in.credits[call]
	in.mu.Unlock()
	if cr != nil && n > 0 {
		cr.give(n)
	}
}

func (in *instance) runBLS(ctx context.Context, p *proc, m *stubMsg, inputs []tensor.Tensor, cr *credit) {
	caller := in.m.spec.Caller
	if caller == nil {
		in.releaseInputs(p, m)
		in.reply(p, m.Call, m.Model, nil, errors.New("this server runs no other models (no Caller)"), true)
		return
	}
	version := max(m.Version, 0)
	req := &backend.InferRequest{Model: m.Model, Version: version, ID: m.RID, Inputs: inputs, Outputs: m.Outputs,
		Parameters: m.Params, SequenceID: m.Corr, SequenceIDString: m.CorrS,
		SequenceStart: m.Flags&1 != 0, SequenceEnd: m.Flags&2 != 0}
	if m.Timeout > 0 {
		req.Timeout = time.Duration(m.Timeout) * time.Microsecond
	}
	if !m.Decoupled {
		if cfg, err := caller.ModelConfig(m.Model, version); err == nil && cfg.GetModelTransactionPolicy().GetDecoupled() {
			in.releaseInputs(p, m)
			in.reply(p, m.Call, m.Model, nil, fmt.Errorf("Model %s is using the decoupled. The current BLS request call doesn't support models using the decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled models.'", m.Model), true)
			return
		}
		resp, err := caller.Infer(ctx, req)
		in.reply(p, m.Call, m.Model, resp, err, true) // before the inputs go: an output may be one of them
		in.releaseInputs(p, m)
		return
	}
	final := false
	for resp, err := range caller.InferStream(ctx, req) {
		if resp != nil {
			final = resp.Final
		}
		if err != nil {
			final = true
		}
		if !final && !cr.take(ctx) {
			// The call ended (cancelled, the stub gone) while the model had
			// not taken the earlier responses: the last reply says why,
			// beyond the window, so that the stub's iterator ends.
			resp, err, final = nil, context.Cause(ctx), true
		}
		in.reply(p, m.Call, m.Model, resp, err, final)
		if final {
			break
		}
	}
	in.releaseInputs(p, m)
	if !final {
		in.reply(p, m.Call, m.Model, nil, nil, true)
	}
}

// blsInputs are views of a BLS request's inputs in the stub's region.
func blsInputs(p *proc, ws []wireTensor) ([]tensor.Tensor, error) {
	out := make([]tensor.Tensor, len(ws))
	for i, w := range ws {
		dt := tensor.ParseDataType(w.Type)
		if !dt.Valid() {
			return nil, fmt.Errorf("input '%s' has data type %q", w.Name, w.Type)
		}
		region := p.up
		if w.Down {
			region = p.down // a view of the calling execute's input, alive until it returns
		}
		view, err := region.view(w.Off, w.Bytes)
		if err != nil {
			return nil, fmt.Errorf("input '%s': %w", w.Name, err)
		}
		out[i] = tensor.Tensor{Name: w.Name, DataType: dt, Shape: w.Shape, Data: view}
	}
	return out, nil
}

// releaseInputs gives the block of a BLS request's inputs back to the stub.
func (in *instance) releaseInputs(p *proc, m *stubMsg) {
	if off, ok := upBlock(m.Inputs); ok {
		p.up.release(off)
	}
}

// blsCancel cancels a BLS request (ResponseIterator.cancel).
func (in *instance) blsCancel(call uint64) {
	in.mu.Lock()
	cancel := in.calls[call]
	in.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// reply sends a BLS response to the stub: outputs copied into the server's
// region, or the error as Triton words it for BLS.
func (in *instance) reply(p *proc, call uint64, model string, resp *backend.InferResponse, err error, final bool) {
	msg := replyMsg{Op: "reply", Call: call, Final: final}
	var outs []tensor.Tensor
	if resp != nil && err == nil {
		outs, msg.Params = resp.Outputs, resp.Parameters
	}
	if err == nil && len(outs) > 0 {
		var size int64
		for i := range outs {
			size += align(int64(len(outs[i].Data)))
		}
		block, mem, aerr := p.down.alloc(size)
		if aerr != nil {
			err = fmt.Errorf("the outputs of the BLS request: %w", aerr)
		} else {
			msg.Block = &block
			var at int64
			for _, t := range outs {
				copy(mem[at:], t.Data)
				msg.Outputs = append(msg.Outputs, wireTensor{Name: t.Name, Type: t.DataType.String(), Shape: t.Shape, Off: block + at, Bytes: int64(len(t.Data))})
				at += align(int64(len(t.Data)))
			}
		}
	}
	if err != nil {
		msg.Error = &wireError{Msg: "Model " + model + " - Error when running inference: " + errorText(err), Code: tritonCode(err)}
		msg.Outputs, msg.Block, msg.Params = nil, nil, nil
	}
	if serr := p.async.send(&msg); serr != nil {
		in.log.Debug("a BLS response did not reach the stub", zap.Error(serr))
		if msg.Block != nil {
			p.down.release(*msg.Block)
		}
	}
}

// errorText is an error's text as Triton's clients read it.
func errorText(err error) string {
	if e, ok := errors.AsType[interface {
		error
		Message() string
	}](err); ok {
		return e.Message()
	}
	return err.Error()
}

// tritonCode is an error's TRITONSERVER_Error_Code number.
func tritonCode(err error) int {
	if e, ok := errors.AsType[interface {
		error
		TritonCode() int
	}](err); ok {
		return e.TritonCode()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return 7
	case errors.Is(err, backend.ErrInvalidInput):
		return 3
	case errors.Is(err, backend.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return 4
	case errors.Is(err, errors.ErrUnsupported):
		return 5
	}
	return 1
}
