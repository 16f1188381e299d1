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
// load the model and to create one instance per instance_group instance;
// each instance is driven by its own worker goroutine. [Server.Infer]
// validates a request against the model configuration (inputs, datatypes,
// shapes, byte sizes, BYTES framing), hands it to the first free instance
// and returns the outputs the backend produced, checked against the
// configuration too. Models are published in an immutable table read
// without locks on the request path.
//
// # Errors
//
// Every error a [Server] returns is an [*Error] carrying a [Code] (Triton's
// eight codes plus DeadlineExceeded), the model, version and request id;
// [CodeOf] classifies any error. Messages follow Triton's wording where
// clients are known to compare them ("Request for unknown model: ...").
//
// # Concurrency and lifecycle
//
// All methods are safe for concurrent use. Deadlines and cancellation come
// from the ctx of each call. [Server.Shutdown] drains in-flight requests
// before closing models; [Server.Close] answers queued requests at once.
// Every goroutine the server starts ends by the time Close returns.
package triton
