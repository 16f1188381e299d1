package batcher

import "time"

// Node is the batcher's record of one queued item. Callers embed it in
// their own request record and pass it to [Dynamic.Enqueue], so queueing
// allocates nothing; a Node may be reused once it has left the queue
// (dispatched, removed or dropped). The zero value is ready to use.
type Node[T any] struct {
	item       T
	prev, next *Node[T]
	list       *list[T] // nil unless queued
	enqueued   time.Time
	deadline   time.Time // queue-policy timeout; zero: none
	delayed    bool      // its timeout expired under a DELAY policy
	level      int       // index into the priority levels (0 = priority 1)
	rows       int64     // Env.Size(item)
}

// Queued reports whether the node is waiting in a queue.
func (n *Node[T]) Queued() bool { return n.list != nil }

// list is an intrusive doubly linked FIFO of nodes.
type list[T any] struct {
	head, tail *Node[T]
	len        int
}

func (l *list[T]) pushBack(n *Node[T]) {
	n.list, n.prev, n.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = n
	} else {
		l.head = n
	}
	l.tail = n
	l.len++
}

func (l *list[T]) remove(n *Node[T]) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next, n.list = nil, nil, nil
	l.len--
}

// level is one priority level: requests in arrival order, then the ones
// whose DELAY timeout expired, which wait behind every request that has not
// expired at this level.
type level[T any] struct {
	policy  QueuePolicy
	main    list[T]
	delayed list[T]
	rows    int64 // the rows of its items
}

func (l *level[T]) len() int { return l.main.len + l.delayed.len }
