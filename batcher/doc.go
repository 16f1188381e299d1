// Package batcher holds the schedulers that turn concurrent requests into
// batches: [Dynamic] is Triton's dynamic batcher (dynamic_batching in
// config.pbtxt) — preferred batch sizes, a maximum queue delay, priority
// levels and per-level queue policies (timeouts with REJECT or DELAY,
// timeout overrides, bounded queues).
//
// The package knows nothing of tensors or backends: a batcher is generic
// over the queued item and the instance type, and an [Env] tells it an
// item's size, whether two items may share a batch, whether an item's
// request has ended, how to answer an item it drops and how to dispatch a
// batch. That keeps it testable with plain values (its tests drive it with
// testing/synctest's fake clock) and lets the server decide who runs a
// batch (in triton-go: the batch's first request's own goroutine).
//
// # Usage
//
//	d, err := batcher.NewDynamic(cfg, env, idle) // idle delivers free instances
//	...
//	err = d.Enqueue(&node, item, priority, timeout) // never blocks
//	...
//	if ctxDone && d.Remove(&node) { /* it left the queue */ }
//	...
//	d.Close() // drops what is queued with ErrClosed
//
// # Concurrency
//
// Enqueue, Remove, Len and Close are safe for concurrent use. Each batcher
// runs one scheduler goroutine, started by NewDynamic and ended by Close;
// the Env callbacks run on it.
package batcher
