package trace

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/tensor"
)

// Trace is one traced request: its stamps, its tensors at level TENSORS,
// and the traces of the requests it makes ([Trace.Child]). [Tracer.Start]
// returns it, nil for a request that is not traced: every method of a nil
// *Trace is a no-op. Safe for concurrent use.
type Trace struct {
	tree  *tree
	rec   *Record
	bound bool // tree.mu protects bound and ended
	ended bool
}

// tree is what a root trace and its children share.
type tree struct {
	smp   *sampler
	level settings.TraceLevel
	root  *Trace

	mu   sync.Mutex
	open int // traces of the tree not ended yet
}

type traceKey struct{}

// NewContext returns ctx carrying tr (ctx itself when tr is nil).
func NewContext(ctx context.Context, tr *Trace) context.Context {
	if tr == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, tr)
}

// FromContext returns the trace ctx carries, or nil.
func FromContext(ctx context.Context) *Trace {
	tr, _ := ctx.Value(traceKey{}).(*Trace)
	return tr
}

// ID returns the trace's id (0 for nil).
func (t *Trace) ID() uint64 {
	if t == nil {
		return 0
	}
	return t.rec.ID
}

// Level returns the trace's level: TIMESTAMPS and/or TENSORS (OFF for
// nil).
func (t *Trace) Level() settings.TraceLevel {
	if t == nil {
		return settings.TraceOff
	}
	return t.tree.level
}

// Stamp records that the request reached activity a at time at (with its
// monotonic reading), at level TIMESTAMPS.
func (t *Trace) Stamp(a Activity, at time.Time) {
	if t == nil || t.tree.level&settings.TraceTimestamps == 0 {
		return
	}
	t.tree.mu.Lock()
	if t.tree.open > 0 { // not exported yet
		t.rec.Stamps = append(t.rec.Stamps, Stamp{Activity: a, At: at})
	}
	t.tree.mu.Unlock()
}

// Tensor records a copy of x for activity a, at level TENSORS.
func (t *Trace) Tensor(a TensorActivity, x tensor.Tensor) {
	if t == nil || t.tree.level&settings.TraceTensors == 0 {
		return
	}
	c := tensor.Tensor{Name: x.Name, DataType: x.DataType, Shape: slices.Clone(x.Shape), Data: slices.Clone(x.Data)}
	t.tree.mu.Lock()
	if t.tree.open > 0 {
		t.rec.Tensors = append(t.rec.Tensors, TensorRecord{Activity: a, Tensor: c, At: time.Now()})
	}
	t.tree.mu.Unlock()
}

// Bind names the traced request: the model (and version) that runs it and
// its id. The server binds the trace an adapter started; a trace already
// bound is the parent of the request it is asked to bind (an ensemble step,
// a BLS call), which gets a [Trace.Child] instead ([Trace.Bound]).
func (t *Trace) Bind(model string, version int64, requestID string) {
	if t == nil {
		return
	}
	t.tree.mu.Lock()
	t.rec.Model, t.rec.Version, t.rec.RequestID = model, version, requestID
	t.bound = true
	t.tree.mu.Unlock()
}

// Bound reports whether [Trace.Bind] was called.
func (t *Trace) Bound() bool {
	if t == nil {
		return false
	}
	t.tree.mu.Lock()
	defer t.tree.mu.Unlock()
	return t.bound
}

// Child returns a new trace for a request this one makes (an ensemble
// step, a BLS call): a fresh id, this trace's id as its parent, written
// with this trace's tree. It must be ended; the tree goes to the exporter
// once every trace of it has ended.
func (t *Trace) Child() *Trace {
	if t == nil {
		return nil
	}
	c := &Trace{tree: t.tree, rec: &Record{ID: nextID.Add(1), Parent: t.rec.ID, Remote: t.rec.Remote}}
	t.tree.mu.Lock()
	defer t.tree.mu.Unlock()
	if t.tree.open == 0 {
		return nil // the tree was exported: too late for a child
	}
	t.rec.Children = append(t.rec.Children, c.rec)
	t.tree.open++
	return c
}

// End ends the trace. Once every trace of its tree has ended, the tree
// goes to the exporter, and later stamps are dropped. Calling End again
// does nothing.
func (t *Trace) End() {
	if t == nil {
		return
	}
	tr := t.tree
	tr.mu.Lock()
	if t.ended {
		tr.mu.Unlock()
		return
	}
	t.ended = true
	tr.open--
	last := tr.open == 0
	tr.mu.Unlock()
	if last {
		tr.smp.t.open.Add(-1)
		tr.smp.collect(tr.root.rec)
	}
}
