package perf

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/tensor"
)

// load.go generates the load: closed-loop workers for concurrency mode,
// and for rate modes a dispatcher that releases requests at their
// scheduled times to a pool of senders. Every request becomes a sample in
// its worker's recorder; the measurement (measure.go) cuts the samples
// into windows.
//
// # The hot path
//
// A worker owns one InferRequest and points it at prepared inputs
// (requests.go), so a send allocates nothing of the tool's own; it reads
// the clock before and after the call and appends a 24-byte sample under
// its recorder's mutex, which only the measurement takes, once per
// window. Two clock reads (a vDSO call each) and an uncontended lock are
// the whole per-request cost; see doc.go for the figures.
//
// # Rate mode and coordinated omission
//
// Senders record the intended send time as the sample's start, so a
// request the tool could not send on time (all senders busy, a late
// timer, a slow server holding the connection) is charged with its wait.
// perf_analyzer starts the clock at the actual send and only counts
// sends more than 1 ms late as "delayed"; the delayed count is kept here
// too, for its warning. The sender pool grows as needed, up to
// maxSenders, so a slow server does not throttle the offered load the way
// a fixed set of synchronous threads would.

// sample is one completed request. start is when it was sent (closed
// loop) or scheduled to be sent (rate modes); end when its last response
// arrived; both in ns on the run's clock.
type sample struct {
	start, end int64
	responses  uint32
	flags      uint32
}

const (
	flagDelayed uint32 = 1 << iota // sent more than delayTolerance after its slot
	flagSeqEnd                     // the last request of a sequence
)

// delayTolerance is perf_analyzer's: a send later than this is delayed.
const delayTolerance = int64(time.Millisecond)

// defaultMaxSenders bounds the rate-mode sender pool; past it the
// dispatcher waits for a free sender and its sends are late (and counted
// so).
const defaultMaxSenders = 10000

// recorder holds a worker's samples and counters until the measurement
// collects them.
type recorder struct {
	mu sync.Mutex
	// mu protects the following.
	samples []sample
	// completed, reqNS: requests answered and their time in the client
	// call (perf_analyzer's client library stats); sendNS, recvNS: the
	// client's send and receive time in those calls (client.Timing).
	completed      uint64
	reqNS          int64
	sendNS, recvNS int64
	// idleNS is time spent waiting (in the call, for a slot, for the
	// next scheduled send); sent counts sends.
	idleNS int64
	sent   uint64

	_ [64]byte // keeps neighbouring recorders off one cache line
}

// clock reads monotonic ns since the run began.
type clock struct{ base time.Time }

func (c clock) now() int64 { return int64(time.Since(c.base)) }

// loader runs the load. Its methods are called from the measurement's
// goroutine; workers run on their own.
type loader struct {
	conn      client.Inferer
	model     *modelInfo
	reqs      *requestSet
	clk       clock
	streaming bool
	timing    bool       // ask the client for send and receive times (remote protocols)
	seqs      *sequencer // nil unless the model is a sequence model
	shm       *shmState  // --shared-memory=system; nil otherwise
	template  triton.InferRequest

	ctx    context.Context // the requests' context, cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every worker and the dispatcher

	failOnce sync.Once
	failed   chan struct{} // closed on the first failure
	err      error         // the first failure; set before failed closes
	stopping atomic.Bool   // errors after this are the shutdown's, not the server's

	maxSenders int // defaultMaxSenders; tests lower it

	mu sync.Mutex
	// mu protects the following.
	workers []*worker // every worker ever started: their recorders may hold samples
	active  []*worker // closed-loop workers at the current concurrency

	rate *dispatcher // the current rate step's dispatcher, nil between steps
	pool *senderPool // rate-mode senders, kept across steps
	free [][]sample  // sample slices to hand out again
	// capHint is the capacity a fresh sample slice gets: a window's
	// worth for one worker at the warm-up's pace, so that slices do not
	// grow (and copy) on the workers' path during the first windows.
	capHint int
}

func newLoader(conn client.Inferer, m *modelInfo, reqs *requestSet, cfg *Config, clk clock, seqs *sequencer) *loader {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loader{
		conn: conn, model: m, reqs: reqs, clk: clk, seqs: seqs,
		streaming: cfg.Streaming || m.decoupled,
		timing:    cfg.Protocol != InProcess,
		ctx:       ctx, cancel: cancel,
		failed:     make(chan struct{}),
		maxSenders: defaultMaxSenders,
	}
	l.template = triton.InferRequest{Model: m.name, Parameters: cfg.RequestParameters}
	if v, err := parseVersion(cfg.Version); err == nil {
		l.template.Version = v
	}
	return l
}

// fail records the first failure of a request and wakes the measurement.
func (l *loader) fail(err error) {
	if l.stopping.Load() {
		return
	}
	l.failOnce.Do(func() {
		l.err = err
		close(l.failed)
	})
}

// failure returns the first failure, or nil.
func (l *loader) failure() error {
	select {
	case <-l.failed:
		return l.err
	default:
		return nil
	}
}

// worker sends requests from one goroutine.
type worker struct {
	l    *loader
	rec  recorder
	stop atomic.Bool
	req  triton.InferRequest
	// ctx is the loader's, with timing when the loader asks for it:
	// the client reports each call's send and receive times there.
	ctx    context.Context
	timing client.Timing
	next   int      // position in the request cycle
	seq    seqState // the sequence it is in, for sequence models
	// outMem is the worker's output region (--shared-memory=system),
	// set up by its first send.
	outMem   []byte
	shmReady bool
	// slots feeds a rate-mode sender its scheduled send times.
	slots chan int64
}

// setConcurrency makes n closed-loop workers run. More are started;
// extra ones stop after their current request (closing their sequence).
func (l *loader) setConcurrency(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.active) > n {
		w := l.active[len(l.active)-1]
		w.stop.Store(true)
		l.active = l.active[:len(l.active)-1]
	}
	for i := len(l.active); i < n; i++ {
		w := l.newWorker()
		if c := len(l.reqs.cycle); c > 0 {
			w.next = i % c
		}
		w.rec.samples = make([]sample, 0, 1024)
		l.workers = append(l.workers, w)
		l.active = append(l.active, w)
		l.wg.Go(w.closedLoop)
	}
}

// newWorker returns a worker with the loader's request and context.
func (l *loader) newWorker() *worker {
	w := &worker{l: l, req: l.template, ctx: l.ctx}
	if l.timing {
		w.ctx = client.WithTiming(l.ctx, &w.timing)
	}
	return w
}

// closedLoop sends the next request as soon as the last one is answered.
func (w *worker) closedLoop() {
	l := w.l
	for !w.stop.Load() && !l.stopping.Load() {
		if !w.sendNext(0) {
			return
		}
	}
	w.endSequence()
}

// sendNext sends the worker's next request; intended is its scheduled
// send time (0 in closed loop). It reports false after a failure.
func (w *worker) sendNext(intended int64) bool {
	l := w.l
	var p *prepared
	var flags uint32
	if l.seqs != nil {
		p, flags = l.seqs.nextRequest(&w.seq, &w.req)
	} else {
		p = &l.reqs.cycle[w.next]
		if w.next++; w.next == len(l.reqs.cycle) {
			w.next = 0
		}
	}
	w.req.Inputs = p.inputs
	if l.shm != nil {
		if err := w.placeInShm(p); err != nil {
			l.fail(err)
			return false
		}
	}
	t0 := l.clk.now()
	var end int64
	var responses uint32
	var err error
	if l.streaming {
		end, responses, err = w.stream(p)
	} else {
		var resp *triton.InferResponse
		resp, err = l.conn.Infer(w.ctx, &w.req)
		end = l.clk.now()
		responses = 1
		if err == nil && p.expected != nil {
			err = w.validate(resp, p.expected)
		}
	}
	if err != nil {
		if l.seqs != nil {
			l.seqs.release(&w.seq)
		}
		l.fail(err)
		return false
	}
	start := t0
	if intended != 0 {
		start = intended
		if t0-intended > delayTolerance {
			flags |= flagDelayed
		}
	}
	w.rec.mu.Lock()
	if responses > 0 {
		w.rec.samples = append(w.rec.samples, sample{start: start, end: end, responses: responses, flags: flags})
	}
	w.rec.completed++
	w.rec.sent++
	w.rec.reqNS += end - t0
	w.rec.sendNS += int64(w.timing.Send)
	w.rec.recvNS += int64(w.timing.Recv)
	w.rec.idleNS += end - t0
	w.rec.mu.Unlock()
	return true
}

// stream sends the request on a stream and reads every response: the
// last one with outputs ends the request, as perf_analyzer's records do
// (a final response without outputs does not count).
func (w *worker) stream(p *prepared) (end int64, n uint32, err error) {
	l := w.l
	for resp, err := range l.conn.InferStream(w.ctx, &w.req) {
		t := l.clk.now()
		if err != nil {
			return 0, 0, err
		}
		if resp.Final && len(resp.Outputs) == 0 {
			continue
		}
		if n == 0 && p.expected != nil {
			if err := w.validate(resp, p.expected); err != nil {
				return 0, 0, err
			}
		}
		end = t
		n++
	}
	return end, n, nil
}

// validate compares a response with the expected outputs (in the
// worker's output region with --shared-memory=system).
func (w *worker) validate(resp *triton.InferResponse, expected []tensor.Tensor) error {
	for _, e := range expected {
		got, ok := resp.Output(e.Name)
		data := got.Data
		if ok && w.l.shm != nil && w.outMem != nil {
			data = w.l.shm.outputBytes(w.outMem, e.Name, len(e.Data))
		}
		if !ok || len(data) != len(e.Data) {
			return errors.New("Output size doesn't match expected size")
		}
		if !equalBytes(data, e.Data) {
			return errors.New("Output doesn't match expected output")
		}
	}
	return nil
}

// placeInShm names p's input ranges in the request and, on the worker's
// first send, creates its output region.
func (w *worker) placeInShm(p *prepared) error {
	if !w.shmReady {
		w.shmReady = true
		params := make(map[string]any, len(w.req.Parameters)+len(p.inputs))
		for k, v := range w.req.Parameters {
			params[k] = v
		}
		w.req.Parameters = params
		mem, err := w.l.shm.workerRegion(w.l.ctx, &w.req)
		if err != nil {
			return err
		}
		w.outMem = mem
	}
	for i := range p.inRegions {
		client.InputInRegion(&w.req, p.inputs[i].Name, p.inRegions[i])
	}
	return nil
}

// endSequence closes a sequence left open when a worker stops, so that
// the server frees its slot: one more request with the end flag, not
// measured.
func (w *worker) endSequence() {
	l := w.l
	if l.seqs == nil {
		return
	}
	if w.seq.remaining == 0 {
		l.seqs.release(&w.seq)
		return
	}
	w.seq.remaining = 1
	p, _ := l.seqs.nextRequest(&w.seq, &w.req)
	w.req.Inputs = p.inputs
	if l.streaming {
		for range l.conn.InferStream(l.ctx, &w.req) {
		}
	} else {
		_, _ = l.conn.Infer(l.ctx, &w.req)
	}
	l.seqs.release(&w.seq)
}

// collected is what the measurement takes from the recorders at a window
// boundary: the samples and the counters since the last collection.
type collected struct {
	// parts are the recorders' sample slices, taken whole (the
	// recorders get recycled ones; see loader.recycle).
	parts          [][]sample
	completed      uint64
	reqNS          int64
	sendNS, recvNS int64
	sent           uint64
	// idle is each busy recorder's idle ns (perf_analyzer averages idle
	// time over the threads that have some).
	idle []int64
}

// collect takes every recorder's samples and counters, leaving them
// empty. The sample slices are swapped, not copied: a window of millions
// of samples costs the workers one lock each.
func (l *loader) collect() collected {
	l.mu.Lock()
	workers := l.workers
	l.mu.Unlock()
	var c collected
	for _, w := range workers {
		fresh := l.spare()
		r := &w.rec
		r.mu.Lock()
		if len(r.samples) > 0 {
			c.parts = append(c.parts, r.samples)
			r.samples = fresh
			fresh = nil
		}
		c.completed += r.completed
		c.reqNS += r.reqNS
		c.sendNS += r.sendNS
		c.recvNS += r.recvNS
		c.sent += r.sent
		if r.idleNS > 0 {
			c.idle = append(c.idle, r.idleNS)
		}
		r.completed, r.reqNS, r.sent, r.idleNS = 0, 0, 0, 0
		r.sendNS, r.recvNS = 0, 0
		r.mu.Unlock()
		if fresh != nil {
			l.recycle(fresh)
		}
	}
	return c
}

// spare returns an empty sample slice, recycled when one is free.
func (l *loader) spare() []sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		s := l.free[n-1]
		l.free = l.free[:n-1]
		if cap(s) >= l.capHint {
			return s
		}
	}
	return make([]sample, 0, max(1024, l.capHint))
}

// sizeFor sets the capacity hint for windows of window ns at rate
// requests/ns over all workers.
func (l *loader) sizeFor(completed int, elapsed, window int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if elapsed <= 0 || len(l.workers) == 0 {
		return
	}
	per := float64(completed) / float64(elapsed) * float64(window) / float64(len(l.workers))
	l.capHint = min(int(per*1.25), 1<<26)
}

// recycle keeps sample slices for later windows.
func (l *loader) recycle(parts ...[]sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range parts {
		if cap(p) > 0 && len(l.free) < 4*len(l.workers)+8 {
			l.free = append(l.free, p[:0])
		}
	}
}

// pending counts the samples the recorders hold now (count windows).
func (l *loader) pending() int {
	l.mu.Lock()
	workers := l.workers
	l.mu.Unlock()
	n := 0
	for _, w := range workers {
		w.rec.mu.Lock()
		n += len(w.rec.samples)
		w.rec.mu.Unlock()
	}
	return n
}

// close stops every worker and the dispatcher, abandons requests still in
// flight after grace, and waits for the goroutines.
func (l *loader) close(grace time.Duration) {
	l.stopping.Store(true)
	l.stopDispatcher()
	l.mu.Lock()
	for _, w := range l.workers {
		w.stop.Store(true)
	}
	l.active = nil
	if l.pool != nil {
		l.pool.closeLocked()
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		l.cancel()
		<-done
	}
	l.cancel()
}

// sequencer hands out sequences: ids, lengths and data streams, as
// perf_analyzer's SequenceManager does.
type sequencer struct {
	reqs      *requestSet
	start     uint64
	span      uint64
	length    uint64
	lengthSet bool
	variation float64
	fromFile  bool

	mu sync.Mutex
	// mu protects the following.
	rng   *rand.Rand
	count uint64
	held  map[uint64]int // ids held by a worker (its current or last sequence)
}

// seqState is where a worker is in its sequence.
type seqState struct {
	id        uint64
	held      bool // id is counted in sequencer.held
	stream    int
	pos       int    // the next step
	remaining uint64 // requests left, 0 between sequences
}

func newSequencer(cfg *Config, reqs *requestSet, fromFile bool) *sequencer {
	return &sequencer{
		reqs: reqs, start: cfg.StartSequenceID, span: max(cfg.SequenceIDRange, 1),
		length: cfg.SequenceLength, lengthSet: cfg.sequenceLengthSet, variation: cfg.SequenceLengthVariation,
		fromFile: fromFile,
		rng:      rand.New(rand.NewPCG(1, 1)),
		held:     map[uint64]int{},
	}
}

// nextRequest returns the request a worker in state s sends next and sets
// req's sequence fields; a finished sequence starts a new one.
func (sq *sequencer) nextRequest(s *seqState, req *triton.InferRequest) (*prepared, uint32) {
	start := s.remaining == 0
	if start {
		sq.begin(s)
	}
	stream := sq.reqs.streams[s.stream]
	p := &stream[s.pos%len(stream)]
	s.pos++
	req.SequenceID = s.id
	req.SequenceStart = start
	req.SequenceEnd = s.remaining == 1
	s.remaining--
	var flags uint32
	if req.SequenceEnd {
		flags = flagSeqEnd
	}
	return p, flags
}

// begin starts a new sequence in s. An id still held by another worker is
// skipped (perf_analyzer reuses the slot's previous id instead, which a
// slot that never had one cannot).
func (sq *sequencer) begin(s *seqState) {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if s.held {
		if sq.held[s.id]--; sq.held[s.id] <= 0 {
			delete(sq.held, s.id)
		}
	}
	var id uint64
	for range len(sq.held) + 1 {
		id = sq.count%sq.span + sq.start
		sq.count++
		if sq.held[id] == 0 {
			break
		}
	}
	sq.held[id]++
	s.id, s.held, s.pos = id, true, 0
	s.stream = sq.rng.IntN(len(sq.reqs.streams))
	if sq.fromFile && !sq.lengthSet {
		s.remaining = uint64(len(sq.reqs.streams[s.stream]))
	} else {
		s.remaining = sq.randomLength()
	}
}

// randomLength is GetRandomSequenceLength: the length ± variation%,
// at least 1.
func (sq *sequencer) randomLength() uint64 {
	offset := int64((2*sq.rng.Float64() - 1) * sq.variation / 100 * float64(sq.length))
	if int64(sq.length)+offset <= 0 {
		return 1
	}
	return uint64(int64(sq.length) + offset)
}

// release gives up s's id, when its worker stops or fails.
func (sq *sequencer) release(s *seqState) {
	sq.mu.Lock()
	if s.held {
		if sq.held[s.id]--; sq.held[s.id] <= 0 {
			delete(sq.held, s.id)
		}
	}
	sq.mu.Unlock()
	s.held, s.remaining = false, 0
}

// dispatcher releases one rate step's scheduled requests.
type dispatcher struct {
	stop chan struct{}
	done chan struct{}
}

// senderPool is the rate-mode senders: idle ones wait on work; sequence
// models have one sender per sequence slot instead, fed in turn.
type senderPool struct {
	busy    atomic.Int64 // requests released and not yet answered
	work    chan int64
	size    int
	seqs    []*worker // sequence models: --num-of-sequences senders
	nextSeq int
	closed  bool
}

// closeLocked stops the senders; l.mu is held.
func (p *senderPool) closeLocked() {
	if p.closed {
		return
	}
	p.closed = true
	close(p.work)
	for _, w := range p.seqs {
		close(w.slots)
	}
}

// startRate starts a rate step: requests at start+gap₁, start+gap₁+gap₂,
// and so on, until stopRate.
func (l *loader) startRate(gaps gapSource, sequences int) {
	l.mu.Lock()
	if l.pool == nil {
		l.pool = &senderPool{work: make(chan int64)}
		for range sequences {
			w := l.newWorker()
			w.slots = make(chan int64, 1024)
			w.rec.samples = make([]sample, 0, 1024)
			l.workers = append(l.workers, w)
			l.pool.seqs = append(l.pool.seqs, w)
			l.wg.Go(func() { w.sender(0) })
		}
	}
	d := &dispatcher{stop: make(chan struct{}), done: make(chan struct{})}
	l.rate = d
	l.mu.Unlock()
	l.wg.Go(func() {
		defer close(d.done)
		l.dispatch(d, gaps)
	})
}

// stopRate stops the current rate step's dispatcher and waits until the
// senders are idle (perf_analyzer pauses its workers and lets requests
// in flight finish between rates).
func (l *loader) stopRate() {
	if l.stopDispatcher() {
		l.waitIdle()
	}
}

// stopDispatcher stops the current dispatcher, if any, and reports
// whether there was one.
func (l *loader) stopDispatcher() bool {
	l.mu.Lock()
	d := l.rate
	l.rate = nil
	l.mu.Unlock()
	if d == nil {
		return false
	}
	close(d.stop)
	<-d.done
	return true
}

// waitIdle waits until no rate-mode sender has a request in flight or
// queued.
func (l *loader) waitIdle() {
	for {
		l.mu.Lock()
		busy := l.pool != nil && l.pool.busy.Load() > 0
		l.mu.Unlock()
		if !busy || l.failure() != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *loader) dispatch(d *dispatcher, gaps gapSource) {
	next := l.clk.now()
	var s sleeper
	for {
		next += gaps.next()
		if !s.until(l, next, d.stop) {
			return
		}
		if !l.release(d, next) {
			return
		}
	}
}

// sleeper waits for scheduled send times. Go's timers are late by up to a
// millisecond (more on a busy machine), which in rate mode would be
// charged to latency, so it sleeps with nanosleep(2) until a little before
// the time, by the lateness it has seen, and spins the rest: sends are
// then late by microseconds, never early. coarseTimers (tests under
// testing/synctest, whose fake clock nanosleep ignores) waits on a timer.
type sleeper struct {
	slack int64 // expected nanosleep overshoot, ns (a moving average)
	timer *time.Timer
}

// maxSlack bounds the spin before a send.
const maxSlack = int64(500 * time.Microsecond)

// coarseTimers makes sleepers wait on Go timers; the tests set it.
var coarseTimers = false

// until waits until t on l's clock; false if stop closed first.
func (s *sleeper) until(l *loader, t int64, stop <-chan struct{}) bool {
	for {
		select {
		case <-stop:
			return false
		default:
		}
		wait := t - l.clk.now()
		if wait <= 0 {
			return true
		}
		if coarseTimers {
			if s.timer == nil {
				s.timer = time.NewTimer(time.Duration(wait))
			} else {
				s.timer.Reset(time.Duration(wait))
			}
			select {
			case <-s.timer.C:
			case <-stop:
				s.timer.Stop()
				return false
			}
			continue
		}
		if lead := s.slack + int64(20*time.Microsecond); wait > lead {
			// Sleep in slices of at most 10 ms, to notice stop.
			d := min(wait-lead, int64(10*time.Millisecond))
			target := l.clk.now() + d
			nanosleep(time.Duration(d))
			over := max(l.clk.now()-target, 0)
			s.slack = min((s.slack*7+over)/8, maxSlack)
			continue
		}
		for l.clk.now() < t {
		}
		return true
	}
}

// release hands the request scheduled at t to a sender.
func (l *loader) release(d *dispatcher, t int64) bool {
	p := l.pool
	p.busy.Add(1)
	if len(p.seqs) > 0 {
		w := p.seqs[p.nextSeq]
		p.nextSeq = (p.nextSeq + 1) % len(p.seqs)
		select {
		case w.slots <- t:
			return true
		case <-d.stop:
			p.busy.Add(-1)
			return false
		}
	}
	select {
	case p.work <- t:
		return true
	default:
	}
	l.mu.Lock()
	if p.size < l.maxSenders && !p.closed {
		p.size++
		w := l.newWorker()
		if c := len(l.reqs.cycle); c > 0 {
			w.next = p.size % c
		}
		w.rec.samples = make([]sample, 0, 256)
		l.workers = append(l.workers, w)
		l.wg.Go(func() { w.sender(t) })
		l.mu.Unlock()
		return true
	}
	l.mu.Unlock()
	select {
	case p.work <- t:
		return true
	case <-d.stop:
		p.busy.Add(-1)
		return false
	}
}

// sender sends the requests it is handed, first (when not 0) and then
// those from its queue, each at its scheduled time.
func (w *worker) sender(first int64) {
	l := w.l
	p := l.pool
	in := p.work
	if w.slots != nil {
		in = w.slots
	}
	t := first
	for {
		if t != 0 {
			ok := w.sendNext(t)
			p.busy.Add(-1)
			if !ok {
				return
			}
		}
		waitStart := l.clk.now()
		var open bool
		t, open = <-in
		w.rec.mu.Lock()
		w.rec.idleNS += l.clk.now() - waitStart
		w.rec.mu.Unlock()
		if !open {
			w.endSequence()
			return
		}
	}
}

// errNoSamples is perf_analyzer's error for a window without a valid
// request (its OPTION_ERROR, exit status 3 when it ends the run).
var errNoSamples = errors.New("No valid requests recorded within time interval. Please use a larger time window.")

// describeFailure words a failed request as one line.
func describeFailure(err error) string {
	return fmt.Sprintf("Failed to maintain requested inference load. Worker thread(s) failed to generate concurrent requests: %v", err)
}
