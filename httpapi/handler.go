package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/sysshm"
)

// DefaultMaxRequestSize is the default of [WithMaxRequestSize]: 64 MiB, the
// default of Triton's --http-max-input-size.
const DefaultMaxRequestSize = 1 << 26

// Option configures the handler [NewHandler] returns. Options are sealed:
// only this package defines them.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	maxSize      int64
	minCompress  int
	level        int
	restrictions []restriction
	shm          *sysshm.Registry
	log          *zap.Logger
	logLevel     *zap.AtomicLevel
	settings     *settings.Store
	bodyMemory   int64
	forward      *regexp.Regexp
}

// restriction is one WithRestrictedAPI: the categories it covers and the
// header a request must carry.
type restriction struct {
	categories    string
	header, value string
}

// WithMaxRequestSize bounds what a request may make the server hold, as
// Triton's --http-max-input-size does: the request body as received, the
// body after decompression, the JSON header of an inference request, and
// each input decoded from JSON. Larger requests are refused with 400 and
// a message saying which limit was exceeded. n ≤ 0 means the default,
// [DefaultMaxRequestSize] (64 MiB).
func WithMaxRequestSize(n int64) Option {
	return optionFunc(func(c *config) {
		if n <= 0 {
			n = DefaultMaxRequestSize
		}
		c.maxSize = n
	})
}

// WithMaxBodyMemory bounds the memory that request bodies larger than a
// megabyte hold at once, over all requests: n bytes, n ≤ 0 meaning the
// default, [DefaultMaxBodyMemory] (256 MiB). Bodies up to a megabyte come
// from a pool and are not counted. A larger body takes its share before it
// is read and keeps it until its response is written: its Content-Length,
// or, while a chunked body arrives, the size limit ([WithMaxRequestSize]),
// and while a compressed one is decompressed, twice the size limit; then
// the size it has. A request that finds no room waits, in arrival order,
// until there is room or its context ends. n is raised to twice the size
// limit (plus a few bytes) when it is smaller, so that any request allowed
// by the size limit can run. See docs/reliability.md for what a
// decompression bomb and large bodies cost.
func WithMaxBodyMemory(n int64) Option {
	return optionFunc(func(c *config) { c.bodyMemory = n })
}

// WithHeaderForwardPattern forwards the HTTP headers of an inference
// request whose names match re as string request parameters, as Triton's
// --http-header-forward-pattern does: every header whose name re matches
// (anywhere in the name, as RE2's PartialMatch) becomes a parameter of
// that name holding its value, several values of one header joined with
// ", ". Header names are matched and forwarded in lower case (Go's
// net/http does not keep the client's spelling; gRPC metadata keys are
// lower case too, so a header gives the same parameter over both
// protocols). tritonserver makes its pattern case-insensitive by
// prefixing "(?i)", which a pattern may undo with "(?-i)"; do the same
// when compiling a flag's value. A forwarded header named like a reserved
// parameter (sequence_id, sequence_start, sequence_end, priority, timeout,
// binary_data_output, headers, or any name starting with "triton_")
// fails the request with 400 "Header '<name>' is reserved for Triton
// usage and cannot be forwarded.". A header and a "parameters" member of
// the request with the same name: the header's value is the one the model
// sees (Triton adds the header after the body's parameters and keeps
// both; the model sees one value per name here). re nil forwards nothing,
// the default.
func WithHeaderForwardPattern(re *regexp.Regexp) Option {
	return optionFunc(func(c *config) { c.forward = re })
}

// WithCompressionMinSize sets the size below which an inference response
// goes out uncompressed even when the client's Accept-Encoding asks for
// gzip or deflate: n bytes of uncompressed body, JSON and binary outputs
// together. n ≤ 0 means the default, [DefaultCompressionMinSize] (1400
// bytes); 1 compresses every response with a body, as Triton does.
// Requests are decompressed whatever their size.
func WithCompressionMinSize(n int) Option {
	return optionFunc(func(c *config) {
		if n <= 0 {
			n = DefaultCompressionMinSize
		}
		c.minCompress = n
	})
}

// WithCompressionLevel sets the level gzip and deflate responses are
// compressed at, in compress/flate's terms: flate.BestSpeed (1) to
// flate.BestCompression (9), flate.NoCompression (0: stored blocks),
// flate.HuffmanOnly (-2), or flate.DefaultCompression (-1), which means
// level 6, the default. Level 6 is Triton's: zlib's Z_DEFAULT_COMPRESSION,
// with the 32 KiB window (windowBits 15) that every level uses here as in
// Triton. The numbers keep zlib's meaning (1 fastest, 9 smallest), but the
// compressor is github.com/klauspost/compress, whose levels are its own
// algorithms: at level 6, 2–4× compress/flate's speed on JSON for 5 %
// more bytes, and 30–150× on FP32 noise, which it stores rather than
// compress (figures in docs/performance.md). Level 1 is worth a look
// where throughput matters: on our large answers it served 1.3–2.2× as
// many bytes a second as level 6, for 6 % more bytes on the wire with
// FP32 outputs and 4 % fewer with JSON.
//
// A level outside -2..9 is a programming error: [NewHandler] panics.
func WithCompressionLevel(level int) Option {
	return optionFunc(func(c *config) {
		if level == -1 {
			level = tritonLevel
		}
		c.level = level
	})
}

// WithRestrictedAPI restricts a category of endpoints to requests that carry
// header with exactly value, as Triton's
// --http-restricted-api=<category>:<header>=<value> does; other requests get
// 403 {"error":"This API is restricted, expecting header '<header>'"}.
// category is one of health, metadata, inference, shared-memory,
// model-config, model-repository, statistics, trace and logging, or several
// of them separated by commas. The header name is matched case-insensitively,
// the value exactly. A later restriction of the same category replaces an
// earlier one.
//
// An unknown category or an empty header name is a programming error:
// [NewHandler] panics, so that a typo cannot leave an API unprotected.
func WithRestrictedAPI(category, header, value string) Option {
	return optionFunc(func(c *config) {
		c.restrictions = append(c.restrictions, restriction{categories: category, header: header, value: value})
	})
}

// WithSharedMemory enables Triton's system shared-memory extension
// (Triton's --allow-client-shm): clients register POSIX shared-memory
// regions in r and pass tensors through them instead of the request body.
// Without it register and unregister answer 501 "Client shared memory is
// disabled...", status lists nothing, and inference requests naming a
// region are refused. r is not closed by the handler; several handlers
// (and the gRPC adapter) may share it. The registry type lives in an
// internal package for now, so only code inside this module can create
// one.
//
// Enabling it lets any client that can reach the handler map shared-memory
// objects of the server's machine by name (only regular files under
// /dev/shm; see package sysshm): restrict the shared-memory category with
// [WithRestrictedAPI] where clients are not trusted.
func WithSharedMemory(r *sysshm.Registry) Option {
	return optionFunc(func(c *config) { c.shm = r })
}

// WithLogger sets the logger for the handler's own events: recovered
// panics (Error) and failed requests answered with a 5xx status (Debug).
// Nothing is logged per request by default. The default is zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithLogLevel connects the logging extension (GET/POST /v2/logging) to
// level: a POST sets it to the most verbose level its settings enable
// (log_verbose_level > 0: Debug; log_info: Info; log_warning: Warn;
// log_error: Error; none: DPanic), and the initial settings are read from
// it. The other settings (log_file, log_format, and the exact flags) are
// stored and reported back, as Triton reports them, but change nothing
// else. Without this option the settings are only stored. With
// [WithSettings] the store's level applies and this option is ignored.
func WithLogLevel(level *zap.AtomicLevel) Option {
	return optionFunc(func(c *config) { c.logLevel = level })
}

// WithSettings makes the logging and trace extensions read and change st,
// the server-wide log and trace settings that the gRPC adapter
// (grpcapi.WithSettings) may share, as Triton has one such state whatever
// the protocol. Create st with settings.NewStore, giving it the level
// [WithLogLevel] would have driven. Without this option the handler keeps
// its own store.
func WithSettings(st *settings.Store) Option {
	return optionFunc(func(c *config) { c.settings = st })
}

// handler serves the KServe v2 / Triton HTTP protocol for one server.
type handler struct {
	srv     *triton.Server
	maxSize int64
	// minCompress is the smallest response body compressed, level the
	// compress/flate level (not -1).
	minCompress, level int
	restrict           [wire.NumCategories]*restriction
	shm                *sysshm.Registry
	log                *zap.Logger
	settings           *settings.Store // log and trace settings
	// mem is the body memory budget (WithMaxBodyMemory); nil, in tests
	// that build a handler by hand, means none.
	mem     *semaphore.Weighted
	forward *regexp.Regexp // WithHeaderForwardPattern, or nil
	// stream runs the generate extension's requests (see generate.go):
	// inferOnce(srv), one response per request, until the server has a
	// streaming call with the same shape.
	stream streamer
}

// NewHandler returns an http.Handler serving srv over Triton's HTTP/REST
// protocol (KServe v2 plus Triton's extensions). It serves the paths under
// /v2 exactly as Triton does and answers any other path with 404
// {"error":"Not Found"}; mount it at the root of a server or of a mux
// pattern that keeps the path (see the package documentation).
//
// It panics if an option is invalid (an unknown WithRestrictedAPI
// category or an empty header name, a WithCompressionLevel out of range),
// like http.ServeMux does for a bad pattern. The handler is safe for
// concurrent use.
func NewHandler(srv *triton.Server, opts ...Option) http.Handler {
	if srv == nil {
		panic("httpapi: NewHandler with a nil server")
	}
	c := config{maxSize: DefaultMaxRequestSize, minCompress: DefaultCompressionMinSize, level: tritonLevel, log: zap.NewNop()}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if err := levelError(c.level); err != nil {
		panic("httpapi: " + err.Error())
	}
	h := &handler{srv: srv, maxSize: c.maxSize, minCompress: c.minCompress, level: c.level, shm: c.shm, log: c.log, forward: c.forward,
		stream: srv.InferStream}
	mem := c.bodyMemory
	if mem <= 0 {
		mem = DefaultMaxBodyMemory
	}
	// A compressed body at the limit takes twice the limit, plus its
	// alignment padding and the byte that tells "at" from "beyond".
	need := int64(math.MaxInt64)
	if c.maxSize < math.MaxInt64/4 {
		need = 2*(c.maxSize+1) + 8
	}
	h.mem = semaphore.NewWeighted(max(mem, need))
	for i := range c.restrictions {
		r := &c.restrictions[i]
		if strings.TrimSpace(r.header) == "" {
			panic(fmt.Sprintf("httpapi: WithRestrictedAPI(%q, %q, ...): empty header name", r.categories, r.header))
		}
		cats, err := wire.ParseCategories(r.categories)
		if err != nil {
			panic("httpapi: WithRestrictedAPI: " + err.Error())
		}
		for _, cat := range cats {
			h.restrict[cat] = r
		}
	}
	h.settings = c.settings
	if h.settings == nil {
		h.settings = settings.NewStore(c.logLevel)
	}
	return h
}

// The routes, in the order Triton's HTTP server tries them (protocol spec
// §1.1). Every pattern must match the whole path.
var (
	modelRoute = regexp.MustCompile(`^/v2/models/([^/]+)(?:/versions/([0-9]+))?(?:/(infer|generate|generate_stream|ready|config|stats|trace/setting))?$`)
	// "/v2" itself is server metadata, tried before this one.
	healthRoute  = regexp.MustCompile(`^/v2(?:/health/(live|ready))?$`)
	sysShmRoute  = regexp.MustCompile(`^/v2/systemsharedmemory(?:/region/([^/]+))?/(status|register|unregister)$`)
	cudaShmRoute = regexp.MustCompile(`^/v2/cudasharedmemory(?:/region/([^/]+))?/(status|register|unregister)$`)
	repoRoute    = regexp.MustCompile(`^/v2/repository(?:/([^/]+))?/(index|models/([^/]+)/(load|unload))$`)
)

// ServeHTTP routes a request as Triton does. The path is matched after
// percent-decoding, so a model name holding "/" (even as %2F) never
// routes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer h.recoverPanic(w)
	p := r.URL.Path
	switch p {
	case "/v2/models/stats":
		h.handleStats(w, r, "", "")
		return
	case "/v2/logging":
		h.handleLogging(w, r)
		return
	}
	if strings.HasPrefix(p, "/v2/models/") {
		if m := modelRoute.FindStringSubmatch(p); m != nil {
			model, ver := m[1], m[2]
			switch m[3] {
			case "":
				h.handleModelMetadata(w, r, model, ver)
				return
			case "infer":
				h.handleInfer(w, r, model, ver)
				return
			case "generate", "generate_stream":
				h.handleGenerate(w, r, model, ver, m[3] == "generate_stream")
				return
			case "ready":
				h.handleModelReady(w, r, model, ver)
				return
			case "config":
				h.handleModelConfig(w, r, model, ver)
				return
			case "stats":
				h.handleStats(w, r, model, ver)
				return
			case "trace/setting":
				// Triton has no per-version trace settings: with a version
				// the path falls through to 404.
				if ver == "" {
					h.handleTrace(w, r, model)
					return
				}
			}
		}
	}
	switch {
	case p == "/v2":
		h.handleServerMetadata(w, r)
		return
	case strings.HasPrefix(p, "/v2/health/"):
		if m := healthRoute.FindStringSubmatch(p); m != nil {
			h.handleHealth(w, r, m[1])
			return
		}
	case strings.HasPrefix(p, "/v2/systemsharedmemory"):
		if m := sysShmRoute.FindStringSubmatch(p); m != nil {
			h.handleSystemSharedMemory(w, r, m[1], m[2])
			return
		}
	case strings.HasPrefix(p, "/v2/cudasharedmemory"):
		if m := cudaShmRoute.FindStringSubmatch(p); m != nil {
			h.handleCUDASharedMemory(w, r, m[1], m[2])
			return
		}
	case strings.HasPrefix(p, "/v2/repository"):
		if m := repoRoute.FindStringSubmatch(p); m != nil {
			if m[2] == "index" {
				h.handleRepositoryIndex(w, r)
			} else {
				h.handleRepositoryControl(w, r, m[1], m[3], m[4])
			}
			return
		}
	case p == "/v2/trace/setting":
		h.handleTrace(w, r, "")
		return
	}
	writeErrorStatus(w, http.StatusNotFound, "Not Found")
}

// recoverPanic turns a panic into a 500 answer (when nothing was written
// yet) and an Error log, so that one bad request cannot take the
// connection's other requests with it. http.ErrAbortHandler passes through.
func (h *handler) recoverPanic(w http.ResponseWriter) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	h.log.Error("httpapi: panic serving a request", zap.Any("panic", v), zap.StackSkip("stack", 2))
	writeErrorStatus(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", v))
}

// allowed checks a restricted category's header; when it is missing or
// wrong it answers 403 and returns false. Triton checks restrictions before
// methods.
func (h *handler) allowed(w http.ResponseWriter, r *http.Request, c wire.Category) bool {
	rs := h.restrict[c]
	if rs == nil {
		return true
	}
	if v := r.Header.Values(rs.header); len(v) > 0 && v[0] == rs.value {
		return true
	}
	writeErrorStatus(w, http.StatusForbidden, "This API is restricted, expecting header '"+rs.header+"'")
	return false
}

// method checks the request method; otherwise it answers 405.
func method(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	for _, m := range allowed {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeErrorStatus(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	return false
}

// guard runs the checks every endpoint starts with: restriction, then
// method.
func (h *handler) guard(w http.ResponseWriter, r *http.Request, c wire.Category, methods ...string) bool {
	return h.allowed(w, r, c) && method(w, r, methods...)
}

// parseVersion turns the version segment of a path into a version: "" is
// the latest ready version (0 for the server). The route admits digits
// only; a number too large for an int64 and version 0, which cannot exist,
// are refused with Triton's messages.
func parseVersion(model, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errorf(triton.InvalidArgument, "failed to get model version from specified version string '%s' (details: stol), version should be an integral value > 0", s)
	}
	if v == 0 {
		return 0, errorf(triton.NotFound, "Request for unknown model: '%s' version 0 is not found", model)
	}
	return v, nil
}
