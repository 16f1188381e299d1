package ratelimit

import "context"

// clientState is where a client stands; guarded by Limiter.mu.
type clientState uint8

const (
	idle    clientState = iota // neither waiting nor holding
	waiting                    // in Limiter.waiters, blocked in Acquire
	holding                    // granted; its needs are counted in its pools
)

// Client is one registered model instance. It holds at most one grant at a
// time: the server calls [Client.Acquire] before each execution and
// [Client.Release] after it. Its methods are safe for concurrent use, but
// a second Acquire while the first is waiting or holding fails rather than
// queueing, since one instance executes one batch at a time.
type Client struct {
	l        *Limiter
	name     string
	priority uint64
	needs    []need     // immutable after Register
	wake     chan error // capacity 1: nil for a grant, ErrClosed for Close or Unregister

	// Guarded by l.mu.
	state clientState
	reg   bool   // registered
	pass  uint64 // stride pass: advanced by priority on each grant
	seq   uint64 // arrival order among waiters
	skips int    // grants to later waiters on its pools while it waited
}

// Acquire blocks until all of the client's resources are granted to it.
// When they are free and nobody is waiting, it returns at once without
// looking at ctx. While it waits, it returns ctx.Err() if ctx ends first
// (having given back a grant that raced with the cancellation, so nothing
// is left held), and [ErrClosed] if the limiter is closed or the client
// unregistered. Triton does not observe cancellation inside its rate
// limiter; honouring ctx here only keeps a caller from blocking forever.
//
// On success the caller must call [Client.Release] exactly once. Acquire
// on a client that already holds or awaits a grant returns an error at
// once: it would otherwise deadlock.
//
// Acquire does not allocate.
func (c *Client) Acquire(ctx context.Context) error {
	l := c.l
	l.mu.Lock()
	if l.closed || !c.reg {
		l.mu.Unlock()
		return ErrClosed
	}
	if c.state != idle {
		l.mu.Unlock()
		return errBusy
	}
	if before(c.pass, l.vtime) {
		c.pass = l.vtime // no credit for time spent not waiting
	}
	if len(l.waiters) == 0 && c.fitsLocked() {
		l.grantLocked(c, c.pass)
		l.mu.Unlock()
		return nil
	}
	l.enqueueLocked(c)
	l.dispatchLocked()
	if c.state == holding { // granted by its own dispatch
		<-c.wake
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()

	select {
	case err := <-c.wake:
		return err
	case <-ctx.Done():
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	switch c.state {
	case waiting:
		l.removeWaiterLocked(c)
		c.state = idle
		l.dispatchLocked() // it may have been holding pools back
	case holding: // granted after ctx ended: give it back
		<-c.wake
		l.releaseLocked(c)
		c.pass -= c.priority
		l.dispatchLocked()
	default: // woken by Close or Unregister
		return <-c.wake
	}
	return ctx.Err()
}

// Release returns the client's grant and hands the resources to waiters.
// It panics if the client holds no grant, as unlocking an unlocked mutex
// does. Release does not allocate.
func (c *Client) Release() {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.state != holding {
		panic("ratelimit: Release of a client that holds no grant")
	}
	l.releaseLocked(c)
	l.dispatchLocked()
}

// Unregister removes the instance: default counts are recomputed without
// it, a concurrent Acquire that is waiting returns [ErrClosed], and so does
// any later Acquire. The instance should Release its grant first; if it
// still holds one, its resources stay in use until that Release. Unregister
// is idempotent.
func (c *Client) Unregister() {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.reg {
		return
	}
	c.reg = false
	delete(l.clients, c)
	if c.state == waiting {
		l.removeWaiterLocked(c)
		c.state = idle
		c.wake <- ErrClosed
	}
	for _, nd := range c.needs {
		nd.p.users--
		l.recomputeLocked(nd.p)
		l.dropPoolLocked(nd.p)
	}
	l.dispatchLocked() // a waiter may have been holding pools back
}

// fitsLocked reports whether every pool of c has room for c's count.
func (c *Client) fitsLocked() bool {
	for _, nd := range c.needs {
		if uint64(nd.p.inUse)+uint64(nd.n) > uint64(nd.p.avail) {
			return false
		}
	}
	return true
}

// blockedLocked reports whether a starving waiter ahead of c reserved one
// of c's pools in this dispatch round.
func (c *Client) blockedLocked(epoch uint64) bool {
	for _, nd := range c.needs {
		if nd.p.reserved == epoch {
			return true
		}
	}
	return false
}

// sharesPool reports whether c and o need a common pool.
func (c *Client) sharesPool(o *Client) bool {
	for _, a := range c.needs {
		for _, b := range o.needs {
			if a.p == b.p {
				return true
			}
		}
	}
	return false
}

// grantLocked gives c its resources. low is the lowest waiting pass at the
// time (c's own pass when it is first in line); it moves virtual time.
func (l *Limiter) grantLocked(c *Client, low uint64) {
	for _, nd := range c.needs {
		nd.p.inUse += nd.n
	}
	if before(l.vtime, low) {
		l.vtime = low
	}
	c.pass += c.priority
	c.skips = 0
	c.state = holding
	l.holding++
}

// releaseLocked returns c's resources to its pools.
func (l *Limiter) releaseLocked(c *Client) {
	for _, nd := range c.needs {
		nd.p.inUse -= nd.n
		if !c.reg {
			l.dropPoolLocked(nd.p)
		}
	}
	c.state = idle
	l.holding--
}

// enqueueLocked inserts c among the waiters in (pass, seq) order. The
// slice has room (Register grows it), so this does not allocate.
func (l *Limiter) enqueueLocked(c *Client) {
	l.seq++
	c.seq = l.seq
	c.skips = 0
	c.state = waiting
	i := len(l.waiters)
	for i > 0 && before(c.pass, l.waiters[i-1].pass) {
		i--
	}
	l.waiters = append(l.waiters, nil)
	copy(l.waiters[i+1:], l.waiters[i:])
	l.waiters[i] = c
}

// removeWaiterLocked takes c out of the waiters, keeping their order.
func (l *Limiter) removeWaiterLocked(c *Client) {
	for i, w := range l.waiters {
		if w == c {
			l.removeAtLocked(i)
			return
		}
	}
}

func (l *Limiter) removeAtLocked(i int) {
	copy(l.waiters[i:], l.waiters[i+1:])
	l.waiters[len(l.waiters)-1] = nil
	l.waiters = l.waiters[:len(l.waiters)-1]
}

// dispatchLocked grants every waiter that fits, in pass order. A waiter
// that does not fit is skipped (work conservation), and each grant to a
// waiter behind it that shares one of its pools counts as a skip; once a
// waiter has maxSkips skips, its pools are reserved for the rest of the
// round, so that nobody behind it takes them. Reservations are recomputed
// every round from the skip counts, so they vanish when the waiter is
// granted or leaves.
func (l *Limiter) dispatchLocked() {
	if len(l.waiters) == 0 {
		return
	}
	l.epoch++
	for i := 0; i < len(l.waiters); {
		w := l.waiters[i]
		if w.blockedLocked(l.epoch) || !w.fitsLocked() {
			if w.skips >= maxSkips {
				l.reserveLocked(w)
			}
			i++
			continue
		}
		for _, u := range l.waiters[:i] {
			if u.sharesPool(w) {
				u.skips++
				if u.skips >= maxSkips {
					l.reserveLocked(u)
				}
			}
		}
		low := l.waiters[0].pass
		l.removeAtLocked(i)
		l.grantLocked(w, low)
		w.wake <- nil
	}
}

// reserveLocked holds c's pools back from later waiters for this round.
func (l *Limiter) reserveLocked(c *Client) {
	for _, nd := range c.needs {
		nd.p.reserved = l.epoch
	}
}

// before reports whether pass a comes before pass b, allowing for
// wrap-around: passes are compared by their difference, which is correct
// while live passes lie within 2⁶³ of each other.
func before(a, b uint64) bool { return int64(a-b) < 0 }
