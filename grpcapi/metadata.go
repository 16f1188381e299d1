package grpcapi

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
)

// errServerExiting answers ServerLive and ServerReady once the server is
// shutting down, as Triton's core does.
var errServerExiting = status.Error(codes.Unavailable, "Server exiting")

// ServerLive reports whether the server is live: true, or UNAVAILABLE
// "Server exiting" once it is shutting down.
func (s *Service) ServerLive(ctx context.Context, _ *inferencepb.ServerLiveRequest) (*inferencepb.ServerLiveResponse, error) {
	if err := s.allowed(ctx, wire.Health); err != nil {
		return nil, err
	}
	if !s.srv.Live() {
		return nil, errServerExiting
	}
	return &inferencepb.ServerLiveResponse{Live: true}, nil
}

// ServerReady reports whether the server is ready for inference, or
// UNAVAILABLE "Server exiting" once it is shutting down.
func (s *Service) ServerReady(ctx context.Context, _ *inferencepb.ServerReadyRequest) (*inferencepb.ServerReadyResponse, error) {
	if err := s.allowed(ctx, wire.Health); err != nil {
		return nil, err
	}
	if !s.srv.Live() {
		return nil, errServerExiting
	}
	return &inferencepb.ServerReadyResponse{Ready: s.srv.Ready(ctx)}, nil
}

// ModelReady reports whether a model version (empty: the latest) is ready.
// A model the server has never heard of, one that is unloaded or not
// loaded, and a version that is not loaded or not ready all answer OK with
// ready=false, as Triton's releases have it (their ModelIsReady looks the
// model up and answers false when it is not found; core's commit 73aad7c
// of June 2026 turned those cases into errors, which clients probing
// readiness are not written for). A version that does not parse is
// INVALID_ARGUMENT, and once the server is shutting down it answers
// UNAVAILABLE "Server not ready".
func (s *Service) ModelReady(ctx context.Context, req *inferencepb.ModelReadyRequest) (*inferencepb.ModelReadyResponse, error) {
	if err := s.allowed(ctx, wire.Health); err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.GetName(), req.GetVersion())
	zero := triton.CodeOf(err) == triton.NotFound // version 0: never loaded
	if err != nil && !zero {
		return nil, s.toStatus(err)
	}
	if !s.srv.Live() {
		return nil, status.Error(codes.Unavailable, "Server not ready")
	}
	if !zero && s.srv.ModelReady(ctx, req.GetName(), ver) {
		return &inferencepb.ModelReadyResponse{Ready: true}, nil
	}
	// Not ready: a model the repository has (unloaded, not loaded, failed,
	// another version) is ready=false; one it does not have is an error
	// (spec §3: unknown model ⇒ error status).
	if !slices.ContainsFunc(s.srv.Index(ctx), func(m triton.ModelState) bool { return m.Name == req.GetName() }) {
		return nil, s.toStatus(errorf(triton.InvalidArgument, "Request for unknown model: '%s' is not found", req.GetName()))
	}
	return &inferencepb.ModelReadyResponse{}, nil
}

// ServerMetadata answers the server's name ("triton"), version and
// extensions, the same list the HTTP adapter reports.
func (s *Service) ServerMetadata(ctx context.Context, _ *inferencepb.ServerMetadataRequest) (*inferencepb.ServerMetadataResponse, error) {
	if err := s.allowed(ctx, wire.Metadata); err != nil {
		return nil, err
	}
	md := s.srv.Metadata()
	return &inferencepb.ServerMetadataResponse{Name: md.Name, Version: md.Version, Extensions: wire.Extensions(s.srv.Metadata().Extensions, s.shm != nil)}, nil
}

// ModelMetadata describes a model version (empty: the latest ready one):
// its ready versions, or only the one asked for, platform, inputs and
// outputs, as the HTTP adapter does.
func (s *Service) ModelMetadata(ctx context.Context, req *inferencepb.ModelMetadataRequest) (*inferencepb.ModelMetadataResponse, error) {
	if err := s.allowed(ctx, wire.Metadata); err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, s.toStatus(err)
	}
	md, err := s.srv.ModelMetadata(req.GetName(), ver)
	if err != nil {
		return nil, s.toStatus(err)
	}
	versions := md.Versions
	if ver != 0 { // a version in the request: only that one
		versions = []string{strconv.FormatInt(ver, 10)}
	}
	return &inferencepb.ModelMetadataResponse{
		Name:     md.Name,
		Versions: versions,
		Platform: md.Platform,
		Inputs:   tensorMetadata(md.Inputs),
		Outputs:  tensorMetadata(md.Outputs),
	}, nil
}

func tensorMetadata(ts []triton.TensorMetadata) []*inferencepb.ModelMetadataResponse_TensorMetadata {
	out := make([]*inferencepb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = &inferencepb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.DataType, Shape: slices.Clone(t.Shape)}
	}
	return out
}

// ModelConfig answers the configuration a model version (empty: the latest
// ready one) runs with: normalized and completed, as the HTTP adapter
// reports it.
func (s *Service) ModelConfig(ctx context.Context, req *inferencepb.ModelConfigRequest) (*inferencepb.ModelConfigResponse, error) {
	if err := s.allowed(ctx, wire.ModelConfig); err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, s.toStatus(err)
	}
	cfg, err := s.srv.ModelConfig(req.GetName(), ver)
	if err != nil {
		return nil, s.toStatus(err)
	}
	return &inferencepb.ModelConfigResponse{Config: cfg}, nil
}

// parseVersion reads a request's version string as Triton's
// GetModelVersionFromString does with std::stol: "" is the latest ready
// version (0 for the server); leading white space, a sign and the digits
// that follow count, anything after them is ignored. A string without
// digits or a number too large for an int64 is INVALID_ARGUMENT "failed to
// get model version from specified version string ..."; a negative one
// INVALID_ARGUMENT "invalid model version specified ..."; version 0, which
// cannot exist, NOT_FOUND as the lookup of a missing version.
func parseVersion(model, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	bad := func() (int64, error) {
		return 0, errorf(triton.InvalidArgument, "failed to get model version from specified version string '%s' (details: stol), version should be an integral value > 0", s)
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(t) && (t[end] == '+' || t[end] == '-') {
		end++
	}
	digits := end
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	if end == digits {
		return bad()
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(t[:end], "+"), 10, 64)
	if err != nil {
		return bad()
	}
	if v < 0 {
		return 0, errorf(triton.InvalidArgument, "invalid model version specified '%s' , version should be an integral value > 0", s)
	}
	if v == 0 {
		return 0, errorf(triton.NotFound, "Request for unknown model: '%s' version 0 is not found", model)
	}
	return v, nil
}
