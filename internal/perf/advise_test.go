package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/advisor"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// batchSim is a server whose models run in fake time (the tests run in
// testing/synctest bubbles): a dynamic batcher per model as its config
// says (instance goroutines that each take a request, then gather up to
// the largest preferred size, or max_batch_size, until the queue delay
// ends), executions that hold one of a fixed number of simulated cores
// for the model's cost of the batch, ensembles that run their steps one
// after the other, and BLS models that call another model from their
// execution. It implements client.Conn and client.Repository: a load
// with a config override replaces the model's batcher (the old one
// finishes its queue), and the statistics extension reports executions
// by batch size. Every figure is exact, so the advice is too.
type batchSim struct {
	cores chan struct{}
	specs map[string]*simSpec

	wg sync.WaitGroup // every instance goroutine

	mu sync.Mutex
	// mu protects the following.
	live   map[string]*simVersion
	loads  []string // the models loaded with an override, in order
	closed bool
}

// simSpec is what a simulated model does.
type simSpec struct {
	cfg *modelconfig.ModelConfig // as first loaded
	// cost is a batch's compute; calls, for a BLS model, the model it
	// calls once a request.
	cost  func(rows int) time.Duration
	calls string
	// maxBatchOK > 0 refuses to load a larger max_batch_size.
	maxBatchOK int
}

// simVersion is one load of a model: its config, queue and statistics.
type simVersion struct {
	cfg   *modelconfig.ModelConfig
	queue chan *simReq
	stop  chan struct{}
	stats triton.ModelStats
}

type simReq struct {
	ctx  context.Context
	enq  time.Time
	done chan struct{}
}

func newBatchSim(t *testing.T, cores int, specs map[string]*simSpec, configs ...string) *batchSim {
	t.Helper()
	s := &batchSim{cores: make(chan struct{}, cores), specs: specs, live: map[string]*simVersion{}}
	for _, c := range configs {
		cfg, err := repository.ParseConfig("config.pbtxt", []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		sp := specs[cfg.GetName()]
		if sp == nil {
			sp = &simSpec{}
			specs[cfg.GetName()] = sp
		}
		sp.cfg = cfg
		s.start(cfg)
	}
	return s
}

// start serves cfg as the model's live version; the old one, if any,
// finishes its queue and stops. Called with mu held or before use.
func (s *batchSim) start(cfg *modelconfig.ModelConfig) {
	name := cfg.GetName()
	v := &simVersion{cfg: cfg, queue: make(chan *simReq, 1<<12), stop: make(chan struct{}),
		stats: triton.ModelStats{Name: name, Version: 1}}
	if cfg.GetPlatform() != "ensemble" {
		n := 0
		for _, g := range cfg.GetInstanceGroup() {
			n += max(int(g.GetCount()), 1)
		}
		for range max(n, 1) {
			s.wg.Add(1)
			go s.instance(v)
		}
	}
	if old := s.live[name]; old != nil {
		close(old.stop)
	}
	s.live[name] = v
}

// instance is one instance's goroutine: take a request, gather a batch,
// execute; on stop, execute what is still queued, one by one, and end.
func (s *batchSim) instance(v *simVersion) {
	defer s.wg.Done()
	for {
		var first *simReq
		select {
		case first = <-v.queue:
		case <-v.stop:
			for {
				select {
				case r := <-v.queue:
					s.execute(v, []*simReq{r})
				default:
					return
				}
			}
		}
		s.execute(v, s.gather(v, first))
	}
}

// gather forms a batch behind first as a dynamic batcher does: up to the
// largest preferred size (else max_batch_size), waiting at most the
// queue delay for it to fill.
func (s *batchSim) gather(v *simVersion, first *simReq) []*simReq {
	batch := []*simReq{first}
	db := v.cfg.GetDynamicBatching()
	if db == nil || v.cfg.GetMaxBatchSize() <= 1 {
		return batch
	}
	target := int(v.cfg.GetMaxBatchSize())
	if p := db.GetPreferredBatchSize(); len(p) > 0 {
		target = min(target, int(slices.Max(p)))
	}
	timer := time.NewTimer(time.Duration(db.GetMaxQueueDelayMicroseconds()) * time.Microsecond)
	defer timer.Stop()
	for len(batch) < target {
		select {
		case r := <-v.queue:
			batch = append(batch, r)
		case <-timer.C:
			return batch
		}
	}
	return batch
}

// execute runs a batch on a core for the model's cost (a BLS model then
// calls its model for each request) and counts it.
func (s *batchSim) execute(v *simVersion, batch []*simReq) {
	sp := s.specs[v.cfg.GetName()]
	s.cores <- struct{}{}
	start := time.Now()
	d := sp.cost(len(batch))
	<-time.After(d)
	<-s.cores
	if sp.calls != "" {
		for _, r := range batch {
			_, _ = s.infer(r.ctx, sp.calls)
		}
	}
	end := time.Now()
	s.mu.Lock()
	st := &v.stats
	st.ExecutionCount++
	st.InferenceCount += uint64(len(batch))
	i := slices.IndexFunc(st.Batches, func(b triton.BatchStats) bool { return b.BatchSize == int64(len(batch)) })
	if i < 0 {
		st.Batches = append(st.Batches, triton.BatchStats{BatchSize: int64(len(batch))})
		i = len(st.Batches) - 1
	}
	st.Batches[i].ComputeInfer.Count++
	st.Batches[i].ComputeInfer.Total += end.Sub(start)
	for _, r := range batch {
		add(&st.Success, end.Sub(r.enq))
		add(&st.Queue, start.Sub(r.enq))
		add(&st.ComputeInput, 0)
		add(&st.ComputeInfer, end.Sub(start))
		add(&st.ComputeOutput, 0)
	}
	s.mu.Unlock()
	for _, r := range batch {
		close(r.done)
	}
}

func add(d *triton.StatDuration, x time.Duration) {
	d.Count++
	d.Total += x
}

// infer runs one request of model: an ensemble's steps in order, or the
// model's batcher.
func (s *batchSim) infer(ctx context.Context, model string) (*simVersion, error) {
	s.mu.Lock()
	v := s.live[model]
	if v == nil || s.closed {
		s.mu.Unlock()
		return nil, &triton.Error{Code: triton.NotFound, Model: model, Err: errors.New("not loaded")}
	}
	if v.cfg.GetPlatform() == "ensemble" {
		s.mu.Unlock()
		t0 := time.Now()
		for _, st := range v.cfg.GetEnsembleScheduling().GetStep() {
			if _, err := s.infer(ctx, st.GetModelName()); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		v.stats.InferenceCount++
		v.stats.ExecutionCount++
		add(&v.stats.Success, time.Since(t0))
		add(&v.stats.Queue, 0)
		add(&v.stats.ComputeInfer, time.Since(t0))
		s.mu.Unlock()
		return v, nil
	}
	r := &simReq{ctx: ctx, enq: time.Now(), done: make(chan struct{})}
	v.queue <- r
	s.mu.Unlock()
	select {
	case <-r.done:
		return v, nil
	case <-ctx.Done():
		<-r.done
		return nil, ctx.Err()
	}
}

var (
	_ client.Conn       = (*batchSim)(nil)
	_ client.Repository = (*batchSim)(nil)
)

func (s *batchSim) Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	v, err := s.infer(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	resp := &triton.InferResponse{Model: req.Model, Version: 1}
	for i, in := range req.Inputs {
		if i < len(v.cfg.GetOutput()) {
			in.Name = v.cfg.GetOutput()[i].GetName()
			resp.Outputs = append(resp.Outputs, in)
		}
	}
	return resp, nil
}

func (s *batchSim) InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
	return func(yield func(*triton.InferResponse, error) bool) { yield(s.Infer(ctx, req)) }
}

func (s *batchSim) config(name string) (*modelconfig.ModelConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.live[name]
	if v == nil {
		return nil, &triton.Error{Code: triton.NotFound, Model: name, Err: errors.New("not loaded")}
	}
	return proto.Clone(v.cfg).(*modelconfig.ModelConfig), nil
}

func (s *batchSim) ServerMetadata(context.Context) (triton.ServerMetadata, error) {
	return triton.ServerMetadata{Name: "sim", Extensions: []string{"statistics", "model_repository"}}, nil
}
func (s *batchSim) ServerReady(context.Context) (bool, error) { return true, nil }
func (s *batchSim) ServerLive(context.Context) (bool, error)  { return true, nil }
func (s *batchSim) ModelReady(_ context.Context, m string, _ int64) (bool, error) {
	_, err := s.config(m)
	return err == nil, nil
}

func (s *batchSim) ModelMetadata(_ context.Context, name string, _ int64) (triton.ModelMetadata, error) {
	cfg, err := s.config(name)
	if err != nil {
		return triton.ModelMetadata{}, err
	}
	md := triton.ModelMetadata{Name: name, Versions: []string{"1"}}
	conv := func(n string, dims []int64) triton.TensorMetadata {
		shape := dims
		if cfg.GetMaxBatchSize() > 0 {
			shape = append([]int64{-1}, dims...)
		}
		return triton.TensorMetadata{Name: n, DataType: "FP32", Shape: shape}
	}
	for _, in := range cfg.GetInput() {
		md.Inputs = append(md.Inputs, conv(in.GetName(), in.GetDims()))
	}
	for _, out := range cfg.GetOutput() {
		md.Outputs = append(md.Outputs, conv(out.GetName(), out.GetDims()))
	}
	return md, nil
}

func (s *batchSim) ModelConfig(_ context.Context, name string, _ int64) (*modelconfig.ModelConfig, error) {
	return s.config(name)
}

func (s *batchSim) ModelStatistics(_ context.Context, name string, _ int64) ([]triton.ModelStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []triton.ModelStats
	for _, n := range slices.Sorted(maps.Keys(s.live)) {
		if name == "" || n == name {
			st := s.live[n].stats
			st.Batches = slices.Clone(st.Batches)
			slices.SortFunc(st.Batches, func(a, b triton.BatchStats) int { return int(a.BatchSize - b.BatchSize) })
			out = append(out, st)
		}
	}
	return out, nil
}

// Load replaces a model's config with the override, as a reload does.
func (s *batchSim) Load(_ context.Context, model string, opts *triton.LoadOptions) error {
	if opts == nil || opts.Config == "" {
		return errors.New("the simulation reloads with a config override only")
	}
	cfg := &modelconfig.ModelConfig{}
	if err := protojson.Unmarshal([]byte(opts.Config), cfg); err != nil {
		return err
	}
	if sp := s.specs[model]; sp.maxBatchOK > 0 && int(cfg.GetMaxBatchSize()) > sp.maxBatchOK {
		return &triton.Error{Code: triton.InvalidArgument, Model: model, Err: fmt.Errorf("max_batch_size %d is over the model's %d", cfg.GetMaxBatchSize(), sp.maxBatchOK)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads = append(s.loads, model)
	s.start(cfg)
	return nil
}

func (s *batchSim) Unload(context.Context, string, *triton.UnloadOptions) error {
	return errors.New("not simulated")
}

func (s *batchSim) Index(context.Context) ([]triton.ModelState, error) { return nil, nil }

// Close stops every model; the instances finish their queues.
func (s *batchSim) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, v := range s.live {
			close(v.stop)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// runSim runs Main against s and returns its status and outputs.
func runSim(s *batchSim, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	dial := func(context.Context, *Config) (client.Conn, error) { return s, nil }
	st := Main(context.Background(), args, &out, &errb, dial)
	return st, out.String(), errb.String()
}

// perBatch is a cost of fixed plus perRow a row; the odd nanoseconds
// keep completions off the windows' whole-millisecond boundaries.
func perBatch(fixed, perRow time.Duration) func(int) time.Duration {
	return func(rows int) time.Duration { return fixed + perRow*time.Duration(rows) + 7 }
}

const simHeavy = `name: "heavy"
backend: "sim"
max_batch_size: 64
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]`

// TestAdviseSimulated runs the whole tool with --advise on a model whose
// batch costs 2 ms plus 0.1 ms a row on 2 simulated cores: batching pays,
// and the advice, its table and its snippet are exact.
func TestAdviseSimulated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newBatchSim(t, 2, map[string]*simSpec{"heavy": {cost: perBatch(2*time.Millisecond, 100*time.Microsecond)}}, simHeavy)
		st, out, errs := runSim(s, "-m", "heavy", "--advise", "--latency-budget", "p99=50ms", "-p", "100", "--concurrency-range", "1:128")
		if st != ExitSuccess {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
		}
		for _, want := range []string{"Batch cost:", "batching pays", "Chosen: ", "dynamic_batching {"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in the advice:\n%s", want, out)
			}
		}
		if n := strings.Count(errs, "advise: #"); n < 10 {
			t.Errorf("%d progress lines on stderr:\n%s", n, errs)
		}
		// The model is left as it was: the last load is its own config.
		last, err := s.config("heavy")
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(last, s.specs["heavy"].cfg) {
			t.Errorf("heavy was left with\n%v\nwant\n%v", last, s.specs["heavy"].cfg)
		}
		// Which instance takes a request that arrives as a batch is
		// being formed is up to the scheduler, so batches (and figures)
		// vary a little from run to run: the choice is checked, not
		// the figures. internal/advisor's tests check the search on
		// exact figures.
		if !strings.Contains(out, "instance_group [ { count: 2 kind: KIND_CPU } ]") || !regexp.MustCompile(`max_batch_size: (16|32|64)\n`).MatchString(out) {
			t.Errorf("want dynamic batching of 16 to 64 rows on 2 instances:\n%s", out)
		}
	})
}

// TestAdviseSimulatedDoesNotPay: a batch costs 1 ms a row and nothing
// more; the advice says batching does not pay and keeps it off.
func TestAdviseSimulatedDoesNotPay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newBatchSim(t, 2, map[string]*simSpec{"heavy": {cost: perBatch(0, time.Millisecond)}}, simHeavy)
		st, out, errs := runSim(s, "-m", "heavy", "--advise", "--latency-budget", "p95=40ms", "-p", "100", "--concurrency-range", "1:64")
		if st != ExitSuccess {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
		}
		if !strings.Contains(out, "batching does not pay") || strings.Contains(out, "dynamic_batching {") {
			t.Errorf("advice:\n%s", out)
		}
		if !strings.Contains(out, "instance_group [ { count: 2 kind: KIND_CPU } ]") {
			t.Errorf("want 2 instances (2 cores):\n%s", out)
		}
	})
}

// TestAdviseSimulatedEnsemble: an ensemble of a light step and a heavy
// one; the heavy one's share is the larger, so it is tuned, and the
// throughput is the ensemble's.
func TestAdviseSimulatedEnsemble(t *testing.T) {
	ens := `name: "pipe"
platform: "ensemble"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
ensemble_scheduling { step [
  { model_name: "pre" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "mid" } },
  { model_name: "heavy" model_version: -1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUTPUT0" } }
] }`
	pre := `name: "pre"
backend: "sim"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`
	synctest.Test(t, func(t *testing.T) {
		s := newBatchSim(t, 2, map[string]*simSpec{
			"pre":   {cost: perBatch(200*time.Microsecond, 0)},
			"heavy": {cost: perBatch(2*time.Millisecond, 100*time.Microsecond)},
		}, ens, pre, simHeavy)
		st, out, errs := runSim(s, "-m", "pipe", "--advise", "--latency-budget", "p99=50ms", "-p", "100", "--concurrency-range", "1:64")
		if st != ExitSuccess {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
		}
		for _, want := range []string{`Batching advice for "heavy" (through "pipe")`, "Share of the pipeline's compute", "Tuning \"heavy\"", "# heavy: "} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in the advice:\n%s", want, out)
			}
		}
		for _, m := range s.loads {
			if m != "heavy" {
				t.Errorf("loaded %q: only the tuned model should be reloaded", m)
			}
		}
		if !strings.Contains(out, "heavy  ") || !strings.Contains(out, "pre  ") {
			t.Errorf("both steps' shares should be listed:\n%s", out)
		}
	})
}

// TestAdviseSimulatedBLS: a BLS model (no ensemble config) that calls
// "heavy" from its execution; the statistics show heavy executing, so
// heavy is tuned.
func TestAdviseSimulatedBLS(t *testing.T) {
	bls := `name: "bls"
backend: "sim"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
instance_group [ { count: 8 kind: KIND_CPU } ]`
	synctest.Test(t, func(t *testing.T) {
		s := newBatchSim(t, 2, map[string]*simSpec{
			"bls":   {cost: perBatch(100*time.Microsecond, 0), calls: "heavy"},
			"heavy": {cost: perBatch(2*time.Millisecond, 100*time.Microsecond)},
		}, bls, simHeavy)
		st, out, errs := runSim(s, "-m", "bls", "--advise", "--latency-budget", "p99=50ms", "-p", "100", "--concurrency-range", "1:32")
		if st != ExitSuccess {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
		}
		for _, want := range []string{`Batching advice for "heavy" (through "bls")`, "Tuning \"heavy\"", "# heavy: "} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in the advice:\n%s", want, out)
			}
		}
	})
}

// TestAdviseSimulatedLoadFailure: a model whose batch dimension stops at
// 8 fails to load with more; the advice notes it and stays at 8 or less.
func TestAdviseSimulatedLoadFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newBatchSim(t, 2, map[string]*simSpec{"heavy": {cost: perBatch(2*time.Millisecond, 10*time.Microsecond), maxBatchOK: 8}},
			strings.Replace(simHeavy, "max_batch_size: 64", "max_batch_size: 8", 1))
		st, out, errs := runSim(s, "-m", "heavy", "--advise", "--latency-budget", "p99=100ms", "-p", "100", "--concurrency-range", "1:64")
		if st != ExitSuccess {
			t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
		}
		if !strings.Contains(out, "Note: max_batch_size 16 failed to load") || !strings.Contains(errs, "load failed") {
			t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
		}
		if strings.Contains(out, "max_batch_size: 16") || strings.Contains(out, "max_batch_size: 32") {
			t.Errorf("advised a size that does not load:\n%s", out)
		}
	})
}

// TestAdviseFlags: --advise's checks.
func TestAdviseFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"-m", "x", "--latency-budget", "p99=5ms"}, "--latency-budget is the budget of --advise"},
		{[]string{"-m", "x", "--advise", "--latency-budget", "p98=5ms"}, "Failed to parse --latency-budget. latency budget \"p98=5ms\": the statistic is one of"},
		{[]string{"-m", "x", "--advise", "--request-rate-range", "10"}, "--advise measures concurrencies"},
		{[]string{"-m", "x", "--advise", "-b", "4"}, "-b must be 1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := ParseArgs(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want %q", err, tt.err)
			}
		})
	}
	c, err := ParseArgs([]string{"-m", "x", "--advise", "--latency-budget", "avg=2ms"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval != adviceInterval || c.Stability != adviceStability || c.MaxTrials != adviceMaxTrials || c.LatencyBudget.String() != "avg=2ms" {
		t.Errorf("advice defaults: %v %v %v %v", c.Interval, c.Stability, c.MaxTrials, c.LatencyBudget)
	}
	c, err = ParseArgs([]string{"-m", "x", "--advise", "-p", "300", "-s", "20", "-r", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Interval != 300*time.Millisecond || c.Stability != 0.2 || c.MaxTrials != 7 {
		t.Errorf("given options kept: %v %v %v", c.Interval, c.Stability, c.MaxTrials)
	}
}

// TestWithCandidate: a candidate changes max_batch_size, dynamic_batching
// (keeping its other fields) and the instance group (keeping the first
// group's kind), and nothing else; candidateOf reads them back.
func TestWithCandidate(t *testing.T) {
	cfg, err := repository.ParseConfig("config.pbtxt", []byte(`name: "m"
backend: "onnxruntime"
max_batch_size: 64
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 300 priority_levels: 2 default_priority_level: 1 }
instance_group [ { count: 3 kind: KIND_GPU gpus: [ 0 ] }, { count: 1 kind: KIND_CPU } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }`))
	if err != nil {
		t.Fatal(err)
	}
	c, kind := candidateOf(cfg)
	want := advisor.Candidate{Instances: 4, MaxBatch: 64, Dynamic: true, Preferred: []int{4, 8}, Delay: 300 * time.Microsecond}
	if !c.Equal(want) || kind != "KIND_GPU" {
		t.Errorf("candidateOf = %+v, %s; want %+v, KIND_GPU", c, kind, want)
	}
	next := withCandidate(cfg, advisor.Candidate{Instances: 2, MaxBatch: 16, Dynamic: true, Preferred: []int{16}, Delay: time.Millisecond})
	db := next.GetDynamicBatching()
	if next.GetMaxBatchSize() != 16 || !slices.Equal(db.GetPreferredBatchSize(), []int32{16}) || db.GetMaxQueueDelayMicroseconds() != 1000 ||
		db.GetPriorityLevels() != 2 || db.GetDefaultPriorityLevel() != 1 {
		t.Errorf("dynamic batching %v, max_batch_size %d", db, next.GetMaxBatchSize())
	}
	if g := next.GetInstanceGroup(); len(g) != 1 || g[0].GetCount() != 2 || g[0].GetKind() != modelconfig.ModelInstanceGroup_KIND_GPU || !slices.Equal(g[0].GetGpus(), []int32{0}) {
		t.Errorf("instance groups %v", g)
	}
	if next.GetParameters()["intra_op_thread_count"].GetStringValue() != "1" || len(next.GetInput()) != 1 {
		t.Errorf("the rest of the config changed: %v", next)
	}
	if cfg.GetMaxBatchSize() != 64 || len(cfg.GetInstanceGroup()) != 2 {
		t.Error("withCandidate changed its argument")
	}
	off := withCandidate(cfg, advisor.Candidate{Instances: 1, MaxBatch: 8})
	if off.GetDynamicBatching() != nil || off.GetMaxBatchSize() != 8 {
		t.Errorf("without dynamic batching: %v", off)
	}
	// The JSON a reload sends parses back to the same config.
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	back := &modelconfig.ModelConfig{}
	if err := protojson.Unmarshal(js, back); err != nil || !proto.Equal(back, next) {
		t.Errorf("round trip: %v\n%v", err, back)
	}
}

// TestStatsDiffs: differences over a measurement, by model; a reloaded
// version's counters restart, so its statistics count from zero.
func TestStatsDiffs(t *testing.T) {
	batch := func(size int64, n uint64, total time.Duration) triton.BatchStats {
		return triton.BatchStats{BatchSize: size, ComputeInfer: triton.StatDuration{Count: n, Total: total}}
	}
	before := []triton.ModelStats{
		{Name: "a", Version: 1, ExecutionCount: 10, InferenceCount: 40, Batches: []triton.BatchStats{batch(4, 10, 10*time.Millisecond)}},
		{Name: "b", Version: 1, ExecutionCount: 100, InferenceCount: 100},
	}
	after := []triton.ModelStats{
		{Name: "a", Version: 1, ExecutionCount: 15, InferenceCount: 60, Batches: []triton.BatchStats{batch(4, 15, 15*time.Millisecond)}},
		{Name: "b", Version: 1, ExecutionCount: 3, InferenceCount: 6, Batches: []triton.BatchStats{batch(2, 3, 6*time.Millisecond)}},
	}
	d := statsDiffs(before, after)
	if a := d["a"]; a.ExecutionCount != 5 || a.InferenceCount != 20 || len(a.Batches) != 1 || a.Batches[0].ComputeInfer.Total != 5*time.Millisecond {
		t.Errorf("a: %+v", a)
	}
	if b := d["b"]; b.ExecutionCount != 3 || b.InferenceCount != 6 || b.Batches[0].ComputeInfer.Count != 3 {
		t.Errorf("b (reloaded): %+v", b)
	}
}
