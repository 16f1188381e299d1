package responsecache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triton-go/triton/tensor"
	"github.com/zeebo/xxh3"
)

// EntryOverhead is the fixed number of bytes every entry counts towards the
// capacity on top of its key and outputs. It stands for the bookkeeping the
// cache keeps per entry (the entry itself, its map slot and list links, the
// tensor headers of a few outputs), so that a flood of tiny responses
// cannot hold unbounded memory in a cache whose byte budget they barely
// touch.
const EntryOverhead = 256

// ErrAbandoned is the error that callers waiting on another caller's flight
// receive when that caller's fn panicked or called runtime.Goexit instead of
// returning. The panic itself propagates in the caller whose fn it was.
var ErrAbandoned = errors.New("responsecache: the call computing this response panicked or exited")

// Cache is a response cache bounded by a number of bytes, with
// least-recently-used eviction and single flight. Create one with [New];
// the zero Cache is not usable. All methods are safe for concurrent use.
//
// # Design
//
// A call's key is the canonical encoding of the model name, the version and
// every input's name, data type, shape and data, inputs sorted by name (see
// key.go for the layout); a 128-bit XXH3 digest of it indexes two tables,
// the stored entries and the flights in progress. The digest only selects
// candidates: an entry or a flight keeps its key in full and is used only
// when the caller's key equals it byte for byte, so a digest collision
// (which Triton's 64-bit hash_combine does not guard against) costs a
// comparison, never a wrong answer. Both tables chain the items that share
// a digest.
//
// [Cache.Do] hashes the caller's borrowed inputs outside the lock, then
// takes the lock only to copy out the candidates with its digest. Entries
// and flight keys are immutable once published, so the candidates are
// compared outside the lock: a hit on a large request does not hold every
// other model's requests behind a 16 MiB memcmp. A hit takes the lock a
// second time to move the entry to the front of the LRU list (an entry
// evicted in between is still served: its outputs never change), then
// copies the outputs out without the lock. A miss copies the key (the
// caller's inputs are only borrowed), takes the lock, looks again — another
// caller may have stored or started the same key meanwhile — comparing
// under the lock this time, and either joins what it finds or registers a
// flight and becomes its leader. So a miss compares under the lock only
// when it races an identical request or meets a real collision, and the
// lock is never held while hashing, copying outputs or running fn.
//
// The leader runs fn on its own goroutine (Do starts none), copies a
// successful result once into a buffer the cache owns, and under the lock
// retires the flight and inserts the entry, evicting from the tail of the
// LRU list until the bytes used fit the capacity again. An entry larger
// than the capacity is not stored (it would evict everything and then not
// fit); its waiters still share it. Waiters wait on the flight's channel or
// their own context, whichever ends first, and take their own copy of the
// result.
//
// # Alternatives rejected
//
//   - Comparing only the digest (Triton): fast and wrong once in a while.
//   - Hashing a materialised key: a hit would copy every input just to hash
//     and compare it. The probe hashes and compares the caller's memory in
//     place; only a miss copies, because the entry must own its key.
//   - One streaming XXH3 over the whole key: its streaming path copies
//     every block through a small buffer after the first write (about
//     7.5 GB/s on a 16 MiB input on the 2-core development machine, against
//     about 21 GB/s for BenchmarkKey16MiB); hashing each input's data with
//     the one-shot function, then the header and those digests, is as
//     unambiguous.
//   - golang.org/x/sync/singleflight: keyed by string (a 16 MiB key would
//     be a 16 MiB string per call), no per-waiter context, and it shares
//     the leader's outputs rather than copies.
//   - Sharding the lock: the critical sections are a map lookup and a few
//     pointer moves, and a mutex profile of BenchmarkDo/hit-parallel shows
//     little waiting on it; shard when a profile says otherwise.
type Cache struct {
	capacity int64
	// sum hashes the key: nil (xxh3.Hash128) except in tests that force
	// collisions.
	sum hashFunc
	// beforeRecheck, when set by a test, runs between a probable miss's
	// lookup without the lock and its second look under the lock.
	beforeRecheck func()

	hits, misses, shared atomic.Int64
	hitNs, missNs        atomic.Int64

	mu sync.Mutex
	// mu protects the following.
	entries   map[xxh3.Uint128]*entry
	flights   map[xxh3.Uint128]*flight
	lru       entry // sentinel of the LRU list: lru.next is the most recently used
	count     int   // number of entries
	used      int64 // Σ entry.size
	evictions int64
	tooLarge  int64
}

// Response is what the cache stores for a key: the outputs of the
// model's execution and its response parameters (values bool, int64,
// uint64, float64 or string; nil when none).
type Response struct {
	Outputs    []tensor.Tensor
	Parameters map[string]any
}

// entry is a stored response. Its key and outputs never change after it is
// published, so they may be read without the lock.
type entry struct {
	digest xxh3.Uint128
	model  string
	key    []byte   // full key, owned
	resp   Response // owned copy; handed out only as copies
	size   int64    // len(key) + responseBytes(resp) + EntryOverhead

	// Guarded by Cache.mu.
	prev, next *entry // LRU list
	chain      *entry // next entry with the same digest
	live       bool   // in the tables
}

// flight is one execution of fn shared by all concurrent callers with its
// key.
type flight struct {
	digest xxh3.Uint128
	model  string
	key    []byte        // full key, owned; immutable
	done   chan struct{} // closed when outputs and err are set

	// Written by the leader before done is closed; read-only after.
	resp Response // owned copy of a successful result
	err  error

	// Guarded by Cache.mu.
	chain  *flight // next flight with the same digest
	linked bool    // in Cache.flights; false once finished or purged
}

// New returns an empty cache that holds at most capacity bytes of entries
// (Triton's --cache-config local,size=N or --response-cache-byte-size). It
// panics if capacity is not positive.
func New(capacity int64) *Cache {
	if capacity <= 0 {
		panic(fmt.Sprintf("responsecache: capacity %d is not positive", capacity))
	}
	c := &Cache{
		capacity: capacity,
		entries:  make(map[xxh3.Uint128]*entry),
		flights:  make(map[xxh3.Uint128]*flight),
	}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Result says how [Cache.Do] produced its answer and how long the cache
// itself took, for statistics. At most one of Hit and Shared is true. When
// neither is, the caller led (fn ran on its goroutine: a cache miss), or it
// was waiting on another caller's flight when its own context ended (Do
// then returns ctx.Err(), and only Lookup is set).
type Result struct {
	// Hit is true when the outputs are a copy of a stored entry.
	Hit bool
	// Shared is true when the caller waited for another caller's fn with
	// the same key and received a copy of its result.
	Shared bool
	// Lookup is the time spent hashing the key and finding and comparing
	// candidates, including, when the caller leads, copying the key. Time
	// spent waiting on another caller's flight is not included.
	Lookup time.Duration
	// Copy is the time spent copying the outputs out (hit or shared).
	Copy time.Duration
	// Insert is the time a leader whose fn succeeded spent copying the
	// result and inserting it (and evicting), excluding fn.
	Insert time.Duration
}

// Duration is the time spent in the cache itself: Lookup + Copy + Insert.
// For a hit it is Triton's cache hit duration (lookup and copy out); for a
// leader, its cache miss duration (lookup and insertion).
func (r Result) Duration() time.Duration { return r.Lookup + r.Copy + r.Insert }

// Stats is a snapshot of a cache's counters, as returned by [Cache.Stats].
// Counts are cumulative since [New] unless noted.
type Stats struct {
	// Capacity is the bound given to New, in bytes.
	Capacity int64
	// Bytes is the sum of the sizes of the entries now stored (key, output
	// names, shapes and data, and EntryOverhead each); never more than
	// Capacity.
	Bytes int64
	// Entries is the number of entries now stored.
	Entries int
	// Hits counts calls answered from a stored entry, and HitDuration
	// their total lookup and copy-out time.
	Hits        int64
	HitDuration time.Duration
	// Misses counts calls that ran fn (leaders), whether or not fn
	// succeeded, and MissDuration their total lookup and insertion time
	// (fn excluded).
	Misses       int64
	MissDuration time.Duration
	// Shared counts calls answered by waiting for a leader with the same
	// key (Triton would have run them all).
	Shared int64
	// Evictions counts entries removed to make room for newer ones.
	Evictions int64
	// TooLarge counts successful results not stored because their entry
	// alone would exceed Capacity.
	TooLarge int64
}

// Stats returns a snapshot of the cache's counters. The fields are read
// without stopping concurrent calls, so counts and durations may be a call
// apart from each other.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	s := Stats{
		Capacity:  c.capacity,
		Bytes:     c.used,
		Entries:   c.count,
		Evictions: c.evictions,
		TooLarge:  c.tooLarge,
	}
	c.mu.Unlock()
	s.Hits = c.hits.Load()
	s.HitDuration = time.Duration(c.hitNs.Load())
	s.Misses = c.misses.Load()
	s.MissDuration = time.Duration(c.missNs.Load())
	s.Shared = c.shared.Load()
	return s
}

// Len returns the number of entries stored.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// Do returns the response to (model, version, inputs): a copy of a stored
// entry when there is one (res.Hit), else a copy of the result of a call
// already in progress with the same key (res.Shared), else the result of
// running fn on the caller's goroutine, which is stored when fn succeeds.
// Concurrent calls with the same key run fn once.
//
// The key covers model, version and every input's name, data type, shape
// and data; the order of inputs does not matter. Inputs are borrowed: Do
// reads them and keeps a copy when it stores an entry, and the caller may
// reuse them once Do returns. Every tensor is in CPU memory (the only
// [tensor.Memory] so far), and Do assumes that.
//
// A response is its outputs and its response parameters, stored and
// returned together. Outputs returned on a hit or a shared result are fresh
// copies that the caller owns and may modify: all data in one buffer, each
// tensor's data 8-byte aligned, and all shapes in one slice; so is the
// parameters' map. A leader receives fn's response as fn returned it, while
// the cache keeps its own copy; so fn must not modify it after returning
// it, and the caller may.
//
// Only successful results are stored and shared. If fn fails, the leader
// gets fn's outputs and error, and every caller waiting on that flight gets
// the error, except that a waiter whose own context is still live does not
// take a context error (the leader's cancellation or deadline, wrapped or
// not) for an answer: it looks the key up again, and leads a new flight if
// nobody else has. If fn panics, the panic propagates to the leader and the
// waiters get [ErrAbandoned]; nothing is stored either way.
//
// ctx bounds only the wait for another caller's flight: a waiter whose ctx
// ends returns ctx.Err() at once, and the flight goes on for the others. A
// hit or a leader does not look at ctx (fn is expected to honour the
// leader's own).
func (c *Cache) Do(ctx context.Context, model string, version int64, inputs []tensor.Tensor, fn func() (Response, error)) (resp Response, res Result, err error) {
	start := time.Now()
	// Scratch space that keeps the probe of a small request on the stack.
	var (
		hbuf [256]byte
		obuf [8]int
	)
	p := newProbe(c.sum, hbuf[:0], obuf[:0], model, version, inputs)
	for {
		e, f, lead := c.find(&p)
		now := time.Now()
		res = Result{Lookup: now.Sub(start)}
		switch {
		case e != nil:
			resp = copyResponse(e.resp, false)
			res.Hit = true
			res.Copy = time.Since(now)
			c.hits.Add(1)
			c.hitNs.Add(int64(res.Lookup + res.Copy))
			return resp, res, nil
		case lead:
			return c.lead(f, fn, res)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return Response{}, res, ctx.Err()
		}
		if f.err != nil {
			if ctx.Err() == nil && isContextError(f.err) {
				start = time.Now()
				continue
			}
			return Response{}, res, f.err
		}
		now = time.Now()
		resp = copyResponse(f.resp, false)
		res.Shared = true
		res.Copy = time.Since(now)
		c.shared.Add(1)
		return resp, res, nil
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// find returns the entry whose key is p's (moved to the front of the LRU
// list), or else the flight with p's key to wait on, or else a new flight
// for p that the caller must lead (lead true).
func (c *Cache) find(p *probe) (e *entry, f *flight, lead bool) {
	var ebuf [4]*entry
	var fbuf [4]*flight
	es, fs := ebuf[:0], fbuf[:0]
	c.mu.Lock()
	for e := c.entries[p.digest]; e != nil; e = e.chain {
		es = append(es, e)
	}
	for f := c.flights[p.digest]; f != nil; f = f.chain {
		fs = append(fs, f)
	}
	c.mu.Unlock()

	// Published keys are immutable: compare without the lock.
	for _, e := range es {
		if p.matches(e.key) {
			c.mu.Lock()
			if e.live {
				c.moveToFrontLocked(e)
			}
			c.mu.Unlock()
			return e, nil, false
		}
	}
	for _, f := range fs {
		if p.matches(f.key) {
			return nil, f, false
		}
	}

	// A probable miss. Copy the key before taking the lock, then look again:
	// the same key may have been stored or started meanwhile.
	key := p.key()
	if c.beforeRecheck != nil {
		c.beforeRecheck()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.entries[p.digest]; e != nil; e = e.chain {
		if p.matches(e.key) {
			c.moveToFrontLocked(e)
			return e, nil, false
		}
	}
	for f := c.flights[p.digest]; f != nil; f = f.chain {
		if p.matches(f.key) {
			return nil, f, false
		}
	}
	f = &flight{digest: p.digest, model: strings.Clone(p.model), key: key, done: make(chan struct{}), linked: true}
	f.chain = c.flights[f.digest]
	c.flights[f.digest] = f
	return nil, f, true
}

// lead runs fn for flight f, publishes its result to f's waiters and
// stores it if it succeeded.
func (c *Cache) lead(f *flight, fn func() (Response, error), res Result) (resp Response, _ Result, err error) {
	finished := false
	defer func() {
		if !finished { // fn panicked or called runtime.Goexit
			f.err = ErrAbandoned
			c.finish(f, false)
			c.misses.Add(1)
			c.missNs.Add(int64(res.Lookup))
		}
	}()
	resp, err = fn()
	start := time.Now()
	if err != nil {
		f.err = err
	} else {
		f.resp = copyResponse(resp, true)
	}
	c.finish(f, err == nil)
	finished = true
	if err == nil {
		res.Insert = time.Since(start)
	}
	c.misses.Add(1)
	c.missNs.Add(int64(res.Lookup + res.Insert))
	return resp, res, err
}

// finish retires flight f, stores its result if ok and f was not purged,
// and wakes its waiters.
func (c *Cache) finish(f *flight, ok bool) {
	size := int64(len(f.key)) + responseBytes(f.resp) + EntryOverhead
	c.mu.Lock()
	if f.linked {
		c.unlinkFlightLocked(f)
		if ok {
			c.insertLocked(f, size)
		}
	}
	c.mu.Unlock()
	close(f.done)
}

// insertLocked stores f's result as a new most-recently-used entry of the
// given size and evicts least-recently-used entries until the cache fits
// its capacity. An entry larger than the capacity is not stored.
func (c *Cache) insertLocked(f *flight, size int64) {
	if size > c.capacity {
		c.tooLarge++
		return
	}
	e := &entry{digest: f.digest, model: f.model, key: f.key, resp: f.resp, size: size, live: true}
	e.chain = c.entries[e.digest]
	c.entries[e.digest] = e
	e.prev, e.next = &c.lru, c.lru.next
	e.prev.next, e.next.prev = e, e
	c.count++
	c.used += size
	// e is at the front and fits on its own, so it is never the victim.
	for c.used > c.capacity {
		c.removeLocked(c.lru.prev)
		c.evictions++
	}
}

func (c *Cache) moveToFrontLocked(e *entry) {
	if c.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = &c.lru, c.lru.next
	e.prev.next, e.next.prev = e, e
}

// removeLocked takes e out of the LRU list and the entry table.
func (c *Cache) removeLocked(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	if head := c.entries[e.digest]; head == e {
		if e.chain == nil {
			delete(c.entries, e.digest)
		} else {
			c.entries[e.digest] = e.chain
		}
	} else {
		for x := head; x != nil; x = x.chain {
			if x.chain == e {
				x.chain = e.chain
				break
			}
		}
	}
	e.chain = nil
	e.live = false
	c.count--
	c.used -= e.size
}

// unlinkFlightLocked takes f out of the flight table, after which new
// callers no longer find it.
func (c *Cache) unlinkFlightLocked(f *flight) {
	if head := c.flights[f.digest]; head == f {
		if f.chain == nil {
			delete(c.flights, f.digest)
		} else {
			c.flights[f.digest] = f.chain
		}
	} else {
		for x := head; x != nil; x = x.chain {
			if x.chain == f {
				x.chain = f.chain
				break
			}
		}
	}
	f.chain = nil
	f.linked = false
}

// Purge removes every entry of model, all versions, and returns how many
// it removed. Calls of model already in flight finish for the callers
// waiting on them, but their results are not stored and later calls do not
// join them. A server calls Purge when it unloads or reloads a model, so
// that a new model behind an old name and version number is never answered
// from the old one's responses. Purged entries do not count as evictions.
func (c *Cache) Purge(model string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for e := c.lru.next; e != &c.lru; {
		next := e.next
		if e.model == model {
			c.removeLocked(e)
			n++
		}
		e = next
	}
	for _, head := range c.flights {
		for f := head; f != nil; {
			next := f.chain
			if f.model == model {
				c.unlinkFlightLocked(f)
			}
			f = next
		}
	}
	return n
}
