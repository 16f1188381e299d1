package responsecache

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/triton-go/triton/tensor"
	"github.com/zeebo/xxh3"
)

// SetHash replaces c's hash function (xxh3.Hash128), for tests that force
// collisions. Call it before c is used.
func SetHash(c *Cache, sum func([]byte) xxh3.Uint128) { c.sum = sum }

// SetBeforeRecheck sets a function that a call runs after finding
// nothing without the lock and before looking again under it.
func SetBeforeRecheck(c *Cache, f func()) { c.beforeRecheck = f }

// Digest returns the digest c computes for the key of a call.
func Digest(c *Cache, model string, version int64, inputs []tensor.Tensor) xxh3.Uint128 {
	return newProbe(c.sum, nil, nil, model, version, inputs).digest
}

// Key returns the full canonical key of a call.
func Key(model string, version int64, inputs []tensor.Tensor) []byte {
	p := newProbe(nil, nil, nil, model, version, inputs)
	return p.key()
}

// EntrySize returns the bytes an entry for the call and outputs counts.
func EntrySize(model string, version int64, inputs, outputs []tensor.Tensor) int64 {
	return int64(len(Key(model, version, inputs))) + outputBytes(outputs) + EntryOverhead
}

// Peek reports whether c stores an entry for the call, without touching it.
func Peek(c *Cache, model string, version int64, inputs []tensor.Tensor) bool {
	p := newProbe(c.sum, nil, nil, model, version, inputs)
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.entries[p.digest]; e != nil; e = e.chain {
		if p.matches(e.key) {
			return true
		}
	}
	return false
}

// Flights returns the number of flights in c's table.
func Flights(c *Cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.flights {
		for ; f != nil; f = f.chain {
			n++
		}
	}
	return n
}

// CheckInvariants checks c's bookkeeping: the LRU list and the entry table
// hold the same live entries, every entry sits under its key's digest and
// has its computed size, no two entries have the same key, the count and
// bytes used match, and the bytes used fit the capacity.
func CheckInvariants(c *Cache) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inList := map[*entry]bool{}
	var used int64
	for e := c.lru.next; e != &c.lru; e = e.next {
		if e.next.prev != e || e.prev.next != e {
			return fmt.Errorf("LRU links broken at %p", e)
		}
		if inList[e] {
			return fmt.Errorf("entry %p twice in the LRU list", e)
		}
		inList[e] = true
		if !e.live {
			return fmt.Errorf("entry %p in the LRU list is not live", e)
		}
		if want := int64(len(e.key)) + responseBytes(e.resp) + EntryOverhead; e.size != want {
			return fmt.Errorf("entry %p has size %d, want %d", e, e.size, want)
		}
		d, err := DecodeKey(e.key)
		if err != nil {
			return fmt.Errorf("entry %p: %v", e, err)
		}
		if p := newProbe(c.sum, nil, nil, d.Model, d.Version, d.Inputs); p.digest != e.digest || !p.matches(e.key) || d.Model != e.model {
			return fmt.Errorf("entry %p is filed under the wrong digest or model", e)
		}
		used += e.size
	}
	n := 0
	for d, head := range c.entries {
		if head == nil {
			return fmt.Errorf("nil chain under digest %v", d)
		}
		for e := head; e != nil; e = e.chain {
			n++
			if e.digest != d || !inList[e] {
				return fmt.Errorf("entry %p in the table is misfiled or not in the LRU list", e)
			}
			for o := e.chain; o != nil; o = o.chain {
				if bytes.Equal(o.key, e.key) {
					return fmt.Errorf("two entries with the same key")
				}
			}
		}
	}
	if n != len(inList) || n != c.count {
		return fmt.Errorf("table holds %d entries, list %d, count %d", n, len(inList), c.count)
	}
	if used != c.used {
		return fmt.Errorf("entries sum to %d bytes, used says %d", used, c.used)
	}
	if c.used > c.capacity {
		return fmt.Errorf("%d bytes used exceed capacity %d", c.used, c.capacity)
	}
	for _, head := range c.flights {
		for f := head; f != nil; f = f.chain {
			if !f.linked {
				return fmt.Errorf("unlinked flight %p in the table", f)
			}
		}
	}
	return nil
}

// Decoded is a key taken apart by [DecodeKey].
type Decoded struct {
	Model   string
	Version int64
	Inputs  []tensor.Tensor // in key order; Data aliases the key
}

// DecodeKey parses a full key; it is the inverse of [Key] for keys Key
// made, and fails on anything else (trailing bytes included).
func DecodeKey(key []byte) (Decoded, error) {
	var d Decoded
	b := key
	fail := func(what string) (Decoded, error) {
		return Decoded{}, fmt.Errorf("key: bad %s at offset %d", what, len(key)-len(b))
	}
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := uvarint()
		if !ok || n > uint64(len(b)) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	var ok bool
	if d.Model, ok = str(); !ok {
		return fail("model")
	}
	v, n := binary.Varint(b)
	if n <= 0 {
		return fail("version")
	}
	d.Version, b = v, b[n:]
	count, ok := uvarint()
	if !ok || count > uint64(len(b)) {
		return fail("input count")
	}
	lens := make([]uint64, count)
	d.Inputs = make([]tensor.Tensor, count)
	for i := range d.Inputs {
		t := &d.Inputs[i]
		if t.Name, ok = str(); !ok || len(b) == 0 {
			return fail("input name")
		}
		t.DataType, b = tensor.DataType(b[0]), b[1:]
		rank, ok := uvarint()
		if !ok || rank > uint64(len(b)) {
			return fail("rank")
		}
		t.Shape = make(tensor.Shape, rank)
		for j := range t.Shape {
			v, n := binary.Varint(b)
			if n <= 0 {
				return fail("dimension")
			}
			t.Shape[j], b = v, b[n:]
		}
		if lens[i], ok = uvarint(); !ok {
			return fail("data length")
		}
	}
	for i := range d.Inputs {
		if lens[i] > uint64(len(b)) {
			return fail("data")
		}
		d.Inputs[i].Data, b = b[:lens[i]:lens[i]], b[lens[i]:]
	}
	if len(b) != 0 {
		return fail("trailing bytes")
	}
	return d, nil
}
