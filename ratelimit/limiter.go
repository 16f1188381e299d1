package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrClosed is returned by [Client.Acquire] and [Limiter.Register] once the
// limiter is closed, and by Acquire on a client that was unregistered.
var ErrClosed = errors.New("ratelimit: limiter closed")

// ErrInvalid is wrapped by the errors of [New] and [Limiter.Register] that
// reject a configuration: an empty or duplicate name, a resource that is
// global for one instance and per-device for another, a resource asking for
// more than a limit allows. Triton fails the model load with INVALID_ARG in
// these cases.
var ErrInvalid = errors.New("ratelimit: invalid configuration")

// errBusy is returned by Acquire on a client that already holds or awaits
// a grant: a programming error, so it is not exported for branching.
var errBusy = errors.New("ratelimit: Acquire on a client that already holds or awaits a grant")

// maxSkips is how many times a waiter may be passed over by grants to
// waiters behind it (on a resource it needs) before the limiter stops
// granting that resource to anyone behind it. See [Limiter].
const maxSkips = 8

// Config is the limiter's configuration; the zero value is usable and gives
// every resource its default count.
type Config struct {
	// Limits overrides the available count of resources, as Triton's
	// --rate-limit-resource=<name>:<count>[:<device>] does. Names are
	// case-insensitive. A resource without a matching limit keeps its
	// default (see [Limiter.Register]).
	Limits []Limit
}

// Limit sets the available count of one resource.
type Limit struct {
	// Name is the resource name, compared case-insensitively. Required.
	Name string
	// Count is the number of copies available.
	Count uint32
	// Device is the GPU id the limit applies to; a negative Device applies
	// to every device. For a global resource Device is ignored.
	//
	// When several limits match one pool (a device-specific one and an
	// every-device one, or limits on several devices for a global
	// resource), the largest count applies, as in Triton.
	Device int
}

// Resource is one resource an instance needs to execute, as in the
// instance_group's rate_limiter { resources [...] }.
type Resource struct {
	// Name identifies the resource, case-insensitively. Required.
	Name string
	// Count is how many copies one execution holds.
	Count uint32
	// Global puts the resource in one pool for the whole process instead of
	// one pool per device.
	Global bool
}

// Instance describes one model instance to [Limiter.Register].
type Instance struct {
	// Name names the instance in errors, e.g. Triton's "<group>_<index>".
	// Optional.
	Name string
	// Device is the GPU id the instance runs on; 0 for CPU instances. Its
	// per-device resources are counted in this device's pools. Must not be
	// negative.
	Device int
	// Resources are what one execution holds; a name may appear once.
	Resources []Resource
	// Priority weights the instance under contention: priority p is granted
	// about 1/p as often as priority 1. 0 is treated as 1.
	Priority uint32
}

// Limiter is Triton's rate limiter in execution-count mode: it grants model
// instances the resources they declared, one execution at a time, so that
// no resource pool is oversubscribed. All methods are safe for concurrent
// use. The zero value is not usable; call [New].
//
// # Pools and counts
//
// A pool is a (resource, device) pair, or a resource alone when it is
// global. A pool's available count is the matching [Limit] if there is one,
// else the largest count any registered instance asks of it; it is
// recomputed when instances register and unregister. A client is granted
// only when every one of its pools has room for its count; it takes them
// all at once, so clients never hold part of what they need and cannot
// deadlock however their resources overlap.
//
// # Scheduling
//
// Waiters are ordered by a pass value (stride scheduling): each grant
// advances the client's pass by its priority, and grants go to waiters in
// pass order, so under contention priority p is granted about 1/p as often
// as priority 1 (Triton orders by exec_count × priority, the same rule). A
// client that starts waiting gets a pass no lower than the limiter's
// virtual time (the lowest waiting pass at the latest grant), so an
// instance that was idle, or newly loaded, cannot claim credit for the time
// it did not wait and starve the others (Triton starts new instances at
// exec_count 0, which lets them run alone until they catch up).
//
// The scheduler is work-conserving: a waiter that does not fit is skipped
// in favour of the next one that does (Triton tries only the head and
// otherwise leaves resources idle). Skipping can starve a waiter that needs
// many copies while small waiters keep the pool partly busy, so it is
// bounded: once a waiter has been passed over 8 times by
// grants on a resource it needs, nobody behind it is granted any of its
// resources until it fits. Its pools then drain for it, which costs some
// idle capacity once per starving waiter.
//
// Rejected alternatives: strict head-of-line order (Triton's; simple, but a
// large waiter idles every pool it touches on every grant); a goroutine
// that dispatches (costs a hand-off per grant and an owner to stop;
// instead, Acquire, Release, Register, Unregister and cancellation run the
// dispatch under the lock, and only the woken clients are woken); one
// queue per pool (a client needing several pools would sit in several
// queues and could be granted piecemeal).
type Limiter struct {
	limits []Limit // normalized by New; immutable

	mu sync.Mutex
	// mu protects the following, and the mutable fields of every Client.
	closed  bool
	clients map[*Client]struct{} // registered clients
	pools   map[poolKey]*pool    // pools of registered clients, and of released-late holders
	waiters []*Client            // sorted by (pass, seq); capacity ≥ len(clients)
	vtime   uint64               // virtual time: lowest waiting pass at the latest grant
	seq     uint64               // arrival order, breaks pass ties
	epoch   uint64               // dispatch round, stamps pool reservations
	holding int                  // clients holding a grant
}

// poolKey identifies a pool. name is lower-cased; device is 0 for global
// pools.
type poolKey struct {
	name   string
	global bool
	device int
}

// pool is the state of one (resource, device) pool, guarded by Limiter.mu.
type pool struct {
	key      poolKey
	name     string // spelling of the first registration, for Snapshot
	avail    uint32
	inUse    uint32 // ≤ avail when granted; may exceed avail after an Unregister lowers it
	limited  bool   // avail comes from Config.Limits
	users    int    // registered clients that need this pool
	reserved uint64 // epoch of the dispatch round in which a starving waiter reserved it
}

// need is what a client takes from one pool.
type need struct {
	p *pool
	n uint32
}

// New returns a limiter configured by cfg. It fails, wrapping
// [ErrInvalid], when a limit has an empty name or two limits have the same
// name (case-insensitively) and device.
func New(cfg Config) (*Limiter, error) {
	limits := make([]Limit, 0, len(cfg.Limits))
	for _, lim := range cfg.Limits {
		if lim.Name == "" {
			return nil, invalidf("limit with an empty resource name")
		}
		lim.Name = strings.ToLower(lim.Name)
		if lim.Device < 0 {
			lim.Device = -1
		}
		for _, o := range limits {
			if o.Name == lim.Name && o.Device == lim.Device {
				return nil, invalidf("resource %q is limited twice %s", lim.Name, deviceWords(lim.Device))
			}
		}
		limits = append(limits, lim)
	}
	return &Limiter{
		limits:  limits,
		clients: make(map[*Client]struct{}),
		pools:   make(map[poolKey]*pool),
	}, nil
}

// Register declares one model instance and returns the [Client] through
// which it acquires its resources. Without a [Limit], a resource's
// available count is the largest count any registered instance asks for
// (per device, or process-wide for a global resource), so registering may
// raise it. Register fails, wrapping [ErrInvalid], for a negative device,
// an empty or repeated resource name, a resource that is global here and
// per-device for a registered instance (or the reverse; the error names
// both), or a count above the matching limit (the instance could never
// run). It returns [ErrClosed] once the limiter is closed.
func (l *Limiter) Register(inst Instance) (*Client, error) {
	who := instanceWords(inst.Name)
	if inst.Device < 0 {
		return nil, invalidf("%s: negative device %d", who, inst.Device)
	}
	keys := make([]poolKey, len(inst.Resources))
	for i, r := range inst.Resources {
		if r.Name == "" {
			return nil, invalidf("%s: resource with an empty name", who)
		}
		k := poolKey{name: strings.ToLower(r.Name), global: r.Global}
		if !r.Global {
			k.device = inst.Device
		}
		for _, o := range keys[:i] {
			if o.name == k.name {
				return nil, invalidf("%s: resource %q is listed twice", who, r.Name)
			}
		}
		keys[i] = k
	}
	priority := uint64(max(inst.Priority, 1))

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	for i, r := range inst.Resources {
		if err := l.checkLocked(who, inst.Device, r, keys[i]); err != nil {
			return nil, err
		}
	}

	c := &Client{
		l:        l,
		name:     inst.Name,
		priority: priority,
		needs:    make([]need, len(keys)),
		wake:     make(chan error, 1),
		state:    idle,
		reg:      true,
	}
	for i, k := range keys {
		p := l.pools[k]
		if p == nil {
			p = &pool{key: k, name: inst.Resources[i].Name}
			p.avail, p.limited = l.limitFor(k)
			l.pools[k] = p
		}
		p.users++
		c.needs[i] = need{p: p, n: inst.Resources[i].Count}
	}
	l.clients[c] = struct{}{}
	if cap(l.waiters) < len(l.clients) {
		// Grow here, off the hot path, so that Acquire never allocates.
		l.waiters = slices.Grow(l.waiters, 2*len(l.clients)-len(l.waiters))
	}
	for _, nd := range c.needs {
		l.recomputeLocked(nd.p)
	}
	l.dispatchLocked() // counts may have grown
	return c, nil
}

// checkLocked validates one resource of a registering instance against the
// registered ones and the limits.
func (l *Limiter) checkLocked(who string, device int, r Resource, k poolKey) error {
	for o := range l.clients {
		for _, nd := range o.needs {
			if nd.p.key.name != k.name || nd.p.key.global == k.global {
				continue
			}
			g, d := who, instanceWords(o.name)
			if !k.global {
				g, d = d, g
			}
			return invalidf("resource %q is global for %s but per-device for %s", r.Name, g, d)
		}
	}
	if lim, ok := l.limitFor(k); ok && r.Count > lim {
		where := "process-wide"
		if !k.global {
			where = fmt.Sprintf("on device %d", device)
		}
		return invalidf("%s asks for %d of resource %q, which is limited to %d %s, so it could never run",
			who, r.Count, r.Name, lim, where)
	}
	return nil
}

// limitFor returns the configured count for pool k, if a limit matches:
// the largest of the limits on k's name that apply to its device (any
// device, for a global pool).
func (l *Limiter) limitFor(k poolKey) (count uint32, ok bool) {
	for _, lim := range l.limits {
		if lim.Name != k.name || !(k.global || lim.Device < 0 || lim.Device == k.device) {
			continue
		}
		if !ok || lim.Count > count {
			count, ok = lim.Count, true
		}
	}
	return count, ok
}

// recomputeLocked sets the default count of p: the largest count a
// registered client asks of it. Limited pools keep their limit.
func (l *Limiter) recomputeLocked(p *pool) {
	if p.limited {
		return
	}
	var m uint32
	for c := range l.clients {
		for _, nd := range c.needs {
			if nd.p == p {
				m = max(m, nd.n)
			}
		}
	}
	p.avail = m
}

// dropPoolLocked forgets p once no registered client needs it and nothing
// is held in it.
func (l *Limiter) dropPoolLocked(p *pool) {
	if p.users == 0 && p.inUse == 0 && l.pools[p.key] == p {
		delete(l.pools, p.key)
	}
}

// Close wakes every waiting [Client.Acquire] with [ErrClosed]; later calls
// to Acquire and Register return ErrClosed too. Grants already held stay
// valid and are returned with [Client.Release] as usual. Close does not
// block and is idempotent.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLocked()
}

func (l *Limiter) closeLocked() {
	if l.closed {
		return
	}
	l.closed = true
	for i, w := range l.waiters {
		w.state = idle
		w.wake <- ErrClosed
		l.waiters[i] = nil
	}
	l.waiters = l.waiters[:0]
}

// Snapshot is a point-in-time view of a [Limiter], for tests and metrics.
// It is a copy: the caller owns it.
type Snapshot struct {
	// Resources has one entry per pool, sorted by lower-cased name, the
	// global pool first, then by device.
	Resources []ResourceStats
	// Clients is the number of registered clients, Waiting the number
	// blocked in Acquire, Holding the number holding a grant (including
	// clients unregistered before their Release).
	Clients, Waiting, Holding int
}

// ResourceStats describes one pool.
type ResourceStats struct {
	// Name is the resource name as first registered.
	Name string
	// Global reports a process-wide pool; Device is then -1.
	Global bool
	Device int
	// Available is the pool's count; InUse what grants hold of it. InUse
	// exceeds Available only transiently, after an Unregister lowered a
	// default count below what others hold.
	Available, InUse uint32
	// Limited reports that Available comes from [Config.Limits].
	Limited bool
}

// Snapshot returns the limiter's current state.
func (l *Limiter) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Snapshot{
		Resources: make([]ResourceStats, 0, len(l.pools)),
		Clients:   len(l.clients),
		Waiting:   len(l.waiters),
		Holding:   l.holding,
	}
	for _, p := range l.pools {
		d := p.key.device
		if p.key.global {
			d = -1
		}
		s.Resources = append(s.Resources, ResourceStats{
			Name: p.name, Global: p.key.global, Device: d,
			Available: p.avail, InUse: p.inUse, Limited: p.limited,
		})
	}
	slices.SortFunc(s.Resources, func(a, b ResourceStats) int {
		return cmp.Or(
			strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)),
			cmp.Compare(a.Device, b.Device), // global's -1 sorts first
		)
	})
	return s
}

// configError is a rejected configuration; it wraps ErrInvalid.
type configError struct{ msg string }

func (e *configError) Error() string { return "ratelimit: " + e.msg }
func (e *configError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

func instanceWords(name string) string {
	if name == "" {
		return "an unnamed instance"
	}
	return fmt.Sprintf("instance %q", name)
}

func deviceWords(device int) string {
	if device < 0 {
		return "for every device"
	}
	return fmt.Sprintf("on device %d", device)
}
