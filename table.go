// table.go holds the table of models: the immutable snapshot requests read
// without locks, how lifecycle operations publish a new one, and how a
// request finds and enters its model version.

package triton

import (
	"fmt"
	"maps"
	"time"
)

// modelTable is an immutable snapshot of the models the server knows.
// Requests read it without locks; changes publish a new table.
type modelTable struct {
	models map[string]*modelEntry
}

// modelEntry is one model: the versions serving it and what the last
// lifecycle operation left behind. Entries are immutable once published;
// changes publish a new entry in a new table (Server.update).
type modelEntry struct {
	name     string
	versions []*version // serving, highest number first
	failures []loadFailure
	state    entryState
	// fingerprint is that of the model folder the serving versions came
	// from; override tells they came from a load with overrides; attempted
	// is the fingerprint of the last load tried, successful or not (polling
	// does not retry a folder that failed until it changes again).
	fingerprint uint64
	override    bool
	attempted   uint64
	// gone lists the versions that served and no longer do (unloaded, or
	// dropped by a reload), which the index shows as "unloaded" (or as
	// reason says, once the server evicted the model).
	gone   []int64
	reason string
	// pinned: never evicted; keepAlive: unloaded once idle that long
	// (negative: never); loaded: when the versions were published.
	pinned    bool
	keepAlive time.Duration
	loaded    time.Time
}

// entryState is what is happening to a model, for the index and for
// requests.
type entryState uint8

const (
	stateServing   entryState = iota // the versions serve (or failed: see failures)
	stateLoading                     // a load is in progress; any serving versions keep serving
	stateUnloading                   // requests are refused; in-flight ones finish
	stateUnloaded                    // unloaded on purpose
)

// loadFailure records why a model (version 0) or one version failed to load.
type loadFailure struct {
	version int64
	err     error
}

// update publishes a new table in which the entry of name is what f makes
// of the current one (nil: none; a nil result removes it).
func (s *Server) update(name string, f func(old *modelEntry) *modelEntry) {
	s.tableMu.Lock()
	defer s.tableMu.Unlock()
	old := s.table.Load()
	t := &modelTable{models: maps.Clone(old.models)}
	if e := f(old.models[name]); e != nil {
		t.models[name] = e
	} else {
		delete(t.models, name)
	}
	s.table.Store(t)
}

// withState publishes name's entry in state st, keeping the rest.
func (s *Server) withState(name string, st entryState) {
	s.update(name, func(old *modelEntry) *modelEntry {
		e := &modelEntry{name: name}
		if old != nil {
			c := *old
			e = &c
		}
		e.state = st
		return e
	})
}

// acquire finds the version a request goes to and admits the request into
// it. The caller must call v.gate.leave() when done. A version retired by a
// reload between reading the table and entering its gate is not an error:
// the lookup is repeated on the newer table. h, when not nil, is the
// handle the request came through, which finds the model's entry in a
// table without looking its name up again.
func (s *Server) acquire(model string, ver int64, h *Model) (*version, error) {
	for {
		if s.closing.Load() {
			return nil, &Error{Code: Unavailable, Model: model, Err: ErrServerClosed}
		}
		t := s.table.Load()
		var e *modelEntry
		if h != nil {
			e = h.entry(t)
		} else {
			e = t.models[model]
		}
		v, err := e.find(model, ver)
		if err != nil {
			return nil, err
		}
		if v.gate.enter() {
			return v, nil
		}
		if s.table.Load() == t {
			return nil, &Error{Code: Unavailable, Model: model, Version: v.number,
				Err: fmt.Errorf("Request for unknown model: '%s' version %d is not at ready state", model, v.number)}
		}
	}
}

// find returns the version of e (the entry of model; nil: none) a request
// for ver goes to, with Triton's errors for the ways there is none.
func (e *modelEntry) find(model string, ver int64) (*version, error) {
	if e == nil {
		return nil, &Error{Code: InvalidArgument, Model: model, Err: fmt.Errorf("Request for unknown model: '%s' is not found", model)}
	}
	if e.state == stateUnloading {
		return nil, &Error{Code: Unavailable, Model: model, Version: ver, Err: fmt.Errorf("model '%s' is being unloaded", model)}
	}
	for _, v := range e.versions {
		if (ver == 0 || v.number == ver) && v.live.Load() > 0 {
			return v, nil
		}
		if v.number == ver {
			return nil, &Error{Code: Unavailable, Model: model, Version: ver, Err: fmt.Errorf("Request for unknown model: '%s' version %d is not at ready state", model, ver)}
		}
	}
	if ver == 0 {
		return nil, &Error{Code: NotFound, Model: model, Err: fmt.Errorf("Request for unknown model: '%s' has no available versions", model)}
	}
	return nil, &Error{Code: NotFound, Model: model, Version: ver, Err: fmt.Errorf("Request for unknown model: '%s' version %d is not found", model, ver)}
}

// find returns a loaded version without admitting a request into it.
func (s *Server) find(model string, ver int64) (*version, *modelEntry, error) {
	v, err := s.acquire(model, ver, nil)
	if err != nil {
		return nil, nil, err
	}
	v.gate.leave()
	return v, s.table.Load().models[model], nil
}
