package onnxruntime_test

// The overload benchmark of issue #46: what a schedule does with more
// work than it can finish in time.
//
//	go test -run '^$' -bench Overload ./backend/onnxruntime/
//	go test -run '^$' -bench Overload ./backend/onnxruntime/ -overload.run=5s -overload.out=/tmp/overload.csv
//
// docs/bench/overload.txt holds an output of the first command; make plots
// draws docs/overload-fixed.png and docs/overload-silero.png from it
// (internal/benchplot/specs.go).

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/internal/overload"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

var (
	overloadRun = flag.Duration("overload.run", 3*time.Second, "how long requests arrive in each open-loop run of BenchmarkOverload")
	overloadOut = flag.String("overload.out", "", "CSV file BenchmarkOverload writes every run to, for plots of one's own (none when empty)")
)

// deadlineParam is the request parameter that carries a request's
// deadline (Unix nanoseconds) to the backends of BenchmarkOverload, so
// that they can count the rows they run for requests already late:
// backend.Request has no deadline of its own.
const deadlineParam = "deadline_unix_nano"

// The fixed model: a batch of n rows takes fixedBase + n·fixedPerRow, up
// to fixedMaxBatch rows, one row a request. max_batch_size is 8, not 16:
// at 16 (about 4,200 rows/s) four times the capacity over gRPC took both
// cores of the 2-core machine for the client and gRPC, and the generator
// fell 20–30 ms behind its schedule; at 8 (about 2,700 rows/s) it keeps
// within a few milliseconds.
const (
	fixedBase     = 2 * time.Millisecond
	fixedPerRow   = 100 * time.Microsecond
	fixedMaxBatch = 8
	// fixedDeadline is 10 full batches (10 × 2.8 ms): room for the
	// request's own batch and the queue ahead of it at 1×, not for the
	// queue that builds at 2× and 4×.
	fixedDeadline = 10 * (fixedBase + fixedMaxBatch*fixedPerRow)
)

// The Silero model's max_batch_size, and the rows of each of its requests
// (chunks of as many streams, as a gateway that gathers streams sends
// them). Its deadline is 10 full batches, as measured: 10 ×
// sileroMaxBatch ÷ the in-process capacity in rows (about 40 ms). With
// one chunk a request, gRPC's work per request (about as much CPU as a
// row of Silero) took the cores the model needs: the capacity over gRPC
// was 4,700 rows/s against 15,000 in process, and at 2× and 4× the
// generator fell up to 35 ms behind and both schedules collapsed.
const (
	sileroMaxBatch = 64
	sileroRows     = 8
)

// capacityRun is how long a closed-loop capacity measurement lasts, after
// capacityWarmup of the same load.
const (
	capacityRun    = 2 * time.Second
	capacityWarmup = 300 * time.Millisecond
)

// overloadLoads are the offered loads, as multiples of the capacity.
var overloadLoads = []float64{0.5, 1, 2, 4}

// overloadSchedules are the schedules compared: each model is loaded
// twice, with deadline_aware_batching "false" and "true".
var overloadSchedules = []string{"fifo", "deadline"}

// scheduleParam is the model parameter that sets a model's schedule:
// deadline_aware_batching "false" (FIFO) or "true" (deadline-aware, the
// server's default).
func scheduleParam(schedule string) string {
	return fmt.Sprintf(`parameters { key: "deadline_aware_batching" value: { string_value: "%t" } }`, schedule == "deadline")
}

// wasteMeter counts what a model computes in vain: for each batch, the
// rows whose request's deadline (the deadlineParam parameter) had passed
// when the batch started (stale: no schedule should run them), and the
// rows whose deadline passed before the batch ended (missed, stale ones
// included: their answer comes too late whatever the transport does
// next), and the compute time, of which a batch's missed rows' share is
// wasted. Rows without a deadline count only in rows and busy. Safe for
// concurrent use.
type wasteMeter struct {
	running                                        atomic.Int64 // batches executing now
	batches, rows, stale, missed, busyNs, wastedNs atomic.Int64
}

// waste is a snapshot of a wasteMeter's counts.
type waste struct {
	batches, rows, stale, missed int64
	busy, wasted                 time.Duration
}

func (m *wasteMeter) snapshot() waste {
	return waste{batches: m.batches.Load(), rows: m.rows.Load(), stale: m.stale.Load(), missed: m.missed.Load(),
		busy: time.Duration(m.busyNs.Load()), wasted: time.Duration(m.wastedNs.Load())}
}

func (w waste) minus(o waste) waste {
	return waste{batches: w.batches - o.batches, rows: w.rows - o.rows, stale: w.stale - o.stale, missed: w.missed - o.missed,
		busy: w.busy - o.busy, wasted: w.wasted - o.wasted}
}

// execute runs one batch through run and counts it.
func (m *wasteMeter) execute(b *backend.Batch, run func() error) error {
	m.running.Add(1)
	defer m.running.Add(-1)
	start := time.Now()
	err := run()
	end := time.Now()
	var stale, missed int64
	for _, r := range b.Requests {
		ns, ok := r.Parameters[deadlineParam].(int64)
		if !ok {
			continue
		}
		deadline := time.Unix(0, ns)
		if !deadline.After(start) {
			stale += r.BatchSize
		}
		if !deadline.After(end) {
			missed += r.BatchSize
		}
	}
	busy := end.Sub(start)
	m.batches.Add(1)
	m.rows.Add(b.Size())
	m.stale.Add(stale)
	m.missed.Add(missed)
	m.busyNs.Add(int64(busy))
	if b.Size() > 0 {
		m.wastedNs.Add(int64(busy) * missed / b.Size())
	}
	return err
}

// settle waits until the model has run no batch for 50 ms, so that one
// run's stragglers (batches still executing for callers that gave up)
// are not counted in the next; at most 2 s.
func (m *wasteMeter) settle() {
	last := m.rows.Load()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		rows := m.rows.Load()
		if rows == last && m.running.Load() == 0 {
			return
		}
		last = rows
	}
}

// fixedCost is the backend of the fixed model: a batch of n rows costs
// fixedBase + n·fixedPerRow, spent sleeping (overload.PreciseSleep, which
// blocks a thread as a cgo call into an accelerator's runtime does): it
// simulates an accelerator, whose work occupies the instance but not the
// CPU, so that the machine's cores are left to the server and the load
// generator. Like a kernel already launched, a batch cannot be cancelled.
// OUTPUT0 is a copy of INPUT0.
func fixedCost(m *wasteMeter) backend.Func {
	return func(_ context.Context, b *backend.Batch) error {
		return m.execute(b, func() error {
			overload.PreciseSleep(fixedBase + time.Duration(b.Size())*fixedPerRow)
			in, err := b.Input("INPUT0")
			if err != nil {
				return err
			}
			out, err := tensor.New("OUTPUT0", in.DataType, in.Shape, bytes.Clone(in.Data))
			if err != nil {
				return err
			}
			return b.SetOutput(out)
		})
	}
}

// fixedConfig is the fixed model's config.pbtxt; extra is appended.
func fixedConfig(name, extra string) string {
	return fmt.Sprintf(`
name: %q
backend: "fixedcost"
max_batch_size: %d
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
dynamic_batching { }
instance_group [ { count: 1 kind: KIND_CPU } ]
%s
`, name, fixedMaxBatch, extra)
}

// metered wraps a backend so that every batch its instances run goes
// through a wasteMeter.
type metered struct {
	inner backend.Backend
	meter *wasteMeter
}

type meteredModel struct {
	backend.Model
	meter *wasteMeter
}

type meteredInstance struct {
	backend.Instance
	meter *wasteMeter
}

var (
	_ backend.Backend         = metered{}
	_ backend.ConfigCompleter = metered{}
	_ backend.Model           = meteredModel{}
	_ backend.DataTypeKeeper  = meteredModel{}
	_ backend.Instance        = meteredInstance{}
	_ backend.Wrapper         = meteredInstance{}
)

func (m metered) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	inner, err := m.inner.Load(ctx, spec)
	if err != nil {
		return nil, err
	}
	return meteredModel{inner, m.meter}, nil
}

func (m metered) CompleteConfig(ctx context.Context, spec *backend.ModelSpec) error {
	_, err := backend.CompleteConfig(ctx, m.inner, spec)
	return err
}

func (m meteredModel) NewInstance(ctx context.Context, spec backend.InstanceSpec) (backend.Instance, error) {
	inner, err := m.Model.NewInstance(ctx, spec)
	if err != nil {
		return nil, err
	}
	return meteredInstance{inner, m.meter}, nil
}

func (m meteredModel) KeepDataType(output string, produced, declared tensor.DataType) bool {
	return backend.KeepDataType(m.Model, output, produced, declared)
}

func (i meteredInstance) Execute(ctx context.Context, b *backend.Batch) error {
	return i.meter.execute(b, func() error { return i.Instance.Execute(ctx, b) })
}

func (i meteredInstance) Unwrap() backend.Instance { return i.Instance }

// overloadModel is one model of BenchmarkOverload, loaded twice: as
// FIFO (deadline_aware_batching "false") and deadline-aware.
type overloadModel struct {
	name     string
	maxBatch int
	rows     int // of each request
	clients  int // closed-loop callers that saturate it
	meter    *wasteMeter
	inputs   func(n int) []tensor.Tensor // the inputs of request n
}

func (m *overloadModel) model(schedule string) string { return m.name + "_" + schedule }

// overloadRow is one open-loop run: what the CSV file gets.
type overloadRow struct {
	model, transport, schedule string
	load, capacity             float64 // capacity in requests a second
	rows                       int     // a request's
	deadline                   time.Duration
	res                        overload.Result
	waste                      waste
}

// overloadPairs counts the loads run in the process: which schedule goes
// first alternates with it, also across -count's repetitions of one load.
var overloadPairs int

// overloadRows gathers every run of the process for -overload.out (go
// test -count runs BenchmarkOverload again in the same process).
var overloadRows []overloadRow

// BenchmarkOverload offers two models open-loop Poisson arrivals
// (internal/overload), each request with a deadline, at 0.5, 1, 2 and 4
// times the model's capacity, in process (srv.Infer) and over gRPC
// (grpcapi on a loopback port, the client package's gRPC client, the
// deadline sent as the call's), for two schedules: fifo (the model's
// dynamic_batching as configured with deadline_aware_batching "false":
// what Triton does) and deadline (the server's default). An op is
// -overload.run (3 s) of arrivals, so go test's default -benchtime makes
// each leaf one run; the two schedules' runs of a load follow each other,
// and which goes first alternates from one load's pair to the next
// (also across -count's repetitions).
//
// The models:
//
//   - fixed: a Go backend whose batch costs 2 ms + 0.1 ms a row, slept
//     (see fixedCost), max_batch_size 8, one row a request, one
//     instance, dynamic_batching { }; deadline 28 ms (10 full batches).
//   - silero: the batch-first Silero VAD v6 variant on ONNX Runtime
//     (sileroBatchedConfig), max_batch_size 64, 8 rows a request,
//     dynamic_batching { }, one instance with one thread, so that the
//     load generator has the other core of a 2-core machine; deadline 10
//     full batches, as measured in process.
//
// The capacity is measured first, per model and transport: the rate of
// closed-loop callers (4 × max_batch_size rows in flight), without
// deadlines, on the FIFO copy. Loads are multiples of it; rates are
// reported in rows a second. Each leaf reports, for its run:
//
//   - capacity-rows/s, deadline-ms, and offered/cap, the arrival rate
//     achieved ÷ capacity;
//   - goodput/cap: answers within their deadline a second ÷ capacity (the
//     plot's y), and goodput-rows/s;
//   - p50-ms, p99-ms: latencies of those answers, from scheduled arrival;
//   - of the arrivals, in %: late (answered after the deadline), refused
//     (Unavailable), expired (DeadlineExceeded), capped (not sent: 10,000
//     in flight); any other failure fails the benchmark;
//   - stale-%: rows the model ran for requests already past their
//     deadline when the batch started, of the rows it ran (target 0);
//     wasted-%: the model's compute time spent on rows whose deadline
//     passed before their batch ended;
//   - lag-p99-ms, lag-max-ms: how far behind schedule the generator made
//     its arrivals (99th percentile, largest): where they reach a
//     sizeable part of the deadline, the machine, not the schedule, is
//     the bottleneck.
//
// The table of every (model, transport) is logged; -overload.out=file
// writes every run as CSV.
func BenchmarkOverload(b *testing.B) {
	variant := testenv.Model(b, sileroBatchedModel)
	inputs, states := sileroClientData(b)
	sileroInputs := make([][]tensor.Tensor, len(inputs))
	for g := range inputs {
		var in, st []float32
		for k := range sileroRows {
			in = append(in, inputs[(g+k)%len(inputs)]...)
			st = append(st, states[(g+k)%len(states)]...)
		}
		sileroInputs[g] = []tensor.Tensor{
			tensorOf(b, "input", tensor.Shape{sileroRows, int64(len(inputs[g]))}, in),
			tensorOf(b, "state", tensor.Shape{sileroRows, 2, 128}, st),
		}
	}
	fixedInputs := make([][]tensor.Tensor, 64)
	for g := range fixedInputs {
		fixedInputs[g] = []tensor.Tensor{tensorOf(b, "INPUT0", tensor.Shape{1, 1}, []float32{float32(g)})}
	}
	models := []*overloadModel{
		{name: "fixed", maxBatch: fixedMaxBatch, rows: 1, clients: 4 * fixedMaxBatch, meter: new(wasteMeter),
			inputs: func(n int) []tensor.Tensor { return fixedInputs[n%len(fixedInputs)] }},
		{name: "silero", maxBatch: sileroMaxBatch, rows: sileroRows, clients: 4 * sileroMaxBatch / sileroRows, meter: new(wasteMeter),
			inputs: func(n int) []tensor.Tensor { return sileroInputs[n%len(sileroInputs)] }},
	}

	dir := b.TempDir()
	for _, schedule := range overloadSchedules {
		extra := scheduleParam(schedule)
		name := models[0].model(schedule)
		writeFile(b, filepath.Join(dir, name, "config.pbtxt"), fixedConfig(name, extra))
		writeFile(b, filepath.Join(dir, name, "1", "model"), "")
		name = models[1].model(schedule)
		writeFile(b, filepath.Join(dir, name, "config.pbtxt"), sileroBatchedConfig(name, sileroMaxBatch, "", 1)+extra+"\n")
		if err := os.MkdirAll(filepath.Join(dir, name, "1"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink(variant, filepath.Join(dir, name, "1", "model.onnx")); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := triton.New(triton.WithModelRepository(dir),
		triton.WithBackend("fixedcost", fixedCost(models[0].meter)),
		triton.WithBackend("onnxruntime", metered{onnxruntime.New(), models[1].meter}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
	})
	transports := []struct {
		name string
		conn client.Inferer
	}{{"inprocess", srv}, {"grpc", serveGRPC(b, srv)}}

	for _, m := range models {
		b.Run(m.name, func(b *testing.B) {
			// The deadline is the model's, whatever the transport: 10 full
			// batches, known for fixed, measured in process for silero.
			inProcess := m.capacity(b, srv)
			deadline := fixedDeadline
			if m.name == "silero" {
				full := time.Duration(float64(m.maxBatch) / (inProcess * float64(m.rows)) * float64(time.Second))
				deadline = (10 * full).Round(time.Millisecond)
			}
			for _, tr := range transports {
				b.Run(tr.name, func(b *testing.B) {
					capacity := inProcess
					if tr.name != "inprocess" {
						capacity = m.capacity(b, tr.conn)
					}
					var rows []overloadRow
					for i, load := range overloadLoads {
						schedules := slices.Clone(overloadSchedules)
						if overloadPairs++; overloadPairs%2 == 0 {
							slices.Reverse(schedules)
						}
						for j, schedule := range schedules {
							// go test may call a leaf again with a larger b.N:
							// its last call's row is the one kept.
							var row overloadRow
							b.Run(fmt.Sprintf("load=%gx/%s", load, schedule), func(b *testing.B) {
								row = overloadRow{model: m.name, transport: tr.name, schedule: schedule,
									load: load, capacity: capacity, rows: m.rows, deadline: deadline}
								row.res, row.waste = m.openLoop(b, tr.conn, schedule, overload.Spec{
									Rate: load * capacity, Duration: time.Duration(b.N) * *overloadRun, Deadline: deadline,
									Seed: uint64(i + 1), Sleep: overload.PreciseSleep,
								})
								row.report(b)
								if i == len(overloadLoads)-1 && j == len(schedules)-1 {
									// Logged by the last leaf: go test prints the
									// log of a benchmark with sub-benchmarks only
									// under -v.
									logTable(b, append(slices.Clone(rows), row))
								}
							})
							if row.model != "" { // not filtered out by -bench
								rows = append(rows, row)
							}
						}
					}
					overloadRows = append(overloadRows, rows...)
				})
			}
		})
	}
	if *overloadOut != "" {
		if err := writeOverloadCSV(*overloadOut, overloadRows); err != nil {
			b.Error(err)
		}
	}
}

// capacity measures the model's capacity through conn, in requests (of
// m.rows rows) a second: m.clients closed-loop callers, no deadlines, on
// the FIFO model, after a warm-up of both of the model's copies.
func (m *overloadModel) capacity(b *testing.B, conn client.Inferer) float64 {
	b.Helper()
	closedLoop := func(model string, d time.Duration) float64 {
		var done atomic.Int64
		var failed atomic.Pointer[error]
		var wg sync.WaitGroup
		start := time.Now()
		stop := start.Add(d)
		for g := range m.clients {
			wg.Go(func() {
				for n := g; time.Now().Before(stop); n += m.clients {
					_, err := conn.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: m.inputs(n)})
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			b.Fatalf("%s: %v", model, *err)
		}
		return float64(done.Load()) / time.Since(start).Seconds()
	}
	closedLoop(m.model("deadline"), capacityWarmup)
	closedLoop(m.model("fifo"), capacityWarmup)
	m.meter.settle()
	return closedLoop(m.model("fifo"), capacityRun)
}

// openLoop runs spec against the model's copy for schedule through conn,
// each request carrying its deadline as the call's context and as the
// deadlineParam parameter, and returns what became of the requests and
// what the model computed in vain. A failure other than the refusals
// and expiries overload may bring fails b.
func (m *overloadModel) openLoop(b *testing.B, conn client.Inferer, schedule string, spec overload.Spec) (overload.Result, waste) {
	b.Helper()
	model := m.model(schedule)
	m.meter.settle()
	before := m.meter.snapshot()
	b.ResetTimer()
	res, err := overload.Run(context.Background(), spec, func(ctx context.Context, n int) error {
		deadline, _ := ctx.Deadline()
		_, err := conn.Infer(ctx, &triton.InferRequest{Model: model, Inputs: m.inputs(n),
			Parameters: map[string]any{deadlineParam: deadline.UnixNano()}})
		return err
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed > 0 || res.Cancelled > 0 {
		b.Errorf("%s: %d requests failed, %d cancelled; the first failure: %v", model, res.Failed, res.Cancelled, res.FirstFailure)
	}
	m.meter.settle()
	return res, m.meter.snapshot().minus(before)
}

// report adds the row's metrics to b.
func (r *overloadRow) report(b *testing.B) {
	res := r.res
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(res.Arrivals, 1)) }
	b.ReportMetric(r.capacity*float64(r.rows), "capacity-rows/s")
	b.ReportMetric(ms(r.deadline), "deadline-ms")
	b.ReportMetric(res.Offered()/r.capacity, "offered/cap")
	b.ReportMetric(res.Goodput()/r.capacity, "goodput/cap")
	b.ReportMetric(res.Goodput()*float64(r.rows), "goodput-rows/s")
	b.ReportMetric(ms(res.P50), "p50-ms")
	b.ReportMetric(ms(res.P99), "p99-ms")
	b.ReportMetric(pct(res.Late), "late-%")
	b.ReportMetric(pct(res.Refused), "refused-%")
	b.ReportMetric(pct(res.Expired), "expired-%")
	b.ReportMetric(pct(res.Capped), "capped-%")
	b.ReportMetric(r.staleShare(), "stale-%")
	b.ReportMetric(r.wastedShare(), "wasted-%")
	b.ReportMetric(float64(r.waste.rows)/float64(max(r.waste.batches, 1)), "rows/batch")
	b.ReportMetric(ms(res.LagP99), "lag-p99-ms")
	b.ReportMetric(ms(res.MaxLag), "lag-max-ms")
}

// staleShare is the share of the rows the model ran whose deadline had
// passed when their batch started, in %.
func (r *overloadRow) staleShare() float64 {
	return 100 * float64(r.waste.stale) / float64(max(r.waste.rows, 1))
}

// wastedShare is the share of the model's compute time spent on rows
// whose deadline passed before their batch ended, in %.
func (r *overloadRow) wastedShare() float64 {
	return 100 * float64(r.waste.wasted) / float64(max(r.waste.busy, 1))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// logTable logs one (model, transport)'s runs as a table.
func logTable(b *testing.B, rows []overloadRow) {
	if len(rows) == 0 {
		return
	}
	r0 := rows[0]
	var sb strings.Builder
	// Nine lines: go test cuts a benchmark's log at the tenth.
	fmt.Fprintf(&sb, "%-5s %-8s %8s %8s %7s %8s %8s %6s %8s %8s %7s %7s %8s %7s   (%s over %s: capacity %.0f rows/s, %d a request, deadline %v; rates in rows/s)\n",
		"load", "schedule", "offered", "goodput", "gp/cap", "p50 ms", "p99 ms", "late%", "refused%", "expired%", "capped%", "stale%", "wasted%", "lag99 ms",
		r0.model, r0.transport, r0.capacity*float64(r0.rows), r0.rows, r0.deadline)
	for _, r := range rows {
		res := r.res
		pct := func(n int) float64 { return 100 * float64(n) / float64(max(res.Arrivals, 1)) }
		fmt.Fprintf(&sb, "%-5g %-8s %8.0f %8.0f %7.3f %8.2f %8.2f %6.1f %8.1f %8.1f %7.1f %7.2f %8.1f %7.2f\n",
			r.load, r.schedule, res.Offered()*float64(r.rows), res.Goodput()*float64(r.rows), res.Goodput()/r.capacity, ms(res.P50), ms(res.P99),
			pct(res.Late), pct(res.Refused), pct(res.Expired), pct(res.Capped), r.staleShare(), r.wastedShare(), ms(res.LagP99))
	}
	b.Log(strings.TrimSuffix(sb.String(), "\n"))
}

// writeOverloadCSV writes rows to path as CSV, one line a run.
func writeOverloadCSV(path string, rows []overloadRow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"model", "transport", "schedule", "load", "rows_per_request", "capacity_rows_per_s", "deadline_ms", "offered_rows_per_s", "goodput_rows_per_s",
		"goodput_per_capacity", "p50_ms", "p99_ms", "arrivals", "good", "late", "refused", "expired", "cancelled", "failed", "capped",
		"rows", "stale_rows", "missed_rows", "busy_ms", "wasted_ms", "lag_p99_ms", "lag_max_ms"})
	for _, r := range rows {
		res := r.res
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
		i := func(n int64) string { return strconv.FormatInt(n, 10) }
		rows := float64(r.rows)
		_ = w.Write([]string{r.model, r.transport, r.schedule, f(r.load), i(int64(r.rows)), f(r.capacity * rows), f(ms(r.deadline)),
			f(res.Offered() * rows), f(res.Goodput() * rows),
			f(res.Goodput() / r.capacity), f(ms(res.P50)), f(ms(res.P99)), i(int64(res.Arrivals)), i(int64(res.Good)), i(int64(res.Late)),
			i(int64(res.Refused)), i(int64(res.Expired)), i(int64(res.Cancelled)), i(int64(res.Failed)), i(int64(res.Capped)),
			i(r.waste.rows), i(r.waste.stale), i(r.waste.missed), f(ms(r.waste.busy)), f(ms(r.waste.wasted)), f(ms(res.LagP99)), f(ms(res.MaxLag))})
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

// serveGRPC serves srv with grpcapi on a loopback port for the rest of
// the benchmark and returns a client of it.
func serveGRPC(b *testing.B, srv *triton.Server) *client.GRPC {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpcapi.ServerOptions()...)
	grpcapi.New(srv).Register(gs)
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	b.Cleanup(func() { gs.Stop(); <-served })
	c, err := client.NewGRPC(lis.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
	})
	return c
}

// writeFile writes data to path, making its folder.
func writeFile(b *testing.B, path, data string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
}
