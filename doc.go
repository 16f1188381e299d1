// Package triton hosts a Triton Inference Server model repository inside a
// Go program.
//
//	srv, err := triton.New(triton.WithModelRepository("models"))
//	...
//	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "add", Inputs: inputs})
//
// # Architecture
//
// A model repository laid out exactly as Triton's (`<model>/config.pbtxt`,
// `<model>/<version>/...`, parsed by package repository) names, for every
// model, a backend (package backend: ONNX Runtime, Go functions, ...). For
// each version its version policy selects, the server asks the backend to
// load the model and to create one instance per instance_group instance.
// [Server.Infer] validates a request against the model configuration
// (inputs, datatypes, shapes, byte sizes, BYTES framing), takes the first
// free instance and runs the backend on the caller's goroutine (there are
// no per-instance worker goroutines to hand requests to), then checks the
// outputs against the configuration too. With dynamic_batching, concurrent
// requests queue in package batcher and the first request of each batch
// runs it for all of them. With sequence_batching, batcher.Sequence admits
// the requests of each sequence and lets them run one at a time, in order,
// each with the sequence's control tensors and implicit state added by the
// server, and the ready requests of different sequences batch together the
// same way. An ensemble (platform "ensemble") is a model
// like the others, run by package ensemble: each of its steps is an
// ordinary request to a composing model, so that model's batcher applies.
// Every model gets a [backend.Caller] at load ([backend.ModelSpec]) through
// which a Go backend calls other models (Triton's BLS); the ensemble
// scheduler uses the same one. Models are published in an immutable table read
// without locks on the request path; a reload builds the new versions
// completely before publishing them and retires the old ones once their
// requests are done.
//
// # Entry points
//
//   - [New] with options ([WithModelRepository], [WithBackend],
//     [WithModelControl], [WithResponseCache], [WithRateLimiter], ...).
//   - [Server.Infer] from any number of goroutines, or [Server.Model] for a
//     handle on one model whose [Model.Infer] skips the lookup by name.
//   - [Server.InferStream] (and [Model.InferStream]) for the responses of
//     a decoupled model (model_transaction_policy { decoupled: true }) as
//     an iterator; any other model yields its one response through it.
//   - [Server.Live], [Server.Ready], [Server.ModelReady] for probes;
//     [Server.Metadata], [Server.ModelMetadata], [Server.ModelConfig],
//     [Server.ModelSummary] and [Server.Labels] describe what is loaded.
//   - [Server.Load], [Server.Unload] and [Server.Index] manage models;
//     [Server.Stats] and [WithObserver] report on them.
//   - [Server.Shutdown] and [Server.Close] end it.
//
// # Errors
//
// Every error a [Server] returns is an [*Error] carrying a [Code] (Triton's
// eight codes plus DeadlineExceeded), the model, version and request id;
// [CodeOf] classifies any error. Messages follow Triton's wording where
// clients are known to compare them ("Request for unknown model: ...").
//
// # Loading models
//
// Models load as Triton loads them: up to [WithModelLoadThreads] models at
// once (4 by default), a failed version tried again [WithModelLoadRetries]
// times, each model's configuration read from config.pbtxt or from
// configs/<name>.pbtxt ([WithModelConfigName]). Whatever the config's
// source (a file, a load's override, none), a missing backend comes from
// the model files or from a folder named <name>.<backend>
// ([repository.CompleteBackend]). A load's file overrides are held to the
// rules of real files: paths resolved inside the model folder, names of at
// most 255 bytes, paths of at most 4096.
//
// Deviations from Triton, so that no config can make a load allocate
// without bound before it fails: a model has at most
// [repository.MaxInstances] (1024) instances over all its instance
// groups, dynamic_batching at most [repository.MaxPriorityLevels] (10000)
// priority levels, an implicit sequence state at most 1 GiB per sequence,
// and a warm-up input at most 4 GiB (package warmup). Above these a load
// fails at once with InvalidArgument naming the field and the limit.
// Triton has none of these limits.
//
// # Models that come and go
//
// Beyond Triton: a memory budget ([WithMemoryBudget]) evicts idle models,
// coldest first, to make room for a load (memory.go); loads on demand
// ([WithLoadOnDemand]) load a model on its first request, one load for all
// the requests waiting, each within its own deadline (ondemand.go);
// keep_alive ([WithKeepAlive], or the model parameter) unloads a model
// idle that long. A model with requests in flight, queued or waiting for
// its load is never evicted, pinned models never are, and eviction drains
// as an unload does. [Server.Memory] reports what each version holds and
// the lifecycle counters. Explicit loads and unloads keep Triton's
// behaviour; a load refused by the budget is Unavailable.
//
// # Concurrency and lifecycle
//
// All methods are safe for concurrent use. Deadlines and cancellation come
// from the ctx of each call. [Server.Shutdown] drains in-flight requests
// before closing models; [Server.Close] answers queued requests at once,
// in serving versions and in those still retiring after a reload.
// Every goroutine the server starts ends by the time Close returns.
package triton
