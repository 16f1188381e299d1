package batcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Errors a [Sequence] answers requests with; callers word them for clients
// (with the model and the correlation ID).
var (
	// ErrNotStarted: the request is not flagged START and its sequence is
	// not live (never started, ended, or freed for idleness).
	ErrNotStarted = errors.New("the sequence has not started: its first request must carry the START flag")
	// ErrNoRoom: a START beyond the capacity of live sequences, refused at
	// once because [SequenceConfig.Reject] is set.
	ErrNoRoom = errors.New("no room for another live sequence")
	// ErrSequenceCancelled: a request of the same sequence admitted earlier
	// was cancelled before this one ran, so this one is cancelled too (its
	// inputs assumed the earlier one would run), as in Triton.
	ErrSequenceCancelled = errors.New("a request of the sequence admitted before this one was cancelled")
)

// EndReason tells why a sequence ended.
type EndReason uint8

const (
	// EndFlag: a request of the sequence carried END and ran.
	EndFlag EndReason = iota
	// EndIdle: no request came for [SequenceConfig.MaxIdle].
	EndIdle
	// EndClosed: the scheduler closed with the sequence live.
	EndClosed
)

// SequenceConfig is a sequence scheduler's configuration (Triton's
// sequence_batching), already normalized.
type SequenceConfig struct {
	// MaxBatchSize is the model's max_batch_size; 0 means the model does
	// not batch, so every request runs alone.
	MaxBatchSize int64
	// Instances is the number of instances that run the model, at least 1.
	Instances int
	// Oldest selects the oldest strategy; false is the direct strategy.
	Oldest bool
	// MaxCandidateSequences is the oldest strategy's number of live
	// sequences per instance (at least 1).
	MaxCandidateSequences int64
	// PreferredSizes are the oldest strategy's preferred batch sizes.
	PreferredSizes []int64
	// MaxQueueDelay is how long a batch of ready requests may wait to grow
	// (either strategy's max_queue_delay_microseconds).
	MaxQueueDelay time.Duration
	// Reject fails a START beyond capacity at once with [ErrNoRoom];
	// otherwise it waits until a sequence ends (or its ctx ends).
	Reject bool
	// MaxIdle frees a sequence that has had no request for this long
	// (max_sequence_idle_microseconds); 0 means never.
	MaxIdle time.Duration
}

// Capacity is how many sequences may be live at once: for the direct
// strategy a slot per batch row of every instance (instances ×
// max_batch_size, one row without batching), for the oldest strategy
// max_candidate_sequences per instance.
func (c SequenceConfig) Capacity() int64 {
	per := max(c.MaxBatchSize, 1)
	if c.Oldest {
		per = max(c.MaxCandidateSequences, 1)
	}
	return per * int64(max(c.Instances, 1))
}

// Batching returns the configuration of the [Dynamic] batcher in which the
// ready requests of different sequences (one per sequence at a time) form
// batches: the strategy's preferred sizes (the direct strategy has none, so
// batches aim at max_batch_size) and queue delay. It reports false when the
// model does not batch.
func (c SequenceConfig) Batching() (Config, bool) {
	if c.MaxBatchSize <= 0 {
		return Config{}, false
	}
	bc := Config{MaxBatchSize: c.MaxBatchSize, MaxQueueDelay: c.MaxQueueDelay}
	if c.Oldest {
		bc.PreferredSizes = slices.Clone(c.PreferredSizes)
	}
	return bc, true
}

func (c SequenceConfig) validate() error {
	switch {
	case c.MaxBatchSize < 0:
		return fmt.Errorf("negative max_batch_size %d", c.MaxBatchSize)
	case c.MaxIdle < 0, c.MaxQueueDelay < 0:
		return errors.New("negative idle time or queue delay")
	}
	if bc, ok := c.Batching(); ok {
		if _, _, err := bc.validate(); err != nil {
			return err
		}
	}
	return nil
}

// SequenceEnv is how a [Sequence] tells its owner about sequences.
type SequenceEnv[K comparable] struct {
	// Ended is told that the sequence of key is over, and why. It is called
	// once per sequence, never concurrently with itself, and must not call
	// back into the scheduler. For EndFlag it runs inside [Turn.Done] of the
	// END request, and in every case before the next request of the same
	// key (a new sequence) is let through [Turn.Wait]. May be nil.
	Ended func(key K, reason EndReason)
}

// Sequence is the scheduling half of Triton's sequence batcher, generic
// over the correlation ID K and the per-sequence state S (implicit state
// tensors, for the server) so that it can be tested with plain values: it
// decides which requests of which sequences may run, in what order, and
// frees sequences; it never sees tensors, and it does not run anything.
// The ready requests it lets through batch across sequences in a [Dynamic]
// configured by [SequenceConfig.Batching].
//
// # The life of a request
//
//   - [Sequence.Admit] places a request in its sequence. A START opens the
//     sequence if it is not live, within the capacity of live sequences
//     ([SequenceConfig.Capacity]): beyond it the START waits for a
//     sequence to end, first come first served, or is refused
//     ([ErrNoRoom]) as [SequenceConfig.Reject] says. Any other request needs its
//     sequence live ([ErrNotStarted]). Admission is a place in the
//     sequence's FIFO of turns.
//   - [Turn.Wait] waits until every request of the sequence admitted before
//     it has finished, and returns the state the last one left (the zero S
//     for a START). A request whose ctx ends while it waits leaves the FIFO
//     at once (the order of the rest holds) and cancels the requests of its
//     sequence admitted before the cancellation that have not begun: they
//     fail with [ErrSequenceCancelled] when their turn comes, as in
//     Triton. Requests admitted afterwards run normally.
//   - The request runs; [Turn.SetState] records what it leaves for the
//     next one, [Turn.Cancel] cancels its followers as above (its ctx ended
//     while it ran), and [Turn.Done] ends its turn, the sequence too when
//     it carried END. The next turn of the FIFO is then let go.
//
// # Freeing sequences
//
// A sequence ends with its END request, when it has had no request for
// MaxIdle (the idle sweep), or when the scheduler closes. Either way Ended
// is told before the sequence's room is given to a waiting START and before
// a later request with the same key goes through Wait. The idle sweep is
// one goroutine, owned by the scheduler and ended by Close, sleeping on a
// timer armed for the moment the longest-idle sequence expires (idle
// deadlines come in the order sequences go idle, so the first one armed is
// always the earliest); it ends an idle sequence by taking a turn in its
// FIFO, as an END request would, so a request admitted meanwhile runs after
// Ended has returned.
//
// # Choices
//
//   - No goroutine per request or per cancellation: a cancelled waiter
//     unlinks its own turn; whoever finishes the head of a FIFO hands the
//     next turn over by closing its channel. A turn admitted to an idle
//     sequence allocates no channel at all.
//   - Room for sequences is counted under the same lock as the table of
//     live sequences (rejected: golang.org/x/sync/semaphore beside the
//     table, which made "is this ID live, else take room" two steps with a
//     window between them, and needed a goroutine per waiter to wake it
//     when the model stops).
//   - One lock for the whole scheduler: every operation is a few pointer
//     moves, and a request takes it three times (admit, begin, done).
//
// # Experimental
//
// Sequence, its configuration and Turn are new and may change in a later
// release (the direct strategy's slot positions and instance pinning are
// not done yet).
type Sequence[K comparable, S any] struct {
	env      SequenceEnv[K]
	capacity int64
	reject   bool
	maxIdle  time.Duration

	// endTurn holds one token: Ended is never called concurrently with
	// itself. A channel rather than a mutex, so that a goroutine waiting
	// for its turn counts as durably blocked under testing/synctest.
	endTurn chan struct{}

	kick chan struct{} // the sweep has a new first idle sequence
	stop chan struct{} // closed by Close: the sweep returns
	done chan struct{} // closed when the sweep has returned

	mu sync.Mutex
	// mu protects the following.
	live    map[K]*sequence[K, S]
	used    int64             // room taken: live sequences plus room handed to waiters not yet back
	waiters []*roomWaiter     // STARTs waiting for room, in arrival order
	idle    bool              // the sweep has an idle sequence to time
	aborted bool              // Abort or Close was called
	closed  bool              // Close was called
	scratch []*sequence[K, S] // the sweep's
}

// sequence is one live sequence.
type sequence[K comparable, S any] struct {
	key        K
	head, tail *Turn[K, S] // FIFO of admitted turns; head is the one let go
	state      S
	last       time.Time // when its last turn ended
	ended      bool      // its END ran (or it was freed): only a START may follow
	epoch      uint64    // bumped by every cancellation
}

// roomWaiter is a START waiting for room; granted is closed when room is
// handed to it.
type roomWaiter struct {
	granted chan struct{}
	ok      bool // room was handed over (under Sequence.mu)
}

// Turn is an admitted request's place in its sequence. A Turn is used by
// one goroutine: Wait, then SetState and Cancel as needed, then Done; a
// Turn whose Wait failed is already done.
type Turn[K comparable, S any] struct {
	s          *Sequence[K, S]
	seq        *sequence[K, S]
	prev, next *Turn[K, S]
	ready      chan struct{} // closed when the turn reaches the head; nil when it was the head at once
	epoch      uint64        // the sequence's epoch at admission
	state      S             // what SetState recorded
	setState   bool
	cancel     bool
}

// NewSequence starts a sequence scheduler; Close stops it.
func NewSequence[K comparable, S any](cfg SequenceConfig, env SequenceEnv[K]) (*Sequence[K, S], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sequence[K, S]{
		env:      env,
		capacity: cfg.Capacity(),
		reject:   cfg.Reject,
		maxIdle:  cfg.MaxIdle,
		endTurn:  make(chan struct{}, 1),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		live:     map[K]*sequence[K, S]{},
	}
	if s.maxIdle > 0 {
		go s.sweep()
	} else {
		close(s.done)
	}
	return s, nil
}

// Capacity returns the number of sequences that may be live at once.
func (s *Sequence[K, S]) Capacity() int64 { return s.capacity }

// Live returns the number of live sequences.
func (s *Sequence[K, S]) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Admit places a request of sequence key, flagged START or not, at the end
// of its sequence. A START of a sequence that is not live needs room: it
// waits for it until ctx ends (returning ctx.Err()) or the scheduler stops
// ([ErrClosed]), or with [SequenceConfig.Reject] fails at once with
// [ErrNoRoom]. Any other request of a sequence that is not live fails with
// [ErrNotStarted]. After [Sequence.Abort] every Admit fails with ErrClosed.
func (s *Sequence[K, S]) Admit(ctx context.Context, key K, start bool) (*Turn[K, S], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return nil, ErrClosed
	}
	if sq := s.live[key]; sq != nil {
		return s.enqueueLocked(sq), nil
	}
	switch {
	case !start:
		return nil, ErrNotStarted
	case s.used < s.capacity:
		s.used++
	case s.reject:
		return nil, ErrNoRoom
	default:
		if err := s.waitRoomLocked(ctx); err != nil {
			return nil, err
		}
		if sq := s.live[key]; sq != nil {
			// Another START opened key while this one waited.
			s.releaseRoomLocked()
			return s.enqueueLocked(sq), nil
		}
	}
	sq := &sequence[K, S]{key: key}
	s.live[key] = sq
	return s.enqueueLocked(sq), nil
}

// waitRoomLocked waits, releasing s.mu meanwhile, until room is handed to
// the caller (s.used then counts it already), ctx ends or the scheduler
// aborts.
func (s *Sequence[K, S]) waitRoomLocked(ctx context.Context) error {
	w := &roomWaiter{granted: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	var err error
	select {
	case <-w.granted:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	switch {
	case w.ok && err != nil:
		s.releaseRoomLocked() // handed over as it gave up: pass it on
	case !w.ok:
		if i := slices.Index(s.waiters, w); i >= 0 {
			s.waiters = slices.Delete(s.waiters, i, i+1)
		}
		if err == nil {
			err = ErrClosed // woken by Abort
		}
	}
	return err
}

// releaseRoomLocked gives one unit of room back, to the first waiter if
// there is one.
func (s *Sequence[K, S]) releaseRoomLocked() {
	if len(s.waiters) > 0 {
		w := s.waiters[0]
		s.waiters = slices.Delete(s.waiters, 0, 1)
		w.ok = true
		close(w.granted)
		return
	}
	s.used--
}

// enqueueLocked appends a new turn to sq's FIFO.
func (s *Sequence[K, S]) enqueueLocked(sq *sequence[K, S]) *Turn[K, S] {
	t := &Turn[K, S]{s: s, seq: sq, epoch: sq.epoch, prev: sq.tail}
	if sq.tail != nil {
		sq.tail.next = t
		t.ready = make(chan struct{})
	} else {
		sq.head = t
	}
	sq.tail = t
	return t
}

// Wait waits for the request's turn: until every request admitted before it
// in its sequence has finished. It returns the state the last of them left
// (the zero S when start is set: a START begins afresh). It fails, with the
// turn then done, when ctx ends first (see [Sequence] for what that cancels),
// with [ErrSequenceCancelled] when an earlier request was cancelled, and
// with [ErrNotStarted] when the sequence ended before this request's turn
// and the request is not a START.
func (t *Turn[K, S]) Wait(ctx context.Context, start bool) (S, error) {
	var zero S
	s, sq := t.s, t.seq
	if t.ready != nil {
		select {
		case <-t.ready:
		default:
			select {
			case <-t.ready:
			case <-ctx.Done():
				s.mu.Lock()
				sq.epoch++
				if sq.head != t {
					s.unlinkLocked(t) // it never became the head: it just leaves
					s.mu.Unlock()
					return zero, ctx.Err()
				}
				s.mu.Unlock()
				t.finish(false) // it became the head as it gave up
				return zero, ctx.Err()
			}
		}
	}
	s.mu.Lock()
	cancelled, ended := sq.epoch != t.epoch, sq.ended
	state := sq.state
	if start {
		sq.ended, state = false, zero
	}
	s.mu.Unlock()
	switch {
	case cancelled:
		t.finish(false)
		return zero, ErrSequenceCancelled
	case ended && !start:
		t.finish(false)
		return zero, ErrNotStarted
	}
	return state, nil
}

// SetState records the sequence's state after this request, which the next
// request's Wait returns; without it the state stays as it was. Done
// applies it.
func (t *Turn[K, S]) SetState(state S) { t.state, t.setState = state, true }

// Cancel cancels the requests of the sequence admitted so far that have not
// begun, as when this request's ctx ended while it ran. Done applies it.
func (t *Turn[K, S]) Cancel() { t.cancel = true }

// Done ends the turn of a request that went through Wait, whether it
// succeeded or not; end tells that it carried END, which ends the sequence
// (Ended is told before Done returns). The next request of the sequence is
// then let go.
func (t *Turn[K, S]) Done(end bool) { t.finish(end) }

// finish ends the turn at the head of its sequence.
func (t *Turn[K, S]) finish(end bool) {
	s, sq := t.s, t.seq
	if end {
		s.ended(sq.key, EndFlag)
	}
	s.mu.Lock()
	if t.cancel {
		sq.epoch++
	}
	if t.setState {
		sq.state = t.state
	}
	if end {
		var zero S
		sq.ended, sq.state = true, zero
	}
	sq.last = time.Now()
	s.unlinkLocked(t)
	switch {
	case sq.head != nil:
		close(sq.head.ready)
	case sq.ended:
		if s.live[sq.key] == sq {
			delete(s.live, sq.key)
			s.releaseRoomLocked()
		}
	case !s.idle && s.maxIdle > 0 && !s.closed:
		s.idle = true // the first idle sequence: the sweep times it
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// unlinkLocked takes t out of its sequence's FIFO.
func (s *Sequence[K, S]) unlinkLocked(t *Turn[K, S]) {
	sq := t.seq
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		sq.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		sq.tail = t.prev
	}
	t.prev, t.next = nil, nil
}

// ended tells Env.Ended, one call at a time.
func (s *Sequence[K, S]) ended(key K, reason EndReason) {
	if s.env.Ended == nil {
		return
	}
	s.endTurn <- struct{}{}
	defer func() { <-s.endTurn }()
	s.env.Ended(key, reason)
}

// sweep frees idle sequences until Close.
func (s *Sequence[K, S]) sweep() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var fire <-chan time.Time
	for {
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-s.kick:
		case <-fire:
		}
		// Free the sequences idle for maxIdle, and find when the next one
		// will be.
		now := time.Now()
		var next time.Time
		s.mu.Lock()
		expired := s.scratch[:0]
		for _, sq := range s.live {
			if sq.head != nil || sq.ended {
				continue
			}
			if deadline := sq.last.Add(s.maxIdle); !now.Before(deadline) {
				expired = append(expired, sq)
			} else if next.IsZero() || deadline.Before(next) {
				next = deadline
			}
		}
		var turns []*Turn[K, S]
		for _, sq := range expired {
			// Take a turn, as an END request would: a request of the same
			// key admitted meanwhile waits until Ended has returned.
			t := s.enqueueLocked(sq)
			var zero S
			sq.ended, sq.state = true, zero
			turns = append(turns, t)
		}
		clear(expired)
		s.scratch = expired[:0]
		s.idle = !next.IsZero()
		s.mu.Unlock()
		for _, t := range turns {
			s.ended(t.seq.key, EndIdle)
			t.finish(false)
		}
		fire = nil
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			fire = timer.C
		}
	}
}

// Abort stops admission: Admit fails with [ErrClosed] from now on, and so
// do the STARTs waiting for room. Requests already admitted go on. It may
// be called more than once.
func (s *Sequence[K, S]) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return
	}
	s.aborted = true
	for _, w := range s.waiters {
		close(w.granted) // ok stays false: the waiter fails
	}
	s.waiters = nil
}

// Close aborts the scheduler, stops the idle sweep and tells Ended of every
// sequence still live (EndClosed). Call it once no admitted request is
// left; later calls do nothing.
func (s *Sequence[K, S]) Close() {
	s.Abort()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	var keys []K
	for k, sq := range s.live {
		if !sq.ended { // an ended one was told already
			keys = append(keys, k)
		}
	}
	clear(s.live)
	s.mu.Unlock()
	for _, k := range keys {
		s.ended(k, EndClosed)
	}
}
