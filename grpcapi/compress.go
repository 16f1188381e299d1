package grpcapi

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

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
// UNIMPLEMENTED before any handler runs, so this package registers a
// "deflate" compressor with grpc-go on import (grpc-go's registry is
// process-wide; the name is gRPC's, and nothing else in grpc-go claims
// it).
//
// Decompression is bounded by grpc-go itself: it reads at most
// MaxRecvMsgSize+1 bytes from a compressor's reader and then fails the
// call with RESOURCE_EXHAUSTED "grpc: received message after
// decompression larger than max", so a small message that would inflate
// to gigabytes (a decompression bomb) costs at most the limit, never its
// whole inflated size. A message that is not valid zlib fails INTERNAL,
// grpc-go's code for a failed decompression (grpc-core answers the same).

// deflateName is gRPC's name of the zlib encoding.
const deflateName = "deflate"

func init() {
	encoding.RegisterCompressor(&deflate{})
}

// deflate is the "deflate" encoding.Compressor: zlib at zlib's default
// level (grpc-core's), with writers and readers pooled, as grpc-go's gzip
// pools its own.
type deflate struct {
	writers sync.Pool // of *deflateWriter
	readers sync.Pool // of *deflateReader
}

var _ encoding.Compressor = (*deflate)(nil)

// Name is gRPC's name of the encoding.
func (*deflate) Name() string { return deflateName }

// Compress returns a writer that compresses into w; closing it finishes
// the stream and returns the writer to the pool.
func (c *deflate) Compress(w io.Writer) (io.WriteCloser, error) {
	if z, ok := c.writers.Get().(*deflateWriter); ok {
		z.Reset(w)
		return z, nil
	}
	zw, err := zlib.NewWriterLevel(w, zlib.DefaultCompression)
	if err != nil {
		return nil, err
	}
	return &deflateWriter{Writer: zw, pool: &c.writers}, nil
}

// Decompress returns a reader of the inflated bytes of r; grpc-go reads
// it within its message size limit and closes it, which returns it to the
// pool.
func (c *deflate) Decompress(r io.Reader) (io.Reader, error) {
	if z, ok := c.readers.Get().(*deflateReader); ok {
		if err := z.r.(zlib.Resetter).Reset(r, nil); err != nil {
			c.readers.Put(z)
			return nil, err
		}
		z.closed = false
		return z, nil
	}
	zr, err := zlib.NewReader(r)
	if err != nil {
		return nil, err
	}
	return &deflateReader{r: zr, pool: &c.readers}, nil
}

// deflateWriter is a pooled zlib writer.
type deflateWriter struct {
	*zlib.Writer
	pool *sync.Pool
}

// Close finishes the stream and returns the writer to its pool; it must
// not be used afterwards.
func (z *deflateWriter) Close() error {
	err := z.Writer.Close()
	z.Reset(io.Discard) // the pool keeps no reference to the output
	z.pool.Put(z)
	return err
}

// deflateReader is a pooled zlib reader.
type deflateReader struct {
	r      io.ReadCloser // a zlib reader, also a zlib.Resetter
	pool   *sync.Pool
	closed bool
}

func (z *deflateReader) Read(p []byte) (int, error) { return z.r.Read(p) }

// Close returns the reader to its pool, once; it must not be used
// afterwards.
func (z *deflateReader) Close() error {
	if z.closed {
		return nil
	}
	z.closed = true
	err := z.r.Close()
	_ = z.r.(zlib.Resetter).Reset(strings.NewReader(emptyZlib), nil) // drop the input
	z.pool.Put(z)
	return err
}

// emptyZlib is a zlib stream of no bytes: what a pooled reader is reset
// to, so that the pool keeps no reference to a message.
const emptyZlib = "\x78\x9c\x03\x00\x00\x00\x00\x01"

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
