package batcher

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Errors the batcher answers requests with. Their texts are Triton's where
// clients compare them.
var (
	// ErrQueueFull: the request's priority level holds max_queue_size
	// requests already (Triton: Unavailable).
	ErrQueueFull = errors.New("Exceeds maximum queue size")
	// ErrTimeout: the request's queue-policy timeout expired under a REJECT
	// policy (Triton: Unavailable).
	ErrTimeout = errors.New("Request timeout expired")
	// ErrClosed: the batcher stopped before the request was dispatched.
	ErrClosed = errors.New("the model's scheduler has stopped accepting requests")
	// ErrPriority: the request asked for a priority level the model does not
	// have (InvalidArgument).
	ErrPriority = errors.New("priority level out of range")
	// ErrTimeoutOverride: the request asked for its own timeout where the
	// queue policy does not allow it (InvalidArgument).
	ErrTimeoutOverride = errors.New("the queue policy does not allow a request to set its own timeout")
	// ErrWouldMiss: the deadline-aware schedule predicts that the request
	// cannot finish before its deadline (Unavailable). The error is a
	// [*Refused], which says why.
	ErrWouldMiss = errors.New("the request cannot finish before its deadline")
)

// Stage is where the deadline-aware schedule refused a request.
type Stage uint8

const (
	// AtAdmission: Enqueue refused it; it was never queued.
	AtAdmission Stage = iota
	// AtBatch: it was queued, and when its batch formed the batch could no
	// longer end before its deadline (the queue drained slower than
	// predicted); it was dropped without running.
	AtBatch
)

// String returns "admission" or "batch".
func (s Stage) String() string {
	if s == AtBatch {
		return "batch"
	}
	return "admission"
}

// Refused is the error of a request the deadline-aware schedule refused:
// it matches [ErrWouldMiss] and says where and why.
type Refused struct {
	Stage Stage
	// Finish is how long from the refusal the request was predicted to
	// take, and Deadline how long it had left.
	Finish, Deadline time.Duration
	// Ahead is the number of rows queued ahead of it (at admission).
	Ahead int64
	// Batch is the predicted execution time of its batch.
	Batch time.Duration
	// Rows is the size of that batch.
	Rows int64
}

func (r *Refused) Error() string {
	if r.Stage == AtBatch {
		return fmt.Sprintf("%v: its batch of %d rows was predicted to end in %v, after its deadline in %v",
			ErrWouldMiss, r.Rows, r.Finish.Round(10*time.Microsecond), r.Deadline.Round(10*time.Microsecond))
	}
	return fmt.Sprintf("%v: it was predicted to finish in %v, after its deadline in %v (%d rows queued ahead of it; a batch of %d rows takes about %v)",
		ErrWouldMiss, r.Finish.Round(10*time.Microsecond), r.Deadline.Round(10*time.Microsecond), r.Ahead, r.Rows, r.Batch.Round(10*time.Microsecond))
}

// Is reports whether target is ErrWouldMiss.
func (r *Refused) Is(target error) bool { return target == ErrWouldMiss }

// RetryAfter is how long the queue ahead of the request is predicted to
// take: when a retry may find room (HTTP's Retry-After).
func (r *Refused) RetryAfter() time.Duration { return max(r.Finish-r.Batch, 0) }

// Env is how a [Dynamic] batcher sees the items it schedules and the
// instances it schedules them on. Every function is called on the
// batcher's scheduler goroutine, except that Size, Compatible and Expired
// are also called inside Enqueue; none may call back into the batcher.
type Env[T, I any] struct {
	// Size is the number of rows item contributes to a batch (its batch
	// size, at least 1).
	Size func(item T) int64
	// Compatible reports whether item may join a batch whose first item is
	// first (the same non-batch shapes, unless ragged).
	Compatible func(first, item T) bool
	// Expired returns the error an item fails with when its request ended
	// (its context is done); nil otherwise. Checked when batches are formed,
	// so that nothing runs after its deadline.
	Expired func(item T) error
	// Drop answers an item the batcher takes out of its queue without
	// running it: expired, timed out under REJECT, or the batcher closed.
	Drop func(item T, err error)
	// Dispatch hands a formed batch to a free instance. It must not block
	// and must not keep batch, whose storage the batcher reuses.
	Dispatch func(inst I, batch []T)
	// Queue hands a full batch to a busy instance that offered to take one
	// behind the batch it runs ([Dynamic.Offer]), as Dispatch does; it may
	// be nil when nothing offers.
	Queue func(inst I, batch []T)
	// Deadline is when item's answer is due (zero: no deadline). Read
	// only with Config.DeadlineAware; also called inside Enqueue.
	Deadline func(item T) time.Time
	// Group is the instance group of inst (an index from 0), for the
	// estimates of execution time, one per group; nil: one group.
	Group func(inst I) int
}

// Dynamic is Triton's dynamic batcher, generic over the queued item T and
// the instance type I so that it can be tested with plain values.
//
// # Algorithm
//
// Requests wait in per-priority-level FIFO queues. One scheduler goroutine
// waits for work and for a free instance (received from the idle channel
// given to [NewDynamic]); holding the instance, it forms a batch as Triton
// does: take requests in order — priority level 1 first; within a level,
// requests whose DELAY timeout expired come after the others — while the
// batch stays compatible (Env.Compatible) and within the largest preferred
// size. Then:
//
//   - if the next request cannot join (too big, incompatible), the batch
//     cannot grow: dispatch it now;
//   - if some prefix of it has a preferred size, dispatch the largest such
//     prefix now (unless the delay has passed, when everything goes);
//   - if the oldest request in it has waited max_queue_delay (always true
//     for a delay of 0), dispatch everything;
//   - otherwise wait until that delay passes, a request times out, or a new
//     request arrives that may make the batch ready, and form again. A
//     request queued behind all others that neither reaches a preferred
//     size or the limit nor fails to join only lengthens the batch, and
//     does not wake the scheduler ([Dynamic.extends]).
//
// A request's batch size counts toward the limit, so a request of 4 rows
// uses 4 of it. Requests whose context ended, or whose REJECT timeout
// expired, are dropped as they are met; the scheduler also wakes for the
// closest queue-policy timeout, so rejection is prompt.
//
// # Invariants and choices
//
//   - The queue lock is never held while calling Drop or Dispatch, nor
//     while waiting.
//   - Enqueue never blocks: a full level rejects at once (admission
//     control); the queues are bounded exactly by the policies.
//   - Items are intrusive nodes owned by the caller, so queueing does not
//     allocate, and a caller whose context ends removes its own node in
//     O(1) ([Dynamic.Remove]); the scheduler need not watch contexts.
//   - The scheduler takes an instance before forming a batch: while every
//     instance is busy, requests accumulate and the next batch is as large
//     as it can be. Holding one instance while waiting for the delay costs
//     nothing, since no other batch could be formed meanwhile.
//     The one exception is a full batch, which could not grow anyway: it
//     may go to a busy instance that offered to queue it behind the batch
//     it runs ([Dynamic.Offer]), when no instance is free.
//   - The scheduler waits on Go timers; on Linux a timerfd armed for the
//     same moment wakes an idle runtime on time (see nudge), so that a
//     delay of 100 µs lasts about that, not the millisecond the runtime's
//     idle sleep is rounded to.
//   - One scheduler goroutine per model version (rejected: forming batches
//     on the enqueuing goroutines under the lock, which needs a timer per
//     waiting request to honour the delay, and makes rejections and
//     priorities harder to get right). Two shortcuts skip it where the
//     result is the same: with no max_queue_delay, a request that finds an
//     instance free forms and dispatches the batch on its own goroutine in
//     Enqueue; an instance coming back forms the next batch in Release.
//     Nor is it woken by a request queued while it waits for an instance
//     (every instance busy), unless the request brings the closest
//     queue-policy deadline: the wake-up would find no instance either.
type Dynamic[T any, I comparable] struct {
	env      Env[T, I]
	idle     chan I
	limit    int64
	prefer   map[int64]bool
	delay    time.Duration
	defLevel int

	kick    chan struct{} // a request arrived
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once

	mu sync.Mutex
	// mu protects the following.
	levels []level[T]
	count  int
	rows   int64 // the queued items' rows
	closed bool
	// offers are the open offers of busy instances, one entry for each full
	// batch an instance takes behind the one it runs ([Dynamic.Offer]).
	offers []I
	// next is a queue-policy deadline no later than the closest pending one
	// (zero: none pending). Enqueue lowers it; sweep recomputes it exactly.
	next time.Time
	// growing is the batch the scheduler sleeps on, holding an instance,
	// until it grows or the delay passes: see [Dynamic.extends].
	growing growth[T]
	// starved: the scheduler waits for a free instance, with its timer
	// armed for next as it was; a request that sets no earlier deadline
	// need not wake it, since it forms a batch from the whole queue once
	// an instance comes back.
	starved bool
	passes  int // form calls, which the tests count
	rounds  int // scheduler loop iterations, which the tests count

	own     scratch[T] // the scheduler goroutine's
	scratch sync.Pool  // of *scratch[T], for Release on other goroutines

	aware bool            // Config.DeadlineAware
	est   []*Estimator    // per instance group; fixed at NewDynamic's groups, grown under mu
	free  map[I]time.Time // busy instances: when each is predicted to be free (under mu)
	began map[I]time.Time // when each busy instance's batch was formed (under mu)
	runs  map[I]int       // batches observed per instance, for the warm-up (under mu)
}

// warmBatches is how many of an instance's first batches the estimate
// ignores: they pay for first-touch allocations and lazy initialization
// that later batches do not.
const warmBatches = 2

// growth describes the candidate batch while the scheduler waits for it to
// grow: every queued item, size rows in all, first being the first.
type growth[T any] struct {
	on    bool
	size  int64
	first T
}

// scratch is the storage one batch formation works in.
type scratch[T any] struct {
	batch   []T
	nodes   []*Node[T]
	dropped []dropped[T]
}

type dropped[T any] struct {
	item T
	err  error
}

// NewDynamic starts a batcher. idle holds the free instances: the batcher
// takes one for each batch it dispatches, and the instance comes back with
// [Dynamic.Release] (or a plain send on idle) when its batch is done; its
// capacity must be the number of instances. Close stops it.
func NewDynamic[T any, I comparable](cfg Config, env Env[T, I], idle chan I) (*Dynamic[T, I], error) {
	policies, limit, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if cfg.DeadlineAware && env.Deadline == nil {
		return nil, errors.New("a deadline-aware batcher needs Env.Deadline")
	}
	prefer := map[int64]bool{}
	for _, p := range cfg.PreferredSizes {
		prefer[p] = true
	}
	if len(prefer) == 0 {
		prefer[cfg.MaxBatchSize] = true
	}
	d := &Dynamic[T, I]{
		env:      env,
		idle:     idle,
		limit:    limit,
		prefer:   prefer,
		delay:    cfg.MaxQueueDelay,
		defLevel: max(cfg.DefaultPriority, 1),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		levels:   make([]level[T], len(policies)),
		aware:    cfg.DeadlineAware,
		est:      []*Estimator{new(Estimator)},
		free:     map[I]time.Time{},
		began:    map[I]time.Time{},
		runs:     map[I]int{},
	}
	for i, p := range policies {
		d.levels[i].policy = p
	}
	go d.run()
	return d, nil
}

// Enqueue queues item at the given priority level (0: the default level)
// with the given queue-policy timeout (0: the level's default). It returns
// ErrPriority or ErrTimeoutOverride for a request the configuration
// forbids, ErrQueueFull when the level is full and ErrClosed after Close;
// the item is then not queued. n must not be queued already. With no
// max_queue_delay and an instance free, the batch is formed and
// Env.Dispatch called before Enqueue returns, on the caller's goroutine.
func (d *Dynamic[T, I]) Enqueue(n *Node[T], item T, priority int, timeout time.Duration) error {
	lvl := d.defLevel
	if priority != 0 {
		if priority < 1 || priority > len(d.levels) {
			return ErrPriority
		}
		lvl = priority
	}
	now := time.Now()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	l := &d.levels[lvl-1]
	p := l.policy
	if timeout > 0 && !p.AllowTimeoutOverride {
		d.mu.Unlock()
		return ErrTimeoutOverride
	}
	if p.MaxQueueSize > 0 && l.len() >= p.MaxQueueSize {
		d.mu.Unlock()
		return ErrQueueFull
	}
	rows := d.env.Size(item)
	if d.aware {
		if due := d.env.Deadline(item); !due.IsZero() {
			if r := d.admit(now, due, rows, lvl-1); r != nil {
				d.mu.Unlock()
				return r
			}
		}
	}
	// A request may shorten a non-zero default timeout, never lengthen it;
	// with no default there is no timeout (Triton's rule).
	t := p.DefaultTimeout
	if t > 0 && timeout > 0 && timeout < t {
		t = timeout
	}
	n.item, n.level, n.enqueued, n.delayed, n.rows = item, lvl-1, now, false, rows
	n.deadline = time.Time{}
	if t > 0 {
		n.deadline = now.Add(t)
	}
	l.main.pushBack(n)
	d.count++
	d.rows += n.rows
	l.rows += n.rows
	sooner := t > 0 && (d.next.IsZero() || n.deadline.Before(d.next))
	if sooner {
		d.next = n.deadline
	}
	quiet := t == 0 && d.extends(lvl-1, item)
	starved := d.starved && !sooner
	// A busy instance that offered takes the batch this request fills, when
	// no instance is free for it (none is held waiting for its batch to
	// grow, none is waiting to be taken).
	var offer I
	offered := !quiet && d.canQueue()
	if offered {
		offer = d.offers[0]
	}
	d.mu.Unlock()
	if quiet {
		return nil
	}
	if offered && d.queueOn(offer) {
		return nil
	}
	if d.delay == 0 {
		// With no delay to wait out, a free instance means the batch is
		// ready now: form and dispatch it on this goroutine, as the
		// scheduler would, and save the two wake-ups of a trip through it
		// (tens of microseconds at low load on a virtual machine).
		select {
		case inst := <-d.idle:
			if d.dispatchOn(inst) {
				return nil
			}
			d.idle <- inst
		default:
		}
	}
	if starved {
		return nil
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return nil
}

// admit is the deadline-aware admission of a request of rows rows at
// level li, due at due: it returns why the request is refused, or nil.
// It plays the queue forward: the rows queued at li and the levels ahead
// of it, then the request, go in batches of the batch limit to whichever
// instance is predicted to be free first, each batch taking what the
// instance's group estimate says. d.mu must be held.
func (d *Dynamic[T, I]) admit(now, due time.Time, rows int64, li int) *Refused {
	if _, ok := d.est[0].Estimate(d.limit); !ok {
		return nil // no estimate yet: FIFO
	}
	var ahead int64
	for i := range d.levels[:li+1] {
		ahead += d.levels[i].rows
	}
	type freeAt struct {
		at time.Time
		e  *Estimator
	}
	var buf [8]freeAt
	frees := buf[:0]
	for inst, at := range d.free {
		frees = append(frees, freeAt{later(at, now), d.estimator(inst)})
	}
	for len(frees) < cap(d.idle) {
		frees = append(frees, freeAt{now, d.est[0]})
	}
	estimate := func(e *Estimator, rows int64) time.Duration {
		if t, ok := e.Estimate(rows); ok {
			return t
		}
		t, _ := d.est[0].Estimate(rows)
		return t
	}
	total := ahead + rows
	k := (total + d.limit - 1) / d.limit
	r := &Refused{Stage: AtAdmission, Deadline: due.Sub(now), Ahead: ahead}
	for j := int64(1); j <= k; j++ {
		first := 0
		for i := range frees {
			if frees[i].at.Before(frees[first].at) {
				first = i
			}
		}
		f := &frees[first]
		if f.at.After(due) {
			// Every later batch starts after the deadline: stop playing.
			full := estimate(f.e, d.limit)
			left := (k - j + int64(len(frees)) - 1) / int64(len(frees))
			r.Finish = f.at.Sub(now) + time.Duration(left)*full
			r.Rows, r.Batch = min(total, d.limit), full
			return r
		}
		size := d.limit
		if j == k {
			size = total - (k-1)*d.limit
		}
		took := estimate(f.e, size)
		f.at = f.at.Add(took)
		if j == k && f.at.After(due) {
			r.Finish, r.Rows, r.Batch = f.at.Sub(now), size, took
			return r
		}
	}
	return nil
}

// target is the size of the largest batch starting at start that enough
// queued rows can join within their deadlines (at least 1; at most the
// limit and the rows queued): a binary search, since the more rows a batch
// has, the later it ends and the fewer rows can wait for it. d.mu must be
// held.
func (d *Dynamic[T, I]) target(start time.Time, est *Estimator) int64 {
	fits := func(size int64) bool {
		t, _ := est.Estimate(size)
		end := start.Add(t)
		var rows int64
		for li := range d.levels {
			for _, l := range []*list[T]{&d.levels[li].main, &d.levels[li].delayed} {
				for n := l.head; n != nil; n = n.next {
					if due := d.env.Deadline(n.item); due.IsZero() || !end.After(due) {
						if rows += n.rows; rows >= size {
							return true
						}
					}
				}
			}
		}
		return false
	}
	lo, hi := int64(1), min(d.limit, d.rows)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// estimator returns the estimate of inst's instance group. d.mu must be
// held.
func (d *Dynamic[T, I]) estimator(inst I) *Estimator {
	g := 0
	if d.env.Group != nil {
		g = max(d.env.Group(inst), 0)
	}
	for len(d.est) <= g {
		d.est = append(d.est, new(Estimator))
	}
	return d.est[g]
}

// Observe records that inst executed a batch of rows rows in took, for
// the estimate of its instance group; each instance's first batches are
// left out (warm-up). When the batcher formed that batch itself (not on
// an offer), the time since its formation counts if longer: the hand-over
// to the batch's runner is part of what the batches behind it wait for.
func (d *Dynamic[T, I]) Observe(inst I, rows int64, took time.Duration) {
	d.mu.Lock()
	n := d.runs[inst]
	d.runs[inst] = n + 1
	e := d.estimator(inst)
	if at, ok := d.began[inst]; ok {
		// From the batch's formation: the hand-over to the batch's
		// leader is part of what the next batch waits for.
		took = max(took, time.Since(at))
		delete(d.began, inst)
	}
	d.mu.Unlock()
	if n >= warmBatches {
		e.Observe(rows, took)
		if d.aware {
			e.Update() // here, rather than in the next admission, under d.mu
		}
	}
}

// Estimator returns the estimate of execution time of instance group g
// (nil if no instance of g has run a batch).
func (d *Dynamic[T, I]) Estimator(g int) *Estimator {
	d.mu.Lock()
	defer d.mu.Unlock()
	if g < 0 || g >= len(d.est) {
		return nil
	}
	return d.est[g]
}

// extends reports whether an item just queued at level li, without a
// timeout of its own, only lengthens the batch the scheduler is waiting on
// without making it ready, so that waking the scheduler would achieve
// nothing; if so it counts the item into that batch. The scheduler waits
// holding an instance on a candidate batch that is the whole queue (see
// form), so an item queued behind every other one joins it at the end:
// the batch is then ready only if the item reaches a preferred size or the
// limit, or cannot join. Closed-loop clients refilling a preferred batch
// of n rows thus wake the scheduler once, not n times. d.mu must be held.
func (d *Dynamic[T, I]) extends(li int, item T) bool {
	g := &d.growing
	if !g.on || d.levels[li].delayed.len > 0 {
		return false
	}
	for _, l := range d.levels[li+1:] {
		if l.len() > 0 {
			return false // the item is not last in the scan order
		}
	}
	size := g.size + d.env.Size(item)
	if size >= d.limit || d.prefer[size] || !d.env.Compatible(g.first, item) ||
		d.aware && !d.env.Deadline(item).IsZero() { // its deadline may shorten the wait

		return false
	}
	g.size = size
	return true
}

// Remove takes n out of its queue if it is still waiting and reports
// whether it did. A caller whose context ends calls it; false means the
// item was already dispatched (or dropped) and will be answered.
func (d *Dynamic[T, I]) Remove(n *Node[T]) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n.list == nil {
		return false
	}
	d.unlink(n)
	d.growing = growth[T]{}
	return true
}

// Len returns the number of queued requests.
func (d *Dynamic[T, I]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.count
}

// Close stops the scheduler and drops every queued item with ErrClosed.
// It returns once the scheduler goroutine has ended. Later calls do nothing.
func (d *Dynamic[T, I]) Close() {
	d.closing.Do(func() {
		close(d.stop)
		<-d.done
		d.mu.Lock()
		d.closed = true
		var all []dropped[T]
		for i := range d.levels {
			for _, l := range []*list[T]{&d.levels[i].main, &d.levels[i].delayed} {
				for l.head != nil {
					n := l.head
					all = append(all, dropped[T]{n.item, ErrClosed})
					l.remove(n)
				}
			}
		}
		d.count, d.rows = 0, 0
		for i := range d.levels {
			d.levels[i].rows = 0
		}
		d.mu.Unlock()
		for _, x := range all {
			d.env.Drop(x.item, ErrClosed)
		}
	})
}

func (d *Dynamic[T, I]) run() {
	defer close(d.done)
	var (
		inst  I
		have  bool
		timer = time.NewTimer(time.Hour)
		// nudge makes timer fire on time in an idle process; made when
		// the scheduler first waits (a model without delays and timeouts
		// never does).
		nudge  *nudge
		nudged bool
	)
	timer.Stop()
	defer func() { nudge.close() }()
	arm := func(after time.Duration) <-chan time.Time {
		after = max(after, time.Microsecond)
		timer.Reset(after)
		if !nudged {
			nudge, nudged = newNudge(), true
		}
		nudge.at(after)
		return timer.C
	}
	for {
		d.mu.Lock()
		empty, next := d.count == 0, d.next
		d.starved = !empty && !have
		d.rounds++
		d.mu.Unlock()
		if empty {
			select {
			case <-d.kick:
				continue
			case <-d.stop:
				return
			}
		}
		if !have {
			// Wait for an instance; meanwhile reject (or delay) requests as
			// their queue-policy timeouts expire.
			var expire <-chan time.Time
			if !next.IsZero() {
				expire = arm(time.Until(next))
			}
			select {
			case inst = <-d.idle:
				have = true
			case <-expire:
				d.sweep(&d.own)
				d.answer(&d.own)
			case <-d.kick:
			case <-d.stop:
				return
			}
			timer.Stop()
			continue
		}
		wait := d.form(&d.own, inst)
		d.answer(&d.own)
		if len(d.own.batch) > 0 {
			d.env.Dispatch(inst, d.own.batch)
			clear(d.own.batch)
			d.own.batch = d.own.batch[:0]
			have = false
			continue
		}
		if wait <= 0 {
			continue // everything left was dropped
		}
		select {
		case <-arm(wait):
		case <-d.kick:
		case <-d.stop:
			return
		}
		timer.Stop()
	}
}

// sweep applies expired queue-policy timeouts across the whole queue and
// recomputes the closest pending deadline.
func (d *Dynamic[T, I]) sweep(sc *scratch[T]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked(time.Now(), sc)
}

func (d *Dynamic[T, I]) sweepLocked(now time.Time, sc *scratch[T]) {
	d.next = time.Time{}
	d.growing = growth[T]{}
	for li := range d.levels {
		lv := &d.levels[li]
		for n := lv.main.head; n != nil; {
			next := n.next
			d.expire(lv, n, now, sc)
			n = next
		}
	}
}

// expire handles n's queue-policy timeout at time now: it drops or delays
// n if the timeout has passed and reports whether it did; otherwise it
// notes n's deadline as a candidate for d.next. d.mu must be held.
func (d *Dynamic[T, I]) expire(lv *level[T], n *Node[T], now time.Time, sc *scratch[T]) bool {
	if n.deadline.IsZero() || n.delayed {
		return false
	}
	if now.Before(n.deadline) {
		if d.next.IsZero() || n.deadline.Before(d.next) {
			d.next = n.deadline
		}
		return false
	}
	if lv.policy.TimeoutAction == Reject {
		d.drop(n, ErrTimeout, sc)
		return true
	}
	n.list.remove(n)
	n.delayed = true
	lv.delayed.pushBack(n)
	return true
}

// form builds the next batch for inst into sc.batch, unlinking its items,
// or, when the batch should wait to grow, leaves sc.batch empty and
// returns how long to wait. Dropped items go to sc.dropped. The scheduler
// goroutine passes its own scratch, d.own: when it is told to wait, it
// records the batch it waits on in d.growing.
func (d *Dynamic[T, I]) form(sc *scratch[T], inst I) time.Duration {
	return d.formFor(sc, inst, false)
}

// formFor is form; for an offer of inst (see [Dynamic.Offer]), it forms
// only a batch that cannot grow (the next request cannot join, or the
// batch reaches the limit), and only while the offer is open, which the
// batch then uses up; otherwise sc.batch stays empty.
//
// Deadline-aware, a batch starts now (or, on an offer, when inst is
// predicted to be free), and its size is the largest that enough queued
// rows can wait for by the estimate of inst's group ([Dynamic.target]); a
// request whose deadline is before that batch's predicted end is dropped
// with a [*Refused] (on an offer, nothing is formed), and the wait for
// the batch to grow ends in time for its members' deadlines.
func (d *Dynamic[T, I]) formFor(sc *scratch[T], inst I, offer bool) time.Duration {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	at := -1 // the offer's index in d.offers
	if offer {
		at = slices.Index(d.offers, inst)
		if at < 0 || d.closed || d.growing.on || len(d.idle) > 0 {
			return 0 // withdrawn or used already, or an instance is free
		}
	}
	d.passes++
	d.growing = growth[T]{}
	if !d.next.IsZero() && !now.Before(d.next) {
		d.sweepLocked(now, sc) // a timeout passed: apply it everywhere, find the next one
	}

	var (
		size   int64
		first  T
		nodes  = sc.nodes[:0] // candidate batch, in order
		best   = 0            // length of the longest prefix with a preferred size
		full   bool           // the next request cannot join
		oldest time.Time
		// Deadline-aware: when the batch starts, its estimate, when a batch
		// of the rows queued (up to the limit) would end, and the earliest
		// deadline of its members (zero: none).
		start  = now
		est    *Estimator
		end    time.Time
		due    time.Time
		limit  = d.limit // rows, lower where deadlines allow no more
		target int64     // the size end is predicted for
	)
	if d.aware {
		est = d.estimator(inst)
		if _, ok := est.Estimate(1); !ok {
			est = nil // no estimate yet: FIFO
		} else {
			if offer {
				start = later(start, d.free[inst])
			} else {
				d.began[inst] = now
			}
			// The batch is formed as large as the deadlines allow, and a
			// member it would make late is left out rather than the batch
			// cut short: under overload, full batches serve the most.
			target = d.target(start, est)
			if target < min(d.limit, d.rows) {
				limit = target // it cannot grow further in time
			}
			t, _ := est.Estimate(target)
			end = start.Add(t)
		}
	}
	defer func() {
		clear(nodes)
		sc.nodes = nodes[:0]
	}()
	// Expired DELAY requests move to their level's delayed list; that list is
	// scanned after the main one, so they are met again in this pass.
scan:
	for li := range d.levels {
		lv := &d.levels[li]
		for _, l := range []*list[T]{&lv.main, &lv.delayed} {
			for n := l.head; n != nil; {
				next := n.next
				if err := d.env.Expired(n.item); err != nil {
					d.drop(n, err, sc)
					n = next
					continue
				}
				if d.expire(lv, n, now, sc) {
					n = next
					continue
				}
				rows := d.env.Size(n.item)
				if len(nodes) > 0 && (size+rows > limit || !d.env.Compatible(first, n.item)) {
					full = true
					break scan
				}
				if est != nil {
					if nd := d.env.Deadline(n.item); !nd.IsZero() && end.After(nd) {
						if offer {
							return 0 // a free instance will drop it, or run it sooner
						}
						d.drop(n, &Refused{Stage: AtBatch, Finish: end.Sub(now), Deadline: nd.Sub(now), Rows: target, Batch: end.Sub(start)}, sc)
						n = next
						continue
					} else if !nd.IsZero() && (due.IsZero() || nd.Before(due)) {
						due = nd
					}
				}
				if len(nodes) == 0 {
					first = n.item
				}
				nodes = append(nodes, n)
				size += rows
				if oldest.IsZero() || n.enqueued.Before(oldest) {
					oldest = n.enqueued
				}
				if d.prefer[size] {
					best = len(nodes)
				}
				if size >= limit {
					full = true
					break scan
				}
				n = next
			}
		}
	}
	if len(nodes) == 0 {
		return 0
	}
	waited := now.Sub(oldest)
	// slack is how long the batch may still wait for its members'
	// deadlines (deadline-aware), or for ever.
	slack := time.Duration(math.MaxInt64)
	if est != nil && !due.IsZero() {
		t, _ := est.Estimate(size)
		slack = due.Sub(now.Add(t))
	}
	take := 0
	switch {
	case full:
		take = len(nodes)
		if at >= 0 {
			d.offers = slices.Delete(d.offers, at, at+1)
		}
	case at >= 0:
		return 0
	case waited >= d.delay || slack <= 0:
		take = len(nodes)
	case best > 0:
		take = best
	default:
		wait := min(d.delay-waited, slack)
		if !d.next.IsZero() {
			wait = min(wait, d.next.Sub(now))
		}
		if sc == &d.own {
			d.growing = growth[T]{on: true, size: size, first: first}
		}
		return max(wait, time.Microsecond)
	}
	var rows int64
	for _, n := range nodes[:take] {
		sc.batch = append(sc.batch, n.item)
		rows += n.rows
		d.unlink(n)
	}
	if d.aware {
		if t, ok := d.estimator(inst).Estimate(rows); ok {
			d.free[inst] = start.Add(t)
		}
	}
	return 0
}

// drop unlinks n and records it to be answered with err once the lock is
// released. d.mu must be held.
func (d *Dynamic[T, I]) drop(n *Node[T], err error, sc *scratch[T]) {
	sc.dropped = append(sc.dropped, dropped[T]{n.item, err})
	d.unlink(n)
}

// unlink takes n out of its queue and forgets its item. d.mu must be held.
func (d *Dynamic[T, I]) unlink(n *Node[T]) {
	n.list.remove(n)
	d.count--
	d.rows -= n.rows
	d.levels[n.level].rows -= n.rows
	var zero T
	n.item = zero
}

func (d *Dynamic[T, I]) answer(sc *scratch[T]) {
	for i, x := range sc.dropped {
		d.env.Drop(x.item, x.err)
		sc.dropped[i] = dropped[T]{}
	}
	sc.dropped = sc.dropped[:0]
}

// Release hands back an instance that finished a batch. When the next
// batch is ready it is formed and dispatched to inst right here, on the
// caller's goroutine, saving the trip through the scheduler goroutine (a
// wake-up on the critical path between two batches); otherwise the
// instance goes back to the scheduler through the idle channel. Requests
// the formation drops are answered here too.
func (d *Dynamic[T, I]) Release(inst I) {
	d.mu.Lock()
	queued, closed := d.count > 0, d.closed
	delete(d.free, inst)
	d.mu.Unlock()
	if queued && !closed && d.dispatchOn(inst) {
		return
	}
	d.idle <- inst
}

// Offer tells the batcher that inst, which runs a batch, takes one more
// behind it: the next full batch (one that cannot grow: it reaches the
// largest preferred size or max_batch_size, or the next request cannot
// join) is formed and handed to Env.Queue as soon as it is queued while no
// instance is free for it — here, if it is queued already, or on the
// goroutine whose request fills it. This is Triton's batch prefetch (the
// dynamic batcher fills the rate limiter's payload queue ahead of the
// instances), limited to batches that could not have grown while waiting
// for an instance, so that every batch is as large as without it. An offer
// is used by one batch; an instance may offer several times, and
// [Dynamic.Withdraw] takes back the offers not used.
func (d *Dynamic[T, I]) Offer(inst I) {
	d.mu.Lock()
	d.offers = append(d.offers, inst)
	ready := d.canQueue()
	d.mu.Unlock()
	if ready {
		d.queueOn(inst)
	}
}

// Withdraw takes back inst's open offers and returns how many there were
// (those used, by batches handed to inst, are not counted).
func (d *Dynamic[T, I]) Withdraw(inst I) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.offers)
	d.offers = slices.DeleteFunc(d.offers, func(o I) bool { return o == inst })
	return n - len(d.offers)
}

// canQueue reports whether a full batch may be queued now, on an offer:
// one is open, enough rows are queued for a full batch, and no instance
// is free for it (none is held waiting for its batch to grow, none waits
// to be taken). d.mu must be held.
func (d *Dynamic[T, I]) canQueue() bool {
	return len(d.offers) > 0 && !d.closed && d.rows >= d.limit && !d.growing.on && len(d.idle) == 0
}

// queueOn forms a full batch on the calling goroutine for inst's offer and,
// if there is one, hands it to inst through Env.Queue and reports true.
// Requests the formation drops are answered here.
func (d *Dynamic[T, I]) queueOn(inst I) bool { return d.handOn(inst, true) }

// dispatchOn forms the next batch on the calling goroutine and, if one is
// ready, dispatches it to inst and reports true. Requests the formation
// drops are answered here.
func (d *Dynamic[T, I]) dispatchOn(inst I) bool { return d.handOn(inst, false) }

// handOn is dispatchOn, or queueOn for an offer.
func (d *Dynamic[T, I]) handOn(inst I, offer bool) bool {
	sc, _ := d.scratch.Get().(*scratch[T])
	if sc == nil {
		sc = new(scratch[T])
	}
	if offer {
		d.formFor(sc, inst, true)
	} else {
		d.form(sc, inst)
	}
	d.answer(sc)
	handed := len(sc.batch) > 0
	if handed {
		if offer {
			d.env.Queue(inst, sc.batch)
		} else {
			d.env.Dispatch(inst, sc.batch)
		}
		clear(sc.batch)
		sc.batch = sc.batch[:0]
	}
	d.scratch.Put(sc)
	return handed
}
