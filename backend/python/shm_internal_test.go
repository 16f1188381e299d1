package python

import (
	"strings"
	"testing"
	"time"
)

// TestRegion: first fit among live blocks, reuse once released, growth in
// steps to the limit, and a clear error past it.
func TestRegion(t *testing.T) {
	r, err := newRegion("test_", 4096, 4096, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	a, am, err := r.alloc(100)
	if err != nil || len(am) != 100 || a != blockHeader {
		t.Fatalf("first block at %d (%d bytes): %v", a, len(am), err)
	}
	b, _, err := r.alloc(1000)
	if err != nil || b != a+blockHeader+128 {
		t.Fatalf("second block at %d: %v", b, err)
	}
	r.release(a)
	c, _, err := r.alloc(64) // fits where a was
	if err != nil || c != a {
		t.Fatalf("third block at %d, want %d: %v", c, a, err)
	}
	big, bm, err := r.alloc(20000) // grows the file
	if err != nil || len(bm) != 20000 || len(r.mem) < int(big)+20000 {
		t.Fatalf("grown block at %d: %v (mapped %d)", big, err, len(r.mem))
	}
	if _, _, err := r.alloc(60 << 10); err == nil || !strings.Contains(err.Error(), "do not fit in the shared memory of the stub (limit 65536 bytes") {
		t.Fatalf("over the limit: %v", err)
	}
	r.release(b)
	r.release(c)
	r.release(big)
	if n := r.inUse(); n != 0 {
		t.Fatalf("%d bytes in use after releasing all", n)
	}
	if _, _, err := r.alloc(60 << 10); err != nil {
		t.Fatalf("the whole region once free: %v", err)
	}
	if _, err := r.view(8, 4); err == nil {
		t.Error("a view inside the first header")
	}
	if _, err := r.view(blockHeader, 1<<20); err == nil {
		t.Error("a view past the file")
	}
}

// TestRestartDelay: none for a first death, then doubling to a bound.
func TestRestartDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 0, 1: 0, 2: 100 * time.Millisecond, 3: 200 * time.Millisecond, 10: 25600 * time.Millisecond, 11: 30 * time.Second, 100: 30 * time.Second} {
		if got := restartDelay(n); got != want {
			t.Errorf("restartDelay(%d) = %v, want %v", n, got, want)
		}
	}
}
