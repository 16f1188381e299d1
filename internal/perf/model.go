package perf

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// model.go is perf_analyzer's ModelParser: what the tool needs to know
// about the model under test, from its metadata and configuration.

// tensorInfo is one model input or output.
type tensorInfo struct {
	name  string
	dtype tensor.DataType
	// shape is the model's shape without the batch dimension, -1 for a
	// variable dimension.
	shape []int64
	// optional and shapeTensor come from the configuration.
	optional, shapeTensor bool
}

// modelID names a model version; version "" is the server's choice.
type modelID struct{ name, version string }

// modelInfo is the model under test.
type modelInfo struct {
	name     string
	version  string // as given with -x
	maxBatch int64
	// decoupled models may answer with any number of responses.
	decoupled bool
	// sequence is a model with sequence batching (or an ensemble with
	// one among its composing models).
	sequence bool
	// ensemble lists, for the model and each composing ensemble, its
	// steps' models; empty for other models.
	composing     map[string][]modelID
	responseCache bool
	// inputs and outputs are sorted by name, as perf_analyzer's std::map
	// holds them (which decides which missing tensor is named first).
	inputs, outputs []tensorInfo
}

func (m *modelInfo) ensemble() bool { return len(m.composing) > 0 }

// loadModel reads the model's metadata and configuration. Its errors name
// what failed as perf_analyzer's do ("failed to get model metadata: ...").
func loadModel(ctx context.Context, conn client.Conn, name, version string) (*modelInfo, error) {
	ver, err := parseVersion(version)
	if err != nil {
		return nil, err
	}
	md, err := conn.ModelMetadata(ctx, name, ver)
	if err != nil {
		return nil, fmt.Errorf("failed to get model metadata: %w", err)
	}
	cfg, err := conn.ModelConfig(ctx, name, ver)
	if err != nil {
		return nil, fmt.Errorf("failed to get model config: %w", err)
	}
	m := &modelInfo{
		name:          name,
		version:       version,
		maxBatch:      int64(cfg.GetMaxBatchSize()),
		decoupled:     cfg.GetModelTransactionPolicy().GetDecoupled(),
		sequence:      cfg.GetSequenceBatching() != nil,
		responseCache: cfg.GetResponseCache().GetEnable(),
		composing:     map[string][]modelID{},
	}
	if err := m.addComposing(ctx, conn, name, cfg, 0); err != nil {
		return nil, fmt.Errorf("failed to create model parser: %w", err)
	}
	configured := map[string]*modelconfig.ModelInput{}
	for _, in := range cfg.GetInput() {
		configured[in.GetName()] = in
	}
	for _, in := range md.Inputs {
		t, err := tensorFromMetadata(in.Name, in.DataType, in.Shape, m.maxBatch > 0)
		if err != nil {
			return nil, fmt.Errorf("failed to create model parser: %w", err)
		}
		if c := configured[in.Name]; c != nil {
			t.optional, t.shapeTensor = c.GetOptional(), c.GetIsShapeTensor()
		}
		m.inputs = append(m.inputs, t)
	}
	for _, out := range md.Outputs {
		t, err := tensorFromMetadata(out.Name, out.DataType, out.Shape, m.maxBatch > 0)
		if err != nil {
			return nil, fmt.Errorf("failed to create model parser: %w", err)
		}
		m.outputs = append(m.outputs, t)
	}
	byName := func(a, b tensorInfo) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(m.inputs, byName)
	slices.SortFunc(m.outputs, byName)
	return m, nil
}

// parseVersion reads -x: "" for the server's choice, else a positive
// integer.
func parseVersion(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("failed to get model metadata: -x %q is not a model version (a positive integer)", v)
	}
	return n, nil
}

// tensorFromMetadata takes the batch dimension off a batching model's
// shape, as ModelParser::InitTriton does.
func tensorFromMetadata(name, dtype string, shape []int64, batching bool) (tensorInfo, error) {
	dt := tensor.ParseDataType(dtype)
	if !dt.Valid() {
		return tensorInfo{}, fmt.Errorf("tensor '%s' has data type '%s', which this tool does not know", name, dtype)
	}
	if batching && len(shape) > 0 {
		shape = shape[1:]
	}
	return tensorInfo{name: name, dtype: dt, shape: slices.Clone(shape)}, nil
}

// addComposing records an ensemble's steps, recursively, as
// ModelParser::AddEnsembleComposingModels does; a composing model with
// sequence batching makes the ensemble a sequence model.
func (m *modelInfo) addComposing(ctx context.Context, conn client.Conn, name string, cfg *modelconfig.ModelConfig, depth int) error {
	if cfg.GetPlatform() != "ensemble" || depth > 16 {
		return nil
	}
	for _, step := range cfg.GetEnsembleScheduling().GetStep() {
		id := modelID{name: step.GetModelName()}
		ver := step.GetModelVersion()
		if ver > 0 {
			id.version = strconv.FormatInt(ver, 10)
		}
		if slices.Contains(m.composing[name], id) {
			continue
		}
		m.composing[name] = append(m.composing[name], id)
		sub, err := conn.ModelConfig(ctx, id.name, max(ver, 0))
		if err != nil {
			return err
		}
		if sub.GetSequenceBatching() != nil {
			m.sequence = true
		}
		if err := m.addComposing(ctx, conn, id.name, sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// shapeString is perf_analyzer's ShapeVecToString: "[1,2,3]".
func shapeString(s []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	b.WriteByte(']')
	return b.String()
}
