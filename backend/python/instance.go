package python

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// userReadyTimeout bounds a model's is_ready, as Triton's
// kUserModelReadinessTimeoutMs.
const userReadyTimeout = 5 * time.Second

var (
	_ backend.Instance = (*instance)(nil)
	_ backend.Readier  = (*instance)(nil)
)

// instance is one model instance: its stub process, replaced when it dies.
type instance struct {
	m    *model
	spec backend.InstanceSpec
	log  *zap.Logger

	ctx    context.Context // until Close: sends to response senders, BLS calls, restarts
	cancel context.CancelFunc
	ready  singleflight.Group // the is_ready call in flight, which concurrent checks share
	wg     sync.WaitGroup     // every goroutine the instance starts

	mu sync.Mutex
	// mu protects the following.
	p           *proc           // the stub; nil while there is none
	restart     chan struct{}   // closed when the restart under way ends; nil when none
	downErr     error           // why there is no stub, once a restart failed
	closed      bool            // Close was called
	batches     map[uint64]*run // batches a stub has not finished with
	nextID      uint64
	restarts    int
	quickDeaths int                           // stubs in a row that died within stableStub of starting
	calls       map[uint64]context.CancelFunc // BLS requests in flight, by the stub's call id
	credits     map[uint64]*credit            // decoupled BLS requests in flight, by the stub's call id
	metrics     *customMetrics
}

func newInstance(m *model, spec backend.InstanceSpec) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	return &instance{m: m, spec: spec, log: m.log.With(zap.String("instance", spec.Name)),
		ctx: ctx, cancel: cancel, batches: map[uint64]*run{}, metrics: newCustomMetrics(m.spec.Metrics)}
}

// launch starts the instance's first stub.
func (in *instance) launch(ctx context.Context) error {
	p, err := in.m.start(ctx, in)
	if err != nil {
		return err
	}
	in.adopt(p)
	return nil
}

// adopt makes p the instance's stub and watches it.
func (in *instance) adopt(p *proc) {
	in.mu.Lock()
	in.p = p
	in.downErr = nil
	in.mu.Unlock()
	in.wg.Go(func() { in.watch(p) })
}

// watch waits for p to end, fails what it was doing, and starts a new
// stub unless the instance is closing.
func (in *instance) watch(p *proc) {
	<-p.dead
	cause := p.err()
	in.mu.Lock()
	if in.p == p {
		in.p = nil
	}
	var lost []*run
	for id, r := range in.batches {
		if r.p == p {
			lost = append(lost, r)
			delete(in.batches, id)
		}
	}
	if time.Since(p.started) < stableStub {
		in.quickDeaths++
	} else {
		in.quickDeaths = 0
	}
	if !in.closed && in.restart == nil {
		in.beginRestart(cause)
	}
	in.mu.Unlock()
	close(p.handled)
	for _, r := range lost {
		in.abandon(r, cause)
	}
	in.metrics.closeOwner(p)
	p.release()
}

// stableStub is how long a stub must have lived for its death not to
// count towards the restart backoff.
const stableStub = 10 * time.Second

// restartDelay is the wait before starting a new stub after n stubs in a
// row died young: none for the first, then 100 ms doubling to 30 s, so
// that a model that crashes at once does not restart in a busy loop.
func restartDelay(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(100*time.Millisecond<<min(n-2, 9), 30*time.Second)
}

// beginRestart starts a new stub in the background. in.mu is held.
func (in *instance) beginRestart(cause error) {
	in.restarts++
	n := in.restarts
	delay := restartDelay(in.quickDeaths)
	in.log.Warn("the stub process ended; starting a new one", zap.Error(cause), zap.Int("restart", n), zap.Duration("after", delay))
	ch := make(chan struct{})
	in.restart = ch
	in.wg.Go(func() {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-in.ctx.Done():
				t.Stop()
			}
		}
		p, err := in.m.start(in.ctx, in)
		in.mu.Lock()
		in.restart = nil
		closed := in.closed
		if err != nil {
			in.downErr = fmt.Errorf("%v Starting a new stub failed: %w", cause, err)
			in.log.Error("starting a new stub failed", zap.Error(err))
		}
		in.mu.Unlock()
		if err == nil {
			if closed {
				p.shutdown(in.m.b.stubTimeout)
			} else {
				in.adopt(p)
				in.log.Info("a new stub process serves the instance", zap.Int("restart", n))
			}
		}
		close(ch)
	})
}

// current returns the stub, waiting while a new one starts, with a user
// reference (release with p.users.Done()).
func (in *instance) current(ctx context.Context) (*proc, error) {
	tried := false
	for {
		in.mu.Lock()
		if in.closed {
			in.mu.Unlock()
			return nil, fmt.Errorf("instance '%s' is closed: %w", in.spec.Name, backend.ErrUnavailable)
		}
		if p := in.p; p != nil {
			if p.alive() {
				p.users.Add(1)
				in.mu.Unlock()
				return p, nil
			}
			in.mu.Unlock()
			<-p.handled // watch replaces it
			continue
		}
		ch := in.restart
		if ch == nil {
			if tried || in.downErr == nil {
				err := in.downErr
				in.mu.Unlock()
				if err == nil {
					err = fmt.Errorf("Stub process '%s' is not healthy.", in.spec.Name)
				}
				return nil, err
			}
			tried = true // the last start failed: try once more, for this batch
			in.beginRestart(in.downErr)
			ch = in.restart
		}
		in.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// run is one batch the stub executes: its requests and how far they are.
type run struct {
	id        uint64
	p         *proc
	ctx       context.Context
	reqs      []*backend.Request
	senders   []*backend.Sender // decoupled models
	out       []*outbox         // decoupled models: what goes to senders
	block     int64             // the down block holding the cancel flags and the inputs
	decoupled bool
	finished  chan struct{} // closed once every request is complete and execute returned
	fail      error         // the batch's error (execute raised); set before done

	mu sync.Mutex
	// mu protects the following (Execute and the event reader both
	// complete requests).
	complete []bool
	open     int
	done     bool
	ended    bool // finished is closed
	held     bool // the stub's answer: the model still holds some of the batch's inputs
	released bool // block went back to the region: nothing may write there (markCancelled)
}

// markCancelled raises request i's cancel flag in the batch's block, which
// the stub's is_cancelled reads, unless the block has gone back to the
// region (and may be another batch's by now).
func (r *run) markCancelled(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.released {
		r.p.down.mark(r.block + int64(4*i))
	}
}

// Execute sends the batch to the stub and waits for its responses (a
// default model) or for execute to return (a decoupled model, whose
// responses go on through the requests' senders). The answer is read on
// this goroutine.
func (in *instance) Execute(ctx context.Context, b *backend.Batch) error {
	p, err := in.current(ctx)
	if err != nil {
		return err
	}
	defer p.users.Done()
	r, msg, err := in.prepare(ctx, p, b)
	if err != nil {
		return err
	}
	b.MarkInputsDone()
	w := in.watchHang(ctx, p, r)
	ans, err := p.exchange(msg)
	w.stop()
	if err != nil {
		return err // watch abandons the batch
	}
	b.MarkInferDone()
	p.waitSeen(ans.Seq) // first the responses its senders sent before execute returned
	in.done(p, r, ans)
	// The blocks the model let go of in this execute, once the responses
	// are read (one of them may hold an output that is a view of an input)
	// and before the next batch is written.
	for _, id := range ans.Freed {
		p.inputsFreed(id)
	}
	if err := in.rescheduled(ctx, r); err != nil {
		return err
	}
	if !r.decoupled {
		select {
		case <-r.finished:
		case <-p.dead: // requests answered later through their senders, which died
			return p.err()
		case <-ctx.Done(): // a request still to be answered through its sender
			in.failPending(r, ctx.Err())
		}
	}
	if r.fail != nil && !r.decoupled {
		return r.fail
	}
	return nil
}

// hangWatch kills a stub still executing a batch stubTimeout after every
// request's deadline or cancellation: it is hung, and a new one will serve.
// A cancellation is also told to the model (is_cancelled).
type hangWatch struct {
	mu     sync.Mutex
	timers []*time.Timer
	after  func() bool
	done   bool
}

func (in *instance) watchHang(ctx context.Context, p *proc, r *run) *hangWatch {
	at, ok := hangDeadline(ctx, r.reqs)
	if !ok && ctx.Done() == nil {
		return nil // no deadline, no cancellation: nothing to watch for
	}
	w := &hangWatch{}
	grace := in.m.b.stubTimeout
	kill := func() {
		p.kill(fmt.Sprintf("it was still executing %s after the deadline of every request of the batch (stub-timeout-seconds); it was killed", grace))
	}
	arm := func(d time.Duration) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.done {
			w.timers = append(w.timers, time.AfterFunc(d, kill))
		}
	}
	if ok {
		arm(time.Until(at) + grace)
	}
	w.after = context.AfterFunc(ctx, func() {
		for i := range r.reqs {
			r.markCancelled(i)
		}
		arm(grace)
	})
	return w
}

func (w *hangWatch) stop() {
	if w == nil {
		return
	}
	w.after()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	for _, t := range w.timers {
		t.Stop()
	}
}

// hangDeadline is when every request of the batch has passed its
// deadline: ctx's, or each request's own timeout. ok is false when some
// request has none.
func hangDeadline(ctx context.Context, reqs []*backend.Request) (time.Time, bool) {
	if d, ok := ctx.Deadline(); ok {
		return d, true
	}
	var last time.Time
	now := time.Now()
	for _, r := range reqs {
		if r.Timeout <= 0 {
			return time.Time{}, false
		}
		if at := now.Add(r.Timeout); at.After(last) {
			last = at
		}
	}
	return last, len(reqs) > 0
}

// prepare writes the batch's inputs into the stub's shared memory and
// registers the batch.
func (in *instance) prepare(ctx context.Context, p *proc, b *backend.Batch) (*run, *executeMsg, error) {
	n := len(b.Requests)
	size := align(int64(4 * n))
	for _, req := range b.Requests {
		for i := range req.Inputs {
			size += align(int64(len(req.Inputs[i].Data)))
		}
	}
	block, mem, err := p.down.alloc(size)
	if err != nil {
		if h := p.heldInputs(); h > 0 {
			err = fmt.Errorf("%w; the model still holds inputs of %d earlier batches (requests, tensors or arrays it kept)", err, h)
		}
		return nil, nil, fmt.Errorf("model '%s': the inputs of the batch: %w: %w", in.m.spec.Name, err, backend.ErrUnavailable)
	}
	clear(mem[:4*n])
	at := align(int64(4 * n))
	msg := &executeMsg{Flags: block, Requests: make([]wireRequest, n)}
	r := &run{p: p, ctx: ctx, reqs: b.Requests, block: block, decoupled: in.m.decoupled,
		finished: make(chan struct{}), complete: make([]bool, n), open: n}
	for i, req := range b.Requests {
		w := &msg.Requests[i]
		w.ID, w.Timeout, w.Params = req.ID, req.Timeout.Microseconds(), req.Parameters
		switch {
		case req.SequenceIDString != "":
			w.Corr = req.SequenceIDString
		case req.SequenceID != 0:
			w.Corr = req.SequenceID
		}
		if req.SequenceStart {
			w.Flags |= 1
		}
		if req.SequenceEnd {
			w.Flags |= 2
		}
		w.Outputs = req.RequestedOutputs
		if len(w.Outputs) == 0 {
			w.Outputs = in.m.outputs
		}
		w.Inputs = make([]wireTensor, len(req.Inputs))
		for j := range req.Inputs {
			t := &req.Inputs[j]
			copy(mem[at:], t.Data)
			w.Inputs[j] = wireTensor{Name: t.Name, Type: t.DataType.String(), Shape: t.Shape, Off: block + at, Bytes: int64(len(t.Data))}
			at += align(int64(len(t.Data)))
		}
		if r.decoupled {
			s := req.Sender()
			if s == nil {
				p.down.release(block)
				return nil, nil, fmt.Errorf("model '%s' is decoupled but request %q has no response sender", in.m.spec.Name, req.ID)
			}
			r.senders = append(r.senders, s)
			r.out = append(r.out, &outbox{sender: s})
		}
	}
	in.mu.Lock()
	in.nextID++
	r.id = in.nextID
	in.batches[r.id] = r
	in.mu.Unlock()
	msg.ID = r.id
	if r.decoupled {
		for i, s := range r.senders {
			in.wg.Go(func() {
				select {
				case <-s.Done():
					if s.Err() != nil { // cancelled, not finished: tell the model
						r.markCancelled(i)
					}
				case <-r.finished:
				}
			})
		}
	}
	return r, msg, nil
}

func align(n int64) int64 { return (n + 63) &^ 63 }

// message handles what the stub says on its own (handler).
func (in *instance) message(p *proc, m *stubMsg) {
	switch m.Op {
	case "send":
		in.send(p, m)
	case "dropped":
		in.dropped(p, m)
	case "freed":
		if m.Batch != nil {
			p.inputsFreed(*m.Batch)
		}
	case "bls":
		in.bls(p, m)
	case "bls_cancel":
		in.blsCancel(m.Call)
	case "control":
		in.control(p, m)
	case "bls_credit":
		in.blsCredit(m.Call, m.N)
	case "log":
		in.logLine(m)
	case "family", "metric", "metric_value", "metric_op", "family_close", "metric_close":
		in.metricMsg(p, m)
	default:
		in.log.Warn("the stub sent a message of an unknown kind", zap.String("op", m.Op))
	}
}

// openRequest returns, with its mu held, the batch of the request a
// stub's message names (batch, req), when the batch is p's and still
// running and that request is not complete yet; else nil.
func (in *instance) openRequest(p *proc, m *stubMsg) *run {
	if m.Batch == nil {
		return nil
	}
	r := in.batch(p, *m.Batch)
	if r == nil || m.Req < 0 || m.Req >= len(r.reqs) {
		return nil
	}
	r.mu.Lock()
	if r.complete[m.Req] {
		r.mu.Unlock()
		return nil
	}
	return r
}

// batch returns the batch id names, if it is p's and still running.
func (in *instance) batch(p *proc, id uint64) *run {
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.batches[id]
	if r == nil || r.p != p {
		return nil
	}
	return r
}

// done applies the stub's answer to execute.
func (in *instance) done(p *proc, r *run, m *stubMsg) {
	if m.Op != "done" || m.ID != r.id {
		p.kill(fmt.Sprintf("it answered %q (batch %d) to the execute of batch %d", m.Op, m.ID, r.id))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.Fail != nil {
		r.fail = fmt.Errorf("Failed to process the request(s) for model '%s', message: %s", in.spec.Name, *m.Fail)
		if end := r.ctx.Err(); end != nil {
			// Every request of the batch had ended (cancelled, or past
			// its deadline) when execute raised: most likely because the
			// model saw that (is_cancelled, a BLS request that ended with
			// them). The failure wraps the end, so that the requests are
			// counted cancelled or late, not failed by the backend.
			r.fail = fmt.Errorf("%w; the request(s) had ended: %w", r.fail, end)
		}
		in.log.Error("execute failed", zap.String("error", *m.Fail))
		for i := range r.reqs {
			if !r.complete[i] {
				if r.decoupled {
					in.forward(p, r, i, backend.Response{Err: r.fail, Final: true})
				}
				r.completed(i)
			}
		}
	} else {
		for _, i := range m.Resched {
			if i >= 0 && i < len(r.reqs) && !r.complete[i] {
				r.reqs[i].Reschedule() // the server runs it again in a later batch (see rescheduled)
			}
		}
		for i, resp := range m.Responses { // none for a decoupled model
			if i >= len(r.reqs) || resp == nil || r.complete[i] {
				continue
			}
			in.apply(p, r.reqs[i], resp, m.Block == nil)
			r.completed(i)
		}
	}
	if m.Block != nil {
		p.up.release(*m.Block)
	}
	r.held = m.Held
	r.done = true
	in.finishIfDone(r)
}

// send handles a response from a response sender.
func (in *instance) send(p *proc, m *stubMsg) {
	r := in.openRequest(p, m)
	if r == nil {
		// Its request has ended (a deadline, a failed execute): nobody
		// takes the response, and its block goes back to the stub.
		if m.Response != nil {
			if off, ok := upBlock(m.Response.Outputs); ok {
				p.up.release(off)
			}
		}
		return
	}
	defer r.mu.Unlock()
	if r.decoupled {
		resp := backend.Response{Final: m.Final}
		if m.Response != nil {
			resp.Outputs, resp.Err = in.read(p, m.Response, true)
			resp.Parameters = m.Response.Params
		}
		in.forward(p, r, m.Req, resp)
	} else if m.Response != nil {
		in.apply(p, r.reqs[m.Req], m.Response, true)
	}
	if m.Final {
		r.completed(m.Req)
		in.finishIfDone(r)
	}
}

// dropped fails a request that execute returned without answering and
// whose Python request and response sender were then both freed without
// a final response: nothing in the stub can answer it any more (Triton's
// client would wait for ever).
func (in *instance) dropped(p *proc, m *stubMsg) {
	r := in.openRequest(p, m)
	if r == nil {
		return
	}
	defer r.mu.Unlock()
	err := fmt.Errorf("model '%s' returned from execute without a response for %s, then released the request and its response sender "+
		"without sending the final response (TRITONSERVER_RESPONSE_COMPLETE_FINAL): nothing can answer it", in.m.spec.Name, requestName(r.reqs[m.Req]))
	in.log.Error("a request was dropped unanswered", zap.String("request", r.reqs[m.Req].ID))
	if r.decoupled {
		in.forward(p, r, m.Req, backend.Response{Err: err, Final: true})
	} else {
		r.reqs[m.Req].Fail(err)
	}
	r.completed(m.Req)
	in.finishIfDone(r)
}

// failPending fails the requests of a default model's batch that execute
// left to their response senders and that have not been answered when the
// batch's context ends (the client's deadline or cancellation).
// The model may still hold such a request and read its inputs (their
// shared memory stays the stub's while it does: see finishIfDone); each is
// marked cancelled, for is_cancelled.
func (in *instance) failPending(r *run, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, req := range r.reqs {
		if !r.complete[i] {
			req.Fail(fmt.Errorf("model '%s' had not sent the response of %s through its response sender: %w", in.m.spec.Name, requestName(req), cause))
			r.completed(i)
			r.p.down.mark(r.block + int64(4*i))
		}
	}
	in.finishIfDone(r)
}

// requestName names req in a message: "request 'id'", or "a request"
// when it has no ID.
func requestName(req *backend.Request) string {
	if req.ID == "" {
		return "a request"
	}
	return "request '" + req.ID + "'"
}

// rescheduled ends the part in batch r of the requests the model
// rescheduled, once what their senders sent in this execution has been
// handled: a decoupled request's next execution sends on the same Sender,
// so what this one sent is handed on first.
func (in *instance) rescheduled(ctx context.Context, r *run) error {
	r.mu.Lock()
	var wait []*outbox
	for i, req := range r.reqs {
		if req.Rescheduled() && !r.complete[i] {
			r.completed(i)
			if r.decoupled {
				wait = append(wait, r.out[i])
			}
		}
	}
	in.finishIfDone(r)
	r.mu.Unlock()
	for _, o := range wait {
		if err := o.drained(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) completed(i int) {
	if !r.complete[i] {
		r.complete[i] = true
		r.open--
	}
}

// finishIfDone ends a batch whose every request is complete: its shared
// memory goes back, the stub's references to it end. r.mu is held.
func (in *instance) finishIfDone(r *run) {
	if !r.done || r.open > 0 || r.ended {
		return
	}
	in.mu.Lock()
	_, mine := in.batches[r.id]
	delete(in.batches, r.id)
	in.mu.Unlock()
	if mine {
		r.ended = true
		r.p.endInputs(r)
		close(r.finished)
	}
}

// abandon ends a batch whose stub died.
func (in *instance) abandon(r *run, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	if r.decoupled {
		for i := range r.senders {
			if !r.complete[i] {
				in.forward(r.p, r, i, backend.Response{Err: cause, Final: true})
			}
		}
	}
	close(r.finished)
}

// sendWindow is how many responses of one request of a decoupled model
// the stub may send ahead of what the server has handed on to the
// request's Sender: the stub's response sender starts with that many
// credits and waits when it has none left (see outbox).
const sendWindow = 16

// outbox takes the responses of one request of a decoupled model to its
// Sender, in order, without ever blocking the stub's event reader: a
// response the Sender's buffer has no room for (its consumer reads
// slowly) waits here for a goroutine that hands it on as room comes, while
// the reader goes on with the stub's other requests and messages. The
// stub's credits bound what waits to sendWindow responses; each response
// handed on, or dropped because the stream has ended, earns a credit back,
// returned to the stub sendWindow/2 at a time.
type outbox struct {
	sender *backend.Sender

	mu sync.Mutex
	// mu protects the following.
	queue   []backend.Response
	running bool          // a goroutine is emptying queue
	idle    chan struct{} // closed when that goroutine ends; nil when none runs
	owed    int           // credits earned and not returned yet
}

// drained waits until nothing of the request waits to be handed on.
func (o *outbox) drained(ctx context.Context) error {
	o.mu.Lock()
	idle := o.idle
	o.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// forward hands resp, request i's, on to its Sender: at once when nothing
// of the request waits and the Sender has room, else after what waits.
func (in *instance) forward(p *proc, r *run, i int, resp backend.Response) {
	o := r.out[i]
	o.mu.Lock()
	if len(o.queue) == 0 && !o.running {
		sent, err := o.sender.TrySend(resp)
		if sent || err != nil {
			o.mu.Unlock()
			in.handedOn(p, r, i, resp, err)
			return
		}
	}
	o.queue = append(o.queue, resp)
	start := !o.running
	if start {
		o.running, o.idle = true, make(chan struct{})
	}
	o.mu.Unlock()
	if outboxWaitHook != nil {
		outboxWaitHook()
	}
	if start {
		in.wg.Go(func() { in.drain(p, r, i) })
	}
}

// outboxWaitHook, when set (by tests), is called each time a response
// waits in an outbox for room in its Sender.
var outboxWaitHook func()

// drain hands request i's waiting responses on, waiting for room in its
// Sender; it ends once none waits. A stream that ends (the consumer went
// away, the instance closes) fails the waits at once.
func (in *instance) drain(p *proc, r *run, i int) {
	o := r.out[i]
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			o.running = false
			close(o.idle)
			o.idle = nil
			o.mu.Unlock()
			return
		}
		resp := o.queue[0]
		o.queue[0] = backend.Response{}
		o.queue = o.queue[1:]
		o.mu.Unlock()
		in.handedOn(p, r, i, resp, o.sender.Send(in.ctx, resp))
	}
}

// handedOn records that request i's resp has left the server's hands
// (err: it was dropped) and returns the stub its credits once
// sendWindow/2 are owed; none after the request's final response, after
// which its sender sends no more.
func (in *instance) handedOn(p *proc, r *run, i int, resp backend.Response, err error) {
	if err != nil && !resp.Final {
		in.log.Debug("a response of the stub was not delivered", zap.String("request", r.reqs[i].ID), zap.Error(err))
	}
	o := r.out[i]
	o.mu.Lock()
	o.owed++
	n := o.owed
	if n < sendWindow/2 || resp.Final {
		o.mu.Unlock()
		return // the sender will not send again after its final response
	}
	o.owed = 0
	o.mu.Unlock()
	if err := p.async.send(&creditMsg{Batch: r.id, Req: i, N: n}); err != nil {
		in.log.Debug("credits not returned to the stub", zap.Error(err))
	}
}

// apply sets a default model's response on its request; release gives
// the response's own block back.
func (in *instance) apply(p *proc, req *backend.Request, resp *wireResponse, release bool) {
	outs, err := in.read(p, resp, release)
	if err != nil {
		req.Fail(err)
		return
	}
	for _, t := range outs {
		req.SetOutput(t)
	}
	for k, v := range resp.Params {
		req.SetParameter(k, v)
	}
}

// read copies a response's tensors out of shared memory (release: and
// gives its block back), or returns its error.
func (in *instance) read(p *proc, resp *wireResponse, release bool) ([]tensor.Tensor, error) {
	if e := resp.Error; e != nil {
		return nil, &pyError{msg: e.Msg, code: e.Code}
	}
	if release {
		if off, ok := upBlock(resp.Outputs); ok {
			defer p.up.release(off)
		}
	}
	if len(resp.Outputs) == 0 {
		return nil, nil
	}
	return readTensors(p, resp.Outputs, in.m.spec.Name)
}

// upBlock is the block of the stub's region that holds a response's
// outputs: the first's that is not in the server's region.
func upBlock(ws []wireTensor) (int64, bool) {
	for _, w := range ws {
		if !w.Down {
			return w.Off, true
		}
	}
	return 0, false
}

// readTensors copies tensors out of the stub's region, or out of the
// server's for an output that is a view of an input (whose block lives
// until its request is complete, after this copy).
func readTensors(p *proc, ws []wireTensor, model string) ([]tensor.Tensor, error) {
	out := make([]tensor.Tensor, len(ws))
	for i, w := range ws {
		dt := tensor.ParseDataType(w.Type)
		if !dt.Valid() {
			return nil, fmt.Errorf("model '%s': output '%s' has data type %q", model, w.Name, w.Type)
		}
		region := p.up
		if w.Down {
			region = p.down
		}
		view, err := region.view(w.Off, w.Bytes)
		if err != nil {
			return nil, fmt.Errorf("model '%s': output '%s': %w", model, w.Name, err)
		}
		t := tensor.Tensor{Name: w.Name, DataType: dt, Shape: w.Shape, Data: append([]byte(nil), view...)}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("model '%s': output '%s': %w", model, w.Name, err)
		}
		out[i] = t
	}
	return out, nil
}

// logLine writes a model's Logger message.
func (in *instance) logLine(m *stubMsg) {
	fields := []zap.Field{zap.String("instance", in.spec.Name), zap.String("file", m.File+":"+strconv.Itoa(m.Line))}
	log := in.m.log
	switch m.Level {
	case 1:
		log.Warn(m.Msg, fields...)
	case 2:
		log.Error(m.Msg, fields...)
	case 3:
		log.Debug(m.Msg, fields...)
	default:
		log.Info(m.Msg, fields...)
	}
}

// Ready reports whether the stub runs and, where the model defines
// is_ready, what it says (at most 5 s).
func (in *instance) Ready(ctx context.Context) error {
	in.mu.Lock()
	p, down := in.p, in.downErr
	in.mu.Unlock()
	if p == nil || !p.alive() {
		if down != nil {
			return down
		}
		return fmt.Errorf("Stub process '%s' is not healthy.", in.spec.Name)
	}
	if !p.hasReady {
		return nil
	}
	// Concurrent checks share one call, as Triton's do: a flood of them
	// costs the stub one is_ready thread, not one each.
	ch := in.ready.DoChan("", func() (any, error) { return nil, in.askReady(p) })
	if readyJoinHook != nil {
		readyJoinHook()
	}
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readyJoinHook, when set (by tests), is called each time a readiness
// check has joined the shared is_ready call.
var readyJoinHook func()

// askReady calls the model's is_ready in stub p, for every check that
// joined; it ends with the instance (Close) or after userReadyTimeout.
func (in *instance) askReady(p *proc) error {
	ctx, cancel := context.WithTimeout(in.ctx, userReadyTimeout)
	defer cancel()
	m, err := p.call(ctx, "ready")
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return tritonErrorf(codeUnavailable, "Timed out waiting for user-defined is_ready() response")
	case err != nil && !p.alive():
		return errors.New("Stub process is not healthy while waiting for user-defined is_ready() response")
	case err != nil:
		return err
	case m.Error != nil:
		return errors.New(m.Error.Msg)
	case m.Ready == nil || !*m.Ready:
		return tritonErrorf(codeUnavailable, "Model '%s' is not ready (user-defined check failed).", in.spec.Name)
	}
	return nil
}

// Close finalizes and stops the stub; it waits for every goroutine of the
// instance.
func (in *instance) Close() error {
	in.mu.Lock()
	in.closed = true
	restart := in.restart
	in.mu.Unlock()
	in.cancel()
	if restart != nil {
		<-restart
	}
	in.mu.Lock()
	p := in.p
	in.mu.Unlock()
	if p != nil {
		p.shutdown(in.m.b.stubTimeout)
	}
	in.wg.Wait()
	in.metrics.closeOwner(nil)
	return nil
}

// pyError is an error with Triton's own text, classified by a TritonError
// code: an error response of a Python model (its message as the model
// wrote it), or an error of this backend whose text is Triton's
// (tritonErrorf), which a sentinel wrapped with %w would lengthen.
type pyError struct {
	msg  string
	code int
}

func (e *pyError) Error() string { return e.msg }

// TritonError codes of the backend's own errors (tritonErrorf).
const (
	codeInvalidArg  = 3
	codeUnavailable = 4
	codeUnsupported = 5
)

// tritonErrorf is an error whose text is exactly Triton's, with its code.
func tritonErrorf(code int, format string, args ...any) error {
	return &pyError{msg: fmt.Sprintf(format, args...), code: code}
}

// TritonCode is the TritonError's code (backend.TritonCoder), which also
// gives UNKNOWN and ALREADY_EXISTS, codes no sentinel stands for.
func (e *pyError) TritonCode() int { return e.code }

// Unwrap gives the sentinel the server classifies the code by.
func (e *pyError) Unwrap() error {
	switch e.code {
	case 2:
		return fs.ErrNotExist
	case 3:
		return backend.ErrInvalidInput
	case 4:
		return backend.ErrUnavailable
	case 5:
		return errors.ErrUnsupported
	case 7:
		return context.Canceled
	}
	return nil
}
