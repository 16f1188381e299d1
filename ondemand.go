// ondemand.go is how requests enter and leave a model version when models
// come and go on their own: loads on demand (WithLoadOnDemand), the time
// of each version's last use, and the keep-alive reaper.

package triton

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// enter admits a request into the version it goes to (acquire); with
// loads on demand, a model that is in the repositories but does not serve
// is loaded first, within ctx. The caller must call s.leave(v).
func (s *Server) enter(ctx context.Context, model string, ver int64, h *Model) (*version, error) {
	v, err := s.acquire(model, ver, h)
	if err == nil || !s.opts.loadOnDemand {
		return v, err
	}
	return s.enterOnDemand(ctx, model, ver, h, err)
}

// leave ends a request admitted by enter.
func (s *Server) leave(v *version) { s.exit(v, true) }

// exit leaves v's gate after enter; used records a request's use of the
// version (a lookup that only checks the model is not one).
func (s *Server) exit(v *version, used bool) {
	l := s.life
	if l == nil {
		v.gate.leave()
		return
	}
	if used {
		v.lastUsed.Store(int64(s.clock()))
		v.uses.Add(1)
	}
	v.gate.leave()
	if l.waiting.Load() > 0 {
		l.signalRoom()
	}
}

// maxDemandRounds bounds the loads one request waits for: a model evicted
// again between its load and the request's admission is loaded again,
// but not forever.
const maxDemandRounds = 4

// enterOnDemand loads model for a request that found it not serving, and
// admits the request once it serves. A model that is not in the
// repositories fails as it did (first).
func (s *Server) enterOnDemand(ctx context.Context, model string, ver int64, h *Model, first error) (*version, error) {
	start := time.Now()
	err := first
	// Waiting, the request counts as queued on the model: it is not
	// evicted between its load and the request's admission.
	s.life.mu.Lock()
	s.life.pending[model]++
	s.life.mu.Unlock()
	defer func() {
		s.life.mu.Lock()
		if s.life.pending[model]--; s.life.pending[model] == 0 {
			delete(s.life.pending, model)
		}
		s.life.mu.Unlock()
	}()
	for range maxDemandRounds {
		if s.demandable(model) {
			if err := s.demandLoad(ctx, model, ver, start); err != nil {
				if CodeOf(err) == NotFound {
					return nil, first // not in the repositories: the request's own error
				}
				return nil, err
			}
		}
		// Serving now (or again: a table read before a load elsewhere
		// ended); a model that serves and still refuses the request
		// refuses it for another reason, which the last round returns.
		var v *version
		if v, err = s.acquire(model, ver, h); err == nil {
			s.life.waited(model, time.Since(start))
			return v, nil
		}
	}
	return nil, err
}

// demandLoad waits, within ctx, for the one load on demand of model that
// concurrent requests share. The load runs under the server's lifetime,
// so that a request giving up does not fail the others.
func (s *Server) demandLoad(ctx context.Context, model string, ver int64, start time.Time) error {
	ch := s.life.demand.DoChan(model, func() (any, error) {
		lctx, stop := s.bind(withTrigger(context.Background(), TriggerOnDemand))
		defer stop()
		if s.opts.memoryBudget == 0 {
			return nil, s.Load(lctx, model, nil)
		}
		// One load on demand at a time: loads in progress hold room in
		// the budget, and several at once would push out the models in
		// use to make it. While it waits its turn, the model may come to
		// serve otherwise (an explicit load): then its requests, which
		// keep it from being evicted, must not wait behind the load that
		// has the turn, which may be waiting for that room.
		for {
			if !s.demandable(model) {
				return nil, nil
			}
			room := s.life.roomSignal()
			select {
			case s.life.demandTurn <- struct{}{}:
				defer func() { <-s.life.demandTurn }()
				return nil, s.Load(lctx, model, nil)
			case <-room:
			case <-lctx.Done():
				return nil, &Error{Code: Unavailable, Model: model, Err: ErrServerClosed}
			}
		}
	})
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		code := DeadlineExceeded
		if errors.Is(ctx.Err(), context.Canceled) {
			code = Cancelled
		}
		return &Error{Code: code, Model: model, Version: ver,
			Err: fmt.Errorf("waiting %v for model '%s' to load on demand: %w", time.Since(start).Round(time.Millisecond), model, ctx.Err())}
	}
}

// demandable reports whether a load on demand can help a request for
// model: it does not serve (never loaded, unloaded, evicted, being
// unloaded, or failed).
func (s *Server) demandable(model string) bool {
	if s.closing.Load() {
		return false
	}
	e := s.table.Load().models[model]
	return e == nil || e.state != stateServing || len(e.versions) == 0
}

// reap unloads models idle for longer than their keep_alive, until the
// server closes. It sleeps until the earliest a model can expire, and
// wakes early when a model loads.
func (s *Server) reap() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := s.reapOnce(time.Now())
		var wake <-chan time.Time
		if !next.IsZero() {
			t.Reset(time.Until(next))
			wake = t.C
		}
		select {
		case <-wake:
		case <-s.life.kick:
		case <-s.ctx.Done():
			return
		}
	}
}

// reapOnce unloads the models whose keep_alive has passed at now and
// returns when to look next (zero: no model has a keep_alive).
func (s *Server) reapOnce(now time.Time) time.Time {
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for name, e := range s.table.Load().models {
		if e.keepAlive < 0 || e.pinned || e.state != stateServing || len(e.versions) == 0 {
			continue
		}
		if s.busy(e) {
			later(now.Add(max(e.keepAlive, busyRecheck)))
			continue
		}
		expiry := s.timeOf(e.lastUsed() + e.keepAlive)
		if expiry.After(now) {
			later(expiry)
			continue
		}
		if !s.evict(name, EvictedKeepAlive, fmt.Sprintf("unloaded after %v idle (keep_alive)", e.keepAlive)) {
			later(now.Add(busyRecheck)) // busy after all, or in another operation
		}
	}
	return next
}
