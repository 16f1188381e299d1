package fil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// Name is the backend's name in config.pbtxt (backend: "fil").
const Name = "fil"

// Tensor names, fixed by Triton FIL.
const (
	InputName  = "input__0"
	OutputName = "output__0"
	SHAPName   = "treeshap_output"
)

func init() { backend.Register(Name, New()) }

// Backend serves tree models with Triton FIL's configuration.
type Backend struct{}

// New returns the FIL backend.
func New() *Backend { return &Backend{} }

var (
	_ backend.Backend        = (*Backend)(nil)
	_ backend.Model          = (*model)(nil)
	_ backend.MemoryReporter = (*model)(nil)
)

// model is a loaded tree model: the forest, shared by the instances
// (Predict is safe for concurrent use), and how to shape its outputs.
type model struct {
	name     string
	forest   Forest
	p        params
	features int
	// outDims is output__0's dims (without the batch dimension); shapDims
	// treeshap_output's, nil when the config does not declare it.
	outDims, shapDims []int64
	size              int64 // the model file's bytes, reported as its memory
}

// Load reads the model's parameters, checks its tensors against FIL's
// rules and the model file, and loads the forest.
func (b *Backend) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	cfg := spec.Config
	fail := func(format string, args ...any) error {
		return fmt.Errorf("fil: model '%s': %s: %w", spec.Name, fmt.Sprintf(format, args...), backend.ErrInvalidInput)
	}
	p, err := readParams(cfg, spec.Logger)
	if err != nil {
		return nil, fmt.Errorf("fil: model '%s': %w", spec.Name, err)
	}
	if cfg.GetMaxBatchSize() <= 0 {
		return nil, fail("max_batch_size must be set (greater than 0): FIL models batch their rows")
	}
	in := findTensor(cfg.GetInput(), InputName)
	if in == nil || len(cfg.GetInput()) != 1 {
		return nil, fail("FIL models have exactly one input, named %s (TYPE_FP32, dims [ n_features ])", InputName)
	}
	if in.GetDataType() != modelconfig.DataType_TYPE_FP32 || len(in.GetDims()) != 1 || in.GetDims()[0] <= 0 {
		return nil, fail("input %s must be TYPE_FP32 with dims [ n_features ], not %s %v", InputName, in.GetDataType(), in.GetDims())
	}
	out := findTensor(cfg.GetOutput(), OutputName)
	if out == nil || out.GetDataType() != modelconfig.DataType_TYPE_FP32 {
		return nil, fail("FIL models have an output %s of TYPE_FP32", OutputName)
	}
	for _, o := range cfg.GetOutput() {
		if o.GetName() != OutputName && o.GetName() != SHAPName {
			return nil, fail("output %q is not one of FIL's (%s, %s)", o.GetName(), OutputName, SHAPName)
		}
	}

	file := spec.ModelFilename(defaultFiles[p.modelType])
	shown := path.Join(spec.Name, strconv.FormatInt(spec.Version, 10), file)
	vfs, err := spec.VersionFS()
	if err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(vfs, file)
	if err != nil {
		return nil, fmt.Errorf("fil: model '%s': model file %s (model_type %s): %w", spec.Name, shown, p.modelType, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	forest, err := openForest(p, shown, data)
	if err != nil {
		return nil, fmt.Errorf("fil: model '%s': %w", spec.Name, err)
	}
	m := &model{name: spec.Name, forest: forest, p: p, features: forest.Features(), size: int64(len(data))}
	if err := m.check(in, out, findTensor(cfg.GetOutput(), SHAPName)); err != nil {
		_ = forest.Close()
		return nil, fail("%v", err)
	}
	return m, nil
}

// check holds the config's dims to what the forest gives (spec §B3).
func (m *model) check(in, out, shap *modelconfig.ModelOutput) error {
	if n := in.GetDims()[0]; n != int64(m.features) {
		return fmt.Errorf("input %s has dims [ %d ] but the model takes %d features", InputName, n, m.features)
	}
	k := m.forest.Outputs()
	if !m.p.isClassifier && k > 1 {
		return fmt.Errorf("the model has %d classes but is_classifier is false (FIL has no multi-output regression)", k)
	}
	var want [][]int64
	switch {
	case !m.p.isClassifier:
		want = [][]int64{{1}}
	case !m.p.predictProba:
		want = [][]int64{{1}}
	case k == 1:
		want = [][]int64{{1}, {2}}
	default:
		want = [][]int64{{int64(k)}}
	}
	if !slices.ContainsFunc(want, func(d []int64) bool { return slices.Equal(d, out.GetDims()) }) {
		return fmt.Errorf("output %s has dims %v but this model (%s) gives %v", OutputName, out.GetDims(), m.kind(), want)
	}
	m.outDims = out.GetDims()
	if shap != nil {
		want := []int64{int64(m.features) + 1}
		if k > 1 {
			want = []int64{int64(k), int64(m.features) + 1}
		}
		if shap.GetDataType() != modelconfig.DataType_TYPE_FP32 || !slices.Equal(shap.GetDims(), want) {
			return fmt.Errorf("output %s must be TYPE_FP32 with dims %v (n_features + 1 per class), not %s %v", SHAPName, want, shap.GetDataType(), shap.GetDims())
		}
		m.shapDims = want
	}
	return nil
}

// kind describes the model for messages.
func (m *model) kind() string {
	k := m.forest.Outputs()
	switch {
	case !m.p.isClassifier:
		return "a regressor"
	case k == 1 && m.p.predictProba:
		return "a binary classifier with predict_proba"
	case k == 1:
		return "a binary classifier"
	case m.p.predictProba:
		return fmt.Sprintf("a %d-class classifier with predict_proba", k)
	}
	return fmt.Sprintf("a %d-class classifier", k)
}

// findTensor returns the config's tensor named name, or nil. Inputs and
// outputs share the one shape that matters here.
func findTensor[T interface{ GetName() string }](ts []T, name string) *modelconfig.ModelOutput {
	for _, t := range ts {
		if t.GetName() != name {
			continue
		}
		switch x := any(t).(type) {
		case *modelconfig.ModelOutput:
			return x
		case *modelconfig.ModelInput:
			return &modelconfig.ModelOutput{Name: x.GetName(), DataType: x.GetDataType(), Dims: x.GetDims()}
		}
	}
	return nil
}

// MemoryBytes reports the model file's size: the forest's trees hold
// about as much as their serialization.
func (m *model) MemoryBytes() (int64, error) { return m.size, nil }

// NewInstance returns an instance over the shared forest.
func (m *model) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return &instance{m: m}, nil
}

// Close releases the forest.
func (m *model) Close() error { return m.forest.Close() }

// instance runs batches on the model's forest.
type instance struct{ m *model }

// Close does nothing: the forest is the model's.
func (*instance) Close() error { return nil }

var errNoRows = errors.New("no rows")

// rowsOf returns a request's rows, refusing infinities (NaN is a missing
// value, as in FIL).
func (m *model) rowsOf(r *backend.Request) ([]float32, int, error) {
	t, ok := r.Input(InputName)
	if !ok {
		return nil, 0, fmt.Errorf("model '%s': request has no input %s: %w", m.name, InputName, backend.ErrInvalidInput)
	}
	xs, err := tensor.View[float32](t)
	if err != nil {
		return nil, 0, fmt.Errorf("model '%s': input %s: %v: %w", m.name, InputName, err, backend.ErrInvalidInput)
	}
	if len(xs) == 0 {
		return nil, 0, errNoRows
	}
	for i, x := range xs {
		if math.IsInf(float64(x), 0) { // NaN is a missing value
			return nil, 0, fmt.Errorf("model '%s': input %s row %d feature %d is %v: tree models take finite values, or NaN for a missing one: %w",
				m.name, InputName, i/m.features, i%m.features, x, backend.ErrInvalidInput)
		}
	}
	return xs, len(xs) / m.features, nil
}
