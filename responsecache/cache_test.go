package responsecache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
	"github.com/zeebo/xxh3"
)

func TestNewPanicsOnNonPositiveCapacity(t *testing.T) {
	for _, capacity := range []int64{0, -1} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", capacity)
				}
			}()
			responsecache.New(capacity)
		})
	}
}

func TestHitAndMiss(t *testing.T) {
	a, b := simple("m", "a"), simple("m", "b")
	type step struct {
		call    call
		hit     bool
		calls   int64 // model executions so far
		entries int
		hits    int64
		misses  int64
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first call misses, second hits", []step{
			{call: a, calls: 1, entries: 1, misses: 1},
			{call: a, hit: true, calls: 1, entries: 1, hits: 1, misses: 1},
		}},
		{"two keys", []step{
			{call: a, calls: 1, entries: 1, misses: 1},
			{call: b, calls: 2, entries: 2, misses: 2},
			{call: b, hit: true, calls: 2, entries: 2, hits: 1, misses: 2},
			{call: a, hit: true, calls: 2, entries: 2, hits: 2, misses: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(1 << 20)
			var m model
			var size int64
			for i, s := range tt.steps {
				out, res, err := s.call.do(c, m.fn(s.call))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !equalTensors(out, answer(s.call)) {
					t.Errorf("step %d: outputs %v, want the answer to %v", i, out, s.call)
				}
				if res.Hit != s.hit || res.Shared {
					t.Errorf("step %d: res = %+v, want Hit %v and not Shared", i, res, s.hit)
				}
				if !s.hit {
					size += s.call.entrySize()
				}
				st := c.Stats()
				if got := m.calls.Load(); got != s.calls {
					t.Errorf("step %d: model ran %d times, want %d", i, got, s.calls)
				}
				if st.Entries != s.entries || c.Len() != s.entries || st.Hits != s.hits || st.Misses != s.misses || st.Bytes != size {
					t.Errorf("step %d: stats %+v, Len %d; want %d entries, %d hits, %d misses, %d bytes",
						i, st, c.Len(), s.entries, s.hits, s.misses, size)
				}
				checkInvariants(t, c)
			}
		})
	}
}

func TestKeySensitivity(t *testing.T) {
	x := raw("X", tensor.FP32, tensor.Shape{2, 2}, "0123456789abcdef")
	y := raw("Y", tensor.Int8, tensor.Shape{3}, "xyz")
	base := call{"m", 1, []tensor.Tensor{x, y}}
	with := func(f func(c *call)) call {
		c := call{base.model, base.version, []tensor.Tensor{x, y}}
		f(&c)
		return c
	}
	tests := []struct {
		name string
		call call
		same bool
	}{
		{"identical", with(func(c *call) {}), true},
		{"inputs reordered", with(func(c *call) { c.inputs = []tensor.Tensor{y, x} }), true},
		{"no inputs", call{"m", 1, nil}, false},
		{"model", with(func(c *call) { c.model = "n" }), false},
		{"model prefix", with(func(c *call) { c.model = "m\x00" }), false},
		{"version", with(func(c *call) { c.version = 2 }), false},
		{"negative version", with(func(c *call) { c.version = -1 }), false},
		{"input name", with(func(c *call) { c.inputs[0].Name = "Z" }), false},
		{"datatype, same bytes", with(func(c *call) { c.inputs[0].DataType = tensor.Int32 }), false},
		{"shape, same bytes", with(func(c *call) { c.inputs[0].Shape = tensor.Shape{4} }), false},
		{"shape dims swapped", with(func(c *call) { c.inputs[0].Shape = tensor.Shape{1, 4} }), false},
		{"one data byte", with(func(c *call) { c.inputs[1].Data = []byte("xyZ") }), false},
		{"input dropped", with(func(c *call) { c.inputs = c.inputs[:1] }), false},
		{"input added", with(func(c *call) { c.inputs = append(c.inputs, raw("W", tensor.Uint8, nil, "")) }), false},
		{"data moved between inputs", with(func(c *call) {
			c.inputs[0] = raw("X", tensor.FP32, tensor.Shape{2, 2}, "0123456789abcdefx")
			c.inputs[1] = raw("Y", tensor.Int8, tensor.Shape{3}, "yz")
		}), false},
		{"name and model boundary", call{"mX", 1, []tensor.Tensor{raw("", x.DataType, x.Shape, string(x.Data)), y}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(1 << 20)
			var m model
			if _, _, err := base.do(c, m.fn(base)); err != nil {
				t.Fatal(err)
			}
			out, res, err := tt.call.do(c, m.fn(tt.call))
			if err != nil {
				t.Fatal(err)
			}
			if res.Hit != tt.same {
				t.Errorf("Hit = %v, want %v", res.Hit, tt.same)
			}
			want := answer(tt.call)
			if tt.same {
				want = answer(base)
			}
			if !equalTensors(out, want) {
				t.Errorf("outputs %v, want %v", out, want)
			}
			sameKey := bytes.Equal(responsecache.Key(base.model, base.version, base.inputs), responsecache.Key(tt.call.model, tt.call.version, tt.call.inputs))
			sameDigest := responsecache.Digest(c, base.model, base.version, base.inputs) == responsecache.Digest(c, tt.call.model, tt.call.version, tt.call.inputs)
			if sameKey != tt.same || sameDigest != tt.same {
				t.Errorf("same key %v, same digest %v; want %v", sameKey, sameDigest, tt.same)
			}
		})
	}
}

func TestLRUEviction(t *testing.T) {
	calls := map[string]call{}
	for _, k := range []string{"A", "B", "C", "D", "E"} {
		calls[k] = simple("m", k)
	}
	size := calls["A"].entrySize() // all five have the same size
	tests := []struct {
		name    string
		ops     []string // calls in order
		kept    []string
		evicted []string
	}{
		{"oldest goes first", []string{"A", "B", "C", "D"}, []string{"B", "C", "D"}, []string{"A"}},
		{"a hit makes an entry recent", []string{"A", "B", "C", "A", "D"}, []string{"A", "C", "D"}, []string{"B"}},
		{"hits in reverse order", []string{"A", "B", "C", "C", "B", "A", "D"}, []string{"A", "B", "D"}, []string{"C"}},
		{"two evictions", []string{"A", "B", "C", "B", "D", "E"}, []string{"B", "D", "E"}, []string{"A", "C"}},
		{"evicted entry comes back", []string{"A", "B", "C", "D", "A"}, []string{"C", "D", "A"}, []string{"B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(3 * size)
			var m model
			for _, k := range tt.ops {
				if _, _, err := calls[k].do(c, m.fn(calls[k])); err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, c)
			}
			for _, k := range tt.kept {
				if cl := calls[k]; !responsecache.Peek(c, cl.model, cl.version, cl.inputs) {
					t.Errorf("%s was evicted", k)
				}
			}
			for _, k := range tt.evicted {
				if cl := calls[k]; responsecache.Peek(c, cl.model, cl.version, cl.inputs) {
					t.Errorf("%s was kept", k)
				}
			}
			st := c.Stats()
			if st.Entries != 3 || st.Bytes != 3*size {
				t.Errorf("stats %+v, want 3 entries of %d bytes", st, size)
			}
			// Evictions: every miss beyond the third.
			misses := st.Misses
			if st.Evictions != misses-3 {
				t.Errorf("%d evictions after %d misses, want %d", st.Evictions, misses, misses-3)
			}
		})
	}
}

func TestSizeAccounting(t *testing.T) {
	small := simple("m", "s")
	big := call{"m", 1, []tensor.Tensor{raw("IN", tensor.Uint8, tensor.Shape{1000}, string(make([]byte, 1000)))}}
	if small.entrySize() >= big.entrySize() {
		t.Fatal("test setup: small is not smaller than big")
	}
	// The size formula itself: key, output names, shapes (8 bytes a
	// dimension) and data, and the overhead.
	key := responsecache.Key(small.model, small.version, small.inputs)
	out := answer(small)
	want := int64(len(key)) + int64(len("OUT")+8*1+len(out[0].Data)) + int64(len("LEN")+8*2+1) + responsecache.EntryOverhead
	if got := small.entrySize(); got != want {
		t.Fatalf("entry size %d, want %d", got, want)
	}

	tests := []struct {
		name     string
		capacity int64
		calls    []call
		stored   []bool // after all calls
		tooLarge int64
	}{
		{"entry exactly the capacity is stored", big.entrySize(), []call{big}, []bool{true}, 0},
		{"entry one byte over the capacity is not", big.entrySize() - 1, []call{big}, []bool{false}, 1},
		{"oversized entry evicts nothing", big.entrySize() - 1, []call{small, big}, []bool{true, false}, 1},
		{"big evicts small to fit", big.entrySize() + small.entrySize() - 1, []call{small, big}, []bool{false, true}, 0},
		{"both fit", big.entrySize() + small.entrySize(), []call{small, big}, []bool{true, true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(tt.capacity)
			var m model
			for _, cl := range tt.calls {
				if _, _, err := cl.do(c, m.fn(cl)); err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, c)
			}
			var used int64
			for i, cl := range tt.calls {
				got := responsecache.Peek(c, cl.model, cl.version, cl.inputs)
				if got != tt.stored[i] {
					t.Errorf("call %d stored = %v, want %v", i, got, tt.stored[i])
				}
				if got {
					used += cl.entrySize()
				}
			}
			st := c.Stats()
			if st.Bytes != used || st.Bytes > st.Capacity || st.Capacity != tt.capacity || st.TooLarge != tt.tooLarge {
				t.Errorf("stats %+v, want %d bytes used, capacity %d, %d too large", st, used, tt.capacity, tt.tooLarge)
			}
			// A result that was not stored runs the model again.
			before := m.calls.Load()
			last := tt.calls[len(tt.calls)-1]
			_, res, _ := last.do(c, m.fn(last))
			if res.Hit != tt.stored[len(tt.calls)-1] || (m.calls.Load() == before) != res.Hit {
				t.Errorf("repeat of the last call: res %+v, model ran %d more times", res, m.calls.Load()-before)
			}
		})
	}
}

// TestCollisions forces every key to the same digest: the cache must still
// answer each call with its own response.
func TestCollisions(t *testing.T) {
	var calls []call
	for i := range 8 {
		calls = append(calls, simple("m", fmt.Sprint(i)))
	}
	tests := []struct {
		name     string
		capacity int64 // in entries
	}{
		{"all fit", 8},
		{"evicting from a chain", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(tt.capacity * calls[0].entrySize())
			responsecache.SetHash(c, func([]byte) xxh3.Uint128 { return xxh3.Uint128{Hi: 1, Lo: 2} })
			if responsecache.Digest(c, "a", 1, nil) != responsecache.Digest(c, "b", 2, calls[0].inputs) {
				t.Fatal("the injected hash is not used")
			}
			var m model
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				cl := calls[rng.IntN(len(calls))]
				out, res, err := cl.do(c, m.fn(cl))
				if err != nil {
					t.Fatal(err)
				}
				if !equalTensors(out, answer(cl)) {
					t.Fatalf("call %v answered with %v (hit %v)", cl, out, res.Hit)
				}
				checkInvariants(t, c)
			}
			st := c.Stats()
			if st.Hits == 0 || st.Entries != int(tt.capacity) {
				t.Errorf("stats %+v: want some hits and %d entries", st, tt.capacity)
			}
			if tt.capacity == 8 {
				// Every entry is findable.
				for _, cl := range calls {
					if !responsecache.Peek(c, cl.model, cl.version, cl.inputs) {
						t.Errorf("%v not found", cl)
					}
				}
			}
		})
	}
}

func TestOutputsAreCopies(t *testing.T) {
	cl := simple("m", "q")
	tests := []struct {
		name   string
		mutate func(leader, hit []tensor.Tensor)
	}{
		{"hit data", func(_, hit []tensor.Tensor) { hit[0].Data[0] ^= 0xff }},
		{"hit shape", func(_, hit []tensor.Tensor) { hit[1].Shape[0] = 7 }},
		{"hit slice", func(_, hit []tensor.Tensor) { hit[0] = tensor.Tensor{Name: "other"} }},
		{"append to hit data", func(_, hit []tensor.Tensor) { _ = append(hit[0].Data, "garbage"...) }},
		{"append to hit shape", func(_, hit []tensor.Tensor) { _ = append(hit[1].Shape[:1], 9, 9) }},
		{"leader data", func(leader, _ []tensor.Tensor) { leader[0].Data[0] ^= 0xff }},
		{"leader shape", func(leader, _ []tensor.Tensor) { leader[1].Shape[1] = 7 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := responsecache.New(1 << 20)
			var m model
			leader, _, err := cl.do(c, m.fn(cl))
			if err != nil {
				t.Fatal(err)
			}
			hit, res, err := cl.do(c, m.fn(cl))
			if err != nil || !res.Hit {
				t.Fatalf("second call: hit %v, err %v", res.Hit, err)
			}
			hitData := &hit[0].Data[0]
			tt.mutate(leader, hit)
			again, res, err := cl.do(c, m.fn(cl))
			if err != nil || !res.Hit {
				t.Fatalf("third call: hit %v, err %v", res.Hit, err)
			}
			if !equalTensors(again, answer(cl)) {
				t.Errorf("cached outputs changed: %v", again)
			}
			if &again[0].Data[0] == hitData {
				t.Error("two hits share their data")
			}
		})
	}
}

// TestParameters: a response's parameters are stored with its outputs,
// count towards its entry's size, and are handed out as copies.
func TestParameters(t *testing.T) {
	cl := simple("m", "p")
	c := responsecache.New(1 << 20)
	params := map[string]any{"label": "cat", "score": 0.5, "n": int64(3), "ok": true}
	fn := func() (responsecache.Response, error) {
		return responsecache.Response{Outputs: answer(cl), Parameters: params}, nil
	}
	leader, _, err := c.Do(context.Background(), cl.model, cl.version, cl.inputs, fn)
	if err != nil || !maps.Equal(leader.Parameters, params) {
		t.Fatalf("leader: %v %v", leader.Parameters, err)
	}
	params["label"] = "dog" // the model's map, changed after the fact
	for range 2 {
		hit, res, err := c.Do(context.Background(), cl.model, cl.version, cl.inputs, fn)
		want := map[string]any{"label": "cat", "score": 0.5, "n": int64(3), "ok": true}
		if err != nil || !res.Hit || !maps.Equal(hit.Parameters, want) || !equalTensors(hit.Outputs, answer(cl)) {
			t.Fatalf("hit %v: %v %v %v", res.Hit, hit.Parameters, hit.Outputs, err)
		}
		hit.Parameters["label"] = "bird" // the caller's own copy
	}
	checkInvariants(t, c)
	// 4 keys, 16 bytes of value each, and the string's 3 bytes.
	params["label"] = "cat"
	extra := int64(len("label")+len("score")+len("n")+len("ok")) + 4*16 + 3
	if got, want := c.Stats().Bytes, cl.entrySize()+extra; got != want {
		t.Errorf("entry bytes %d, want %d (the outputs' entry and the parameters)", got, want)
	}
}

func TestOutputsAligned(t *testing.T) {
	outs := []tensor.Tensor{
		raw("A", tensor.Int8, tensor.Shape{3}, "abc"),
		raw("B", tensor.FP64, tensor.Shape{2}, string(make([]byte, 16))),
		raw("C", tensor.Bytes, tensor.Shape{1}, "\x01\x00\x00\x00z"),
		raw("D", tensor.Int64, tensor.Shape{1}, string(make([]byte, 8))),
		raw("E", tensor.Uint8, nil, ""),
	}
	outs[4].Data = nil
	c := responsecache.New(1 << 20)
	cl := simple("m", "x")
	fn := func() ([]tensor.Tensor, error) { return outs, nil }
	if _, _, err := cl.do(c, fn); err != nil {
		t.Fatal(err)
	}
	hit, res, err := cl.do(c, fn)
	if err != nil || !res.Hit {
		t.Fatalf("hit %v, err %v", res.Hit, err)
	}
	if !equalTensors(hit, outs) {
		t.Fatalf("hit %v, want %v", hit, outs)
	}
	if _, err := tensor.View[float64](hit[1]); err != nil {
		t.Errorf("View[float64]: %v", err)
	}
	if _, err := tensor.View[int64](hit[3]); err != nil {
		t.Errorf("View[int64]: %v", err)
	}
	if hit[4].Data != nil || hit[4].Shape != nil {
		t.Errorf("nil Data or Shape became %#v, %#v", hit[4].Data, hit[4].Shape)
	}
	for i := range hit {
		if cap(hit[i].Data) != len(hit[i].Data) || cap(hit[i].Shape) != len(hit[i].Shape) {
			t.Errorf("output %d: capacity not clipped", i)
		}
	}
}

// TestInputsBorrowed reuses the caller's input buffer after Do: the stored
// key must not change with it.
func TestInputsBorrowed(t *testing.T) {
	c := responsecache.New(1 << 20)
	buf := []byte("abcd")
	shape := tensor.Shape{4}
	in := []tensor.Tensor{{Name: "IN", DataType: tensor.Uint8, Shape: shape, Data: buf}}
	orig := call{"m", 1, []tensor.Tensor{raw("IN", tensor.Uint8, tensor.Shape{4}, "abcd")}}
	var m model
	if _, _, err := c.Do(context.Background(), "m", 1, in, outputsOnly(m.fn(orig))); err != nil {
		t.Fatal(err)
	}
	copy(buf, "zzzz")
	shape[0] = 2
	in[0].Name = "OTHER"
	if _, res, _ := orig.do(c, m.fn(orig)); !res.Hit {
		t.Error("the original request no longer hits")
	}
	changed := call{"m", 1, []tensor.Tensor{raw("OTHER", tensor.Uint8, tensor.Shape{2}, "zzzz")}}
	if _, res, _ := changed.do(c, m.fn(changed)); res.Hit {
		t.Error("the modified request hits")
	}
}

func TestPurge(t *testing.T) {
	m1v1, m1v2 := simple("m1", "a"), simple("m1", "a")
	m1v2.version = 2
	m2 := simple("m2", "a")
	c := responsecache.New(1 << 20)
	var m model
	for _, cl := range []call{m1v1, m1v2, m2} {
		if _, _, err := cl.do(c, m.fn(cl)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Purge("m1"); n != 2 {
		t.Errorf("Purge removed %d entries, want 2", n)
	}
	checkInvariants(t, c)
	if c.Len() != 1 || !responsecache.Peek(c, m2.model, m2.version, m2.inputs) {
		t.Errorf("after Purge: %d entries, m2 kept %v", c.Len(), responsecache.Peek(c, m2.model, m2.version, m2.inputs))
	}
	if n := c.Purge("absent"); n != 0 {
		t.Errorf("Purge of an absent model removed %d", n)
	}
	if st := c.Stats(); st.Evictions != 0 || st.Bytes != m2.entrySize() {
		t.Errorf("stats after Purge %+v", st)
	}
}

func TestResultDurationsAddUpToStats(t *testing.T) {
	c := responsecache.New(1 << 20)
	var m model
	var hits, misses time.Duration
	for i := range 20 {
		cl := simple("m", fmt.Sprint(i%5))
		_, res, err := cl.do(c, m.fn(cl))
		if err != nil {
			t.Fatal(err)
		}
		if res.Duration() != res.Lookup+res.Copy+res.Insert {
			t.Fatalf("Duration %v is not the sum of %+v", res.Duration(), res)
		}
		if res.Hit {
			hits += res.Duration()
			if res.Insert != 0 {
				t.Errorf("a hit with insert time %v", res.Insert)
			}
		} else {
			misses += res.Duration()
			if res.Copy != 0 {
				t.Errorf("a leader with copy time %v", res.Copy)
			}
		}
	}
	st := c.Stats()
	if st.Hits != 15 || st.Misses != 5 || st.HitDuration != hits || st.MissDuration != misses {
		t.Errorf("stats %+v; want 15 hits in %v and 5 misses in %v", st, hits, misses)
	}
	if hits <= 0 || misses <= 0 {
		t.Errorf("durations not measured: hits %v, misses %v", hits, misses)
	}
}

func TestHitAllocations(t *testing.T) {
	c := responsecache.New(1 << 20)
	cl := call{"m", 1, []tensor.Tensor{
		raw("A", tensor.FP32, tensor.Shape{1, 4}, "0123456789abcdef"),
		raw("B", tensor.Int64, tensor.Shape{1, 1}, "01234567"),
	}}
	var m model
	fn := m.fn(cl)
	if _, _, err := cl.do(c, fn); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, res, _ := c.Do(ctx, cl.model, cl.version, cl.inputs, outputsOnly(fn)); !res.Hit {
			t.Fatal("not a hit")
		}
	})
	// The probe of a small request lives on the stack; the copy out is one
	// buffer for the data, one for the shapes and the tensor slice.
	const budget = 3
	if allocs > budget {
		t.Errorf("a hit allocates %v times, budget %d", allocs, budget)
	}
}

// TestConcurrentStress mixes hits, misses, failures, evictions and
// collisions from many goroutines and checks that every answer is right.
func TestConcurrentStress(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			var calls []call
			for i := range 12 {
				calls = append(calls, simple(fmt.Sprint("m", i%3), fmt.Sprint(i)))
			}
			c := responsecache.New(5 * calls[0].entrySize())
			if collide {
				responsecache.SetHash(c, func(b []byte) xxh3.Uint128 { return xxh3.Uint128{Lo: uint64(len(b) % 2)} })
			}
			errFail := errors.New("fail")
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 0))
					for range 300 {
						cl := calls[rng.IntN(len(calls))]
						fail := rng.IntN(10) == 0
						out, _, err := cl.do(c, func() ([]tensor.Tensor, error) {
							if fail {
								return nil, errFail
							}
							return answer(cl), nil
						})
						if err != nil {
							if !errors.Is(err, errFail) {
								t.Errorf("unexpected error %v", err)
							}
							continue
						}
						if !equalTensors(out, answer(cl)) {
							t.Errorf("call %v answered with %v", cl, out)
							return
						}
						out[0].Data[0] ^= 0xff // callers own their outputs
						if rng.IntN(100) == 0 {
							c.Purge(cl.model)
						}
					}
				})
			}
			wg.Wait()
			checkInvariants(t, c)
			if n := responsecache.Flights(c); n != 0 {
				t.Errorf("%d flights left", n)
			}
		})
	}
}
