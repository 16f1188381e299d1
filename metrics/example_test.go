package metrics_test

import (
	"context"
	"fmt"
	"os"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/tensor"
)

// exampleServer serves model "echo" (one INT32 [1] input, answered with
// itself) and sends it three requests.
func exampleServer(opts ...triton.Option) *triton.Server {
	repo := fstest.MapFS{
		"echo/config.pbtxt": {Data: []byte(`backend: "echo" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`)},
		"echo/1/model.txt": {},
	}
	echo := backend.Func(func(_ context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			out := r.Inputs[0]
			out.Name = "OUTPUT0"
			r.SetOutput(out)
		}
		return nil
	})
	srv, err := triton.New(append(opts, triton.WithRepository(repo), triton.WithBackend("echo", echo))...)
	if err != nil {
		panic(err)
	}
	in, _ := tensor.From("INPUT0", tensor.Shape{2, 1}, []int32{1, 2}) // a batch of 2
	for range 3 {
		if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "echo", Inputs: []tensor.Tensor{in}}); err != nil {
			panic(err)
		}
	}
	return srv
}

// printFamilies writes the named families of reg in the text format.
func printFamilies(reg prometheus.Gatherer, names ...string) {
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		for _, n := range names {
			if mf.GetName() == n {
				expfmt.MetricFamilyToText(os.Stdout, mf)
			}
		}
	}
}

// The Collector exports the server's statistics under Triton's names; an
// application registers it on its own registry and serves that registry,
// e.g. with http.Handle("/metrics", promhttp.HandlerFor(reg,
// promhttp.HandlerOpts{})).
func ExampleNewCollector() {
	srv := exampleServer()
	defer srv.Close()

	c := metrics.NewCollector(srv, metrics.Config{})
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	printFamilies(reg, "nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count")
	// Output:
	// # HELP nv_inference_count Number of inferences performed (does not include cached requests)
	// # TYPE nv_inference_count counter
	// nv_inference_count{model="echo",version="1"} 6
	// # HELP nv_inference_exec_count Number of model executions performed (does not include cached requests)
	// # TYPE nv_inference_exec_count counter
	// nv_inference_exec_count{model="echo",version="1"} 3
	// # HELP nv_inference_request_success Number of successful inference requests, all batch sizes
	// # TYPE nv_inference_request_success counter
	// nv_inference_request_success{model="echo",version="1"} 3
}

// Latencies is installed as the server's observer before the server
// exists, then attached to it so that it can read model configurations.
func ExampleNewLatencies() {
	l := metrics.NewLatencies(metrics.LatencyConfig{StageHistograms: true, FirstResponseHistogram: true})
	srv := exampleServer(triton.WithObserver(l))
	defer srv.Close()
	l.Attach(srv) // in an application: right after triton.New, before serving

	reg := prometheus.NewRegistry()
	reg.MustRegister(l)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				fmt.Print(mf.GetName())
				for _, lp := range m.GetLabel() {
					fmt.Printf(" %s=%s", lp.GetName(), lp.GetValue())
				}
				fmt.Println(" count", h.GetSampleCount())
			}
		}
	}
	// Output:
	// nv_inference_first_response_histogram_ms model=echo version=1 count 3
	// tritongo_request_stage_seconds model=echo stage=compute_infer version=1 count 3
	// tritongo_request_stage_seconds model=echo stage=compute_input version=1 count 3
	// tritongo_request_stage_seconds model=echo stage=compute_output version=1 count 3
	// tritongo_request_stage_seconds model=echo stage=queue version=1 count 3
	// tritongo_request_stage_seconds model=echo stage=request version=1 count 3
}
