// deadlines.go is the deadline-aware schedule's side of a version: its
// switch, the context a batch runs under, and what the version counts and
// logs when it sheds requests.

package triton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton/batcher"
	"github.com/triton-go/triton/modelconfig"
)

// paramDeadlineAware is the model parameter that turns the deadline-aware
// schedule on ("true") or off ("false") for one model, whatever
// [WithDeadlineAwareBatching] says.
const paramDeadlineAware = "deadline_aware_batching"

// deadlineAware reads whether a model's dynamic batcher is deadline-aware.
func (s *Server) deadlineAware(cfg *modelconfig.ModelConfig) (bool, error) {
	p, ok := cfg.GetParameters()[paramDeadlineAware]
	if !ok {
		return s.opts.deadlineAware, nil
	}
	switch v := p.GetStringValue(); v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, fmt.Errorf("parameter %s of model '%s' must be \"true\" or \"false\", not %q", paramDeadlineAware, cfg.GetName(), v)
	}
}

// batchContext is the context a batch of several requests runs under: it
// ends when every request's context has ended (cancelled, or past its
// deadline), since until then someone still wants the answer, and its
// deadline is the latest of theirs (none if one has none). A batch of one
// runs under its request's own context.
type batchContext struct {
	context.Context // the first request's, without its cancellation: values
	deadline        time.Time
	hasDeadline     bool

	once  sync.Once
	done  chan struct{}
	err   error
	mu    sync.Mutex
	left  int
	stops []func() bool
}

// newBatchContext returns the context of a batch of calls, and a release
// that must be called when the batch ends.
func newBatchContext(calls []*call) (context.Context, func()) {
	if len(calls) == 1 {
		return calls[0].ctx, func() {}
	}
	values := context.WithoutCancel(calls[0].ctx)
	var deadline time.Time
	hasDeadline := true
	for _, c := range calls {
		if c.ctx.Done() == nil {
			// Never cancelled: neither is the batch.
			return values, func() {}
		}
		if d, ok := c.ctx.Deadline(); !ok {
			hasDeadline = false
		} else if d.After(deadline) {
			deadline = d
		}
	}
	b := &batchContext{Context: values, deadline: deadline, hasDeadline: hasDeadline, done: make(chan struct{}), left: len(calls)}
	b.mu.Lock()
	for _, c := range calls {
		ctx := c.ctx
		b.stops = append(b.stops, context.AfterFunc(ctx, func() { b.ended(ctx) }))
	}
	b.mu.Unlock()
	return b, b.release
}

// ended counts one request's context ending; the last one ends the batch
// with that context's error.
func (b *batchContext) ended(ctx context.Context) {
	b.mu.Lock()
	b.left--
	last := b.left == 0
	b.mu.Unlock()
	if last {
		b.once.Do(func() {
			b.err = ctx.Err() // Canceled or DeadlineExceeded, as Err must be
			close(b.done)
		})
	}
}

func (b *batchContext) release() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// Deadline implements context.Context.
func (b *batchContext) Deadline() (time.Time, bool) { return b.deadline, b.hasDeadline }

// Done implements context.Context.
func (b *batchContext) Done() <-chan struct{} { return b.done }

// Err implements context.Context.
func (b *batchContext) Err() error {
	select {
	case <-b.done:
		return b.err
	default:
		return nil
	}
}

// ShedReason is why a request ended without an answer because of time;
// see [Shed].
type ShedReason uint8

// The reasons of [Shed], in its order.
const (
	ShedRefusedAdmission ShedReason = iota
	ShedRefusedBatch
	ShedDeadlineQueued
	ShedCancelledQueued
	ShedDeadlineExecuting
	ShedCancelledExecuting
	shedReasons
)

var shedNames = [shedReasons]string{"refused_admission", "refused_batch", "deadline_queued", "cancelled_queued", "deadline_executing", "cancelled_executing"}

// String returns the reason's metric label, such as "refused_admission".
func (r ShedReason) String() string {
	if r < shedReasons {
		return shedNames[r]
	}
	return fmt.Sprintf("ShedReason(%d)", uint8(r))
}

// Shed counts the requests of a model version that ended without an
// answer because of time, by reason: refused by the deadline-aware
// schedule when they arrived or when their batch formed (see
// [WithDeadlineAwareBatching]), or their context passed its deadline or
// was cancelled while they waited in the queue or while their batch ran.
// Index it with a [ShedReason].
type Shed [shedReasons]uint64

// shedReason classifies a failed request's error; ok is false for other
// failures.
func shedReason(err error, executed bool) (ShedReason, bool) {
	var r *batcher.Refused
	if errors.As(err, &r) {
		if r.Stage == batcher.AtBatch {
			return ShedRefusedBatch, true
		}
		return ShedRefusedAdmission, true
	}
	switch code := CodeOf(err); {
	case code == DeadlineExceeded && executed:
		return ShedDeadlineExecuting, true
	case code == DeadlineExceeded:
		return ShedDeadlineQueued, true
	case code == Cancelled && executed:
		return ShedCancelledExecuting, true
	case code == Cancelled:
		return ShedCancelledQueued, true
	}
	return 0, false
}

// shedQuiet is how long a version must refuse nothing before its next
// refusal is logged as the start of shedding again.
const shedQuiet = 10 * time.Second

// noteShed counts a request shed for reason and, for a refusal after
// shedQuiet without one, logs that the model started shedding.
func (v *version) noteShed(reason ShedReason, err error) {
	v.stats.shed[reason].Add(1)
	if reason != ShedRefusedAdmission && reason != ShedRefusedBatch {
		return
	}
	at := now()
	last := v.stats.lastRefusal.Swap(int64(at))
	if last == 0 || at-time.Duration(last) >= shedQuiet {
		fields := []zap.Field{zap.Error(err)}
		if e := v.estimator(); e != nil {
			fixed, perRow, margin, n := e.Fit()
			fields = append(fields, zap.Duration("batch_fixed", fixed), zap.Duration("batch_per_row", perRow),
				zap.Duration("margin", margin), zap.Int("batches", n))
		}
		v.log.Warn("model started shedding: requests that cannot finish before their deadlines are refused", fields...)
	}
}

// BatchEstimate is the deadline-aware schedule's estimate of one instance
// group's execution time: a batch of n rows is predicted to take
// Fixed + n·PerRow + Margin. Samples is the number of recent batches it
// rests on.
type BatchEstimate struct {
	Group                 int
	Fixed, PerRow, Margin time.Duration
	Samples               int
}

// estimates returns the version's estimates, one per instance group that
// has one.
func (v *version) estimates() []BatchEstimate {
	if v.dyn == nil {
		return nil
	}
	var out []BatchEstimate
	for g := 0; ; g++ {
		e := v.dyn.Estimator(g)
		if e == nil {
			return out
		}
		if fixed, perRow, margin, n := e.Fit(); n > 0 {
			out = append(out, BatchEstimate{Group: g, Fixed: fixed, PerRow: perRow, Margin: margin, Samples: n})
		}
	}
}

// estimator returns the first instance group's estimate, or nil.
func (v *version) estimator() *batcher.Estimator {
	if v.dyn == nil {
		return nil
	}
	return v.dyn.Estimator(0)
}

// RetryAfter returns how long a client refused for lack of time should
// wait before it retries (the predicted time for the queue ahead of it to
// drain), if err carries one: the adapters send it as HTTP's Retry-After
// and gRPC's grpc-retry-pushback-ms.
func RetryAfter(err error) (time.Duration, bool) {
	var r interface{ RetryAfter() time.Duration }
	if errors.As(err, &r) {
		return r.RetryAfter(), true
	}
	return 0, false
}
