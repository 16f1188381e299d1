package batcher

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// TimeoutAction is what happens to a request whose queue-policy timeout
// expires while it waits.
type TimeoutAction int

const (
	// Reject answers the request with [ErrTimeout] (Triton's REJECT).
	Reject TimeoutAction = iota
	// Delay moves the request behind every request of its priority level
	// that has not timed out (Triton's DELAY).
	Delay
)

// QueuePolicy is the queue policy of one priority level (Triton's
// ModelQueuePolicy).
type QueuePolicy struct {
	// TimeoutAction applies when a request's timeout expires.
	TimeoutAction TimeoutAction
	// DefaultTimeout is every request's timeout; 0 means none.
	DefaultTimeout time.Duration
	// AllowTimeoutOverride lets a request ask for a shorter timeout than the
	// default. A request asking for one when it is not allowed fails with
	// [ErrTimeoutOverride].
	AllowTimeoutOverride bool
	// MaxQueueSize bounds the requests waiting at the level; 0 means no
	// bound. A request beyond it fails at once with [ErrQueueFull].
	MaxQueueSize int
}

// Config is a dynamic batcher's configuration (Triton's
// dynamic_batching), already normalized.
type Config struct {
	// MaxBatchSize is the model's max_batch_size, at least 1.
	MaxBatchSize int64
	// PreferredSizes are the preferred batch sizes; empty means
	// [MaxBatchSize]. Batches never grow beyond the largest of them.
	PreferredSizes []int64
	// MaxQueueDelay is how long a batch may wait to grow once its oldest
	// request is queued; 0 sends what is there as soon as an instance is
	// free.
	MaxQueueDelay time.Duration
	// PriorityLevels is the number of priority levels (1 is the highest);
	// 0 means one level.
	PriorityLevels int
	// DefaultPriority is the level of requests that ask for none (1 when
	// PriorityLevels is 0).
	DefaultPriority int
	// DefaultPolicy is the queue policy of every level without its own.
	DefaultPolicy QueuePolicy
	// Policies holds per-level policies, keyed by level (1-based).
	Policies map[int]QueuePolicy
	// DeadlineAware turns on the deadline-aware schedule: a request with a
	// deadline (Env.Deadline) is refused at Enqueue when the batcher
	// predicts it cannot finish in time behind the queue ahead of it, and
	// is never put into a batch predicted to end after its deadline (each
	// batch is as large as enough queued requests' deadlines allow; one it
	// would make late is dropped); the wait for a batch to grow is
	// shortened to what its members' deadlines leave.
	// Predictions come from the instances' recent batches ([Estimator]),
	// timed from their formation (see [Dynamic.Observe]); until there are
	// enough of them, the schedule is plain FIFO.
	DeadlineAware bool
}

// validate checks the configuration and returns the levels' policies and
// the batch size limit.
func (c Config) validate() ([]QueuePolicy, int64, error) {
	if c.MaxBatchSize < 1 {
		return nil, 0, fmt.Errorf("dynamic batching needs max_batch_size > 0, got %d", c.MaxBatchSize)
	}
	limit := c.MaxBatchSize
	if len(c.PreferredSizes) > 0 {
		limit = slices.Max(c.PreferredSizes)
		for _, p := range c.PreferredSizes {
			if p < 1 || p > c.MaxBatchSize {
				return nil, 0, fmt.Errorf("preferred batch size %d is not in [1, %d]", p, c.MaxBatchSize)
			}
		}
	}
	if c.MaxQueueDelay < 0 {
		return nil, 0, errors.New("negative max queue delay")
	}
	levels := max(c.PriorityLevels, 1)
	def := c.DefaultPriority
	if c.PriorityLevels == 0 && def == 0 {
		def = 1
	}
	if def < 1 || def > levels {
		return nil, 0, fmt.Errorf("default priority level %d is not in [1, %d]", def, levels)
	}
	policies := make([]QueuePolicy, levels)
	for i := range policies {
		policies[i] = c.DefaultPolicy
	}
	for lvl, p := range c.Policies {
		if lvl < 1 || lvl > levels {
			return nil, 0, fmt.Errorf("queue policy for priority level %d, which is not in [1, %d]", lvl, levels)
		}
		policies[lvl-1] = p
	}
	for i, p := range policies {
		if p.DefaultTimeout < 0 || p.MaxQueueSize < 0 {
			return nil, 0, fmt.Errorf("priority level %d: negative timeout or queue size", i+1)
		}
	}
	return policies, limit, nil
}
