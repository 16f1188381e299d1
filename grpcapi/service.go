package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // gzip-compressed requests and responses
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
// metadata carries key with exactly value, as Triton's
// --grpc-restricted-protocol=<category>:<key>=<value> does; other calls get
// UNAVAILABLE "This protocol is restricted, expecting header '<key>'".
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
	s := &Service{srv: srv, shm: c.shm, log: c.log}
	for i := range c.restrictions {
		r := &c.restrictions[i]
		if strings.TrimSpace(r.key) == "" {
			panic(fmt.Sprintf("grpcapi: WithRestrictedProtocol(%q, %q, ...): empty key", r.categories, r.key))
		}
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
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Minute, PermitWithoutStream: true}),
		ServerCodec(),
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}
}

// maxMessageSize is gRPC's largest message, INT32_MAX bytes.
const maxMessageSize = 1<<31 - 1

// allowed checks a call of category c against its restriction.
func (s *Service) allowed(ctx context.Context, c wire.Category) error {
	r := s.restrict[c]
	if r == nil {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get(r.key) {
		if v == r.value {
			return nil
		}
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
