package backendtest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/backend"
)

// This file is the kit's side of the server's promises: every call into
// the backend goes through these wrappers, which keep the promises (one
// Execute at a time per instance, none after Close, Close once, a model's
// Close after its instances') and assert them, so that a mistake in the
// kit shows as a "backendtest bug" instead of as a backend's fault. They
// also turn panics and hangs into problems to report.

// outcome is how a call into the backend ended.
type outcome struct {
	err   error         // what the call returned
	panic string        // the panic, with where it happened; "" when none
	hung  chan struct{} // non-nil when the call did not return in time; closed when it does
}

// call runs f on a goroutine of its own and waits at most d for it. When
// f does not return in time, the goroutine is left to finish on its own
// and hung says when it has.
func call(d time.Duration, f func() error) outcome {
	done := make(chan struct{})
	var o outcome // written by the goroutine, read only after done closes
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				o.panic = fmt.Sprintf("%v (%s)", p, panicSite())
			}
		}()
		o.err = f()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return o
	case <-t.C:
		return outcome{hung: done}
	}
}

// panicSite returns the function and line that panicked, from inside the
// deferred function that recovered.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(0, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		if panicking && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("at %s %s:%d", f.Function, f.File, f.Line)
		}
		panicking = panicking || f.Function == "runtime.gopanic" || f.Function == "runtime.panicmem" || f.Function == "runtime.sigpanic"
		if !more {
			return "where unknown"
		}
	}
}

// problem describes an outcome that is not a plain return: a panic or a
// hang. what names the call.
func (o outcome) problem(what string, d time.Duration) string {
	switch {
	case o.hung != nil:
		return fmt.Sprintf("%s did not return within %v", what, d)
	case o.panic != "":
		return fmt.Sprintf("%s panicked: %s", what, o.panic)
	}
	return ""
}

// where names a model version in messages.
func where(m *model, v int64) string { return fmt.Sprintf("model %q version %d", m.name, v) }

// loaded is a model version the kit has loaded.
type loaded struct {
	m    *model
	v    int64
	spec *backend.ModelSpec
	bm   backend.Model

	mu sync.Mutex
	// mu protects the following.
	insts  []*instance
	closed bool
	hung   int // NewInstance calls that did not return in time
}

func (lm *loaded) String() string { return where(lm.m, lm.v) }

// load calls Load for version v of m with ctx. It returns the loaded
// model, or a problem (a panic, a hang, no model, a changed config) to
// report for the model version, or the error Load returned.
func (s *suite) load(ctx context.Context, m *model, v int64) (lm *loaded, problem string, err error) {
	spec := m.spec(v)
	var bm backend.Model
	o := call(m.timeout, func() (err error) {
		bm, err = s.b.Load(ctx, spec)
		return err
	})
	if p := o.problem("Load", m.timeout); p != "" {
		return nil, p, nil
	}
	if o.err != nil {
		return nil, "", o.err
	}
	if bm == nil {
		return nil, "Load returned neither a model nor an error", nil
	}
	lm = &loaded{m: m, v: v, spec: spec, bm: bm}
	if !proto.Equal(spec.Config, m.cfg) {
		// Reported, and the model is still used and closed.
		return lm, "Load changed the model configuration (ModelSpec.Config is the server's; only CompleteConfig may fill it in)", nil
	}
	return lm, "", nil
}

// mustLoad loads version v of m with a background context and reports
// any failure.
func (s *suite) mustLoad(r *report, m *model, v int64) *loaded {
	lm, problem, err := s.load(context.Background(), m, v)
	if problem != "" {
		r.add(where(m, v), problem)
	}
	if err != nil {
		r.add(where(m, v), fmt.Sprintf("Load failed: %v", err))
	}
	return lm
}

// instance is an instance the kit has created.
type instance struct {
	lm   *loaded
	name string
	inst backend.Instance

	// The kit's own guards, atomic so that a kit bug shows as a report
	// rather than as a data race.
	busy   atomic.Int32 // Execute calls in progress
	closed atomic.Bool

	// Owned by the goroutine driving the instance.
	broken string        // why it takes no more batches ("" while it does)
	hung   chan struct{} // a call that did not return in time
}

func (i *instance) String() string { return fmt.Sprintf("%s, instance %s", i.lm, i.name) }

// newInstance creates an instance and warms it up, as the server does. It
// returns the instance, or a problem to report for the model version, or
// the error NewInstance or Warmup returned. A created instance is
// registered with its model (which closes it) even when Warmup fails.
func (lm *loaded) newInstance(ctx context.Context, is instanceSpec) (inst *instance, problem string, err error) {
	spec := is.spec
	spec.Group = lm.spec.Config.GetInstanceGroup()[is.group]
	d := lm.m.timeout
	lm.mu.Lock()
	closed := lm.closed
	lm.mu.Unlock()
	if closed {
		return nil, "backendtest bug: NewInstance after the model's Close", nil
	}
	var bi backend.Instance
	o := call(d, func() (err error) {
		bi, err = lm.bm.NewInstance(ctx, spec)
		return err
	})
	if p := o.problem("NewInstance "+spec.Name, d); p != "" {
		if o.hung != nil {
			lm.mu.Lock()
			lm.hung++ // the model must not close under it
			lm.mu.Unlock()
		}
		return nil, p, nil
	}
	if o.err != nil {
		return nil, "", fmt.Errorf("NewInstance %s: %w", spec.Name, o.err)
	}
	if bi == nil {
		return nil, fmt.Sprintf("NewInstance %s returned neither an instance nor an error", spec.Name), nil
	}
	inst = &instance{lm: lm, name: spec.Name, inst: bi}
	lm.mu.Lock()
	lm.insts = append(lm.insts, inst)
	lm.mu.Unlock()
	o = call(d, func() error { return backend.Warmup(ctx, bi) })
	if p := o.problem("Warmup of "+spec.Name, d); p != "" {
		inst.broken, inst.hung = p, o.hung
		return nil, p, nil
	}
	if o.err != nil {
		inst.broken = "Warmup failed"
		return nil, "", fmt.Errorf("Warmup of %s: %w", spec.Name, o.err)
	}
	return inst, "", nil
}

// mustInstance creates an instance with a background context and reports
// any failure.
func (lm *loaded) mustInstance(r *report, is instanceSpec) *instance {
	inst, problem, err := lm.newInstance(context.Background(), is)
	if problem != "" {
		r.add(lm.String(), problem)
	}
	if err != nil {
		r.add(lm.String(), err.Error())
	}
	return inst
}

// instances creates an instance for every spec of the model, all at once,
// and reports any failure. It returns the ones created.
func (lm *loaded) instances(r *report) []*instance {
	insts := make([]*instance, len(lm.m.specs))
	var wg sync.WaitGroup
	for k, is := range lm.m.specs {
		wg.Go(func() { insts[k] = lm.mustInstance(r, is) })
	}
	wg.Wait()
	return slices.DeleteFunc(insts, func(i *instance) bool { return i == nil })
}

// execute runs b on the instance. It returns a problem (for the caller to
// prefix with the instance and batch): a panic or a hang, after which the
// instance takes no more batches, or a broken promise of the kit's; or
// what Execute returned.
func (i *instance) execute(ctx context.Context, b *backend.Batch) (problem string, err error) {
	if i.broken != "" {
		return fmt.Sprintf("not run: the instance is out of use (%s)", i.broken), nil
	}
	if i.closed.Load() {
		return "backendtest bug: Execute after Close", nil
	}
	if n := i.busy.Add(1); n != 1 {
		i.busy.Add(-1)
		return fmt.Sprintf("backendtest bug: %d concurrent Execute calls on one instance", n), nil
	}
	d := i.lm.m.timeout
	o := call(d, func() error { return i.inst.Execute(ctx, b) })
	if o.hung != nil {
		// Still running: busy stays up, and the instance is not used again.
		i.broken, i.hung = "Execute did not return", o.hung
		return o.problem("Execute", d), nil
	}
	i.busy.Add(-1)
	if o.panic != "" {
		i.broken = "Execute panicked" // the server closes such an instance and makes a new one
		return o.problem("Execute", d), nil
	}
	return "", o.err
}

// ready asks the instance's Readier, if it has one, whether it is ready,
// and returns a problem to report for the instance; Ready may run
// concurrently with Execute.
func (i *instance) ready(ctx context.Context) string {
	d := i.lm.m.timeout
	o := call(d, func() error { return backend.Ready(ctx, i.inst) })
	if p := o.problem("Ready", d); p != "" {
		return p
	}
	if o.err != nil {
		return fmt.Sprintf("Ready reported the instance not ready while it runs batches: %v", o.err)
	}
	return ""
}

// stuck reports whether a call on the instance has not returned yet.
func (i *instance) stuck() bool {
	if i.hung == nil {
		return false
	}
	select {
	case <-i.hung:
		return false
	default:
		return true
	}
}

// close closes the instance, unless a call on it is still running. It
// reports whether the instance is closed now.
func (i *instance) close(r *report) bool {
	if i.stuck() {
		r.add(i.String(), "not closed, since a call on it has not returned")
		return false
	}
	if i.closed.Swap(true) {
		r.add(i.String(), "backendtest bug: Close called twice")
		return true
	}
	if i.hung == nil && i.busy.Load() != 0 {
		r.add(i.String(), "backendtest bug: Close during Execute")
	}
	d := i.lm.m.timeout
	o := call(d, i.inst.Close)
	if p := o.problem("Close", d); p != "" {
		r.add(i.String(), p)
		if o.hung != nil {
			i.hung = o.hung
			return false
		}
		return true
	}
	if o.err != nil {
		r.add(i.String(), "Close returned an error: "+o.err.Error())
	}
	return true
}

// close closes the model's instances, then the model itself; a model
// with an instance that could not be closed is left open.
func (lm *loaded) close(r *report) {
	lm.mu.Lock()
	if lm.closed {
		lm.mu.Unlock()
		r.add(lm.String(), "backendtest bug: model closed twice")
		return
	}
	lm.closed = true
	insts, hung := lm.insts, lm.hung
	lm.mu.Unlock()
	open := 0
	for _, i := range insts {
		if i.closed.Load() {
			if i.stuck() { // its Close has not returned
				open++
			}
			continue
		}
		if !i.close(r) {
			open++
		}
	}
	if hung > 0 {
		r.add(lm.String(), fmt.Sprintf("not closed, since %d of its NewInstance calls did not return", hung))
		return
	}
	if open > 0 {
		r.add(lm.String(), fmt.Sprintf("not closed, since %d of its instances could not be", open))
		return
	}
	d := lm.m.timeout
	o := call(d, lm.bm.Close)
	if p := o.problem("Close of the model", d); p != "" {
		r.add(lm.String(), p)
		return
	}
	if o.err != nil {
		r.add(lm.String(), "Close of the model returned an error: "+o.err.Error())
	}
}
