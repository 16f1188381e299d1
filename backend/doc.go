// Package backend is the plug-in contract of triton-go: what a backend
// (ONNX Runtime, TensorRT, a Go function) implements so the server can load
// models with it and run batches on them. Backend authors import this
// package and package tensor, never the root package.
//
// # Three levels
//
// The contract follows Triton's backend → model → instance split (and
// database/sql's Driver → Connector → Conn):
//
//   - [Backend] loads a model version from its [ModelSpec] (config and
//     files). It is registered under the `backend:` name of config.pbtxt with
//     [Register], or given to one server with the root package's WithBackend.
//   - [Model] is the loaded, shared part (weights, an engine); it creates one
//     [Instance] per instance_group instance.
//   - [Instance] is one execution context; [Instance.Execute] runs a [Batch].
//
// Each level has one method plus Close. The simplest backend is a function:
// [Func] adapts func(ctx, *Batch) error into all three.
//
// # Concurrency and ownership
//
// The server drives each instance from a single goroutine: Execute is never
// called concurrently on one instance, and never after Close. Instances of a
// model run in parallel; Backend.Load and Model.NewInstance may be called
// concurrently. Input tensors are borrowed until Execute returns; outputs
// are handed to clients without a copy. See [Batch] and [Request].
//
// # Decoupled models
//
// A model whose config has model_transaction_policy { decoupled: true }
// answers a request with any number of responses (Triton's decoupled
// transaction policy): tokens of a language model, partial transcripts.
// Each of its requests carries a [Sender] ([Request.Sender]); the backend
// sends 0..N [Response] values, each with outputs or an error, and flags
// the last one Final (a final response may have no outputs). [StreamFunc]
// is the short form, a function that sends and returns.
//
//   - Where: from Execute, or from goroutines the backend starts that go
//     on after Execute returned. Execute's return frees the instance for
//     the next batch; the request's stream stays open until the final
//     response. Such goroutines belong to the Instance: its Close must
//     wait for them.
//   - Ownership: inputs are borrowed until Execute returns, as for every
//     model; a goroutine that needs them later copies them first. The
//     Request itself is not to be used after Execute returns, only its
//     Sender. Outputs passed to Send are handed to the client without a
//     copy: the backend must not write to them afterwards.
//   - Back-pressure: Send blocks while the client has not taken the
//     responses already buffered (the root package's StreamBuffer).
//   - Cancellation: when the client goes away (its context ends, it stops
//     reading) [Sender.Done] is closed and Send fails with an error
//     wrapping context.Canceled (context.DeadlineExceeded for a deadline).
//     The backend should stop work for the request and must not send
//     again. Sending after the final response fails with [ErrAfterFinal].
//   - Failure: an error from Execute, or [Request.Fail], before the final
//     response ends the stream with that error as its final response.
//   - Unload: a retiring model version waits for its open streams to end;
//     closing the server ends them with Unavailable, which the Sender
//     reports as a cancellation does. Only then are instances closed.
//
// Outputs set in Execute with [Request.SetOutput] or [Batch.SetOutput]
// are sent, when Execute returns, as the request's final response (unless
// its stream has ended already): a [Func] serves a decoupled model with one
// response per request.
//
// # Optional capabilities
//
// A backend should implement, where it can:
//
//   - [ConfigCompleter] on the Backend: fill inputs, outputs and
//     max_batch_size from the model file (Triton's auto-complete).
//   - [Warmer] on the Instance: prepare before taking traffic.
//   - [Readier] on the Instance: report health for readiness probes.
//   - [DataTypeKeeper] on the Model: let outputs whose datatype is not
//     the configuration's reach clients as produced (Triton's Python
//     backend), instead of failing their requests.
//   - [SequenceObserver] on the Model of a stateful (sequence_batching)
//     model: learn when a sequence ends, to free what it kept for it.
//   - [Queuer] on the Instance: take full batches queued behind the running
//     one under dynamic batching, and run each the moment the one before
//     ends (a model that runs on a thread of its own; not looked for
//     through a [Wrapper]).
//
// Models that call other models (Triton's BLS, and the ensemble scheduler)
// use the [Caller] in their [ModelSpec]; under explicit model control it is
// also a [ModelLoader], which loads and unloads models on their behalf
// (Triton's model loading API of the Python backend). Stateful models receive the
// sequence's control and state tensors as ordinary inputs; a tensor whose
// batch is not its first dimension has a [Layout] that [Batch.Input] and
// [Batch.SetOutput] follow.
//
// The server discovers them with the helpers [CompleteConfig], [Warmup],
// [Ready] and [KeepDataType]; those of an Instance look through instance
// decorators that implement [Wrapper]. New capabilities will be new
// interfaces, never new methods on the required ones.
//
// # Errors
//
// Backends wrap [ErrInvalidInput] (the request or config is at fault),
// [ErrUnavailable] (temporary; retry) or errors.ErrUnsupported with %w;
// anything else reaches clients as an internal error. A panic in Execute is
// recovered by the server, fails the batch with an internal error, and the
// instance is closed and created anew. Panics inside cgo callbacks cannot be
// recovered this way.
package backend
