// metadata.go tells about the server and its models: metadata,
// configurations, summaries and readiness.

package triton

import (
	"context"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/modelconfig"
)

// ServerMetadata describes the server, as KServe's server metadata does.
type ServerMetadata struct {
	Name       string
	Version    string
	Extensions []string
}

// Metadata returns the server's name ([WithServerID]; [Name] by default),
// version and protocol extensions ("trace" with a tracer, [WithTracer]).
func (s *Server) Metadata() ServerMetadata {
	ext := slices.Clone(extensions)
	if s.opts.tracer != nil {
		ext = append(ext, "trace")
	}
	return ServerMetadata{Name: s.opts.id, Version: Version, Extensions: ext}
}

// extensions lists the Triton protocol extensions the core supports; the
// adapters report them.
var extensions = []string{"sequence", "parameters"}

// TensorMetadata describes one model input or output as clients see it:
// Shape carries a -1 batch dimension in front when the model batches.
type TensorMetadata struct {
	Name     string
	DataType string
	Shape    []int64
}

// ModelMetadata describes a model, as KServe's model metadata does.
type ModelMetadata struct {
	Name     string
	Versions []string // the loaded versions, as decimal strings, ascending
	Platform string   // config platform, or backend when no platform is set
	Inputs   []TensorMetadata
	Outputs  []TensorMetadata
}

// ModelMetadata describes a loaded model version; version 0 means the one a
// request without a version would use.
func (s *Server) ModelMetadata(model string, ver int64) (ModelMetadata, error) {
	v, e, err := s.find(model, ver)
	if err != nil {
		return ModelMetadata{}, err
	}
	md := ModelMetadata{Name: model, Platform: v.cfg.GetPlatform()}
	if md.Platform == "" {
		md.Platform = v.cfg.GetBackend()
	}
	for i := len(e.versions) - 1; i >= 0; i-- {
		md.Versions = append(md.Versions, strconv.FormatInt(e.versions[i].number, 10))
	}
	for i := range v.sig.Inputs {
		ts := &v.sig.Inputs[i]
		md.Inputs = append(md.Inputs, TensorMetadata{Name: ts.Name, DataType: ts.DataType.String(), Shape: v.sig.FullShape(ts).Clone()})
	}
	for i := range v.sig.Outputs {
		ts := &v.sig.Outputs[i]
		md.Outputs = append(md.Outputs, TensorMetadata{Name: ts.Name, DataType: ts.DataType.String(), Shape: v.sig.FullShape(ts).Clone()})
	}
	return md, nil
}

// ModelConfig returns a copy of the configuration a loaded model version
// runs with: normalized and, unless strict configuration is on, completed by
// its backend. Version 0 means the version a request without a version
// would use.
func (s *Server) ModelConfig(model string, ver int64) (*modelconfig.ModelConfig, error) {
	v, _, err := s.find(model, ver)
	if err != nil {
		return nil, err
	}
	return proto.CloneOf(v.cfg), nil
}

// ModelSummary holds what an adapter checks on every request to a loaded
// model version. Getting one does not allocate.
type ModelSummary struct {
	Version      int64 // the version number a request with this version would use
	MaxBatchSize int32 // 0: the model does not batch
	Decoupled    bool  // model_transaction_policy.decoupled: the model may answer with any number of responses
}

// ModelSummary returns a loaded model version's summary; version 0 means
// the version a request without a version would use. With loads on
// demand ([WithLoadOnDemand]) a model that is not loaded is loaded first,
// as for a request, within ctx.
//
// # Experimental
//
// It exists for the adapters' per-request checks and may change with
// them (decoupled streaming is coming).
func (s *Server) ModelSummary(ctx context.Context, model string, ver int64) (ModelSummary, error) {
	v, err := s.enter(ctx, model, ver, nil)
	if err != nil {
		return ModelSummary{}, err
	}
	s.exit(v, false)
	return ModelSummary{
		Version:      v.number,
		MaxBatchSize: v.cfg.GetMaxBatchSize(),
		Decoupled:    v.cfg.GetModelTransactionPolicy().GetDecoupled(),
	}, nil
}

// ModelReady reports whether a model version is ready for inference.
// Version 0 asks about the version a request without a version would use
// (the highest-numbered ready one).
func (s *Server) ModelReady(ctx context.Context, model string, ver int64) bool {
	if s.closing.Load() {
		return false
	}
	e := s.table.Load().models[model]
	if e == nil || e.state == stateUnloading {
		return false
	}
	for _, v := range e.versions {
		if (ver == 0 || v.number == ver) && v.ready(ctx) {
			return true
		}
	}
	return false
}
