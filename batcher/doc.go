// Package batcher holds every scheduler that stands between concurrent
// requests and a model's instances:
//
//   - [Dynamic] is Triton's dynamic batcher (dynamic_batching in
//     config.pbtxt): preferred batch sizes, a maximum queue delay, priority
//     levels and per-level queue policies (timeouts with REJECT or DELAY,
//     timeout overrides, bounded queues).
//   - [Sequence] is the scheduling half of Triton's sequence batcher
//     (sequence_batching): it admits sequences within the model's capacity
//     (waiting for room or rejecting), lets the requests of each sequence
//     through one at a time in arrival order, cancels a cancelled
//     sequence's queued requests, and frees sequences that end or go idle
//     (max_sequence_idle_microseconds). The ready requests of different
//     sequences batch in a Dynamic configured by the strategy, direct or
//     oldest ([SequenceConfig.Batching]).
//   - [Order] releases answers in arrival order (preserve_ordering).
//
// The package knows nothing of tensors or backends: the schedulers are
// generic over the queued item, the instance type, the correlation ID and
// the per-sequence state, and an [Env] (a [SequenceEnv]) tells a scheduler
// what it needs to know of its items: an item's size, whether two items may
// share a batch, whether an item's request has ended, how to answer an item
// it drops, how to dispatch a batch, and whom to tell that a sequence ended.
// That keeps them testable with plain values (their tests run under
// testing/synctest's fake clock) and lets the server decide who runs a batch
// (in triton-go: the batch's first request's own goroutine) and what a
// sequence's state is (its implicit state tensors).
//
// # Usage
//
//	d, err := batcher.NewDynamic(cfg, env, idle) // idle delivers free instances
//	...
//	err = d.Enqueue(&node, item, priority, timeout) // never blocks
//	...
//	if ctxDone && d.Remove(&node) { /* it left the queue */ }
//	...
//	d.Offer(inst)    // a busy instance takes the next full batch (Env.Queue)
//	d.Withdraw(inst) // ... or no longer does, once its batch has ended
//	...
//	d.Close() // drops what is queued with ErrClosed
//
// A request of a sequence model goes through a Sequence first:
//
//	turn, err := seq.Admit(ctx, id, start) // may wait for room for a new sequence
//	state, err := turn.Wait(ctx, start)    // until the sequence's earlier requests are done
//	... run it (through a Dynamic when the model batches) ...
//	turn.SetState(next)
//	turn.Done(end)
//
// # Concurrency
//
// Every method is safe for concurrent use, except that a [Turn] belongs to
// the goroutine of its request. Each Dynamic runs one scheduler goroutine,
// started by NewDynamic and ended by Close; the Env callbacks run on it, or
// on the goroutine of an Enqueue, a Release or an Offer that forms a batch
// itself.
// Each Sequence with an idle time runs one sweep goroutine, started by
// NewSequence and ended by Close. An Order runs none.
package batcher
