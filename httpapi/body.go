package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/triton-go/triton"
)

// Request bodies in memory, and what bounds them.
//
// A body is read whole before it is decoded (binary tensors alias it, so
// it stays until the response is written). Every body is bounded by the
// size limit ([WithMaxRequestSize], 64 MiB by default) as received and,
// when compressed, as decompressed. Bodies of up to poolMax (1 MiB) live
// in pooled buffers; they cost what the requests in flight cost, and the
// pools never keep a larger buffer. A body that needs more takes its
// share of the body memory budget ([WithMaxBodyMemory], 256 MiB by
// default, a weighted semaphore in bytes) before the memory is allocated,
// and gives it back when the request is done:
//
//   - a body with a Content-Length takes that length, and is read into a
//     buffer of exactly that size;
//   - a chunked body takes the size limit once it outgrows a pooled
//     buffer, and keeps what its buffer holds once it has arrived;
//   - a compressed body whose compressed or decompressed form outgrows a
//     pooled buffer takes twice the size limit (its compressed bytes, kept
//     as they arrive, and its output), and keeps what its output holds
//     once decompressed.
//
// Each request waits at most once, before it holds any of the budget,
// which makes a deadlock impossible; waiters are served in order, and a
// waiter whose context ends gives up.
//
// A compressed body grows into memory only while it is at most maxRatio
// (16) times the compressed bytes received so far. Past that ratio the
// rest is only counted, and a body found within the limit is decompressed
// a second time, from its compressed bytes, into a buffer of its size. So
// a decompression bomb costs its compressed bytes, a pooled buffer and
// the time to decompress the limit's worth, not buffers of the limit; a
// body that starts as noise and turns into a bomb costs at most about
// maxRatio times what the client sent. Once the compressed bytes times
// maxRatio pass the limit, no output can pass the ratio any more, and the
// compressed bytes are dropped: an ordinary large body (JSON compresses 3
// to 10 times, tensors of noise hardly at all) is decompressed once and
// keeps at most limit/maxRatio (4 MiB) of compressed bytes on the way.
// With a Content-Length, the output buffer is sized from the ratio so far
// rather than doubled, which usually means one allocation.
//
// A client announcing a huge Content-Length and sending nothing holds
// budget, never more memory than the budget; the bytes of large bodies in
// memory never exceed the budget, plus a pooled buffer per request and
// the buffer a growing body is copied out of. What the Go runtime has not
// collected yet comes on top (up to as much again with GOGC=100; set
// GOMEMLIMIT to hold the process to a figure).
//
// Rejected: growing a buffer to the limit as a compressed body
// decompresses, as this package did until issue #17. Each request
// refused at the limit allocated 64 MiB, and as much again in the buffers
// it outgrew: sixteen bombs at once raised the server's resident memory
// by 1.6 GB, which Go returns to the system only over minutes (figures in
// docs/reliability.md). Counting every body first, before any buffer,
// was tried too: it costs every large compressed body a second
// decompression (twice the time for JSON bodies of 4 and 32 MiB).

// DefaultMaxBodyMemory is the default of [WithMaxBodyMemory]: 256 MiB.
const DefaultMaxBodyMemory = 256 << 20

// tooLarge is the error for a request past the size limit, worded as
// Triton's (clients match "exceeds the maximum allowed value").
func tooLarge(what string, size, limit int64) error {
	sz := "more than " + strconv.FormatInt(limit, 10)
	if size > limit {
		sz = strconv.FormatInt(size, 10)
	}
	return errorf(triton.InvalidArgument,
		"%s size of %s bytes exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).",
		what, sz, limit)
}

// bodyPool recycles request-body buffers up to poolMax bytes: a request's
// binary inputs alias its body, which is released only once the response
// is written (Infer never retains inputs). compPool recycles the buffers
// that keep compressed bodies for a second pass, apart, so that the two
// kinds, of different sizes, do not take each other's buffers.
var (
	bodyPool = sync.Pool{New: func() any { return new([]byte) }}
	compPool = sync.Pool{New: func() any { return new([]byte) }}
)

const poolMax = 1 << 20

// getPooled returns a buffer of length 0 from pool.
func getPooled(pool *sync.Pool) *[]byte {
	p := pool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

// putPooled returns p to pool unless it grew past poolMax.
func putPooled(pool *sync.Pool, p *[]byte) {
	if p != nil && cap(*p) <= poolMax {
		*p = (*p)[:0]
		pool.Put(p)
	}
}

// body is a request body read into memory.
type body struct {
	data []byte
	buf  *[]byte // storage from pool, or nil
	pool *sync.Pool
	// held is the body memory budget this body holds, from mem.
	held int64
	mem  *semaphore.Weighted
}

func (b *body) release() {
	putPooled(b.pool, b.buf)
	if b.held > 0 {
		b.mem.Release(b.held)
	}
	*b = body{}
}

// reserve takes n bytes of the body memory budget for b, waiting for them
// as long as ctx allows. b holds none yet.
func (h *handler) reserve(ctx context.Context, b *body, n int64) error {
	if h.mem == nil || n <= 0 {
		return nil
	}
	if err := h.mem.Acquire(ctx, n); err != nil {
		code := triton.Cancelled
		if errors.Is(err, context.DeadlineExceeded) {
			code = triton.DeadlineExceeded
		}
		return errorf(code, "waiting for %d bytes of request body memory: %v", n, err)
	}
	b.mem, b.held = h.mem, n
	return nil
}

// keep shrinks b's share of the budget to n bytes.
func (b *body) keep(n int64) {
	if b.held > n {
		b.mem.Release(b.held - n)
		b.held = n
	}
}

// readBody reads the request body, at most h.maxSize bytes of it. With
// decompress, a Content-Encoding of gzip or deflate is undone as the body
// arrives (the decompressed size bounded by h.maxSize too: a zip bomb
// stops at the limit), identity or none is taken as it is, anything else
// is 415 Unsupported Media Type; Triton decompresses inference requests
// only.
//
// alignAt is an offset into the (decompressed) body that should start at an
// 8-byte aligned address, or -1: the binary tensors of an inference
// request start there, and backends view them as typed slices.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, decompress bool, alignAt int) (body, error) {
	enc := ""
	if decompress {
		enc = r.Header.Get("Content-Encoding")
		switch enc {
		case "", "identity", "gzip", "deflate":
		default:
			w.Header().Set("Accept-Encoding", "gzip, deflate")
			return body{}, withStatus(http.StatusUnsupportedMediaType, errorf(triton.InvalidArgument, "Unsupported compression type"))
		}
	}
	if r.ContentLength > h.maxSize {
		return body{}, tooLarge("Request body", r.ContentLength, h.maxSize)
	}
	pad := 0
	if alignAt >= 0 {
		pad = (8 - alignAt%8) % 8
	}
	if enc == "gzip" || enc == "deflate" {
		return h.decompress(w, r, enc, pad)
	}
	return h.readAll(w, r, pad)
}

// readAll reads the body as it arrives, bounded by h.maxSize, pad bytes
// into its buffer (buffers are 8-byte aligned).
func (h *handler) readAll(w http.ResponseWriter, r *http.Request, pad int) (body, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return body{data: []byte{}}, nil
	}
	rd := http.MaxBytesReader(w, r.Body, h.maxSize)
	if n := r.ContentLength; n >= 0 {
		b := body{}
		total := n + int64(pad)
		if total <= poolMax {
			b.buf, b.pool = getPooled(&bodyPool), &bodyPool
			if int64(cap(*b.buf)) < total {
				*b.buf = make([]byte, total, max(total, 4096))
			}
			b.data = (*b.buf)[pad:total]
		} else {
			if err := h.reserve(r.Context(), &b, total); err != nil {
				return body{}, err
			}
			b.data = make([]byte, total)[pad:]
		}
		if _, err := io.ReadFull(rd, b.data); err != nil {
			b.release()
			return body{}, readError(err, h.maxSize, "")
		}
		return b, nil
	}
	g := h.newGrowing(r.Context(), &bodyPool, pad, h.maxSize)
	if err := g.readFrom(rd); err != nil {
		g.b.release()
		return body{}, readError(err, h.maxSize, "")
	}
	return g.done(), nil
}

// growing is a body read from a stream of unknown length into a pooled
// buffer, then, past poolMax, into buffers of the body memory budget.
type growing struct {
	ctx   context.Context
	h     *handler
	b     body
	data  []byte // pad zero bytes, then what has arrived
	pad   int
	limit int // most bytes data may hold: pad + the limit + 1 (telling "at the limit" from "beyond it")
	// reserve is the budget to take when data outgrows the pool.
	reserve   int64
	discarded bool // by discard
	// hint is how large data is announced to grow (a Content-Length), or 0.
	hint int
}

// discard frees g's bytes and keeps no more of them; g keeps its budget.
func (g *growing) discard() {
	putPooled(g.b.pool, g.b.buf)
	g.b.buf, g.data, g.discarded = nil, nil, true
}

func (h *handler) newGrowing(ctx context.Context, pool *sync.Pool, pad int, limit int64) *growing {
	g := &growing{ctx: ctx, h: h, pad: pad, limit: pad + int(limit) + 1, reserve: int64(pad) + limit + 1}
	g.b.buf, g.b.pool = getPooled(pool), pool
	g.data = append((*g.b.buf)[:0], make([]byte, pad)...)
	return g
}

// room makes room for more bytes in g.data, doubling its capacity, never
// past g.limit. It returns false when g.data is full at the limit.
func (g *growing) room() (bool, error) {
	if len(g.data) < cap(g.data) {
		return true, nil
	}
	if len(g.data) >= g.limit {
		return false, nil
	}
	n := min(max(2*cap(g.data), 4096), g.limit)
	if n > poolMax {
		n = min(max(n, g.hint), g.limit) // straight to the size announced
	}
	if n > poolMax && g.b.held == 0 {
		if err := g.h.reserve(g.ctx, &g.b, g.reserve); err != nil {
			return false, err
		}
	}
	data := make([]byte, len(g.data), n)
	copy(data, g.data)
	if g.b.buf != nil && n <= poolMax {
		*g.b.buf = data
	} else if g.b.buf != nil {
		putPooled(g.b.pool, g.b.buf) // its old storage back to the pool
		g.b.buf = nil
	}
	g.data = data
	return true, nil
}

// Write appends p (a compressed body's bytes as they arrive), failing past
// the limit; after discard, it drops p.
func (g *growing) Write(p []byte) (int, error) {
	if g.discarded {
		return len(p), nil
	}
	for n := 0; n < len(p); {
		ok, err := g.room()
		if err != nil {
			return n, err
		}
		if !ok {
			return n, errTooLarge
		}
		c := copy(g.data[len(g.data):cap(g.data)], p[n:])
		g.data = g.data[:len(g.data)+c]
		n += c
	}
	return len(p), nil
}

var errTooLarge = errors.New("body too large")

// readFrom reads rd to its end into g.
func (g *growing) readFrom(rd io.Reader) error {
	for {
		ok, err := g.room()
		if err != nil {
			return err
		}
		if !ok {
			return errTooLarge
		}
		n, err := rd.Read(g.data[len(g.data):cap(g.data)])
		g.data = g.data[:len(g.data)+n]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// done returns the body g read, which keeps budget for its buffer only.
func (g *growing) done() body {
	b := g.b
	if b.buf != nil {
		*b.buf = g.data
	}
	b.data = g.data[g.pad:]
	b.keep(int64(cap(g.data)))
	g.b = body{}
	return b
}

// readError is the answer to a body that failed to arrive, or with enc
// set, to decompress: the size limit when the body as received is too
// large.
func readError(err error, limit int64, enc string) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return tooLarge("Request body", 0, limit)
	}
	if errors.Is(err, errTooLarge) {
		return tooLarge("Request body", 0, limit)
	}
	if _, ok := errors.AsType[*triton.Error](err); ok {
		return err
	}
	if enc != "" {
		return errorf(triton.InvalidArgument, "failed to decompress the request body (%s): %v", enc, err)
	}
	return errorf(triton.InvalidArgument, "failed to read the request body: %v", err)
}
