package client

import (
	"crypto/tls"
	"fmt"
	"strings"

	"google.golang.org/grpc/keepalive"
)

// Option configures a remote client in [NewHTTP] or [NewGRPC]. Options are
// sealed: only this package defines them. Both constructors take the same
// options, so that a program can build either client from one set of
// flags; an option that concerns one transport only is ignored by the
// other, as each option's documentation says.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// options are the settings of a remote client.
type options struct {
	json            bool
	reqCompression  Compression
	respCompression Compression
	maxIdle         int
	keepalive       *keepalive.ClientParameters
	headers         [][2]string // in order; HTTP header names canonical, gRPC keys lower case
	tls             *tls.Config
}

// DefaultMaxIdleConnsPerHost is the default of [WithMaxIdleConnsPerHost].
const DefaultMaxIdleConnsPerHost = 100

func defaultOptions() options { return options{maxIdle: DefaultMaxIdleConnsPerHost} }

// check reports the options that cannot work, as [NewHTTP] and [NewGRPC]
// refuse them (never a panic in an option constructor).
func (o *options) check(grpcClient bool) error {
	for _, c := range []Compression{o.reqCompression, o.respCompression} {
		switch c {
		case NoCompression, Gzip:
		case Deflate:
			if grpcClient && c == o.reqCompression {
				return fmt.Errorf("WithCompression: gRPC requests can be compressed with gzip only (grpc-go has no deflate compressor of its own)")
			}
		default:
			return fmt.Errorf("WithCompression: unknown compression %q (want %q, %q or %q)", string(c), NoCompression, Gzip, Deflate)
		}
	}
	if o.maxIdle < 0 {
		return fmt.Errorf("WithMaxIdleConnsPerHost(%d): the pool size must not be negative", o.maxIdle)
	}
	for _, h := range o.headers {
		if h[0] == "" || strings.ContainsAny(h[0], " \t\r\n:") {
			return fmt.Errorf("WithHeader(%q, ...): not a valid header name", h[0])
		}
	}
	return nil
}

// Compression is a content coding for [WithCompression].
type Compression string

// The codings Triton accepts. Deflate is the zlib format (RFC 1950), as
// HTTP and gRPC mean it.
const (
	NoCompression Compression = ""
	Gzip          Compression = "gzip"
	Deflate       Compression = "deflate"
)

// WithCompression compresses requests with request and asks for responses
// compressed with response (NoCompression: none, the default for both), as
// the request_compression_algorithm and response_compression_algorithm of
// Triton's Python clients do.
//
// HTTP: every request body goes out with Content-Encoding request (the
// JSON header and binary tensors together; Inference-Header-Content-Length
// stays the uncompressed length, as Triton expects), and every request
// carries Accept-Encoding response; the client decompresses what comes
// back. A server may answer small responses uncompressed (httpapi does
// below 1400 bytes).
//
// gRPC: request must be gzip (NewGRPC refuses Deflate); messages are
// compressed with grpc-go's gzip compressor. response is ignored: gRPC
// servers choose the compression of their responses (grpc-go answers in
// the request's encoding, tritonserver per
// --grpc-infer-response-compression-level).
func WithCompression(request, response Compression) Option {
	return optionFunc(func(o *options) { o.reqCompression, o.respCompression = request, response })
}

// WithJSONTensors sends and asks for tensors as JSON instead of the binary
// tensor data extension (HTTP only; gRPC ignores it). JSON cannot carry
// everything: FP16 and BF16 tensors, FP32 and FP64 tensors holding NaN or
// infinities, and BYTES tensors whose elements are not UTF-8 are still
// sent in binary; outputs of those types come back as the server answers
// them (Triton refuses FP16 and BF16 outputs in JSON, and BYTES elements
// that are not UTF-8 do not survive it: httpapi writes U+FFFD for the bad
// bytes, Triton writes JSON that does not parse). JSON is several
// times larger and slower to encode and decode than binary data; the
// option exists for servers without the binary extension and for tests.
func WithJSONTensors() Option {
	return optionFunc(func(o *options) { o.json = true })
}

// WithMaxIdleConnsPerHost sizes the HTTP client's pool of keep-alive
// connections: at most n idle connections are kept for reuse (net/http's
// MaxIdleConnsPerHost, and MaxIdleConns). A program sending c requests at
// once wants n ≥ c, or connections are closed and opened again between
// requests. 0 keeps none (every request opens a connection). The default
// is [DefaultMaxIdleConnsPerHost]. gRPC ignores it: a gRPC client
// multiplexes every call on one HTTP/2 connection.
func WithMaxIdleConnsPerHost(n int) Option {
	return optionFunc(func(o *options) { o.maxIdle = n })
}

// WithKeepalive sets gRPC's keepalive pings (grpc-go's
// keepalive.ClientParameters): a ping after Time without activity, the
// connection closed when no answer comes within Timeout, and pings also
// without calls in flight with PermitWithoutStream. grpc-go raises Time
// below 10 s to 10 s; servers close connections that ping more often than
// they allow (grpcapi.ServerOptions and Triton allow every 5 minutes
// without calls, so keep Time ≥ 5 min with PermitWithoutStream). Without
// this option grpc-go sends no pings. HTTP uses p.Time as the period of
// TCP keepalive probes on its connections (0: Go's default, 15 s).
func WithKeepalive(p keepalive.ClientParameters) Option {
	return optionFunc(func(o *options) { o.keepalive = &p })
}

// WithHeader adds a header to every call: an HTTP request header, or gRPC
// metadata (key in lower case). Use it for the header of a restricted API
// (tritonserver's --http-restricted-api; for gRPC's
// --grpc-restricted-protocol the key is "triton-grpc-protocol-<key>"),
// for authentication in front of the server, or for headers a server
// forwards to models. Several calls add several headers; the same key
// twice sends both values.
func WithHeader(key, value string) Option {
	return optionFunc(func(o *options) { o.headers = append(o.headers, [2]string{key, value}) })
}

// WithTLS connects over TLS with cfg (HTTPS; gRPC transport credentials).
// An HTTP address given as an https:// URL uses TLS even without it, with
// Go's defaults. cfg is not copied; do not change it afterwards.
func WithTLS(cfg *tls.Config) Option {
	return optionFunc(func(o *options) {
		if cfg == nil {
			cfg = &tls.Config{}
		}
		o.tls = cfg
	})
}
