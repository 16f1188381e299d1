package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// loadVersions is how many versions of each model the load check loads
// at once.
const loadVersions = 3

// checkLoad loads every model as several versions at once, creates the
// instances of each at once, runs every request on every instance, and
// closes everything: under -race, what a backend shares between models
// and instances shows here.
func (s *suite) checkLoad(r *report) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range s.models {
		for k := range int64(loadVersions) {
			wg.Go(func() {
				<-start
				lm := s.mustLoad(r, m, m.version+k)
				if lm == nil {
					return
				}
				defer lm.close(r)
				var iwg sync.WaitGroup
				for _, inst := range lm.instances(r) {
					iwg.Go(func() {
						for _, req := range m.good[:m.requests] {
							s.runGood(r, context.Background(), inst, []*request{req})
						}
					})
				}
				iwg.Wait()
			})
		}
	}
	close(start)
	wg.Wait()
}

// checkExecute runs batches on all the instances of each model in
// parallel, each instance one batch at a time: every request alone, then,
// for a model that batches, requests gathered into batches (asking for
// different outputs, of different batch sizes). Ready is asked during
// each Execute. Every result is checked.
func (s *suite) checkExecute(r *report) {
	for _, m := range s.models {
		lm := s.mustLoad(r, m, m.version)
		if lm == nil {
			continue
		}
		insts := lm.instances(r)
		var batches [][]*request
		for _, req := range m.good {
			batches = append(batches, []*request{req})
		}
		both := slices.Clone(m.good)
		for _, req := range slices.Backward(m.good) {
			both = append(both, req)
		}
		batches = append(batches, m.group(both)...)
		for len(batches) < 2*len(insts) {
			batches = append(batches, batches...)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k, inst := range insts {
			wg.Go(func() {
				<-start
				for j := k; j < len(batches); j += len(insts) {
					// Ready may be asked at any time, Execute running.
					ready := make(chan string, 1)
					go func() { ready <- inst.ready(context.Background()) }()
					s.runGood(r, context.Background(), inst, batches[j])
					if p := <-ready; p != "" {
						r.add(inst.String(), p)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		lm.close(r)
	}
}

// checkLifecycle closes models and instances in the orders the server
// may: a model without instances, instances that never ran a batch, and a
// model loaded, run and closed twice in a row (a backend that releases
// process-wide state with its last model must set it up again).
func (s *suite) checkLifecycle(r *report) {
	for _, m := range s.models {
		if lm := s.mustLoad(r, m, m.version); lm != nil {
			lm.close(r) // no instance
		}
		if lm := s.mustLoad(r, m, m.version); lm != nil {
			lm.instances(r)
			lm.close(r) // instances that never ran
		}
		for range 2 { // load, run, close, and again
			lm := s.mustLoad(r, m, m.version)
			if lm == nil {
				continue
			}
			if inst := lm.mustInstance(r, m.specs[0]); inst != nil {
				s.runGood(r, context.Background(), inst, m.good[:1])
				inst.close(r)
			}
			lm.close(r)
		}
	}
}

// checkCancel calls Load, NewInstance and Execute with contexts that
// have already ended. Each must return in time; an error must wrap the
// context's (errors.Is(err, ctx.Err())); a success must be a real one.
func (s *suite) checkCancel(r *report) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Hour))
	defer cancel()
	const unwrapped = "returned an error that does not wrap the context's (return ctx.Err(), or wrap it with %w): "
	for _, m := range s.models {
		at := where(m, m.version) + ", ctx.Err() = context canceled"
		lm, problem, err := s.load(cancelled, m, m.version)
		if problem != "" {
			r.add(at, problem)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			r.add(at, "Load "+unwrapped+err.Error())
		}
		if lm != nil {
			lm.close(r)
		}

		lm = s.mustLoad(r, m, m.version)
		if lm == nil {
			continue
		}
		inst, problem, err := lm.newInstance(cancelled, m.specs[0])
		if problem != "" {
			r.add(at, problem)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			r.add(at, "NewInstance "+unwrapped+err.Error())
		}
		if inst != nil {
			inst.close(r)
		}
		for _, ctx := range []context.Context{cancelled, expired} {
			inst := lm.mustInstance(r, m.specs[0])
			if inst == nil {
				continue
			}
			hung := s.runCancelled(r, ctx, inst, m.good[:1], unwrapped)
			inst.close(r)
			if hung {
				break // once is enough to know
			}
		}
		lm.close(r)
	}
}

// checkFailing runs each of a model's Failing requests alone, then, for a
// model that batches, in a batch with a good request before it and in
// one with a good request after it; then a good request alone on the same
// instance, which must still succeed.
func (s *suite) checkFailing(r *report) {
	for _, m := range s.models {
		if len(m.bad) == 0 {
			continue
		}
		lm := s.mustLoad(r, m, m.version)
		if lm == nil {
			continue
		}
		if inst := lm.mustInstance(r, m.specs[0]); inst != nil {
			for _, bad := range m.bad {
				s.runGood(r, context.Background(), inst, []*request{bad})
				if m.sig.MaxBatch == 0 {
					continue
				}
				i := slices.IndexFunc(m.good, func(g *request) bool { return g.rows+bad.rows <= m.sig.MaxBatch && m.compatible(g, bad) })
				if i < 0 {
					r.add(lm.String(), fmt.Sprintf("%s cannot share a batch with any of the Requests (different shapes, or more than max_batch_size %d rows together); give one it can batch with",
						bad.label, m.sig.MaxBatch))
					continue
				}
				s.runGood(r, context.Background(), inst, []*request{m.good[i], bad})
				s.runGood(r, context.Background(), inst, []*request{bad, m.good[i]})
			}
			s.runGood(r, context.Background(), inst, m.good[:1])
		}
		lm.close(r)
	}
}

// runGood runs reqs as one batch and checks the result: Execute returns
// nil, the good requests succeed with outputs that match the config, the
// failing ones fail. A batch of failing requests alone may also fail as
// a whole.
func (s *suite) runGood(r *report, ctx context.Context, inst *instance, reqs []*request) {
	m := inst.lm.m
	b, brs := m.newBatch(reqs)
	problem, err := inst.execute(ctx, b)
	at := fmt.Sprintf("%s, batch %s", inst, labels(reqs))
	if problem != "" {
		r.add(at, problem)
		return
	}
	s.checkInputs(r, at, reqs)
	if err != nil {
		bad := slices.IndexFunc(reqs, func(q *request) bool { return q.failing })
		switch {
		case !slices.ContainsFunc(reqs, func(q *request) bool { return !q.failing }):
			// Failing requests alone: failing the batch fails just them.
		case bad >= 0:
			r.add(at, fmt.Sprintf("Execute failed the whole batch, good requests too, because of %s: %v (fail the request on its own with Request.Fail and return nil)",
				reqs[bad].label, err))
		default:
			r.add(at, "Execute failed: "+err.Error())
		}
		return
	}
	for k, q := range reqs {
		br := brs[k]
		at := at + ", " + q.label
		switch {
		case q.failing && br.Err() == nil:
			r.add(at, "succeeded; the backend must fail it (with Request.Fail)")
		case !q.failing && br.Err() != nil:
			r.add(at, "failed: "+br.Err().Error())
		case !q.failing:
			for _, p := range s.checkOutputs(m, q, br) {
				r.add(at, p)
			}
		}
	}
}

// runCancelled runs reqs as one batch with a context that has ended and
// checks the result: Execute returns in time; an error must wrap the
// context's; with a nil error, each request either failed with an error
// that wraps it or succeeded fully. It reports whether Execute hung.
func (s *suite) runCancelled(r *report, ctx context.Context, inst *instance, reqs []*request, unwrapped string) (hung bool) {
	m := inst.lm.m
	b, brs := m.newBatch(reqs)
	problem, err := inst.execute(ctx, b)
	at := fmt.Sprintf("%s, batch %s, ctx.Err() = %v", inst, labels(reqs), ctx.Err())
	if problem != "" {
		r.add(at, problem)
		return inst.hung != nil
	}
	s.checkInputs(r, at, reqs)
	if err != nil {
		if !errors.Is(err, ctx.Err()) {
			r.add(at, "Execute "+unwrapped+err.Error())
		}
		return false
	}
	for k, q := range reqs {
		br := brs[k]
		at := at + ", " + q.label
		if e := br.Err(); e != nil {
			if !errors.Is(e, ctx.Err()) {
				r.add(at, "failed with an error that does not wrap the context's: "+e.Error())
			}
			continue
		}
		// A success: it must be one (the outputs all there and right),
		// not a batch that stopped early and said nothing.
		for _, p := range s.checkOutputs(m, q, br) {
			r.add(at, "Execute returned nil, but "+p)
		}
	}
	return false
}

// checkInputs reports inputs that Execute changed: they are borrowed,
// read-only.
func (s *suite) checkInputs(r *report, at string, reqs []*request) {
	for _, q := range reqs {
		for j, in := range q.inputs {
			if !bytes.Equal(in.Data, q.orig[j]) {
				r.add(at+", "+q.label, fmt.Sprintf("Execute wrote to input %q; inputs are borrowed, read-only", in.Name))
			}
		}
	}
}

// checkOutputs checks the outputs a successful request got, as the server
// does before it answers the client, then their values with the
// request's Check.
func (s *suite) checkOutputs(m *model, q *request, br *backend.Request) []string {
	var problems []string
	got := make([]tensor.Tensor, 0, len(q.wanted))
	for _, name := range q.wanted {
		i := slices.IndexFunc(br.Outputs(), func(t tensor.Tensor) bool { return t.Name == name })
		if i < 0 {
			if q.outputs == nil {
				problems = append(problems, fmt.Sprintf("output %q is missing (the request asks for every output)", name))
			} else {
				problems = append(problems, fmt.Sprintf("output %q is missing (the request asks for %v)", name, q.outputs))
			}
			continue
		}
		t := br.Outputs()[i]
		if err := m.checkOutput(t, q.rows); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		got = append(got, t)
	}
	if len(problems) > 0 || q.check == nil {
		return problems
	}
	o := call(m.timeout, func() error { return q.check(got) })
	if p := o.problem("Check", m.timeout); p != "" {
		return []string{p}
	}
	if o.err != nil {
		return []string{"wrong values: " + o.err.Error()}
	}
	return nil
}

// checkOutput checks one output of a request of batch size rows against
// the config, as the server does: a declared output (or a state output of
// a sequence model), its datatype, its shape (the config's reshape when
// there is one, after the batch dimension when the model batches) and
// well-formed data.
func (m *model) checkOutput(t tensor.Tensor, rows int64) error {
	_, err := m.sig.CheckOutput(t, rows)
	return err
}
