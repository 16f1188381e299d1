package main

import (
	"context"

	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/perf"
)

// dialRemote connects to a server over HTTP or gRPC with the client
// options the command line asks for (-H, TLS, compression, JSON tensors).
func dialRemote(_ context.Context, cfg *perf.Config) (client.Conn, error) {
	opts, err := perf.ClientOptions(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Protocol == perf.GRPC {
		return client.NewGRPC(cfg.URL, opts...)
	}
	return client.NewHTTP(cfg.URL, opts...)
}
