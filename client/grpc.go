package client

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/sysshm"
)

// Interface guards.
var (
	_ Conn               = (*GRPC)(nil)
	_ Repository         = (*GRPC)(nil)
	_ SystemSharedMemory = (*GRPC)(nil)
)

// GRPC is a client of a server speaking Triton's gRPC protocol
// (inference.GRPCInferenceService), over one HTTP/2 connection that every
// call shares. Create it with [NewGRPC]; it is safe for concurrent use.
type GRPC struct {
	conn   *grpc.ClientConn
	svc    inferencepb.GRPCInferenceServiceClient
	md     metadata.MD // WithHeader
	closed atomic.Bool
}

// NewGRPC returns a client of the server at addr, "host:port" (any target
// grpc.NewClient accepts, such as "dns:///host:port" or "unix:///path",
// works too). It does not connect: the first call does, and a connection
// that breaks is made again by the next call. Messages may be as large as
// gRPC allows (2 GiB), as Triton's are. Errors are InvalidArgument
// *triton.Error values for a malformed target or invalid options.
func NewGRPC(addr string, opts ...Option) (*GRPC, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if err := o.check(true); err != nil {
		return nil, localError(triton.InvalidArgument, about{}, err)
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	// The codec is grpc-go's protobuf codec, timing the messages of
	// calls made with WithTiming (timing.go).
	callOpts := []grpc.CallOption{grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32),
		grpc.ForceCodecV2(newTimingCodec())}
	if o.reqCompression == Gzip {
		callOpts = append(callOpts, grpc.UseCompressor(gzip.Name))
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithDefaultCallOptions(callOpts...)}
	if o.keepalive != nil {
		dial = append(dial, grpc.WithKeepaliveParams(*o.keepalive))
	}
	conn, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return nil, localError(triton.InvalidArgument, about{}, fmt.Errorf("address %q: %w", addr, err))
	}
	g := &GRPC{conn: conn, svc: inferencepb.NewGRPCInferenceServiceClient(conn)}
	if len(o.headers) > 0 {
		g.md = metadata.MD{}
		for _, kv := range o.headers {
			g.md.Append(kv[0], kv[1])
		}
	}
	return g, nil
}

// Close closes the connection: calls in flight fail with Cancelled (by
// grpc-go) and later calls with Unavailable. It is idempotent.
func (g *GRPC) Close() error {
	if g.closed.Swap(true) {
		return nil
	}
	return g.conn.Close()
}

// ctx returns the context a call runs with: ctx plus the metadata of
// WithHeader, or an error when the client is closed.
func (g *GRPC) ctx(ctx context.Context, a about) (context.Context, error) {
	if g.closed.Load() {
		return nil, localError(triton.Unavailable, a, errClosed)
	}
	if len(g.md) > 0 {
		if out, ok := metadata.FromOutgoingContext(ctx); ok {
			ctx = metadata.NewOutgoingContext(ctx, metadata.Join(out, g.md))
		} else {
			ctx = metadata.NewOutgoingContext(ctx, g.md)
		}
	}
	return ctx, nil
}

// version is the protocol's version string: "" for 0.
func version(v int64) string {
	if v <= 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}

// ServerLive is the ServerLive RPC. A server shutting down answers an
// Unavailable error.
func (g *GRPC) ServerLive(ctx context.Context) (bool, error) {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return false, err
	}
	r, err := g.svc.ServerLive(cctx, &inferencepb.ServerLiveRequest{})
	if err != nil {
		return false, healthError(ctx, about{}, err)
	}
	return r.GetLive(), nil
}

// ServerReady is the ServerReady RPC. A server shutting down answers an
// Unavailable error.
func (g *GRPC) ServerReady(ctx context.Context) (bool, error) {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return false, err
	}
	r, err := g.svc.ServerReady(cctx, &inferencepb.ServerReadyRequest{})
	if err != nil {
		return false, healthError(ctx, about{}, err)
	}
	return r.GetReady(), nil
}

// ModelReady is the ModelReady RPC: false, without an error, for a model
// or version the server does not have too (the server answers an error),
// as the HTTP client answers.
func (g *GRPC) ModelReady(ctx context.Context, model string, ver int64) (bool, error) {
	a := about{model: model, version: ver}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return false, err
	}
	r, err := g.svc.ModelReady(cctx, &inferencepb.ModelReadyRequest{Name: model, Version: version(ver)})
	if err != nil {
		return false, healthError(ctx, a, err)
	}
	return r.GetReady(), nil
}

// healthError is the answer of a health call that failed: a negative
// answer (false, no error) for a model or version the server does not
// have, an error otherwise (a server shutting down answers UNAVAILABLE
// "Server exiting").
func healthError(ctx context.Context, a about, err error) error {
	if ctx.Err() == nil {
		switch status.Code(err) {
		case codes.NotFound, codes.InvalidArgument:
			return nil
		}
	}
	return grpcError(ctx, a, err)
}

// ServerMetadata is the ServerMetadata RPC.
func (g *GRPC) ServerMetadata(ctx context.Context) (triton.ServerMetadata, error) {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return triton.ServerMetadata{}, err
	}
	r, err := g.svc.ServerMetadata(cctx, &inferencepb.ServerMetadataRequest{})
	if err != nil {
		return triton.ServerMetadata{}, grpcError(ctx, about{}, err)
	}
	return triton.ServerMetadata{Name: r.GetName(), Version: r.GetVersion(), Extensions: r.GetExtensions()}, nil
}

// ModelMetadata is the ModelMetadata RPC.
func (g *GRPC) ModelMetadata(ctx context.Context, model string, ver int64) (triton.ModelMetadata, error) {
	a := about{model: model, version: ver}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return triton.ModelMetadata{}, err
	}
	r, err := g.svc.ModelMetadata(cctx, &inferencepb.ModelMetadataRequest{Name: model, Version: version(ver)})
	if err != nil {
		return triton.ModelMetadata{}, grpcError(ctx, a, err)
	}
	conv := func(ts []*inferencepb.ModelMetadataResponse_TensorMetadata) []triton.TensorMetadata {
		out := make([]triton.TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = triton.TensorMetadata{Name: t.GetName(), DataType: t.GetDatatype(), Shape: t.GetShape()}
		}
		return out
	}
	return triton.ModelMetadata{Name: r.GetName(), Versions: r.GetVersions(), Platform: r.GetPlatform(),
		Inputs: conv(r.GetInputs()), Outputs: conv(r.GetOutputs())}, nil
}

// ModelConfig is the ModelConfig RPC.
func (g *GRPC) ModelConfig(ctx context.Context, model string, ver int64) (*modelconfig.ModelConfig, error) {
	a := about{model: model, version: ver}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return nil, err
	}
	r, err := g.svc.ModelConfig(cctx, &inferencepb.ModelConfigRequest{Name: model, Version: version(ver)})
	if err != nil {
		return nil, grpcError(ctx, a, err)
	}
	if r.GetConfig() == nil {
		return &modelconfig.ModelConfig{}, nil
	}
	return r.GetConfig(), nil
}

func statDuration(d *inferencepb.StatisticDuration) triton.StatDuration {
	return triton.StatDuration{Count: d.GetCount(), Total: time.Duration(d.GetNs())}
}

// ModelStatistics is the ModelStatistics RPC, converted to
// [triton.ModelStats] as [HTTP.ModelStatistics] converts it.
func (g *GRPC) ModelStatistics(ctx context.Context, model string, ver int64) ([]triton.ModelStats, error) {
	a := about{model: model, version: ver}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return nil, err
	}
	r, err := g.svc.ModelStatistics(cctx, &inferencepb.ModelStatisticsRequest{Name: model, Version: version(ver)})
	if err != nil {
		return nil, grpcError(ctx, a, err)
	}
	out := make([]triton.ModelStats, 0, len(r.GetModelStats()))
	for _, m := range r.GetModelStats() {
		v, _ := strconv.ParseInt(m.GetVersion(), 10, 64)
		is := m.GetInferenceStats()
		s := triton.ModelStats{
			Name: m.GetName(), Version: v, LastInference: lastInference(m.GetLastInference()),
			InferenceCount: m.GetInferenceCount(), ExecutionCount: m.GetExecutionCount(),
			Success: statDuration(is.GetSuccess()), Fail: statDuration(is.GetFail()), Queue: statDuration(is.GetQueue()),
			ComputeInput: statDuration(is.GetComputeInput()), ComputeInfer: statDuration(is.GetComputeInfer()),
			ComputeOutput: statDuration(is.GetComputeOutput()),
			CacheHit:      statDuration(is.GetCacheHit()), CacheMiss: statDuration(is.GetCacheMiss()),
		}
		for _, bs := range m.GetBatchStats() {
			s.Batches = append(s.Batches, triton.BatchStats{BatchSize: int64(bs.GetBatchSize()),
				ComputeInput: statDuration(bs.GetComputeInput()), ComputeInfer: statDuration(bs.GetComputeInfer()),
				ComputeOutput: statDuration(bs.GetComputeOutput())})
		}
		for k, rs := range m.GetResponseStats() {
			idx, err := strconv.Atoi(k)
			if err != nil {
				return nil, badAnswer(a, "statistics", fmt.Errorf("response_stats key %q is not an index", k))
			}
			s.Responses = append(s.Responses, triton.ResponseStats{Index: idx,
				Success: statDuration(rs.GetSuccess()), Fail: statDuration(rs.GetFail()),
				EmptyResponse: statDuration(rs.GetEmptyResponse()), Cancel: statDuration(rs.GetCancel()),
				ComputeInfer: statDuration(rs.GetComputeInfer()), ComputeOutput: statDuration(rs.GetComputeOutput())})
		}
		sortStats(&s)
		out = append(out, s)
	}
	return out, nil
}

// Load is the RepositoryModelLoad RPC: opts.Config as the "config"
// string_param, each of opts.Files as a "file:<path>" bytes_param.
func (g *GRPC) Load(ctx context.Context, model string, opts *triton.LoadOptions) error {
	a := about{model: model}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return err
	}
	req := &inferencepb.RepositoryModelLoadRequest{ModelName: model}
	if opts != nil && (opts.Config != "" || len(opts.Files) > 0) {
		req.Parameters = make(map[string]*inferencepb.ModelRepositoryParameter, 1+len(opts.Files))
		if opts.Config != "" {
			req.Parameters["config"] = &inferencepb.ModelRepositoryParameter{ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: opts.Config}}
		}
		for path, data := range opts.Files {
			req.Parameters["file:"+path] = &inferencepb.ModelRepositoryParameter{ParameterChoice: &inferencepb.ModelRepositoryParameter_BytesParam{BytesParam: data}}
		}
	}
	if _, err := g.svc.RepositoryModelLoad(cctx, req); err != nil {
		return grpcError(ctx, a, err)
	}
	return nil
}

// Unload is the RepositoryModelUnload RPC.
func (g *GRPC) Unload(ctx context.Context, model string, opts *triton.UnloadOptions) error {
	a := about{model: model}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return err
	}
	req := &inferencepb.RepositoryModelUnloadRequest{ModelName: model}
	if opts != nil && opts.Dependents {
		req.Parameters = map[string]*inferencepb.ModelRepositoryParameter{
			"unload_dependents": {ParameterChoice: &inferencepb.ModelRepositoryParameter_BoolParam{BoolParam: true}},
		}
	}
	if _, err := g.svc.RepositoryModelUnload(cctx, req); err != nil {
		return grpcError(ctx, a, err)
	}
	return nil
}

// Index is the RepositoryIndex RPC.
func (g *GRPC) Index(ctx context.Context) ([]triton.ModelState, error) {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return nil, err
	}
	r, err := g.svc.RepositoryIndex(cctx, &inferencepb.RepositoryIndexRequest{})
	if err != nil {
		return nil, grpcError(ctx, about{}, err)
	}
	out := make([]triton.ModelState, len(r.GetModels()))
	for i, m := range r.GetModels() {
		v, _ := strconv.ParseInt(m.GetVersion(), 10, 64)
		out[i] = triton.ModelState{Name: m.GetName(), Version: v, State: m.GetState(), Reason: m.GetReason()}
	}
	return out, nil
}

// RegisterSystemSharedMemory is the SystemSharedMemoryRegister RPC.
func (g *GRPC) RegisterSystemSharedMemory(ctx context.Context, name, key string, offset, size uint64) error {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return err
	}
	_, err = g.svc.SystemSharedMemoryRegister(cctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: name, Key: key, Offset: offset, ByteSize: size})
	if err != nil {
		return grpcError(ctx, about{}, err)
	}
	return nil
}

// UnregisterSystemSharedMemory is the SystemSharedMemoryUnregister RPC.
func (g *GRPC) UnregisterSystemSharedMemory(ctx context.Context, name string) error {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return err
	}
	if _, err := g.svc.SystemSharedMemoryUnregister(cctx, &inferencepb.SystemSharedMemoryUnregisterRequest{Name: name}); err != nil {
		return grpcError(ctx, about{}, err)
	}
	return nil
}

// SystemSharedMemoryStatus is the SystemSharedMemoryStatus RPC, sorted by
// name.
func (g *GRPC) SystemSharedMemoryStatus(ctx context.Context, name string) ([]sysshm.Region, error) {
	cctx, err := g.ctx(ctx, about{})
	if err != nil {
		return nil, err
	}
	r, err := g.svc.SystemSharedMemoryStatus(cctx, &inferencepb.SystemSharedMemoryStatusRequest{Name: name})
	if err != nil {
		return nil, grpcError(ctx, about{}, err)
	}
	out := make([]sysshm.Region, 0, len(r.GetRegions()))
	for _, k := range sortedKeys(r.GetRegions()) {
		s := r.GetRegions()[k]
		n := s.GetName()
		if n == "" {
			n = k
		}
		out = append(out, sysshm.Region{Name: n, Key: s.GetKey(), Offset: s.GetOffset(), ByteSize: s.GetByteSize()})
	}
	return out, nil
}
