package perf

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testdata is the folder of the golden files, absolute: some tests change
// the working directory.
var testdata, _ = filepath.Abs("testdata")

// fakeServer is a client.Conn over models whose requests take fake time
// (tests run in testing/synctest bubbles): each request sleeps serve's
// duration and comes back with its inputs as outputs; the statistics
// extension counts what it served.
type fakeServer struct {
	configs    map[string]*modelconfig.ModelConfig
	extensions []string
	// delay is request n's service time (0-based, in arrival order).
	delay func(n int) time.Duration
	// fail, when set, is request n's error.
	fail func(n int) error
	// responses is a decoupled model's response count per request.
	responses int
	// serial makes the server run one request at a time.
	serial  bool
	metaErr error

	gate chan struct{} // serial's: a channel, on which synctest can wait
	mu   sync.Mutex
	// mu protects the following.
	n     int
	stats map[string]*triton.ModelStats
	seqs  []triton.InferRequest // sequence fields of each request
	shm   map[string]string     // registered regions
	// inShm counts requests whose inputs were in a region, with no data.
	inShm int
}

func newFake(t *testing.T, configs ...string) *fakeServer {
	t.Helper()
	f := &fakeServer{configs: map[string]*modelconfig.ModelConfig{}, stats: map[string]*triton.ModelStats{},
		extensions: []string{"statistics"}, delay: func(int) time.Duration { return time.Millisecond },
		gate: make(chan struct{}, 1)}
	for _, c := range configs {
		cfg, err := repository.ParseConfig("config.pbtxt", []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		f.configs[cfg.GetName()] = cfg
		f.stats[cfg.GetName()] = &triton.ModelStats{Name: cfg.GetName(), Version: 1}
	}
	return f
}

var _ client.Conn = (*fakeServer)(nil)

func (f *fakeServer) model(name string) (*modelconfig.ModelConfig, error) {
	if f.metaErr != nil {
		return nil, f.metaErr
	}
	c, ok := f.configs[name]
	if !ok {
		return nil, &triton.Error{Code: triton.InvalidArgument, Model: name, Err: errors.New("Request for unknown model: '" + name + "' is not found")}
	}
	return c, nil
}

func (f *fakeServer) Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	cfg, err := f.model(req.Model)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	n := f.n
	f.n++
	f.seqs = append(f.seqs, triton.InferRequest{SequenceID: req.SequenceID, SequenceStart: req.SequenceStart, SequenceEnd: req.SequenceEnd})
	for k, v := range req.Parameters {
		if _, ok := v.(client.Region); ok && strings.HasPrefix(k, "client.input_region/") && len(req.Inputs) > 0 && req.Inputs[0].Data == nil {
			f.inShm++
		}
	}
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(n); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if f.serial {
		f.gate <- struct{}{}
		defer func() { <-f.gate }()
	}
	queued := time.Since(start)
	d := f.delay(n)
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	batch := uint64(1)
	if cfg.GetMaxBatchSize() > 0 && len(req.Inputs) > 0 && len(req.Inputs[0].Shape) > 0 {
		batch = uint64(req.Inputs[0].Shape[0])
	}
	f.count(req.Model, batch, queued, d*8/10)
	if tm := client.ContextTiming(ctx); tm != nil {
		// What a remote client would report of its own work.
		tm.Send, tm.Recv = 20*time.Microsecond, 30*time.Microsecond
	}
	resp := &triton.InferResponse{Model: req.Model, Version: 1}
	for i, in := range req.Inputs {
		if i < len(cfg.GetOutput()) {
			in.Name = cfg.GetOutput()[i].GetName()
			resp.Outputs = append(resp.Outputs, in)
		}
	}
	return resp, nil
}

// count adds a served request to the model's statistics (and to its
// ensemble steps' models).
func (f *fakeServer) count(model string, batch uint64, queue, compute time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	add := func(name string, q, c time.Duration) {
		s := f.stats[name]
		s.InferenceCount += batch
		s.ExecutionCount++
		s.Success.Count++
		s.Success.Total += q + c + 10*time.Microsecond
		s.Queue.Count++
		s.Queue.Total += q
		s.ComputeInput.Count++
		s.ComputeInfer.Count++
		s.ComputeInfer.Total += c
		s.ComputeOutput.Count++
	}
	add(model, queue, compute)
	for _, st := range f.configs[model].GetEnsembleScheduling().GetStep() {
		add(st.GetModelName(), queue/2, compute/2)
	}
}

func (f *fakeServer) InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
	return func(yield func(*triton.InferResponse, error) bool) {
		if f.responses == 0 {
			resp, err := f.Infer(ctx, req)
			if resp != nil {
				resp.Final = true
			}
			yield(resp, err)
			return
		}
		for range f.responses {
			resp, err := f.Infer(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(resp, nil) {
				return
			}
		}
		yield(&triton.InferResponse{Model: req.Model, Final: true}, nil)
	}
}

func (f *fakeServer) ServerMetadata(context.Context) (triton.ServerMetadata, error) {
	return triton.ServerMetadata{Name: "fake", Extensions: f.extensions}, nil
}

func (f *fakeServer) ServerReady(context.Context) (bool, error) { return true, nil }
func (f *fakeServer) ServerLive(context.Context) (bool, error)  { return true, nil }
func (f *fakeServer) ModelReady(_ context.Context, m string, _ int64) (bool, error) {
	_, err := f.model(m)
	return err == nil, nil
}

func (f *fakeServer) ModelMetadata(_ context.Context, name string, _ int64) (triton.ModelMetadata, error) {
	cfg, err := f.model(name)
	if err != nil {
		return triton.ModelMetadata{}, err
	}
	md := triton.ModelMetadata{Name: name, Versions: []string{"1"}}
	conv := func(n string, dt modelconfig.DataType, dims []int64) triton.TensorMetadata {
		shape := dims
		if cfg.GetMaxBatchSize() > 0 {
			shape = append([]int64{-1}, dims...)
		}
		return triton.TensorMetadata{Name: n, DataType: tensor.ParseConfigDataType(dt.String()).String(), Shape: shape}
	}
	for _, in := range cfg.GetInput() {
		md.Inputs = append(md.Inputs, conv(in.GetName(), in.GetDataType(), in.GetDims()))
	}
	for _, out := range cfg.GetOutput() {
		md.Outputs = append(md.Outputs, conv(out.GetName(), out.GetDataType(), out.GetDims()))
	}
	return md, nil
}

func (f *fakeServer) ModelConfig(_ context.Context, name string, _ int64) (*modelconfig.ModelConfig, error) {
	return f.model(name)
}

func (f *fakeServer) ModelStatistics(_ context.Context, name string, _ int64) ([]triton.ModelStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []triton.ModelStats
	for n, s := range f.stats {
		if name == "" || n == name {
			out = append(out, *s)
		}
	}
	return out, nil
}

func (f *fakeServer) Close() error { return nil }

// RegisterSystemSharedMemory and the rest make the fake a
// client.SystemSharedMemory.
func (f *fakeServer) RegisterSystemSharedMemory(_ context.Context, name, key string, _, _ uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shm == nil {
		f.shm = map[string]string{}
	}
	f.shm[name] = key
	return nil
}

func (f *fakeServer) UnregisterSystemSharedMemory(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.shm, name)
	return nil
}

// run runs Main against f and returns its status and outputs.
func run(f *fakeServer, ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	dial := func(context.Context, *Config) (client.Conn, error) { return f, nil }
	st := Main(ctx, args, &out, &errb, dial)
	return st, out.String(), errb.String()
}

// golden compares got with testdata/<name>.golden (rewritten by -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(testdata, name+".golden")
	if *update {
		if err := os.MkdirAll(testdata, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

const simpleConfig = `name: "simple"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]`
