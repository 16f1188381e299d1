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
// # Optional capabilities
//
// A backend should implement, where it can:
//
//   - [ConfigCompleter] on the Backend: fill inputs, outputs and
//     max_batch_size from the model file (Triton's auto-complete).
//   - [Warmer] on the Instance: prepare before taking traffic.
//   - [Readier] on the Instance: report health for readiness probes.
//   - [SequenceObserver] on the Model of a stateful (sequence_batching)
//     model: learn when a sequence ends, to free what it kept for it.
//
// Models that call other models (Triton's BLS, and the ensemble scheduler)
// use the [Caller] in their [ModelSpec]. Stateful models receive the
// sequence's control and state tensors as ordinary inputs; a tensor whose
// batch is not its first dimension has a [Layout] that [Batch.Input] and
// [Batch.SetOutput] follow.
//
// The server discovers them with the helpers [CompleteConfig], [Warmup] and
// [Ready], which look through instance decorators that implement [Wrapper].
// New capabilities will be new interfaces, never new methods on the required
// ones.
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
