package grpcapi

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
)

// Message compression. gRPC names three encodings (its compression
// spec): identity, gzip and deflate, where "deflate" is the zlib format
// (RFC 1950: a deflate stream in a two-byte header and an Adler-32
// trailer), as grpc-core writes it. Triton, on grpc-core, accepts both;
// grpc-go ships gzip only, and answers a call in another encoding
// UNIMPLEMENTED before any handler runs. This package registers both with
// grpc-go on import (grpc-go's registry is process-wide): "deflate", which
// nothing else in grpc-go claims, and "gzip" in place of grpc-go's own
// (grpc-go's gzip.SetLevel, which asserts its own type, then panics).
// Both are github.com/klauspost/compress at zlib's default level, the
// level grpc-core writes, with writers and readers pooled.
//
// Decompression is bounded twice. grpc-go reads at most MaxRecvMsgSize+1
// bytes from a compressor's reader and then fails the call with
// RESOURCE_EXHAUSTED "grpc: received message after decompression larger
// than max", so a small message that would inflate to gigabytes (a
// decompression bomb) costs at most the limit, never its whole inflated
// size. And at most maxLargeInflations messages of the process inflate
// past inflateSmall bytes at once; the others wait at that point for one
// of them to finish, so that many bombs at once cost two limits, not one
// limit each (2 GiB each with ServerOptions). Waiting cannot deadlock: a
// message inflates from bytes already received, so every reader holding a
// slot finishes, and grpc-go closes it when done. Inflation is CPU-bound,
// so the wait costs large messages little throughput. A message that is
// not valid gzip or zlib fails INTERNAL, grpc-go's code for a failed
// decompression (grpc-core answers the same).

// deflateName is gRPC's name of the zlib encoding.
const deflateName = "deflate"

func init() {
	encoding.RegisterCompressor(&compressor{
		name: deflateName,
		gate: inflations,
		newWriter: func(w io.Writer) (resetWriter, error) {
			return zlib.NewWriterLevel(w, zlib.DefaultCompression)
		},
		newReader: func(r io.Reader) (io.ReadCloser, error) { return zlib.NewReader(r) },
		reset:     func(z io.ReadCloser, r io.Reader) error { return z.(zlib.Resetter).Reset(r, nil) },
	})
	// Registered after grpc-go's gzip (a package this one imports, so
	// initialized first), which it replaces.
	encoding.RegisterCompressor(&compressor{
		name: gzip.Name,
		gate: inflations,
		newWriter: func(w io.Writer) (resetWriter, error) {
			return kgzip.NewWriterLevel(w, kgzip.DefaultCompression)
		},
		newReader: func(r io.Reader) (io.ReadCloser, error) { return kgzip.NewReader(r) },
		reset:     func(z io.ReadCloser, r io.Reader) error { return z.(*kgzip.Reader).Reset(r) },
	})
}

// Bounds of concurrent inflation (see above).
const (
	inflateSmall       = 64 << 20
	maxLargeInflations = 2
)

// inflations is the process's gate of large inflations, which both
// compressors share.
var inflations = newGate(inflateSmall, maxLargeInflations)

// gate bounds the readers inflating past small bytes at once.
type gate struct {
	small   int
	slots   chan struct{} // one per reader past small
	waiting atomic.Int32  // readers waiting for a slot
}

func newGate(small, n int) *gate { return &gate{small: small, slots: make(chan struct{}, n)} }

// resetWriter is a compressing writer that can be reused.
type resetWriter interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// compressor is a pooled encoding.Compressor of one format.
type compressor struct {
	name      string
	newWriter func(io.Writer) (resetWriter, error)
	newReader func(io.Reader) (io.ReadCloser, error) // reads the format's header
	reset     func(z io.ReadCloser, r io.Reader) error
	gate      *gate

	writers sync.Pool // of *pooledWriter
	readers sync.Pool // of *pooledReader
}

var _ encoding.Compressor = (*compressor)(nil)

// Name is gRPC's name of the encoding.
func (c *compressor) Name() string { return c.name }

// Compress returns a writer that compresses into w; closing it finishes
// the stream and returns the writer to the pool.
func (c *compressor) Compress(w io.Writer) (io.WriteCloser, error) {
	if z, ok := c.writers.Get().(*pooledWriter); ok {
		z.w.Reset(w)
		return z, nil
	}
	zw, err := c.newWriter(w)
	if err != nil {
		return nil, err
	}
	return &pooledWriter{w: zw, pool: &c.writers}, nil
}

// Decompress returns a reader of the inflated bytes of r; grpc-go reads
// it within its message size limit and closes it, which returns it to the
// pool.
func (c *compressor) Decompress(r io.Reader) (io.Reader, error) {
	if z, ok := c.readers.Get().(*pooledReader); ok {
		if err := c.reset(z.r, r); err != nil {
			c.readers.Put(z)
			return nil, err
		}
		z.closed = false
		return z, nil
	}
	zr, err := c.newReader(r)
	if err != nil {
		return nil, err
	}
	return &pooledReader{r: zr, c: c}, nil
}

// pooledWriter is a pooled compressing writer.
type pooledWriter struct {
	w    resetWriter
	pool *sync.Pool
}

func (z *pooledWriter) Write(p []byte) (int, error) { return z.w.Write(p) }

// Close finishes the stream and returns the writer to its pool; it must
// not be used afterwards.
func (z *pooledWriter) Close() error {
	err := z.w.Close()
	z.w.Reset(io.Discard) // the pool keeps no reference to the output
	z.pool.Put(z)
	return err
}

// pooledReader is a pooled inflating reader, which takes a slot of its
// compressor's gate before it inflates past the gate's small bytes.
type pooledReader struct {
	r      io.ReadCloser
	c      *compressor
	n      int  // bytes inflated
	large  bool // holds a slot
	closed bool
}

func (z *pooledReader) Read(p []byte) (int, error) {
	if g := z.c.gate; !z.large && z.n+len(p) > g.small {
		g.waiting.Add(1)
		g.slots <- struct{}{}
		g.waiting.Add(-1)
		z.large = true
	}
	n, err := z.r.Read(p)
	z.n += n
	return n, err
}

// Close gives the slot back and returns the reader to its pool, once; it
// must not be used afterwards.
func (z *pooledReader) Close() error {
	if z.closed {
		return nil
	}
	z.closed = true
	if z.large {
		<-z.c.gate.slots
	}
	z.n, z.large = 0, false
	err := z.r.Close()
	z.drop()
	z.c.readers.Put(z)
	return err
}

// drop resets the reader over an empty stream of its format, so that the
// pool keeps no reference to a message.
func (z *pooledReader) drop() {
	empty := emptyZlib
	if z.c.name == gzip.Name {
		empty = emptyGzip
	}
	_ = z.c.reset(z.r, strings.NewReader(empty))
}

// Empty streams: a zlib and a gzip stream of no bytes.
const (
	emptyZlib = "\x78\x9c\x03\x00\x00\x00\x00\x01"
	emptyGzip = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00"
)

// compressionLevel is a --grpc-infer-response-compression-level.
type compressionLevel int

const (
	levelUnset compressionLevel = iota // grpc-go's default: answer in the request's encoding
	levelNone
	levelLow
	levelMedium
	levelHigh
)

// parseCompressionLevel reads a level as tritonserver's parser does (in
// any case).
func parseCompressionLevel(s string) (compressionLevel, error) {
	switch strings.ToLower(s) {
	case "none":
		return levelNone, nil
	case "low":
		return levelLow, nil
	case "medium":
		return levelMedium, nil
	case "high":
		return levelHigh, nil
	}
	return levelUnset, fmt.Errorf("invalid argument for --grpc_infer_response_compression_level: %q (want none, low, medium or high)", s)
}

// algorithm is the encoding grpc-core chooses for a compression level
// among those the client accepts (CompressionAlgorithmForLevel): the
// accepted ones of gzip and deflate, ranked in that order ("increasing
// compression", grpc-core's ranking), low taking the first, medium the
// middle one and high the last; identity when the level is none or the
// client accepts neither. The level chooses an encoding only: both are
// written at zlib's default level, as grpc-core writes them.
func (l compressionLevel) algorithm(accepted []string) string {
	var algos []string
	for _, a := range [...]string{gzip.Name, deflateName} {
		if slices.Contains(accepted, a) {
			algos = append(algos, a)
		}
	}
	if l <= levelNone || len(algos) == 0 {
		return encoding.Identity
	}
	switch l {
	case levelLow:
		return algos[0]
	case levelMedium:
		return algos[len(algos)/2]
	}
	return algos[len(algos)-1]
}

// compressResponses sets the encoding of the responses of the inference
// call of ctx (ModelInfer or ModelStreamInfer) to the level's, as
// Triton sets its compression level on every inference call. Without a
// level, grpc-go's default stays: responses in the request's encoding.
func (s *Service) compressResponses(ctx context.Context) {
	if s.level == levelUnset {
		return
	}
	accepted, err := grpc.ClientSupportedCompressors(ctx)
	if err != nil {
		return // not a call of a grpc.Server (a direct method call)
	}
	// It cannot fail: the algorithm is identity or one the client accepts,
	// and both are registered.
	_ = grpc.SetSendCompressor(ctx, s.level.algorithm(accepted))
}
