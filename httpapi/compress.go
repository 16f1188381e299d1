package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"

	"github.com/triton-go/triton"
)

// Compression, both ways, as Triton does it and where we differ.
//
// Triton compresses an inference response when the client's
// Accept-Encoding prefers gzip or deflate (responseEncoding), with zlib at
// Z_DEFAULT_COMPRESSION (level 6), a 32 KiB window and memLevel 8: gzip
// is RFC 1952, deflate the zlib format of RFC 1950, as HTTP means it. It
// decompresses a request whose Content-Encoding is gzip or deflate with
// inflateInit2(15|32), which reads either format whatever the header
// says, and stops at --http-max-input-size decompressed bytes. We write
// and read the same formats with the same level and window, and read
// either format under either name too (decompress tells them apart by the
// gzip magic number, as zlib does).
//
// Where we differ, and why:
//
//   - Responses smaller than [DefaultCompressionMinSize] go out as they
//     are (see [WithCompressionMinSize]). Triton compresses everything;
//     below about one TCP segment that cannot save a packet, and it costs
//     both sides CPU: with a new compressor per response it took our
//     add/sub answers (340–360 bytes) to 0.14–0.22× the throughput of
//     the uncompressed path (issue #22).
//   - The codec is github.com/klauspost/compress (already in the server
//     binary through Prometheus' promhttp), not compress/flate. At level
//     6 (BenchmarkEncode; figures in docs/performance.md) it is 2–4×
//     compress/flate's speed on JSON text for 5 % more bytes, and 30–150×
//     on FP32 noise, which it stores (ratio 1.00) where compress/flate
//     spends 35–70 ms per MiB to reach 0.925; a 2 KiB body costs it 2–6 µs
//     (FP32) or 23–60 µs (JSON), against 50–200 µs for a reused
//     compress/flate writer, whose Reset clears 640 KiB of hash tables,
//     and 400–1,400 µs for a new one. Its
//     level 6 is its own algorithm, not zlib's: the bytes differ
//     (compress/flate's differ from zlib's too), the formats are the same.
//   - Compressors and decompressors are pooled (sync.Pool, per format and
//     level) and Reset onto the response or request body; one costs about
//     a megabyte to build. The response is compressed into the
//     http.ResponseWriter through a 256 KiB buffer, not a buffer of the
//     whole compressed body: net/http sets Content-Length when the
//     compressed body fits its own 2 KiB buffer and sends larger ones
//     chunked. Triton compresses into a buffer first; rejected here
//     because it holds a second copy of a large response and delays the
//     first byte by the whole compression. The 256 KiB buffer turns the
//     compressor's small writes into fewer chunks and syscalls: on 1 MiB
//     answers over loopback (BenchmarkHTTPGzipLarge, medians of three
//     alternating runs) 16–19 % more answers a second than with a 32 KiB
//     buffer for FP32 noise, 18 % at level 1 for ReLU-like data, level 6
//     within noise; 32 KiB gained 10 % over none (net/http's 2 KiB
//     chunks).
//   - A request body is decompressed as it arrives, into a pooled body
//     buffer, and the limit is checked on the decompressed size as it
//     grows. Past a pooled buffer the rest is only counted, and a body
//     within the limit is decompressed a second time from its compressed
//     bytes into a buffer of its size: a bomb costs its compressed bytes
//     and the time to decompress the limit's worth, never a buffer of the
//     limit (see the comment opening body.go).

// DefaultCompressionMinSize is the default of [WithCompressionMinSize]:
// 1400 bytes, as NYTimes' gziphandler chose. A response of that size and
// its headers fill about one Ethernet TCP segment (1460 bytes): below it,
// compression cannot save a packet on the wire, only spend CPU on both
// ends.
const DefaultCompressionMinSize = 1400

// tritonLevel is the level Triton compresses at: zlib's
// Z_DEFAULT_COMPRESSION, which zlib defines as level 6.
const tritonLevel = 6

// The compression levels [WithCompressionLevel] accepts: compress/flate's
// HuffmanOnly (-2) to BestCompression (9).
const (
	minLevel = -2
	maxLevel = 9
)

// coding is a content coding of a response.
type coding uint8

const (
	identity coding = iota
	codingGzip
	codingDeflate
)

// contentEncoding holds the Content-Encoding header values (shared:
// net/http only reads them).
var contentEncoding = [...][]string{codingGzip: {"gzip"}, codingDeflate: {"deflate"}}

var varyAcceptEncoding = []string{"Accept-Encoding"}

// responseEncoding picks the response compression from Accept-Encoding as
// Triton does: the gzip, deflate or identity coding with the highest
// q-value, the first on ties, identity when none is acceptable.
func responseEncoding(r *http.Request) coding {
	best, weight := identity, 0.0
	for _, ae := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(ae, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			q := 1.0
			if params != "" {
				k, v, ok := strings.Cut(strings.TrimSpace(params), "=")
				if !ok || strings.TrimSpace(k) != "q" {
					continue
				}
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					continue
				}
				q = f
			}
			c, known := identity, true
			switch name {
			case "gzip":
				c = codingGzip
			case "deflate":
				c = codingDeflate
			case "identity":
			default:
				known = false
			}
			if known && q > weight {
				best, weight = c, q
			}
		}
	}
	return best
}

// resetWriteCloser is what the gzip and zlib writers have in common.
type resetWriteCloser interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// encoder is a pooled gzip or zlib writer and the buffer it writes into,
// which writes to the response. The buffer makes the compressor's writes
// (a few hundred bytes each, 64 KiB for stored blocks) into 256 KiB ones:
// fewer ResponseWriter calls, chunks and syscalls.
type encoder struct {
	zw resetWriteCloser
	bw *bufio.Writer // onto the response being written; onto nil in the pool
}

// encoderBuffer is the size of an encoder's output buffer.
const encoderBuffer = 256 << 10

// encoders recycles encoders by coding and level:
// encoders[c-codingGzip][level-minLevel].
var encoders [2][maxLevel - minLevel + 1]sync.Pool

// newEncoder returns an encoder compressing with c at level (valid, and
// not -1) into dst.
func newEncoder(c coding, level int, dst io.Writer) *encoder {
	p := &encoders[c-codingGzip][level-minLevel]
	e, ok := p.Get().(*encoder)
	if !ok {
		e = &encoder{bw: bufio.NewWriterSize(dst, encoderBuffer)}
		if c == codingGzip {
			e.zw, _ = gzip.NewWriterLevel(e.bw, level)
		} else {
			e.zw, _ = zlib.NewWriterLevel(e.bw, level)
		}
		return e
	}
	e.bw.Reset(dst)
	e.zw.Reset(e.bw)
	return e
}

// release returns e to its pool, its last write done or failed.
func (e *encoder) release(c coding, level int) {
	e.bw.Reset(nil)
	encoders[c-codingGzip][level-minLevel].Put(e)
}

// writeCompressed answers 200 with head and then rest, compressed with c
// at level, into w, whose other headers are set. It returns the first
// write error (the client is gone).
func writeCompressed(w http.ResponseWriter, c coding, level int, head []byte, rest [][]byte) error {
	w.Header()["Content-Encoding"] = contentEncoding[c]
	w.WriteHeader(http.StatusOK)
	e := newEncoder(c, level, w)
	defer e.release(c, level)
	if _, err := e.zw.Write(head); err != nil {
		return err
	}
	for _, p := range rest {
		if _, err := e.zw.Write(p); err != nil {
			return err
		}
	}
	if err := e.zw.Close(); err != nil {
		return err
	}
	return e.bw.Flush()
}

// decoder is a pooled reader of compressed request bodies: a buffered
// reader over the body (the decompressors read byte by byte, and it lets
// the format be told from the first bytes), and a gzip and a zlib reader
// made on first use, always reading from br.
type decoder struct {
	br *bufio.Reader
	gz *gzip.Reader
	zl io.ReadCloser // a zlib.Resetter
}

var decoders = sync.Pool{New: func() any { return &decoder{br: bufio.NewReader(nil)} }}

// reader returns a reader of the decompressed body d.br holds: gzip when
// it starts with gzip's magic number, zlib otherwise.
func (d *decoder) reader() (io.Reader, error) {
	if magic, _ := d.br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		if d.gz == nil {
			d.gz = new(gzip.Reader)
		}
		return d.gz, d.gz.Reset(d.br)
	}
	if d.zl == nil {
		zl, err := zlib.NewReader(d.br)
		if err != nil {
			return nil, err
		}
		d.zl = zl
		return zl, nil
	}
	return d.zl, d.zl.(zlib.Resetter).Reset(d.br, nil)
}

// decompress reads r's body, compressed with enc (gzip or deflate, by its
// Content-Encoding), into a buffer after pad zero bytes, at most h.maxSize
// bytes of it as received and as decompressed. A body that decompresses
// into a pooled buffer is decompressed once; a larger one is counted first
// and decompressed again, into a buffer of its size, from its compressed
// bytes (see the comment opening body.go).
func (h *handler) decompress(w http.ResponseWriter, r *http.Request, enc string, pad int) (body, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return body{}, errorf(triton.InvalidArgument, "nothing to be decompressed")
	}
	// comp keeps the compressed bytes as they arrive, for a second pass.
	// Its share of the budget, taken once it or the output outgrows a
	// pooled buffer, covers the compressed bytes and the output.
	comp := h.newGrowing(r.Context(), &compPool, 0, h.maxSize)
	comp.reserve = 2*(h.maxSize+1) + int64(pad)
	if r.ContentLength > 0 { // at most h.maxSize, checked by readBody
		comp.hint = int(r.ContentLength)
	}
	defer comp.b.release()
	d := decoders.Get().(*decoder)
	d.br.Reset(io.TeeReader(http.MaxBytesReader(w, r.Body, h.maxSize), comp))
	defer func() {
		d.br.Reset(nil)
		decoders.Put(d)
	}()
	if _, err := d.br.Peek(1); err != nil {
		if err == io.EOF {
			return body{}, errorf(triton.InvalidArgument, "nothing to be decompressed")
		}
		return body{}, readError(err, h.maxSize, enc)
	}
	zr, err := d.reader()
	if err != nil {
		return body{}, readError(err, h.maxSize, enc)
	}

	// First pass, into a pooled buffer.
	out := getPooled(&bodyPool)
	data := append((*out)[:0], make([]byte, pad)...)
	full := min(poolMax, pad+int(min(h.maxSize, int64(math.MaxInt-pad-1)))+1)
	for len(data) < full {
		if len(data) == cap(data) {
			// Exactly doubled (append would round the capacity up, past
			// what the pool keeps).
			grown := make([]byte, len(data), len(data)+min(max(len(data), 4096), full-len(data)))
			copy(grown, data)
			data = grown
			*out = data // the grown buffer is the one to pool
		}
		var n int
		n, err = zr.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		switch {
		case int64(len(data)-pad) > h.maxSize:
			putPooled(&bodyPool, out)
			return body{}, h.tooLargeDecompressed()
		case err == io.EOF:
			*out = data
			return body{data: data[pad:], buf: out, pool: &bodyPool}, nil
		case err != nil:
			putPooled(&bodyPool, out)
			return body{}, readError(err, h.maxSize, enc)
		}
	}

	// Larger than a pooled buffer. While the body decompresses at most
	// maxRatio times its compressed bytes so far, keep decompressing into
	// a growing buffer (once the compressed bytes times maxRatio pass the
	// limit, that holds to the end, and they are dropped); past that
	// ratio, count the rest (overwriting the pooled buffer) and
	// decompress again into a buffer of the size.
	defer putPooled(&bodyPool, out)
	if comp.b.held == 0 {
		if err := h.reserve(r.Context(), &comp.b, comp.reserve); err != nil {
			return body{}, err
		}
	}
	size := int64(len(data) - pad)
	limit := pad + int(min(h.maxSize, int64(math.MaxInt-pad-1))) + 1
	// next is the capacity to grow to from n: double, or what the ratio
	// so far predicts from the Content-Length (with a little room) when
	// that is more, so that a body that compresses evenly grows once.
	next := func(n int) int {
		c := 2 * n
		if comp.hint > 0 && len(comp.data) > 0 {
			est := float64(size)*float64(comp.hint)/float64(len(comp.data))*1.0625 + 4096
			c = max(c, pad+int(min(est, float64(limit))))
		}
		return min(c, limit)
	}
	var grown []byte // the growing buffer, until the ratio is passed
	if size <= maxRatio*int64(len(comp.data)) {
		grown = make([]byte, len(data), next(len(data)))
		copy(grown, data)
	}
	for grown != nil && err != io.EOF {
		if len(grown) == cap(grown) {
			g := make([]byte, len(grown), next(len(grown)))
			copy(g, grown)
			grown = g
		}
		var n int
		n, err = zr.Read(grown[len(grown):cap(grown)])
		grown = grown[:len(grown)+n]
		size = int64(len(grown) - pad)
		switch {
		case size > h.maxSize:
			return body{}, h.tooLargeDecompressed()
		case err != nil && err != io.EOF:
			return body{}, readError(err, h.maxSize, enc)
		case comp.discarded:
		case size > maxRatio*int64(len(comp.data)):
			grown = nil // a bomb, perhaps: count the rest
		case maxRatio*int64(len(comp.data)) > h.maxSize:
			// Within the ratio whatever the rest gives, up to the limit:
			// the compressed bytes will not be needed again.
			comp.discard()
		}
	}
	if grown != nil {
		b := body{data: grown[pad:], mem: comp.b.mem, held: comp.b.held}
		comp.b.held = 0
		b.keep(int64(cap(grown)))
		return b, nil
	}
	for err != io.EOF {
		var n int
		n, err = zr.Read(data[pad:cap(data)])
		size += int64(n)
		if size > h.maxSize {
			return body{}, h.tooLargeDecompressed()
		}
		if err != nil && err != io.EOF {
			return body{}, readError(err, h.maxSize, enc)
		}
	}
	b := body{data: make([]byte, size+int64(pad))[pad:]}
	d.br.Reset(bytes.NewReader(comp.data))
	if zr, err = d.reader(); err == nil {
		_, err = io.ReadFull(zr, b.data)
	}
	if err != nil {
		return body{}, readError(err, h.maxSize, enc)
	}
	b.mem, b.held = comp.b.mem, comp.b.held
	comp.b.held = 0
	b.keep(size + int64(pad))
	return b, nil
}

// maxRatio is how many times its compressed size a request body may grow
// into memory while it decompresses, before it is known to be within the
// size limit: past it, the rest is counted first (see the comment opening
// body.go). JSON text compresses 3 to 10 times, tensors of noise hardly
// at all; a decompression bomb a thousand times.
const maxRatio = 16

func (h *handler) tooLargeDecompressed() error {
	return errorf(triton.InvalidArgument,
		"Decompressed data size exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).", h.maxSize)
}

// levelError checks a WithCompressionLevel level.
func levelError(level int) error {
	if level < minLevel || level > maxLevel {
		return fmt.Errorf("WithCompressionLevel(%d): the level must be from %d (flate.HuffmanOnly) to %d (flate.BestCompression)", level, minLevel, maxLevel)
	}
	return nil
}
