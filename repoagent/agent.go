package repoagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/triton-go/triton/modelconfig"
)

// Model is the model an agent acts on.
type Model struct {
	// Name is the model's name.
	Name string
	// FS is rooted at the model folder (config.pbtxt, "1/model.onnx", ...).
	FS fs.FS
	// Config is the model's configuration as the server read it.
	Config *modelconfig.ModelConfig
	// Stat, when set, describes a file of the model folder without
	// opening it (the server's answers from the disk); nil: fs.Stat of FS.
	Stat func(file string) (fs.FileInfo, error)
}

// stat describes file without opening it where m can.
func (m Model) stat(file string) (fs.FileInfo, error) {
	if m.Stat != nil {
		return m.Stat(file)
	}
	return fs.Stat(m.FS, file)
}

// Agent is a repository agent: Load runs when the server loads a model
// whose configuration names the agent, with the parameters the
// configuration gives it, before the model's backend loads it. An error
// fails the load; it should name the file and the problem.
type Agent interface {
	Load(ctx context.Context, m Model, params map[string]string) error
}

// Func is an [Agent] made of a function.
type Func func(ctx context.Context, m Model, params map[string]string) error

// Load calls f.
func (f Func) Load(ctx context.Context, m Model, params map[string]string) error {
	return f(ctx, m, params)
}

// Builtin returns the agents every server has, by name: "checksum".
func Builtin() map[string]Agent {
	return map[string]Agent{"checksum": Checksum{}}
}

// ErrUnknownAgent is wrapped by the error of [Run] for an agent that is
// not among the server's.
var ErrUnknownAgent = errors.New("unknown repository agent")

// Run runs, in the order the configuration lists them, the agents m's
// configuration names, each found by name in agents.
func Run(ctx context.Context, m Model, agents map[string]Agent) error {
	for _, ac := range m.Config.GetModelRepositoryAgents().GetAgents() {
		a, ok := agents[ac.GetName()]
		if !ok {
			return fmt.Errorf("repository agent '%s' of model '%s' is not one this server has (%s; a Go program adds its own with triton.WithRepositoryAgent): %w",
				ac.GetName(), m.Name, strings.Join(slices.Sorted(maps.Keys(agents)), ", "), ErrUnknownAgent)
		}
		if err := a.Load(ctx, m, ac.GetParameters()); err != nil {
			return fmt.Errorf("repository agent '%s': %w", ac.GetName(), err)
		}
	}
	return nil
}
