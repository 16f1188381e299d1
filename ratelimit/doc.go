// Package ratelimit is Triton's rate limiter in execution-count mode
// (tritonserver --rate-limit=execution_count): it decides which model
// instance may execute next when instances compete for declared resources,
// across all the models of a server.
//
// A model's config.pbtxt declares, per instance group,
//
//	instance_group { rate_limiter {
//	  resources [ { name: "R1" count: 4 }, { name: "G" count: 1 global: true } ]
//	  priority: 2
//	} }
//
// and an instance may execute a batch only when all its resources are
// available: per-device resources on the instance's device, global ones in
// a single pool for the process. It holds them for the whole execution.
// Instance groups without a rate_limiter are not limited and never touch
// this package.
//
// # Entry points
//
//   - [New] once per server, with the --rate-limit-resource overrides as
//     [Config.Limits] (the zero Config gives every resource its default
//     count: the largest count any registered instance asks for).
//   - [Limiter.Register] when an instance is created, giving its device,
//     resources and priority; the [Client] it returns is the instance's
//     handle. [Client.Unregister] when the instance is closed.
//   - [Client.Acquire] before each execution and [Client.Release] after
//     it. These are the hot path: they take one mutex and do not allocate.
//   - [Limiter.Close] at shutdown wakes every waiter with [ErrClosed].
//   - [Limiter.Snapshot] for metrics and tests.
//
// # Scheduling rule and its trade-off
//
// Grants are all-or-nothing (no client ever holds part of its resources,
// so overlapping resource sets cannot deadlock) and follow stride
// scheduling: each client carries a pass, waiters are served in pass order,
// and a grant advances the client's pass by its priority, so under
// contention an instance of priority p executes about 1/p as often as one
// of priority 1. Priority only matters when more instances wait than the
// resources can serve at once: two instances alternating on one unit take
// turns whatever their priorities, in Triton too.
//
// The scheduler is work-conserving: when the first waiter does not fit, a
// later one that fits runs instead. That keeps resources busy but can
// starve an instance that needs many copies while small ones keep the
// pool partly used; after a waiter has been passed over 8 times on a
// resource it needs, nobody behind it is granted that resource until it
// fits, trading a little idle capacity for a bound on its wait. See
// [Limiter] for the details and the alternatives rejected.
//
// # Concurrency contract
//
// All methods are safe for concurrent use. A [Client] holds at most one
// grant: the server drives each instance from one worker goroutine, which
// calls Acquire and Release in turn; a second Acquire while one is waiting
// or holding returns an error instead of deadlocking, and Release without
// a grant panics. Acquire honours its context only while it waits. The
// package starts no goroutines: grants are made under the limiter's lock
// by whichever call frees or adds capacity, and the granted waiters are
// woken through a channel each client creates once at Register.
//
// # Differences from Triton
//
//   - A resource without a matching limit keeps its default count even
//     when other resources have limits; Triton then treats it as
//     unavailable and fails the load.
//   - Resource names in instance configs are case-insensitive, like the
//     names in limits.
//   - Work-conserving dispatch with a starvation bound instead of trying
//     only the first instance in line, and new instances join at the
//     current virtual time instead of execution count 0.
//
// # Usage
//
//	lim, err := ratelimit.New(ratelimit.Config{
//		Limits: []ratelimit.Limit{{Name: "R1", Count: 8, Device: -1}},
//	})
//	…
//	c, err := lim.Register(ratelimit.Instance{
//		Name: "resnet_0", Device: 0, Priority: 2,
//		Resources: []ratelimit.Resource{{Name: "R1", Count: 4}},
//	})
//	…
//	if err := c.Acquire(ctx); err != nil { … } // ErrClosed or ctx.Err()
//	err = inst.Execute(ctx, batch)
//	c.Release()
package ratelimit
