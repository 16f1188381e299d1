// Command perf_analyzer measures the throughput and latency of a model
// served by a Triton-compatible server, with the command line, console
// report, CSV file and exit statuses of NVIDIA's perf_analyzer, so that
// scripts written for it (and Model Analyzer's parsing of its CSV) keep
// working:
//
//	perf_analyzer -m resnet -u localhost:8001 -i grpc --concurrency-range 1:8:2 -f out.csv
//	perf_analyzer -m text_reverse -i inprocess --model-repository examples/model_repository
//
// -i http and -i grpc use package client's HTTP and gRPC clients. -i
// inprocess (or perf_analyzer's --service-kind=triton_c_api) runs the
// server inside the tool over --model-repository, loading only -m's model
// (with its ensemble steps), with the Go backends "identity" (Triton's
// identity backend: a no-op that measures the server itself), "repeat"
// (Triton's decoupled repeat_int32 example) and "pixels" built in, and
// the onnxruntime backend in cgo builds. The measurement, its rules, the
// exit statuses and where the tool departs from perf_analyzer are
// described in package internal/perf.
//
// --advise (ours) is a batching advisor: it reloads the model with
// candidate max_batch_size, dynamic_batching and instance_group settings
// (explicit model control: in-process, or a server started with
// --model-control-mode=explicit), measures each, and prints the settings
// with the highest throughput within --latency-budget as a config.pbtxt
// snippet (package internal/advisor):
//
//	perf_analyzer -m silero -i inprocess --model-repository models --advise --latency-budget p99=50ms
//
// The first SIGINT stops the measurement and reports the steps measured
// so far (exit status 0); a second one exits at once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/perf"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Printf("Interrupt signal (%d) received.\n", s.(syscall.Signal))
		fmt.Println("Waiting for in-flight inferences to complete.")
		cancel()
		<-sig
		fmt.Println("Exiting immediately...")
		os.Exit(0)
	}()
	os.Exit(perf.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, dial))
}

// dial opens what -i asks for.
func dial(ctx context.Context, cfg *perf.Config) (client.Conn, error) {
	if cfg.Protocol != perf.InProcess {
		return dialRemote(ctx, cfg)
	}
	srv, err := triton.New(append(perf.InProcessOptions(cfg), cgoBackends()...)...)
	if err != nil {
		return nil, fmt.Errorf("starting the in-process server: %w", err)
	}
	return serverConn{client.Local(srv), srv}, nil
}

// serverConn closes the in-process server with the connection.
type serverConn struct {
	client.Conn
	srv *triton.Server
}

// Load, Unload and Index make the connection a client.Repository, as the
// one it wraps is: --advise reloads the model with each setting it tries.
func (c serverConn) Load(ctx context.Context, model string, opts *triton.LoadOptions) error {
	return c.Conn.(client.Repository).Load(ctx, model, opts)
}

func (c serverConn) Unload(ctx context.Context, model string, opts *triton.UnloadOptions) error {
	return c.Conn.(client.Repository).Unload(ctx, model, opts)
}

func (c serverConn) Index(ctx context.Context) ([]triton.ModelState, error) {
	return c.Conn.(client.Repository).Index(ctx)
}

var _ client.Repository = serverConn{}

func (c serverConn) Close() error {
	err := c.Conn.Close()
	if cerr := c.srv.Close(); err == nil {
		err = cerr
	}
	return err
}
