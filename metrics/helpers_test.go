package metrics_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer starts a server over an in-memory repository and closes it when
// the test ends.
func newServer(t testing.TB, files map[string]string, opts ...triton.Option) *triton.Server {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	srv, err := triton.New(append([]triton.Option{triton.WithRepository(fsys)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// model returns the files of a model with one INT32 [1] input INPUT0 and
// one output OUTPUT0, served by backend name, with extra config text.
func model(name, backendName string, maxBatch, instances int, extra string) map[string]string {
	return map[string]string{
		name + "/config.pbtxt": fmt.Sprintf(`backend: "%s"
max_batch_size: %d
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: %d kind: KIND_CPU } ]
%s`, backendName, maxBatch, instances, extra),
		name + "/1/x": "",
	}
}

// merge joins repositories.
func merge(repos ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, r := range repos {
		for k, v := range r {
			out[k] = v
		}
	}
	return out
}

// request is a one-row request for such a model.
func request(t testing.TB, model, id string) *triton.InferRequest {
	in, err := tensor.From("INPUT0", tensor.Shape{1, 1}, []int32{7})
	if err != nil {
		t.Fatal(err)
	}
	return &triton.InferRequest{Model: model, ID: id, Inputs: []tensor.Tensor{in}}
}

// mirror answers each request with its own input; it fails requests whose
// ID is "fail".
var mirror = backend.Func(func(_ context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		if r.ID == "fail" {
			return fmt.Errorf("asked to fail")
		}
		out := r.Inputs[0]
		out.Name = "OUTPUT0"
		r.SetOutput(out)
	}
	return nil
})

// sleeper is mirror after a sleep of d per execution.
func sleeper(d time.Duration) backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		time.Sleep(d)
		return mirror(ctx, b)
	}
}

// gated is mirror that blocks each execution until the test releases it,
// so that requests queue meanwhile; started receives one value per
// execution.
type gated struct {
	started, release chan struct{}
}

func newGated() *gated {
	return &gated{started: make(chan struct{}, 100), release: make(chan struct{}, 100)}
}

func (g *gated) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		g.started <- struct{}{}
		<-g.release
		return mirror(ctx, b)
	}
}

type result struct {
	resp *triton.InferResponse
	err  error
}

func goInfer(srv *triton.Server, ctx context.Context, req *triton.InferRequest) chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := srv.Infer(ctx, req)
		ch <- result{resp, err}
	}()
	return ch
}

// waitQueued polls the model's statistics until its batcher holds n
// requests.
func waitQueued(t testing.TB, srv *triton.Server, model string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := srv.Stats(model, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d queued, want %d", model, st[0].Queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// gather registers the collectors on a fresh pedantic registry and gathers.
func gather(t testing.TB, cs ...prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return mfs
}

// family returns the family named name, or nil.
func family(mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name })
	if i < 0 {
		return nil
	}
	return mfs[i]
}

// series returns the metric of family name whose labels include every
// "name=value" pair given, failing the test when there is none.
func series(t testing.TB, mfs []*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	mf := family(mfs, name)
	if mf == nil {
		t.Fatalf("no family %s", name)
	}
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labels) {
			return m
		}
	}
	t.Fatalf("family %s has no series with %v", name, labels)
	return nil
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for _, l := range labels {
		name, value, _ := strings.Cut(l, "=")
		if !slices.ContainsFunc(m.GetLabel(), func(p *dto.LabelPair) bool { return p.GetName() == name && p.GetValue() == value }) {
			return false
		}
	}
	return true
}

// value returns a counter's or gauge's value.
func value(t testing.TB, mfs []*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := series(t, mfs, name, labels...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

// familyNames lists the families gathered.
func familyNames(mfs []*dto.MetricFamily) []string {
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}
