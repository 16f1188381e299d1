package client

import (
	"context"
	"iter"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/modelconfig"
)

// Inferer runs inference requests. *triton.Server, *triton.Model, and this
// package's *HTTP, *GRPC and the in-process [Local] all satisfy it, so code
// written against it runs in-process or against a remote server unchanged.
type Inferer interface {
	// Infer runs one request and waits for its one response.
	Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error)
	// InferStream runs one request and yields its responses (a decoupled
	// model's many; the last has Final set).
	InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error]
}

// Conn is a connection to a server, remote or in-process: inference plus
// the protocol's other calls, each with a context. *HTTP, *GRPC and
// [Local] implement it.
type Conn interface {
	Inferer
	// ServerMetadata is GET /v2 (gRPC ServerMetadata).
	ServerMetadata(ctx context.Context) (triton.ServerMetadata, error)
	// ServerReady and ServerLive are the health endpoints.
	ServerReady(ctx context.Context) (bool, error)
	ServerLive(ctx context.Context) (bool, error)
	// ModelReady reports whether a model version (0: the default one) is ready.
	ModelReady(ctx context.Context, model string, version int64) (bool, error)
	// ModelMetadata describes a model version (0: the default one).
	ModelMetadata(ctx context.Context, model string, version int64) (triton.ModelMetadata, error)
	// ModelConfig is the configuration a model version runs with.
	ModelConfig(ctx context.Context, model string, version int64) (*modelconfig.ModelConfig, error)
	// ModelStatistics is the statistics extension: the named model
	// version, every version of the model with version 0, every model with
	// model "".
	ModelStatistics(ctx context.Context, model string, version int64) ([]triton.ModelStats, error)
	// Close releases the connection.
	Close() error
}
