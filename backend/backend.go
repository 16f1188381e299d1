package backend

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"

	"go.uber.org/zap"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/modelmetrics"
)

// Backend is a plug-in that loads models of one kind (ONNX Runtime, a Go
// function, ...). It is registered under the name used by the `backend:` field
// of config.pbtxt, process-wide with [Register] or per server with the root
// package's WithBackend option.
//
// Load may be called concurrently, for different models and for different
// versions of one model. A Backend that holds process-level state (a runtime
// environment, a thread pool) owns it and releases it when the last Model it
// returned is closed; several servers in one process share a registered Backend.
type Backend interface {
	// Load prepares one version of a model: it reads the model files named by
	// spec and returns the shared, read-only part of the model (weights, an
	// engine). Errors should name the model and file; wrap [ErrInvalidInput]
	// for configuration the model cannot honour.
	Load(ctx context.Context, spec *ModelSpec) (Model, error)
}

// Model is one loaded model version. The server asks it for one [Instance]
// per instance_group instance; NewInstance may be called concurrently.
// Close is called once, after every instance has been closed.
type Model interface {
	// NewInstance creates one execution context of the model.
	NewInstance(ctx context.Context, spec InstanceSpec) (Instance, error)
	// Close releases the model. It is called exactly once by the server.
	Close() error
}

// Instance is one execution context of a model (one instance_group
// instance). The server never calls Execute concurrently on one Instance and
// never calls Execute after Close; different instances of a model run in
// parallel. Backend authors therefore write no locks for Execute.
type Instance interface {
	// Execute runs one batch. It reports per-request failures with
	// [Request.Fail] and produces outputs with [Batch.SetOutput] or
	// [Request.SetOutput]. A returned error fails every request of the batch
	// that has not failed on its own. Execute should return promptly with
	// ctx.Err() when ctx ends, where the runtime allows it.
	Execute(ctx context.Context, b *Batch) error
	// Close releases the instance. It is called exactly once by the server.
	Close() error
}

// ModelSpec describes the model version to load. The server owns it; backends
// read it and must not retain Config beyond the model's lifetime expecting it
// to change, nor modify it outside [ConfigCompleter.CompleteConfig].
type ModelSpec struct {
	// Name is the model name (the folder name in the repository).
	Name string
	// Version is the version being loaded (a positive integer).
	Version int64
	// Config is the normalized, validated model configuration.
	Config *modelconfig.ModelConfig
	// FS is the model folder (the one holding config.pbtxt and the version
	// folders).
	FS fs.FS
	// Dir is the local path of the model folder, or "" when the repository is
	// not on the local file system (then only FS is available).
	Dir string
	// Logger is the server's logger with the model name and version attached.
	// It is never nil.
	Logger *zap.Logger
	// Caller runs requests on the server's other models, bound to this
	// model version for cycle detection. The server always sets it; it is
	// nil only where a ModelSpec is built by hand (tests).
	Caller Caller
	// Metrics is the server's registry of model-defined metrics (Triton's
	// custom metrics, pb_utils.MetricFamily): families created there are
	// exported on /metrics beside the server's own. The model closes what
	// it creates, at the latest when it is closed. The server always sets
	// it; it is nil only where a ModelSpec is built by hand (tests).
	Metrics *modelmetrics.Registry
	// BackendDir is the folder of the model's backend in the server's
	// backend directory when the backend was found there: a Python-based
	// backend, whose model.py every model naming it runs (the config's
	// runtime is then "model.py"). Otherwise "".
	BackendDir string
}

// VersionFS returns the version folder of the model, such as "<model>/3".
func (s *ModelSpec) VersionFS() (fs.FS, error) {
	return fs.Sub(s.FS, strconv.FormatInt(s.Version, 10))
}

// VersionDir returns the local path of the version folder, or "" when the
// repository is not on the local file system.
func (s *ModelSpec) VersionDir() string {
	if s.Dir == "" {
		return ""
	}
	return filepath.Join(s.Dir, strconv.FormatInt(s.Version, 10))
}

// ModelFilename returns the model file name inside the version folder:
// default_model_filename from the config, or def when it is empty.
func (s *ModelSpec) ModelFilename(def string) string {
	if f := s.Config.GetDefaultModelFilename(); f != "" {
		return f
	}
	return def
}

// Parameter returns the string value of a config `parameters` entry.
func (s *ModelSpec) Parameter(key string) (string, bool) {
	p, ok := s.Config.GetParameters()[key]
	if !ok {
		return "", false
	}
	return p.GetStringValue(), true
}

// InstanceSpec describes one instance to create.
type InstanceSpec struct {
	// Name identifies the instance, "<group name>_<index>".
	Name string
	// Group is the (normalized) instance group the instance belongs to.
	Group *modelconfig.ModelInstanceGroup
	// Kind is the group's kind, never KIND_AUTO (the server resolves it).
	Kind modelconfig.ModelInstanceGroup_Kind
	// Index counts the instances of the group from 0.
	Index int
	// DeviceID is the GPU the instance runs on for KIND_GPU, otherwise -1.
	DeviceID int
}
