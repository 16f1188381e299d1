package grpcapi

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
)

// errRepositoryName answers a repository call that names a repository, as
// Triton does.
var errRepositoryName = errorf(triton.Unsupported, "'repository_name' specification is not supported")

// RepositoryIndex lists the models of the repositories and those the
// server knows, one entry per version (version "" for a model never
// loaded, state "" too), or only the READY ones when ready is set. A
// repository_name is UNIMPLEMENTED, as in Triton.
func (s *Service) RepositoryIndex(ctx context.Context, req *inferencepb.RepositoryIndexRequest) (*inferencepb.RepositoryIndexResponse, error) {
	if err := s.allowed(ctx, wire.ModelRepository); err != nil {
		return nil, err
	}
	if req.GetRepositoryName() != "" {
		return nil, s.toStatus(errRepositoryName)
	}
	out := &inferencepb.RepositoryIndexResponse{}
	for _, st := range s.srv.Index(ctx) {
		if req.GetReady() && st.State != "READY" {
			continue
		}
		m := &inferencepb.RepositoryIndexResponse_ModelIndex{Name: st.Name, State: st.State, Reason: st.Reason}
		if st.Version > 0 {
			m.Version = strconv.FormatInt(st.Version, 10)
		}
		out.Models = append(out.Models, m)
	}
	return out, nil
}

// RepositoryModelLoad loads or reloads a model, with the overrides of its
// parameters: "config" (string_param, a ModelConfig in JSON) and
// "file:<path>" (bytes_param, a file of the model folder, such as
// "file:1/model.onnx"). Another key or a value of another type is
// INVALID_ARGUMENT with Triton's messages. The load runs to its end even if
// the call is cancelled: it changes server state, which a dropped call
// should not leave half done.
func (s *Service) RepositoryModelLoad(ctx context.Context, req *inferencepb.RepositoryModelLoadRequest) (*inferencepb.RepositoryModelLoadResponse, error) {
	if err := s.allowed(ctx, wire.ModelRepository); err != nil {
		return nil, err
	}
	if req.GetRepositoryName() != "" {
		return nil, s.toStatus(errRepositoryName)
	}
	opts, err := loadOptions(req.GetParameters())
	if err != nil {
		return nil, s.toStatus(err)
	}
	if err := s.srv.Load(context.WithoutCancel(ctx), req.GetModelName(), opts); err != nil {
		return nil, s.toStatus(err)
	}
	return &inferencepb.RepositoryModelLoadResponse{}, nil
}

// loadOptions reads a load's parameters, in key order so that the error
// for several bad ones does not depend on map order.
func loadOptions(params map[string]*inferencepb.ModelRepositoryParameter) (*triton.LoadOptions, error) {
	if len(params) == 0 {
		return nil, nil
	}
	opts := &triton.LoadOptions{}
	for _, key := range slices.Sorted(maps.Keys(params)) {
		p := params[key]
		switch {
		case key == "config":
			v, ok := p.GetParameterChoice().(*inferencepb.ModelRepositoryParameter_StringParam)
			if !ok {
				return nil, errorf(triton.InvalidArgument, "invalid value type for load parameter '%s', expected string_param.", key)
			}
			opts.Config = v.StringParam
		case strings.HasPrefix(key, "file:"):
			v, ok := p.GetParameterChoice().(*inferencepb.ModelRepositoryParameter_BytesParam)
			if !ok {
				return nil, errorf(triton.InvalidArgument, "invalid value type for load parameter '%s', expected bytes_param.", key)
			}
			if opts.Files == nil {
				opts.Files = make(map[string][]byte)
			}
			opts.Files[strings.TrimPrefix(key, "file:")] = v.BytesParam
		default:
			return nil, errorf(triton.InvalidArgument, "unrecognized load parameter '%s'.", key)
		}
	}
	return opts, nil
}

// RepositoryModelUnload unloads a model, and with the parameter
// unload_dependents (bool_param) true the models loaded along with it;
// other parameters are ignored, as in Triton. The unload runs to its end
// even if the call is cancelled.
func (s *Service) RepositoryModelUnload(ctx context.Context, req *inferencepb.RepositoryModelUnloadRequest) (*inferencepb.RepositoryModelUnloadResponse, error) {
	if err := s.allowed(ctx, wire.ModelRepository); err != nil {
		return nil, err
	}
	if req.GetRepositoryName() != "" {
		return nil, s.toStatus(errRepositoryName)
	}
	opts := &triton.UnloadOptions{}
	if p, ok := req.GetParameters()["unload_dependents"]; ok {
		v, ok := p.GetParameterChoice().(*inferencepb.ModelRepositoryParameter_BoolParam)
		if !ok {
			return nil, s.toStatus(errorf(triton.InvalidArgument, "invalid value type for 'unload_dependents' parameter, expected bool_param."))
		}
		opts.Dependents = v.BoolParam
	}
	if err := s.srv.Unload(context.WithoutCancel(ctx), req.GetModelName(), opts); err != nil {
		return nil, s.toStatus(err)
	}
	return &inferencepb.RepositoryModelUnloadResponse{}, nil
}
