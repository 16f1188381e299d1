package perf

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/internal/repeat"
)

// inprocess.go is -i inprocess: the server runs inside the tool, over
// --model-repository, with only the model under test loaded (explicit
// model control, as perf_analyzer's C API mode does), and requests are
// function calls.

// Identity is Triton's identity backend: each request's i-th input comes
// back, without a copy, as the configuration's i-th output. Under
// perf_analyzer it measures the server's own cost per request.
var Identity backend.Backend = identityBackend{}

type identityBackend struct{}

type identityModel struct {
	outputs []string
}

var (
	_ backend.Backend  = identityBackend{}
	_ backend.Model    = (*identityModel)(nil)
	_ backend.Instance = (*identityModel)(nil)
)

func (identityBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	m := &identityModel{}
	for _, o := range spec.Config.GetOutput() {
		m.outputs = append(m.outputs, o.GetName())
	}
	if len(m.outputs) != len(spec.Config.GetInput()) {
		return nil, fmt.Errorf("identity: model '%s' has %d inputs and %d outputs; the identity backend answers input i with output i: %w",
			spec.Name, len(spec.Config.GetInput()), len(m.outputs), backend.ErrInvalidInput)
	}
	return m, nil
}

func (m *identityModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return m, nil
}

// Execute answers every request of the batch with its inputs.
func (m *identityModel) Execute(_ context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		for i, in := range r.Inputs {
			if i < len(m.outputs) {
				in.Name = m.outputs[i]
				r.SetOutput(in)
			}
		}
	}
	return nil
}

func (m *identityModel) Close() error { return nil }

// InProcessOptions are the server options of -i inprocess: the built-in
// Go backends ("identity"; "repeat", Triton's decoupled repeat_int32
// example; "pixels", of the digits example ensemble), a silent logger,
// and explicit model control loading only the model under test (and, for
// an ensemble, its steps' models). The command adds the backends that
// need cgo (onnxruntime).
func InProcessOptions(cfg *Config) []triton.Option {
	return []triton.Option{
		triton.WithModelRepository(cfg.ModelRepository),
		triton.WithLogger(zap.NewNop()),
		triton.WithBackend("identity", Identity),
		triton.WithBackend("repeat", &repeat.Backend{}),
		triton.WithBackend(pixels.Name, pixels.Backend),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(cfg.Model),
	}
}
