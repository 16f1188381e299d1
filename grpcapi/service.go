package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/sysshm"
)

// Option configures a [Service].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	restrictions []restriction
	compression  string // WithInferResponseCompressionLevel; "" unset
	forward      *regexp.Regexp
	shm          *sysshm.Registry
	log          *zap.Logger
	level        *zap.AtomicLevel
	settings     *settings.Store
}

// restriction is one WithRestrictedProtocol: the categories it covers and
// the metadata key a call must carry.
type restriction struct {
	categories string
	key, value string
}

// WithRestrictedProtocol restricts a category of RPCs to calls whose
// metadata carries the key "triton-grpc-protocol-<key>" with exactly
// value, as Triton's --grpc-restricted-protocol=<category>:<key>=<value>
// does (the prefix is Triton's: its clients send that key); other calls
// get UNAVAILABLE "This protocol is restricted, expecting header
// 'triton-grpc-protocol-<key>'". As in Triton, the first value of the key
// is the one compared, and the bare <key> does not open the category.
// gRPC metadata keys are lower case, so key matches in any case (Triton's
// never matches an upper-case key).
// category is one of health, metadata, inference, shared-memory,
// model-config, model-repository, statistics, trace and logging, or several
// separated by commas. A later restriction of a category replaces an
// earlier one. An unknown category or an empty key makes [New] panic, so
// that a typo cannot leave an API open.
func WithRestrictedProtocol(category, key, value string) Option {
	return optionFunc(func(c *config) {
		c.restrictions = append(c.restrictions, restriction{categories: category, key: key, value: value})
	})
}

// restrictedKeyPrefix is what Triton puts before the key of
// --grpc-restricted-protocol (kRestrictedProtocolHeaderTemplate).
const restrictedKeyPrefix = "triton-grpc-protocol-"

// WithInferResponseCompressionLevel compresses the responses of ModelInfer
// and ModelStreamInfer as tritonserver's
// --grpc-infer-response-compression-level=<level> does: level is none,
// low, medium or high (in any case). Triton sets that level on every
// inference call, and gRPC turns a level into an encoding among those the
// client lists in grpc-accept-encoding: none is identity (even for a
// compressed request); otherwise, of gzip and deflate (ranked in that
// order), low takes the first the client accepts, medium the middle one
// and high the last, so that a client accepting both gets gzip at low and
// deflate at medium and high, and a client accepting neither gets
// identity. Both are written at zlib's default level: the level chooses
// the encoding, not the effort. Without this option responses follow
// grpc-go's default, the request's own encoding. An invalid level makes
// [New] panic.
func WithInferResponseCompressionLevel(level string) Option {
	return optionFunc(func(c *config) { c.compression = level })
}

// WithHeaderForwardPattern forwards the metadata of inference calls
// (ModelInfer and ModelStreamInfer, whose metadata applies to each of its
// requests) whose key re matches anywhere (re.MatchString) to the model as
// string request parameters, as tritonserver's
// --grpc-header-forward-pattern does. Triton makes the flag's pattern case
// insensitive, prefixing "(?i)": compile it the same way to match
// tritonserver (gRPC keys arrive in lower case, so the difference shows
// only in patterns with upper-case letters). A forwarded key replaces a
// request parameter of the same name (Triton adds it after the request's
// own); of several values of one key, the last is forwarded. A matching
// key that is reserved (sequence_id, sequence_start, sequence_end,
// priority, timeout, headers, binary_data_output) or starts with
// "triton_" fails the request with INVALID_ARGUMENT "Header '<key>' is
// reserved for Triton usage and cannot be forwarded.", as in Triton.
// Pseudo-headers, gRPC's own "grpc-" keys and content-type are never
// forwarded (grpc-core keeps them from Triton; user-agent it passes on).
// nil forwards nothing (the default).
func WithHeaderForwardPattern(re *regexp.Regexp) Option {
	return optionFunc(func(c *config) { c.forward = re })
}

// WithSharedMemory enables Triton's system shared-memory extension (Triton's
// --allow-client-shm) over r, which the HTTP adapter may share. Without it
// registering a region answers UNIMPLEMENTED and requests naming a region
// are refused.
func WithSharedMemory(r *sysshm.Registry) Option {
	return optionFunc(func(c *config) { c.shm = r })
}

// WithLogger sets the logger for the service's own events (recovered
// panics, failed calls answered INTERNAL at Debug). The default is
// zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithLogLevel connects the LogSettings RPC to level, as httpapi's option
// of the same name does for the HTTP logging extension. With
// [WithSettings] the store's level applies and this option is ignored.
func WithLogLevel(level *zap.AtomicLevel) Option {
	return optionFunc(func(c *config) { c.level = level })
}

// WithSettings makes the LogSettings and TraceSetting RPCs read and change
// st, the server-wide log and trace settings, which the HTTP adapter
// (httpapi.WithSettings) may share: Triton has one such state whatever the
// protocol. Create st with settings.NewStore, giving it the level
// [WithLogLevel] would have driven. Without this option the service keeps
// its own store.
func WithSettings(st *settings.Store) Option {
	return optionFunc(func(c *config) { c.settings = st })
}

// Service serves one [triton.Server] over Triton's gRPC protocol: the
// inference.GRPCInferenceService and grpc.health.v1.Health services.
// Create it with [New] and add it to a *grpc.Server with [Service.Register].
// It is safe for concurrent use.
type Service struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer

	srv      *triton.Server
	restrict [wire.NumCategories]*restriction
	level    compressionLevel // of inference responses
	forward  *regexp.Regexp   // metadata forwarded as request parameters
	shm      *sysshm.Registry
	log      *zap.Logger
	settings *settings.Store // log and trace settings
}

// New returns the service for srv. It panics on a nil server or an invalid
// option (see [WithRestrictedProtocol]).
func New(srv *triton.Server, opts ...Option) *Service {
	if srv == nil {
		panic("grpcapi: New with a nil server")
	}
	c := config{log: zap.NewNop()}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	s := &Service{srv: srv, shm: c.shm, log: c.log, forward: c.forward}
	if c.compression != "" {
		l, err := parseCompressionLevel(c.compression)
		if err != nil {
			panic("grpcapi: WithInferResponseCompressionLevel: " + err.Error())
		}
		s.level = l
	}
	for i := range c.restrictions {
		r := &c.restrictions[i]
		if strings.TrimSpace(r.key) == "" {
			panic(fmt.Sprintf("grpcapi: WithRestrictedProtocol(%q, %q, ...): empty key", r.categories, r.key))
		}
		r.key = restrictedKeyPrefix + r.key
		cats, err := wire.ParseCategories(r.categories)
		if err != nil {
			panic("grpcapi: WithRestrictedProtocol: " + err.Error())
		}
		for _, cat := range cats {
			s.restrict[cat] = r
		}
	}
	s.settings = c.settings
	if s.settings == nil {
		s.settings = settings.NewStore(c.level)
	}
	return s
}

// Register adds the inference and health services to g. Call it before
// g.Serve.
//
// ModelInfer and ModelStreamInfer are registered with handlers of the
// service's own, which let the codec of [ServerCodec] (in
// [ServerOptions]) pass large tensors without copies: their requests are
// received into a type of the service's (it embeds
// inferencepb.ModelInferRequest and is a proto.Message), and their large
// responses are sent as one (it embeds the response). Unary interceptors
// see the usual *inferencepb.ModelInferRequest and ModelInferResponse;
// stream interceptors and stats handlers see these types. With the codec,
// the bytes of a request's raw_input_contents belong to the call: an
// interceptor must not keep them after the call has returned.
// Registering the service with inferencepb.RegisterGRPCInferenceServiceServer
// instead serves the same protocol with protobuf's copies.
func (s *Service) Register(g *grpc.Server) {
	g.RegisterService(&serviceDesc, s)
	healthpb.RegisterHealthServer(g, health{s: s})
}

// serviceDesc is inferencepb's description of the inference service with
// the handlers of ModelInfer and ModelStreamInfer replaced by the
// service's own (see [Service.Register]).
var serviceDesc = func() grpc.ServiceDesc {
	d := inferencepb.GRPCInferenceService_ServiceDesc
	d.Methods = slices.Clone(d.Methods)
	d.Streams = slices.Clone(d.Streams)
	i := slices.IndexFunc(d.Methods, func(m grpc.MethodDesc) bool { return m.MethodName == "ModelInfer" })
	j := slices.IndexFunc(d.Streams, func(st grpc.StreamDesc) bool { return st.StreamName == "ModelStreamInfer" })
	if i < 0 || j < 0 {
		panic("grpcapi: inferencepb lacks ModelInfer or ModelStreamInfer")
	}
	d.Methods[i].Handler = modelInferHandler
	d.Streams[j].Handler = func(srv any, stream grpc.ServerStream) error { return srv.(*Service).streamInfer(stream) }
	return d
}()

// malformed is the status of an inference request that the codec could
// not decode (see [codec.Unmarshal]): INVALID_ARGUMENT, the client's
// mistake, where grpc-go alone (without the codec) answers INTERNAL.
func malformed(err error) error {
	return status.Errorf(codes.InvalidArgument, "grpc: failed to unmarshal the received message: %v", err)
}

// ServerOptions are the *grpc.Server options Triton's defaults amount to:
// no message size limit below 2 GiB (Triton's INT32_MAX), and a keepalive
// enforcement policy that lets clients ping without calls in flight (at
// most every 5 minutes, Triton's http2_min_recv_ping_interval_without_data)
// instead of closing their connections with "too many pings". Two more
// make the server cheaper per call: the service's codec ([ServerCodec]),
// which passes large tensors without protobuf's copies, and one stream
// worker goroutine per CPU (grpc-go's NumStreamWorkers, at the number its
// authors advise), which serve calls one after another on stacks already
// grown instead of starting a goroutine per call whose stack grows anew
// (a fifth of the instructions a small ModelInfer costs, client included,
// in the count of docs/performance.md); a call that finds every worker
// busy gets a goroutine of its own, as without workers.
//
// # Memory
//
// What a client can make the server hold, with these options:
//
//   - One message: at most 2 GiB - 1 (MaxRecvMsgSize, Triton's limit). A
//     message declared larger is refused RESOURCE_EXHAUSTED from its
//     5-byte prefix, before any of it is read; a smaller one takes memory
//     as its bytes arrive, not as declared. A compressed message is
//     inflated at most to the limit plus one byte and then refused
//     RESOURCE_EXHAUSTED, so a decompression bomb costs the limit, not its
//     inflated size; and at most two messages of the process inflate past
//     64 MiB at once (the others wait for one of them to finish), so that
//     many bombs at once cost two limits, not one each. Measured (client
//     and server in one process): one 3 GiB bomb refused at the default
//     limit peaks at 2.1 GB of RSS, four at once at 4.3 GB (8.4 GB
//     without the bound); the memory returns to the heap at the next two
//     collections.
//   - Calls at once: at most 1024 per connection (MaxConcurrentStreams;
//     grpc-go has no limit of its own, nor has Triton), so one
//     connection holds at most that many messages being received; a
//     client opening more waits, as HTTP/2 has it, for one to end.
//   - Bytes a call has not read yet: grpc-go's flow-control windows (64
//     KiB per stream and per connection at first, grown with the
//     measured bandwidth-delay product up to 16 MiB); a ModelStreamInfer
//     stream with 1024 requests in flight stops reading, and its client
//     stops at the window.
//   - Buffers: the codec's pool keeps buffers for requests of up to 64
//     MiB of tensors; a larger request's buffer is left to the garbage
//     collector when the call ends, not pooled.
//
// The number of connections is the listener's to bound (for example
// golang.org/x/net/netutil.LimitListener). For a smaller bound on each
// message, append grpc.MaxRecvMsgSize(n) after these options: a later
// option wins.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.MaxConcurrentStreams(maxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Minute, PermitWithoutStream: true}),
		ServerCodec(),
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}
}

// maxConcurrentStreams is the number of calls one connection may have in
// flight with [ServerOptions].
const maxConcurrentStreams = 1024

// maxMessageSize is gRPC's largest message, INT32_MAX bytes.
const maxMessageSize = 1<<31 - 1

// allowed checks a call of category c against its restriction.
func (s *Service) allowed(ctx context.Context, c wire.Category) error {
	r := s.restrict[c]
	if r == nil {
		return nil
	}
	// Triton compares the first value of the key (a multimap's find).
	if v := metadata.ValueFromIncomingContext(ctx, r.key); len(v) > 0 && v[0] == r.value {
		return nil
	}
	return status.Errorf(codes.Unavailable, "This protocol is restricted, expecting header '%s'", r.key)
}

// grpcCode is the one mapping from a [triton.Code] to a gRPC code, Triton's
// CodeToStatus (protocol spec §0.2) plus DeadlineExceeded, which Triton
// does not have.
func grpcCode(c triton.Code) codes.Code {
	switch c {
	case triton.Unknown:
		return codes.Unknown
	case triton.Internal:
		return codes.Internal
	case triton.NotFound:
		return codes.NotFound
	case triton.InvalidArgument:
		return codes.InvalidArgument
	case triton.Unavailable:
		return codes.Unavailable
	case triton.Unsupported:
		return codes.Unimplemented
	case triton.AlreadyExists:
		return codes.AlreadyExists
	case triton.Cancelled:
		return codes.Canceled
	case triton.DeadlineExceeded:
		return codes.DeadlineExceeded
	}
	// A code this adapter does not know is a bug on the server's side.
	return codes.Internal
}

// toStatus turns an error into the gRPC status a client sees: the code of
// [triton.CodeOf] and the message Triton words ([triton.Error.Message] for
// the server's errors). A status error passes through unchanged.
func (s *Service) toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := grpcCode(triton.CodeOf(err))
	if code == codes.Internal {
		s.log.Debug("grpcapi: call failed", zap.Error(err))
	}
	return status.Error(code, message(err))
}

// message is the text a client sees for err.
func message(err error) string {
	if e, ok := errors.AsType[*triton.Error](err); ok {
		return e.Message()
	}
	return err.Error()
}

// errorf makes an adapter error with a code, worded as Triton words it.
func errorf(code triton.Code, format string, args ...any) error {
	return &triton.Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// health implements grpc.health.v1.Health.
type health struct {
	healthpb.UnimplementedHealthServer // Watch: Unimplemented, as in Triton
	s                                  *Service
}

var _ healthpb.HealthServer = health{}

// Check answers SERVING while the server is ready (not merely live), as
// Triton does.
func (h health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if err := h.s.allowed(ctx, wire.Health); err != nil {
		return nil, err
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if h.s.srv.Ready(ctx) {
		st = healthpb.HealthCheckResponse_SERVING
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}
