package batcher_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/triton-go/triton/batcher"
)

// Requests are plain ints here (their value is their batch size); the
// batcher coalesces them into batches of at most 4 rows.
func ExampleDynamic() {
	idle := make(chan string, 1)
	batches := make(chan []int, 10)
	env := batcher.Env[int, string]{
		Size:       func(rows int) int64 { return int64(rows) },
		Compatible: func(a, b int) bool { return true },
		Expired:    func(int) error { return nil },
		Drop:       func(int, error) {},
		Dispatch: func(inst string, batch []int) {
			batches <- append([]int(nil), batch...)
			idle <- inst // the instance is free again at once
		},
	}
	d, err := batcher.NewDynamic(batcher.Config{MaxBatchSize: 4, MaxQueueDelay: 10 * time.Millisecond}, env, idle)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()

	nodes := make([]batcher.Node[int], 5)
	for i, rows := range []int{1, 2, 1, 3, 1} {
		if err := d.Enqueue(&nodes[i], rows, 0, 0); err != nil {
			fmt.Println(err)
		}
	}
	idle <- "instance-0" // only now can batches form
	fmt.Println(<-batches)
	fmt.Println(<-batches)
	// Output:
	// [1 2 1]
	// [3 1]
}

// A sequence's requests go through their turns one at a time, in order,
// each seeing the state the one before it left; here the state is a
// running sum, and the scheduler is told when a sequence ends.
func ExampleSequence() {
	seq, err := batcher.NewSequence[string, int](batcher.SequenceConfig{MaxBatchSize: 4}, batcher.SequenceEnv[string]{
		Ended: func(id string, why batcher.EndReason) { fmt.Println("ended:", id, why == batcher.EndFlag) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer seq.Close()

	ctx := context.Background()
	for i, x := range []int{5, 7, 30} {
		start, end := i == 0, i == 2
		turn, err := seq.Admit(ctx, "stream-1", start)
		if err != nil {
			fmt.Println(err)
			return
		}
		sum, err := turn.Wait(ctx, start) // the state the previous request left
		if err != nil {
			fmt.Println(err)
			return
		}
		turn.SetState(sum + x)
		turn.Done(end)
		fmt.Println(sum + x)
	}
	_, err = seq.Admit(ctx, "stream-1", false)
	fmt.Println(errors.Is(err, batcher.ErrNotStarted))
	// Output:
	// 5
	// 12
	// ended: stream-1 true
	// 42
	// true
}
