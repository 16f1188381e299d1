package batcher

import "sync"

// Order releases finished items in the order they arrived, whatever order
// they finish in: Triton's preserve_ordering, under which a request's
// response waits until every request that arrived before it has had its own
// (or has left without one). The zero value is not ready; use [NewOrder].
//
// Each arrival takes a ticket with [Order.Issue]; a finished item is handed
// in with [Order.Done], an item that leaves without an answer to deliver
// (refused, cancelled while queued) with [Order.Skip]. Items are released
// (the release function is called) as soon as every earlier ticket has been
// handed in, on the goroutine that handed in the last of them.
//
// # Experimental
//
// Order is new and may change in a later release.
type Order[T any] struct {
	release func(T)

	mu sync.Mutex
	// mu protects the following.
	issued, next uint64
	held         map[uint64]heldItem[T] // handed in, waiting for earlier tickets
}

type heldItem[T any] struct {
	item T
	skip bool
}

// NewOrder returns an Order that releases items with release, which is
// called under the Order's lock: it must be quick, must not block and must
// not call back into the Order.
func NewOrder[T any](release func(T)) *Order[T] {
	return &Order[T]{release: release, next: 1, held: map[uint64]heldItem[T]{}}
}

// Issue returns the next arrival's ticket.
func (o *Order[T]) Issue() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.issued++
	return o.issued
}

// Done hands in the finished item of ticket, releasing it and every later
// item it was holding up.
func (o *Order[T]) Done(ticket uint64, item T) { o.handIn(ticket, heldItem[T]{item: item}) }

// Skip hands in a ticket that has nothing to release.
func (o *Order[T]) Skip(ticket uint64) { o.handIn(ticket, heldItem[T]{skip: true}) }

// Held returns the number of items handed in and waiting for earlier ones.
func (o *Order[T]) Held() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held)
}

func (o *Order[T]) handIn(ticket uint64, h heldItem[T]) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ticket != o.next {
		o.held[ticket] = h
		return
	}
	for {
		if !h.skip {
			o.release(h.item)
		}
		o.next++
		var ok bool
		if h, ok = o.held[o.next]; !ok {
			return
		}
		delete(o.held, o.next)
	}
}
