package httpapi

import (
	"bytes"
	stdgzip "compress/gzip"
	stdzlib "compress/zlib"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"golang.org/x/sync/semaphore"

	"github.com/triton-go/triton"
)

// budgetHandler is a handler with a size limit and the smallest body
// memory budget that limit allows.
func budgetHandler(limit int64) (*handler, int64) {
	n := 2*(limit+1) + 8
	return &handler{maxSize: limit, mem: semaphore.NewWeighted(n)}, n
}

// free reports whether all of h's budget is free.
func free(h *handler, n int64) bool {
	if !h.mem.TryAcquire(n) {
		return false
	}
	h.mem.Release(n)
	return true
}

// gzipped is data compressed with gzip (klauspost's, at its fastest: the
// race detector slows compress/gzip down tenfold).
func gzipped(data []byte) []byte { return compressed(codingGzip, data) }

func zlibbed(data []byte) []byte { return compressed(codingDeflate, data) }

func compressed(c coding, data []byte) []byte {
	var z bytes.Buffer
	e := newEncoder(c, 1, &z)
	_, _ = e.zw.Write(data)
	_ = e.zw.Close()
	_ = e.bw.Flush()
	return z.Bytes()
}

// request is a POST of body; chunked hides its length.
func request(body []byte, enc string, chunked bool) *http.Request {
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // no Len: httptest leaves ContentLength -1
	}
	r := httptest.NewRequest(http.MethodPost, "/", rd)
	if chunked {
		r.ContentLength = -1
	}
	if enc != "" {
		r.Header.Set("Content-Encoding", enc)
	}
	return r
}

// TestBodyMemoryBudget: bodies past a pooled buffer hold budget for what
// they keep, while they are kept: a sized body its length, a chunked one
// its buffer, a compressed one its decompressed size; refused bodies give
// everything back; bodies within a pooled buffer take none.
func TestBodyMemoryBudget(t *testing.T) {
	const limit = 4 << 20
	want := encodeInputs(3 << 19)["json"] // 1.5 MiB, past a pooled buffer
	zeros := make([]byte, len(want))
	for _, tc := range []struct {
		name    string
		body    []byte
		enc     string
		chunked bool
		// held is what the body should hold, at least and at most.
		min, max int64
	}{
		{"sized", want, "", false, 3 << 19, 3 << 19},
		{"chunked", want, "", true, 3 << 19, 3 << 20},
		// JSON text compresses less than maxRatio: decompressed once, into
		// a buffer that grew by doubling.
		{"gzip", gzipped(want), "gzip", false, 3 << 19, 3 << 20},
		{"gzip chunked", gzipped(want), "gzip", true, 3 << 19, 3 << 20},
		// Zeros compress far more: counted, then decompressed into a
		// buffer of their size.
		{"gzip zeros", gzipped(zeros), "gzip", false, 3 << 19, 3 << 19},
		{"small", []byte("{}"), "", false, 0, 0},
		{"small gzip", gzipped([]byte("{}")), "gzip", false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, n := budgetHandler(limit)
			b, err := h.readBody(httptest.NewRecorder(), request(tc.body, tc.enc, tc.chunked), true, -1)
			if err != nil {
				t.Fatal(err)
			}
			wantData := want
			switch {
			case tc.max == 0:
				wantData = []byte("{}")
			case strings.Contains(tc.name, "zeros"):
				wantData = zeros
			}
			if !bytes.Equal(b.data, wantData) {
				t.Errorf("%d bytes read, want %d equal bytes", len(b.data), len(wantData))
			}
			if b.held < tc.min || b.held > tc.max {
				t.Errorf("the body holds %d bytes of budget, want %d to %d", b.held, tc.min, tc.max)
			}
			if tc.max > 0 && free(h, n) {
				t.Errorf("the whole budget is free while the body is held")
			}
			b.release()
			if !free(h, n) {
				t.Errorf("budget still held after release")
			}
		})
	}

	// Refused: over the limit as received, chunked, or decompressed.
	big := make([]byte, limit+1)
	for _, tc := range []struct {
		name    string
		body    []byte
		enc     string
		chunked bool
	}{
		{"chunked", big, "", true},
		{"gzip", gzipped(big), "gzip", false},
		{"gzip chunked", gzipped(big), "gzip", true},
		{"deflate", zlibbed(big), "deflate", false},
		{"corrupt gzip", gzipped(want)[:len(gzipped(want))-100], "gzip", false},
		// Starts as noise, so that it grows into memory, then turns into
		// a bomb: counted from where it passes maxRatio.
		{"noise then zeros", gzipped(append(encodeInputs(2 << 20)["fp32"], big...)), "gzip", false},
	} {
		t.Run("refused "+tc.name, func(t *testing.T) {
			h, n := budgetHandler(limit)
			if _, err := h.readBody(httptest.NewRecorder(), request(tc.body, tc.enc, tc.chunked), true, -1); triton.CodeOf(err) != triton.InvalidArgument {
				t.Errorf("error %v, want InvalidArgument", err)
			}
			if !free(h, n) {
				t.Errorf("budget still held after a refused body")
			}
		})
	}
}

// TestBodyMemoryWait: a body that finds no room waits for it, in order,
// and proceeds once room is released; a waiter whose context ends gives up
// with Cancelled, holding nothing.
func TestBodyMemoryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 4 << 20
		h, n := budgetHandler(limit)
		data := make([]byte, 2<<20)
		if err := h.mem.Acquire(context.Background(), n); err != nil { // all of it
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var got body
		var gotErr error
		wg.Go(func() {
			got, gotErr = h.readBody(httptest.NewRecorder(), request(data, "", false), true, -1)
		})
		ctx, cancel := context.WithCancel(context.Background())
		var cancelled error
		wg.Go(func() {
			r := request(data, "", false).WithContext(ctx)
			_, cancelled = h.readBody(httptest.NewRecorder(), r, true, -1)
		})
		synctest.Wait()
		if got.data != nil || gotErr != nil || cancelled != nil {
			t.Fatalf("a body was read with no room in the budget")
		}
		cancel()
		synctest.Wait()
		if triton.CodeOf(cancelled) != triton.Cancelled {
			t.Errorf("cancelled waiter: %v, want Cancelled", cancelled)
		}
		h.mem.Release(n)
		wg.Wait()
		if gotErr != nil || len(got.data) != len(data) || got.held != int64(len(data)) {
			t.Errorf("waiter after release: %d bytes, %d held, %v", len(got.data), got.held, gotErr)
		}
		got.release()
		if !free(h, n) {
			t.Errorf("budget still held")
		}
	})
}

// TestRefusedBombCostsLittle: a body that decompresses past the 16 MiB
// limit is refused after allocating a small fraction of the limit (its
// compressed bytes and a pooled buffer), not buffers of the limit's size:
// until issue #17 each refusal allocated twice the limit.
func TestRefusedBombCostsLittle(t *testing.T) {
	const limit = 16 << 20
	bomb := gzipped(make([]byte, limit+limit/2)) // about 24 KiB
	h, _ := budgetHandler(limit)
	var before, after runtime.MemStats
	for i := range 3 {
		runtime.ReadMemStats(&before)
		_, err := h.readBody(httptest.NewRecorder(), request(bomb, "gzip", false), true, -1)
		runtime.ReadMemStats(&after)
		if triton.CodeOf(err) != triton.InvalidArgument {
			t.Fatalf("bomb: %v", err)
		}
		// The first round fills the pools (decoder, body buffers); the
		// race detector empties them at random, which costs a pooled
		// buffer (2 MiB allocated in growing to 1 MiB) and a decoder.
		if alloc := after.TotalAlloc - before.TotalAlloc; i > 0 && alloc > limit/4 {
			t.Errorf("round %d: a refused bomb allocated %d bytes, want under %d", i, alloc, limit/4)
		}
	}
}

// TestBombAfterNoise: a body that starts incompressible, so that it
// grows into memory, and then turns into a bomb is counted from where it
// passes maxRatio: refused at the limit having allocated about maxRatio
// times its compressed size, not buffers of the limit.
func TestBombAfterNoise(t *testing.T) {
	const limit = 64 << 20
	noise := encodeInputs(3 << 19)["fp32"] // 1.5 MiB, about as large compressed
	z := gzipped(append(noise, make([]byte, limit)...))
	h, n := budgetHandler(limit)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := h.readBody(httptest.NewRecorder(), request(z, "gzip", false), true, -1)
	runtime.ReadMemStats(&after)
	if triton.CodeOf(err) != triton.InvalidArgument || !strings.Contains(err.Error(), "Decompressed data size exceeds") {
		t.Fatalf("error %v", err)
	}
	// Grown to the first doubling past 16 × 1.5 MiB (32 MiB), having
	// allocated as much again on the way; growing to the limit would
	// allocate twice the limit.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
		t.Errorf("allocated %d bytes, want under 96 MiB (the limit's buffers would be 128 MiB)", alloc)
	}
	if !free(h, n) {
		t.Errorf("budget still held")
	}
}

// FuzzDecompress reads arbitrary bytes as a gzip or deflate request body
// with a 2 MiB limit (past a pooled buffer, so that every path runs: one
// pass, growing past the pool, counting and a second pass): a body is
// either refused with InvalidArgument or read as compress/gzip or
// compress/zlib reads it, and the budget is free once it is released.
func FuzzDecompress(f *testing.F) {
	noise := encodeInputs(1 << 20)["fp32"]
	for _, seed := range [][]byte{
		gzipped([]byte("{}")),
		gzipped(make([]byte, 3<<19)), // counted, then read again
		gzipped(append(noise[:600<<10:600<<10], make([]byte, 1<<20)...)), // grows, then passes the ratio
		gzipped(noise),
		zlibbed(make([]byte, 3<<20)), // over the limit
		gzipped(make([]byte, 3<<19))[:100],
		append(gzipped([]byte("a")), gzipped([]byte("b"))...), // two members
	} {
		f.Add(seed, false)
	}
	f.Add(zlibbed(make([]byte, 3<<19)), true)
	const limit = 2 << 20
	f.Fuzz(func(t *testing.T, z []byte, chunked bool) {
		h, n := budgetHandler(limit)
		enc := "gzip"
		if len(z) >= 2 && !(z[0] == 0x1f && z[1] == 0x8b) {
			enc = "deflate"
		}
		b, err := h.readBody(httptest.NewRecorder(), request(z, enc, chunked), true, 3)
		var want []byte
		var wantErr error
		if enc == "gzip" {
			var zr *stdgzip.Reader
			if zr, wantErr = stdgzip.NewReader(bytes.NewReader(z)); wantErr == nil {
				want, wantErr = io.ReadAll(io.LimitReader(zr, limit+1))
			}
		} else {
			var zr io.ReadCloser
			if zr, wantErr = stdzlib.NewReader(bytes.NewReader(z)); wantErr == nil {
				want, wantErr = io.ReadAll(io.LimitReader(zr, limit+1))
			}
		}
		switch {
		case err != nil:
			if triton.CodeOf(err) != triton.InvalidArgument {
				t.Fatalf("error %v, want InvalidArgument", err)
			}
			if wantErr == nil && len(want) <= limit {
				t.Fatalf("refused (%v) a body the standard library reads (%d bytes)", err, len(want))
			}
		case wantErr != nil || len(want) > limit:
			t.Fatalf("read %d bytes of a body the standard library refuses (%v, %d bytes)", len(b.data), wantErr, len(want))
		case !bytes.Equal(b.data, want):
			t.Fatalf("read %d bytes, the standard library %d", len(b.data), len(want))
		}
		b.release()
		if !free(h, n) {
			t.Fatalf("budget still held")
		}
	})
}
