package ratelimit_test

import (
	"context"
	"fmt"

	"github.com/triton-go/triton/ratelimit"
)

// Example shows a server's use: register instances as they load, and
// bracket every execution with Acquire and Release.
func Example() {
	// --rate-limit-resource=gpu_slots:8 would be Limits: {{"gpu_slots", 8, -1}}.
	lim, err := ratelimit.New(ratelimit.Config{})
	if err != nil {
		panic(err)
	}
	defer lim.Close()

	// instance_group { rate_limiter { resources [{ name: "R1" count: 4 }] } }
	a, err := lim.Register(ratelimit.Instance{
		Name: "resnet_0", Device: 0,
		Resources: []ratelimit.Resource{{Name: "R1", Count: 4}},
	})
	if err != nil {
		panic(err)
	}
	// ... and { name: "R1" count: 2 } with priority 2 on the same GPU.
	b, err := lim.Register(ratelimit.Instance{
		Name: "bert_0", Device: 0, Priority: 2,
		Resources: []ratelimit.Resource{{Name: "R1", Count: 2}},
	})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	if err := a.Acquire(ctx); err != nil { // before Execute
		panic(err)
	}
	for _, r := range lim.Snapshot().Resources {
		fmt.Printf("%s on device %d: %d of %d in use\n", r.Name, r.Device, r.InUse, r.Available)
	}
	a.Release() // after Execute

	if err := b.Acquire(ctx); err != nil {
		panic(err)
	}
	b.Release()
	fmt.Println("bert_0 ran")
	// Output:
	// R1 on device 0: 4 of 4 in use
	// bert_0 ran
}

// ExampleLimiter_Register shows the error for a resource that one model
// declares global and another per-device.
func ExampleLimiter_Register() {
	lim, _ := ratelimit.New(ratelimit.Config{})
	defer lim.Close()
	_, _ = lim.Register(ratelimit.Instance{Name: "a_0", Resources: []ratelimit.Resource{{Name: "R1", Count: 1, Global: true}}})
	_, err := lim.Register(ratelimit.Instance{Name: "b_0", Device: 1, Resources: []ratelimit.Resource{{Name: "R1", Count: 1}}})
	fmt.Println(err)
	// Output:
	// ratelimit: resource "R1" is global for instance "a_0" but per-device for instance "b_0"
}

// ExampleClient_Acquire shows Acquire waiting until a context ends.
func ExampleClient_Acquire() {
	lim, _ := ratelimit.New(ratelimit.Config{})
	defer lim.Close()
	holder, _ := lim.Register(ratelimit.Instance{Resources: []ratelimit.Resource{{Name: "R", Count: 1}}})
	waiter, _ := lim.Register(ratelimit.Instance{Resources: []ratelimit.Resource{{Name: "R", Count: 1}}})

	_ = holder.Acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(waiter.Acquire(ctx)) // R is taken: it waits, and ctx has ended
	holder.Release()
	fmt.Println(waiter.Acquire(ctx)) // R is free: granted without looking at ctx
	waiter.Release()
	// Output:
	// context canceled
	// <nil>
}
