package batcher_test

import (
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
