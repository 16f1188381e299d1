package backend

import (
	"context"
	"iter"
	"time"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// InferRequest is one inference request. The zero value of every optional
// field means "not given".
//
// Ownership: the input tensors (and their Data) are borrowed until Infer
// returns; the server never retains them and never writes to them.
type InferRequest struct {
	// Model is the model name. Required.
	Model string
	// Version is the model version; 0 lets the version policy choose (the
	// highest-numbered ready version).
	Version int64
	// ID is echoed in the response and in errors about the request.
	ID string
	// Inputs are the input tensors, each named as in the model configuration.
	// For a batching model (max_batch_size > 0) every input's first dimension
	// is the batch size, the same for all inputs.
	Inputs []tensor.Tensor
	// Outputs names the outputs to return; empty means all of them.
	Outputs []string
	// Parameters are request parameters passed to the backend. Values must
	// be bool, int64, uint64, float64 or string.
	Parameters map[string]any
	// Priority is the request's priority level for models whose dynamic
	// batcher has priority levels (1 is highest); 0 means the model's
	// default. A level the model does not have is InvalidArgument.
	Priority uint64
	// Timeout is the request's queue-policy timeout (Triton's "timeout"
	// request parameter): while it waits in a dynamic batcher's queue, the
	// request is rejected (or, under a DELAY policy, moved back) once it has
	// waited this long. It can only shorten the policy's non-zero default,
	// and only where the policy has allow_timeout_override; asking for one
	// elsewhere is InvalidArgument. 0 means the policy's default. Deadlines
	// come from ctx, not from this field.
	Timeout time.Duration
	// SequenceID is the correlation ID of a stateful model's sequence
	// (Triton's sequence_id; 0 means none), SequenceIDString the same as a
	// string (a non-empty one takes precedence). SequenceStart and
	// SequenceEnd flag the first and last request of the sequence. Models
	// without sequence batching ignore all four.
	SequenceID       uint64
	SequenceIDString string
	SequenceStart    bool
	SequenceEnd      bool
}

// InferResponse is the answer to an [InferRequest].
//
// Ownership: the output tensors belong to the caller. Their Data may be a
// view into a buffer the backend produced for a whole batch, so an output
// is not guaranteed to be the only reference to that memory; never write to
// one output expecting the others to stay unchanged.
type InferResponse struct {
	// Model and Version name the model version that ran the request.
	Model   string
	Version int64
	// ID is the request's ID.
	ID string
	// Outputs are the output tensors, in the order the backend produced them.
	Outputs []tensor.Tensor
	// Final marks the last response of a request on a streaming call (the
	// root package's InferStream): set on a decoupled model's final
	// response and on the one response of any other model. Infer leaves
	// it false.
	Final bool
	// Parameters are the response parameters the model set (values bool,
	// int64, uint64, float64 or string; Triton's response parameters,
	// which HTTP and gRPC clients receive); nil when it set none.
	Parameters map[string]any
}

// Output returns the output named name.
func (r *InferResponse) Output(name string) (tensor.Tensor, bool) {
	for i := range r.Outputs {
		if r.Outputs[i].Name == name {
			return r.Outputs[i], true
		}
	}
	return tensor.Tensor{}, false
}

// Caller runs requests on the models of the server a model is loaded in:
// the server hands one to every model it loads ([ModelSpec.Caller]), so
// that a backend can call other models (Triton's "business logic
// scripting", in Go) and the ensemble scheduler can run its steps. A model
// version's Caller is bound to it: a request that would call back into a
// model already on its call path (A → B → A) fails with an error naming
// the cycle instead of deadlocking.
//
// Calls may be made from Execute, synchronously or from goroutines that
// Execute waits for (or, for a decoupled model, from the goroutines that
// answer a request through its Sender, with a ctx that ends when
// [Sender.Done] is closed), with Execute's ctx (or one derived from it), so that
// the caller's deadline and cancellation reach the called models and the
// cycle check sees the call path. All methods are safe for concurrent use.
type Caller interface {
	// Infer runs one request, exactly as the server's own Infer does: the
	// called model's scheduler, batcher and response cache apply.
	Infer(ctx context.Context, req *InferRequest) (*InferResponse, error)
	// InferStream runs one request and yields its responses, as the
	// server's own InferStream does: every response of a decoupled model,
	// the one response of any other. Breaking out of the loop, or ctx
	// ending, cancels the request; the iterator returns once the called
	// model's Execute has returned.
	InferStream(ctx context.Context, req *InferRequest) iter.Seq2[*InferResponse, error]
	// ModelConfig returns a copy of the configuration of a loaded model
	// version; version 0 means the one a request without a version uses.
	ModelConfig(model string, version int64) (*modelconfig.ModelConfig, error)
	// ModelReady reports whether a model version can take requests now.
	ModelReady(ctx context.Context, model string, version int64) bool
}

// ModelLoader loads and unloads the models of the server a model is
// loaded in, on that model's behalf: what Triton's Python backend offers a
// model.py as pb_utils.load_model and unload_model. The [Caller] the server
// hands its models implements it; like the server's own Load and Unload,
// it works only under explicit model control. Pass the ctx of the
// Execute (or the Load) that makes the call: a model cannot load or unload
// a model whose load is waiting for it (its own initialize loading
// itself), which fails at once instead of deadlocking.
type ModelLoader interface {
	// LoadModel loads or reloads a model as the server's Load does and
	// returns once it serves or has failed to load. config, when not
	// empty, replaces its config.pbtxt (a ModelConfig in JSON, proto field
	// names); files, which need config, replace its folder (paths relative
	// to it, such as "1/model.onnx").
	LoadModel(ctx context.Context, model, config string, files map[string][]byte) error
	// UnloadModel starts unloading a model (and the models loaded with it,
	// the composing models of an ensemble, when dependents is set) and
	// returns without waiting for its in-flight requests, which finish;
	// new ones are refused at once. A model that is not loaded is no error.
	UnloadModel(ctx context.Context, model string, dependents bool) error
}
