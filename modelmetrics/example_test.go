package modelmetrics_test

import (
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/triton-go/triton/modelmetrics"
)

// A model counts its requests per user and records their sizes; the
// server's /metrics (package metrics' Collector) shows the families beside
// its own. Here a Prometheus registry of our own gathers them.
func Example() {
	r := modelmetrics.NewRegistry() // a server's is srv.ModelMetrics(), or spec.Metrics in a backend

	requests, err := r.Family("requests_by_user", "Requests per user", modelmetrics.Counter)
	if err != nil {
		panic(err)
	}
	defer requests.Close()
	alice, err := requests.Metric(map[string]string{"user": "alice"}, nil)
	if err != nil {
		panic(err)
	}
	defer alice.Close()
	alice.Increment(1)
	alice.Increment(2)

	sizes, err := r.Family("request_size", "Request sizes in elements", modelmetrics.Histogram)
	if err != nil {
		panic(err)
	}
	defer sizes.Close()
	hist, err := sizes.Metric(nil, []float64{10, 100})
	if err != nil {
		panic(err)
	}
	defer hist.Close()
	for _, n := range []float64{4, 40, 400} {
		hist.Observe(n)
	}

	if err := alice.Set(0); err != nil {
		fmt.Println(err) // a counter has no Set, as in Triton
	}
	v, _ := alice.Value()
	fmt.Println("alice:", v)

	reg := prometheus.NewRegistry()
	reg.MustRegister(r)
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		expfmt.MetricFamilyToText(os.Stdout, mf)
	}
	// Output:
	// TRITONSERVER_METRIC_KIND_COUNTER does not support Set
	// alice: 3
	// # HELP request_size Request sizes in elements
	// # TYPE request_size histogram
	// request_size_bucket{le="10"} 1
	// request_size_bucket{le="100"} 2
	// request_size_bucket{le="+Inf"} 3
	// request_size_sum 444
	// request_size_count 3
	// # HELP requests_by_user Requests per user
	// # TYPE requests_by_user counter
	// requests_by_user{user="alice"} 3
}
