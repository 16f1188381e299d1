// memory.go is the memory budget: what each loaded model version holds,
// room made for a load by evicting idle models least recently used, and
// the lifecycle bookkeeping behind Server.Memory and its metrics.

package triton

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
)

// Model parameters of the lifecycle (config.pbtxt `parameters`).
const (
	paramPinned    = "pinned"     // "true": never evicted nor unloaded by keep_alive
	paramKeepAlive = "keep_alive" // a duration ("5m"), seconds ("30"), 0 or negative
)

// Timing of the lifecycle, fixed.
const (
	// minResidency: a model loaded this recently is evicted only when no
	// other model can make the room (so that a working set larger than
	// the budget rotates instead of evicting what was just loaded).
	minResidency = 5 * time.Second
	// thrashWindow: a model loaded again this soon after its eviction
	// counts as thrashing.
	thrashWindow = time.Minute
	// busyRecheck: how soon the keep-alive reaper looks again at a model
	// that was busy when it expired.
	busyRecheck = 50 * time.Millisecond
)

// Why a model was loaded (the trigger label of the load counter).
const (
	TriggerStartup  = "startup"
	TriggerExplicit = "explicit"
	TriggerPoll     = "poll"
	TriggerOnDemand = "on_demand"
)

// Why a model left memory without an explicit unload (the reason label of
// the eviction counter, and the index's reason).
const (
	EvictedBudget    = "memory_budget"
	EvictedKeepAlive = "keep_alive"
)

// lifecycle is the server's bookkeeping of loads and evictions: the
// budget's reservations, each model's size when it last loaded, and the
// counters. It exists under ControlExplicit or with a budget.
type lifecycle struct {
	budget int64 // 0: none

	mu        sync.Mutex
	reserved  map[string]int64 // bytes held for loads in progress, by model
	lastSize  map[string]int64 // bytes of each model when it last loaded
	pending   map[string]int   // requests waiting for a load on demand, by model
	evictedAt map[string]time.Time
	counts    map[string]*LifecycleCounts

	kick   chan struct{} // wakes the keep-alive reaper after a load
	demand singleflight.Group
	// demandTurn lets one load on demand run at a time under a budget.
	demandTurn chan struct{}

	// Loads on demand waiting for room: waiting counts them (requests
	// leaving a model signal only then), room is closed to wake them.
	waiting atomic.Int32
	roomMu  sync.Mutex
	room    chan struct{}
}

func newLifecycle(budget int64) *lifecycle {
	return &lifecycle{
		budget:     budget,
		reserved:   map[string]int64{},
		lastSize:   map[string]int64{},
		pending:    map[string]int{},
		evictedAt:  map[string]time.Time{},
		counts:     map[string]*LifecycleCounts{},
		kick:       make(chan struct{}, 1),
		demandTurn: make(chan struct{}, 1),
	}
}

// LifecycleCounts are one model's loads and evictions since the server
// started, kept across its unloads.
type LifecycleCounts struct {
	// Loads counts the loads that published versions, by trigger
	// (TriggerStartup, TriggerExplicit, TriggerPoll, TriggerOnDemand).
	Loads map[string]uint64
	// Evictions counts unloads by the server, by reason (EvictedBudget,
	// EvictedKeepAlive).
	Evictions map[string]uint64
	// Thrashes counts loads within a minute of the model's eviction.
	Thrashes uint64
	// Waits are the requests that waited for an on-demand load, and
	// WaitBuckets their waits: WaitBuckets[i] counts those that waited at
	// most OnDemandWaitBounds[i] (cumulative, as a histogram's buckets).
	Waits       uint64
	WaitTotal   time.Duration
	WaitBuckets []uint64
}

// OnDemandWaitBounds are the upper bounds of the on-demand wait buckets.
var OnDemandWaitBounds = []time.Duration{
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second, 30 * time.Second,
}

func (l *lifecycle) countsLocked(model string) *LifecycleCounts {
	c := l.counts[model]
	if c == nil {
		c = &LifecycleCounts{Loads: map[string]uint64{}, Evictions: map[string]uint64{}, WaitBuckets: make([]uint64, len(OnDemandWaitBounds))}
		l.counts[model] = c
	}
	return c
}

func (l *lifecycle) waited(model string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.countsLocked(model)
	c.Waits++
	c.WaitTotal += d
	for i, b := range OnDemandWaitBounds {
		if d <= b {
			c.WaitBuckets[i]++
		}
	}
}

// MemoryUsage is the server's memory budget and what the loaded models
// hold.
type MemoryUsage struct {
	// Accounted: the server accounts its models' memory and lifecycle
	// (it has a budget or runs under ControlExplicit); otherwise Bytes
	// and Resident are 0 and Counts empty.
	Accounted bool
	// Budget is WithMemoryBudget's (0: none); Resident the sum of the
	// models' bytes, retiring versions included.
	Budget, Resident int64
	// Models are the loaded versions, by name and version.
	Models []ModelMemory
	// Counts are the lifecycle counters of every model that has any.
	Counts map[string]LifecycleCounts
}

// ModelMemory is one loaded model version's accounting.
type ModelMemory struct {
	Name    string
	Version int64
	Bytes   int64
	// Reported: the backend reported Bytes; otherwise they are the growth
	// of the process's resident memory while the version loaded.
	Reported bool
	// Pinned: never evicted. Retiring: draining after an unload or a
	// reload, still holding its memory.
	Pinned, Retiring bool
	// LastUsed is when its last request ended (its load, before any).
	LastUsed time.Time
}

// Memory returns the memory budget and what the loaded models hold, with
// the lifecycle counters (empty unless the server has a budget or runs
// under ControlExplicit).
func (s *Server) Memory() MemoryUsage {
	u := MemoryUsage{Accounted: s.life != nil, Budget: s.opts.memoryBudget, Counts: map[string]LifecycleCounts{}}
	listed := map[*version]bool{}
	for _, e := range s.table.Load().models {
		for _, v := range e.versions {
			listed[v] = true
			u.Models = append(u.Models, ModelMemory{Name: e.name, Version: v.number, Bytes: v.mem, Reported: v.memReported,
				Pinned: e.pinned, Retiring: e.state == stateUnloading, LastUsed: s.timeOf(time.Duration(v.lastUsed.Load()))})
		}
	}
	s.retiring.Range(func(k, _ any) bool {
		v := k.(*version)
		if listed[v] {
			return true // unloading: listed by its model
		}
		u.Models = append(u.Models, ModelMemory{Name: v.name, Version: v.number, Bytes: v.mem, Reported: v.memReported,
			Retiring: true, LastUsed: s.timeOf(time.Duration(v.lastUsed.Load()))})
		return true
	})
	for _, m := range u.Models {
		u.Resident += m.Bytes
	}
	slices.SortFunc(u.Models, func(a, b ModelMemory) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	if l := s.life; l != nil {
		l.mu.Lock()
		for name, c := range l.counts {
			cp := *c
			cp.Loads, cp.Evictions, cp.WaitBuckets = maps.Clone(c.Loads), maps.Clone(c.Evictions), slices.Clone(c.WaitBuckets)
			u.Counts[name] = cp
		}
		l.mu.Unlock()
	}
	return u
}

// lifecycleParams reads a config's pinned and keep_alive parameters.
// keepAlive is -1 (never) when the config has none and the server no
// default.
func (s *Server) lifecycleParams(cfg *modelconfig.ModelConfig) (pinned bool, keepAlive time.Duration, err error) {
	keepAlive = -1
	if s.opts.keepAliveSet {
		keepAlive = s.opts.keepAlive
	}
	params := cfg.GetParameters()
	if p, ok := params[paramPinned]; ok {
		switch v := p.GetStringValue(); v {
		case "true":
			pinned = true
		case "false":
		default:
			return false, 0, fmt.Errorf("parameter %s of model '%s' must be \"true\" or \"false\", not %q", paramPinned, cfg.GetName(), v)
		}
	}
	if p, ok := params[paramKeepAlive]; ok {
		keepAlive, err = ParseKeepAlive(p.GetStringValue())
		if err != nil {
			return false, 0, fmt.Errorf("parameter %s of model '%s': %w", paramKeepAlive, cfg.GetName(), err)
		}
	}
	return pinned, keepAlive, nil
}

// ParseKeepAlive reads a keep_alive as ollama does: a Go duration ("5m",
// "30s"), or a number of seconds; 0 is at once, negative (returned as -1)
// never.
func ParseKeepAlive(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, -1), nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		return max(time.Duration(n*float64(time.Second)), -1), nil
	}
	return 0, fmt.Errorf("%q is neither a duration (\"5m\", \"30s\") nor a number of seconds", v)
}

// processRSS is the process's resident memory in bytes (0 where /proc is
// not there to tell).
func processRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// account sets what version v holds: the sum of what its model and
// instances report, or else grew, the process's growth while it loaded
// (the model's last size when that is nothing: freed memory reused).
// An ensemble holds nothing of its own.
func (s *Server) account(v *version, grew int64) {
	if v.backend == ensembleBackend {
		return
	}
	var total int64
	reported := false
	add := func(x any) {
		n, ok, err := backend.MemoryBytes(x)
		if err != nil {
			v.log.Warn("the backend could not report the version's memory", zap.Error(err))
			return
		}
		if ok {
			total, reported = total+n, true
		}
	}
	add(v.model)
	for _, sl := range v.pool {
		if inst := sl.instance(); inst != nil {
			add(inst)
		}
	}
	if !reported {
		total = max(grew, 0)
		if total == 0 && s.life != nil {
			s.life.mu.Lock()
			total = s.life.lastSize[v.name]
			s.life.mu.Unlock()
		}
	}
	v.mem, v.memReported = total, reported
}

// estimate is what a model is expected to hold before it loads: its size
// when it last loaded, or else the size of its files.
func (s *Server) estimate(src source) int64 {
	s.life.mu.Lock()
	n, ok := s.life.lastSize[src.dir.Name]
	s.life.mu.Unlock()
	if ok {
		return n
	}
	var total int64
	_ = fs.WalkDir(src.dir.FS, ".", func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// busy reports whether a model has requests in flight or queued, or live
// sequences, in any version, or requests waiting for its load on demand
// to enter it.
func (s *Server) busy(e *modelEntry) bool {
	s.life.mu.Lock()
	waiting := s.life.pending[e.name] > 0
	s.life.mu.Unlock()
	if waiting {
		return true
	}
	for _, v := range e.versions {
		if v.gate.inside() > 0 || (v.seq != nil && v.seq.sched.Live() > 0) {
			return true
		}
	}
	return false
}

// heatLife is how fast a version's heat decays: a request's weight halves
// every heatLife.
const heatLife = 10 * time.Second

// heat is a version's requests, each weighing half as much every heatLife,
// as of the last look (at, on the server's clock, having seen count
// uses). Requests record nothing but their use count, so the decay is
// applied when the eviction order looks: the requests since the last look
// weigh as if they had just ended.
type heat struct {
	value float64
	at    time.Duration
	count uint64
}

// heatNow is v's heat at now (the server's clock); s.life.mu must be held.
func (v *version) heatNow(now time.Duration) float64 {
	n := v.uses.Load()
	h := &v.heat
	h.value = decay(h.value, now-h.at) + float64(n-h.count)
	h.at, h.count = now, n
	return h.value
}

func decay(h float64, d time.Duration) float64 {
	if d <= 0 {
		return h
	}
	return h * math.Exp2(-float64(d)/float64(heatLife))
}

// clock is the server's clock: the monotonic time since it started, which
// a request reads once (cheaper than a wall-clock reading).
func (s *Server) clock() time.Duration { return time.Since(s.epoch) }

// timeOf is the wall-clock time of a reading of the server's clock.
func (s *Server) timeOf(d time.Duration) time.Time { return s.epoch.Add(d) }

// lastUsed is when the model's last request ended (or it loaded), on the
// server's clock.
func (e *modelEntry) lastUsed() time.Duration {
	var t int64
	for _, v := range e.versions {
		t = max(t, v.lastUsed.Load())
	}
	return time.Duration(t)
}

// bytes is what the model's serving versions hold.
func (e *modelEntry) bytes() int64 {
	var n int64
	for _, v := range e.versions {
		n += v.mem
	}
	return n
}

// residentLocked is what the loaded models hold, with the loads in
// progress other than model's, without the versions in skip (those a
// reload replaces). l.mu must be held.
func (s *Server) residentLocked(model string, skip []*version) int64 {
	var n int64
	listed := map[*version]bool{}
	for _, e := range s.table.Load().models {
		for _, v := range e.versions {
			listed[v] = true
			if !slices.Contains(skip, v) {
				n += v.mem
			}
		}
	}
	s.retiring.Range(func(k, _ any) bool {
		if v := k.(*version); !listed[v] {
			n += v.mem
		}
		return true
	})
	for name, r := range s.life.reserved {
		if name != model {
			n += r
		}
	}
	return n
}

// makeRoom reserves need bytes for a load of model, which replaces the
// versions in skip, evicting idle models (under ControlExplicit) until
// the budget holds it. It fails when the model cannot fit; a load on
// demand waits, within ctx, while what holds the room is not pinned (it
// is busy, loading or unloading, and will be evictable).
func (s *Server) makeRoom(ctx context.Context, model string, need int64, skip []*version) error {
	l := s.life
	wait := triggerOf(ctx) == TriggerOnDemand
	if wait {
		// Counted before the first look, so that no request leaving a
		// model in between goes unseen (leave signals while any wait).
		l.waiting.Add(1)
		defer l.waiting.Add(-1)
	}
	tried := map[string]bool{model: true}
	for {
		room := l.roomSignal()
		l.mu.Lock()
		resident := s.residentLocked(model, skip)
		if resident+need <= l.budget {
			l.reserved[model] = need
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		victim := ""
		if s.opts.control.Mode == ControlExplicit {
			victim = s.victim(tried)
		}
		if victim != "" {
			tried[victim] = true
			s.evict(victim, EvictedBudget, fmt.Sprintf("evicted to make room for '%s' in the memory budget", model))
			continue
		}
		if !wait || s.pinnedBytes(model)+need > l.budget {
			return s.budgetError(model, need, resident, skip)
		}
		select {
		case <-room:
			clear(tried)
			tried[model] = true
		case <-ctx.Done():
			return &Error{Code: Unavailable, Model: model, Err: fmt.Errorf("failed to load '%s': waiting for room in the memory budget: %w", model, ctx.Err())}
		}
	}
}

// pinnedBytes is what the pinned models other than model hold: the part
// of the budget no eviction frees.
func (s *Server) pinnedBytes(model string) int64 {
	var n int64
	for name, e := range s.table.Load().models {
		if name != model && e.pinned {
			n += e.bytes()
		}
	}
	return n
}

// roomSignal returns a channel closed the next time room may have been
// made, or a model came to serve: a request left a model, a model
// unloaded or loaded, a load ended.
func (l *lifecycle) roomSignal() <-chan struct{} {
	l.roomMu.Lock()
	defer l.roomMu.Unlock()
	if l.room == nil {
		l.room = make(chan struct{})
	}
	return l.room
}

// signalRoom wakes the loads waiting for room.
func (l *lifecycle) signalRoom() {
	l.roomMu.Lock()
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	l.roomMu.Unlock()
}

// release drops model's reservation.
func (s *Server) release(model string) {
	s.life.mu.Lock()
	delete(s.life.reserved, model)
	s.life.mu.Unlock()
	s.life.signalRoom()
}

// victim chooses the model to evict next: not pinned, idle, holding
// memory, not in tried; those loaded within minResidency last, then the
// coldest first (the fewest requests lately, each weighing half as much
// every heatLife: a model in steady use stays even when it happens to
// have been idle longest), and of equal heat the least recently used.
func (s *Server) victim(tried map[string]bool) string {
	type cand struct {
		name   string
		recent bool
		heat   float64
		used   time.Duration
	}
	var cs []cand
	now := s.clock()
	for name, e := range s.table.Load().models {
		if tried[name] || e.pinned || e.state != stateServing || len(e.versions) == 0 || e.bytes() == 0 || s.busy(e) {
			continue
		}
		c := cand{name: name, recent: time.Since(e.loaded) < minResidency, used: e.lastUsed()}
		s.life.mu.Lock()
		for _, v := range e.versions {
			c.heat += v.heatNow(now)
		}
		s.life.mu.Unlock()
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return ""
	}
	return slices.MinFunc(cs, func(a, b cand) int {
		if a.recent != b.recent {
			if a.recent {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.heat, b.heat), cmp.Compare(a.used, b.used), strings.Compare(a.name, b.name))
	}).name
}

// budgetError names the budget, the model's size and what holds the rest.
func (s *Server) budgetError(model string, need, resident int64, skip []*version) error {
	var held []string
	for _, e := range s.table.Load().models {
		if e.name == model || len(e.versions) == 0 {
			continue
		}
		why := ""
		switch {
		case e.pinned:
			why = ", pinned"
		case s.busy(e):
			why = ", in use"
		case e.state != stateServing:
			why = ", unloading"
		}
		n := int64(0)
		for _, v := range e.versions {
			if !slices.Contains(skip, v) {
				n += v.mem
			}
		}
		held = append(held, fmt.Sprintf("'%s' %s%s", e.name, formatBytes(n), why))
	}
	s.life.mu.Lock()
	for name, r := range s.life.reserved {
		if name != model {
			held = append(held, fmt.Sprintf("'%s' %s, loading", name, formatBytes(r)))
		}
	}
	s.life.mu.Unlock()
	slices.Sort(held)
	what := "nothing else is loaded"
	if len(held) > 0 {
		what = "resident: " + strings.Join(held, ", ")
	}
	return &Error{Code: Unavailable, Model: model, Err: fmt.Errorf(
		"failed to load '%s': it needs %s and the memory budget of %s has %s free (%s of it held; %s)",
		model, formatBytes(need), formatBytes(s.life.budget), formatBytes(max(s.life.budget-resident, 0)), formatBytes(resident), what)}
}

// formatBytes is n in binary units: "512 B", "1.5 MiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + [...]string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}

// evict unloads an idle model, as an unload does (it drains what slipped
// in), and records why: reason for the counters, why for the index. It does nothing, and reports false, when another
// lifecycle operation holds the model or it is no longer idle.
func (s *Server) evict(model, reason, why string) bool {
	unlock, ok := s.tryLock(model)
	if !ok {
		return false
	}
	defer unlock()
	e := s.table.Load().models[model]
	if e == nil || e.pinned || e.state != stateServing || len(e.versions) == 0 || s.busy(e) {
		return false
	}
	freed := e.bytes()
	now := time.Now()
	idle := s.clock() - e.lastUsed()
	s.finishUnload(model, s.markUnloading(model), why)
	l := s.life
	l.mu.Lock()
	l.countsLocked(model).Evictions[reason]++
	l.evictedAt[model] = now
	l.mu.Unlock()
	s.log.Info("model evicted", zap.String("model", model), zap.String("reason", reason),
		zap.String("freed", formatBytes(freed)), zap.Duration("idle", idle.Round(time.Millisecond)))
	return true
}

// tryLock takes model's lifecycle lock if it is free.
func (s *Server) tryLock(model string) (func(), bool) {
	m, _ := s.locks.LoadOrStore(model, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	if !mu.TryLock() {
		return nil, false
	}
	return mu.Unlock, true
}

// loaded records a load that published versions: the counters, the
// model's size, and thrashing when it comes back soon after its eviction.
func (s *Server) loaded(ctx context.Context, e *modelEntry) {
	l := s.life
	if l == nil {
		return
	}
	trigger := triggerOf(ctx)
	l.mu.Lock()
	c := l.countsLocked(e.name)
	c.Loads[trigger]++
	l.lastSize[e.name] = e.bytes()
	since, evicted := time.Since(l.evictedAt[e.name]), !l.evictedAt[e.name].IsZero()
	if evicted && since < thrashWindow {
		c.Thrashes++
	}
	delete(l.evictedAt, e.name)
	l.mu.Unlock()
	if evicted && since < thrashWindow {
		s.log.Warn("model loaded again soon after its eviction: the models in use do not fit the memory budget",
			zap.String("model", e.name), zap.Duration("since_eviction", since.Round(time.Millisecond)), zap.String("trigger", trigger))
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	l.signalRoom() // loads on demand waiting their turn look again
}

type triggerKey struct{}

// withTrigger marks ctx's loads as caused by trigger.
func withTrigger(ctx context.Context, trigger string) context.Context {
	return context.WithValue(ctx, triggerKey{}, trigger)
}

func triggerOf(ctx context.Context) string {
	if t, ok := ctx.Value(triggerKey{}).(string); ok {
		return t
	}
	return TriggerExplicit
}
