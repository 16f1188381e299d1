package trace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/triton-go/triton/settings"
)

// The modes of a [Config], as Triton names them.
const (
	ModeTriton        = settings.ModeTriton
	ModeOpenTelemetry = settings.ModeOpenTelemetry
)

// Config is what a Tracer needs beyond the settings store (tritonserver's
// --trace-config).
type Config struct {
	// Mode is "triton" (the default, for "") or "opentelemetry"; it is the
	// trace_mode the settings report.
	Mode string

	// OpenTelemetry mode only.

	// URL is the OTLP endpoint; "" is http://localhost:4318/v1/traces.
	URL string
	// Protocol is "http/protobuf" (the default, Triton's) or "grpc"
	// (beyond Triton).
	Protocol string
	// Resource is added after service.name=triton-inference-server,
	// overriding it.
	Resource []attribute.KeyValue
	// BSPMaxQueueSize, BSPScheduleDelay and BSPMaxExportBatchSize tune the
	// batch span processor; 0 takes the environment's
	// OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_SCHEDULE_DELAY and
	// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, else 2048, 5000 ms and 512.
	BSPMaxQueueSize       int
	BSPScheduleDelay      time.Duration
	BSPMaxExportBatchSize int
}

// Tracer samples requests by the trace settings of a [settings.Store] and
// hands the traces of sampled requests, once they have ended, to its
// exporter. Create it with [New]; a nil *Tracer traces nothing. Safe for
// concurrent use.
type Tracer struct {
	store *settings.Store
	mode  string
	otel  bool // mode opentelemetry
	log   *zap.Logger
	stop  func() // stops watching the store

	state atomic.Pointer[state] // the samplers of the current settings

	file *fileWriter // mode triton
	exp  exporter    // mode opentelemetry

	open atomic.Int64 // root traces started and not ended ([Tracer.Open])

	mu     sync.Mutex
	closed bool // mu protects closed
}

// state is the samplers of one version of the settings.
type state struct {
	active bool // some sampler can trace a request
	global *sampler
	models map[string]*sampler
}

// sampler is one trace setting in force, with its counters: Triton's
// TraceSetting. An update of the settings replaces it, so its counters
// restart; traces it sampled still end through it.
type sampler struct {
	t       *Tracer
	set     settings.Trace
	valid   bool
	sampled atomic.Uint64 // requests that reached sampling, counted when set.Count limits them (Triton's sample_)
	until   atomic.Int64  // requests until the next rate-th one
	count   atomic.Int32  // traces left; -1: no limit

	mu sync.Mutex
	// mu protects the following.
	collected uint64
	pending   []*Record // ended traces not written yet (log_frequency > 0)
	live      int       // sampled traces not ended yet
	retired   bool      // replaced by an update, or the tracer closed
}

// New returns a tracer sampling by the trace settings of store, which it
// watches for changes (a change applies to the next request) and whose
// trace_mode it sets to cfg.Mode. In mode triton the traces go to the
// settings' trace_file, written by one goroutine that [Tracer.Close]
// stops; in mode opentelemetry they are exported as spans.
func New(store *settings.Store, cfg Config, logger *zap.Logger) (*Tracer, error) {
	if store == nil {
		return nil, errors.New("trace: New needs a settings store")
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	mode := strings.ToLower(cfg.Mode)
	if mode == "" {
		mode = ModeTriton
	}
	t := &Tracer{store: store, mode: mode, otel: mode == ModeOpenTelemetry, log: logger}
	switch mode {
	case ModeTriton:
		t.file = newFileWriter(logger)
	case ModeOpenTelemetry:
		exp, err := newOTelExporter(cfg, logger)
		if err != nil {
			return nil, err
		}
		t.exp = exp
	default:
		return nil, fmt.Errorf("invalid value for trace mode option: %s. Available options are \"triton\" and \"opentelemetry\"", mode)
	}
	store.SetTraceMode(mode)
	t.stop = store.WatchTrace(t.update)
	store.SetTraceRemaining(t.remaining)
	return t, nil
}

// remaining returns the traces left to the sampler of model's requests
// ("": the global one), -1 for no limit: what Triton reports as
// trace_count. ok is false before the first settings and once closed.
func (t *Tracer) remaining(model string) (left int32, ok bool) {
	st := t.state.Load()
	if st == nil || st.global == nil {
		return 0, false
	}
	s := st.global
	if m, found := st.models[model]; found && model != "" {
		s = m
	}
	return s.count.Load(), true
}

// update rebuilds the samplers after a change of scope ("" global), as
// Triton does: the changed scope gets a new sampler (counters at 0), and
// so does every other setting whose values changed (the models that
// follow a changed global value); the others keep theirs.
func (t *Tracer) update(scope string, global settings.Trace, models map[string]settings.Trace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	old := t.state.Load()
	keep := func(s *sampler, set settings.Trace, changed bool) *sampler {
		if s != nil && !changed && s.set == set {
			return s
		}
		if s != nil {
			s.retire(false)
		}
		return t.newSampler(set)
	}
	st := &state{models: make(map[string]*sampler, len(models))}
	var prevGlobal *sampler
	var prevModels map[string]*sampler
	if old != nil {
		prevGlobal, prevModels = old.global, old.models
	}
	st.global = keep(prevGlobal, global, scope == "")
	for m, set := range models {
		st.models[m] = keep(prevModels[m], set, scope == m)
	}
	for m, s := range prevModels {
		if _, ok := models[m]; !ok {
			s.retire(false)
		}
	}
	st.active = st.global.canTrace()
	for _, s := range st.models {
		st.active = st.active || s.canTrace()
	}
	t.state.Store(st)
}

func (t *Tracer) newSampler(set settings.Trace) *sampler {
	set.Mode = t.mode
	s := &sampler{t: t, set: set}
	s.valid, _ = set.Valid()
	s.count.Store(set.Count)
	s.until.Store(int64(set.Rate))
	return s
}

// canTrace reports whether s may trace a request: it is valid, or (mode
// opentelemetry) it traces requests with a remote parent.
func (s *sampler) canTrace() bool {
	return s.valid || (s.t.otel && s.set.Level != settings.TraceOff)
}

// sample decides on one request, as Triton does: every request counts,
// the rate-th ones are traced while count lasts; forced ones (a remote
// parent in mode opentelemetry) are traced whatever rate and count say.
func (s *sampler) sample(forced bool) bool {
	if !s.valid && !forced {
		return false
	}
	if s.set.Rate == 0 { // forced, rate 0: Triton's "trace only propagated"
		return true
	}
	if s.set.Count >= 0 {
		s.sampled.Add(1) // only collect's count check reads it
	}
	// Every rate-th request: exactly one decrement reaches 0, and it
	// winds the counter up again (others may take it below 0 meanwhile;
	// the next 0 still comes rate requests later). No division.
	if s.until.Add(-1) != 0 {
		return forced
	}
	s.until.Add(int64(s.set.Rate))
	return forced || s.take()
}

// take takes one of the setting's traces, if count leaves one.
func (s *sampler) take() bool {
	for {
		c := s.count.Load()
		switch {
		case c == 0:
			return false // the last trace went to another request
		case c < 0:
			return true
		case s.count.CompareAndSwap(c, c-1):
			return true
		}
	}
}

// Open reports whether some trace has started and not ended: while none
// is, no context carries one, and a caller need not look ([FromContext]).
func (t *Tracer) Open() bool { return t != nil && t.open.Load() > 0 }

// Active reports whether some setting can trace a request now: one atomic
// load, for callers that would otherwise look for a trace in a context
// (a request's parent's) before they call Start.
func (t *Tracer) Active() bool {
	if t == nil {
		return false
	}
	st := t.state.Load()
	return st != nil && st.active
}

// Start samples a request to model, as Triton samples (per-setting
// counter, every rate-th request, count, and in mode opentelemetry forced
// sampling of requests with a valid W3C parent). carrier is the request's
// headers or metadata (nil in-process: then the span in ctx, if any, is
// the parent in mode opentelemetry). It returns nil when the request is not
// traced: every method of a nil *Trace is a no-op, so callers never
// branch. Tracing off costs one atomic load and no allocation.
func (t *Tracer) Start(ctx context.Context, model string, carrier propagation.TextMapCarrier) *Trace {
	if t == nil {
		return nil
	}
	st := t.state.Load()
	if st == nil || !st.active {
		return nil
	}
	s := st.global
	if len(st.models) > 0 {
		if m, ok := st.models[model]; ok {
			s = m
		}
	}
	if t.otel {
		return t.startRemote(ctx, s, model, carrier)
	}
	if !s.sample(false) {
		return nil
	}
	return t.root(s, model, oteltrace.SpanContext{})
}

// startRemote is Start in mode opentelemetry: a request whose carrier (or
// ctx, in-process) has a valid W3C parent is traced whatever rate and count
// say, and continues that trace.
func (t *Tracer) startRemote(ctx context.Context, s *sampler, model string, carrier propagation.TextMapCarrier) *Trace {
	if !s.canTrace() {
		return nil
	}
	var remote oteltrace.SpanContext
	if carrier != nil {
		remote = oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	} else {
		remote = oteltrace.SpanContextFromContext(ctx)
	}
	if !s.sample(remote.IsValid()) {
		return nil
	}
	return t.root(s, model, remote)
}

// root starts the trace of a sampled request.
func (t *Tracer) root(s *sampler, model string, remote oteltrace.SpanContext) *Trace {
	s.mu.Lock()
	s.live++
	s.mu.Unlock()
	t.open.Add(1) // until the tree's last trace ends (Trace.End)
	// One allocation for the root trace, its record and room for the
	// server's seven stamps and the adapter's five.
	b := &rootBox{}
	b.rec = Record{ID: nextID.Add(1), Model: model, Remote: remote, Stamps: b.stamps[:0]}
	b.tree = tree{smp: s, level: s.set.Level, open: 1, root: &b.trace}
	b.trace = Trace{tree: &b.tree, rec: &b.rec}
	return &b.trace
}

// rootBox is what a sampled request's trace needs, allocated at once.
type rootBox struct {
	tree   tree
	trace  Trace
	rec    Record
	stamps [12]Stamp
}

// nextID is the last trace id given; ids start at 1.
var nextID atomic.Uint64

// Mode returns the tracer's mode, ModeTriton or ModeOpenTelemetry ("" for
// nil). Only mode opentelemetry reads the carrier given to [Tracer.Start],
// so an adapter need not build one otherwise.
func (t *Tracer) Mode() string {
	if t == nil {
		return ""
	}
	return t.mode
}

// Flush waits until the traces that have ended are written (mode triton:
// streamed to the trace file, or to the indexed files of the groups that
// are complete) and the file is on disk; in mode opentelemetry it does
// nothing. ctx bounds the wait.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil || t.file == nil {
		return nil
	}
	return t.file.flush(ctx)
}

// Close stops sampling, writes what the ended traces left buffered
// (log_frequency's pending traces, the closing "]" of the trace file) or
// flushes the exporter, and stops every goroutine of the tracer. Traces
// that end later are dropped. ctx bounds the wait for the exporter.
func (t *Tracer) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	old := t.state.Swap(&state{})
	t.mu.Unlock()
	t.stop() // not under t.mu: the store calls update with its own lock held
	t.store.SetTraceRemaining(nil)
	if old != nil {
		old.global.retire(true)
		for _, s := range old.models {
			s.retire(true)
		}
	}
	if t.file != nil {
		return t.file.close(ctx)
	}
	done := make(chan error, 1)
	go func() { done <- t.exp.close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retire marks s replaced: once its last sampled trace has ended, what it
// still buffers is written; at once when final (the tracer closes: traces
// still open are dropped when they end).
func (s *sampler) retire(final bool) {
	s.mu.Lock()
	s.retired = true
	if final {
		s.live = 0
	}
	recs, indexed := s.flushLocked()
	s.mu.Unlock()
	s.write(recs, indexed)
}

// flushLocked takes the pending traces of a retired sampler whose traces
// have all ended, and says where they go (an indexed file with
// log_frequency).
func (s *sampler) flushLocked() (recs []*Record, indexed bool) {
	if !s.retired || s.live > 0 || len(s.pending) == 0 {
		return nil, false
	}
	recs, s.pending = s.pending, nil
	return recs, s.set.LogFrequency != 0
}

// collect takes an ended trace tree, as Triton's WriteTrace does: the
// traces of a setting gather until log_frequency of them are there, or
// count is reached (and every sampled trace has ended), and then go to the
// next indexed file; what is left when the setting goes away goes to an
// indexed file too with log_frequency, else to the trace file itself.
// Unlike Triton, with log_frequency 0 and no count (nothing bounds them)
// the traces are not held until then but streamed to the trace file at
// once: the file ends the same, and memory stays bounded.
func (s *sampler) collect(r *Record) {
	if s.t.exp != nil {
		s.mu.Lock()
		s.live--
		s.mu.Unlock()
		s.t.exp.export(r)
		return
	}
	s.mu.Lock()
	s.live--
	s.collected++
	if s.set.LogFrequency == 0 && s.set.Count < 0 {
		s.mu.Unlock()
		s.t.file.stream(s.set.File, r)
		return
	}
	s.pending = append(s.pending, r)
	var recs []*Record
	indexed := true
	if (s.count.Load() == 0 && s.collected == s.sampled.Load()) || (s.set.LogFrequency != 0 && uint32(len(s.pending)) >= s.set.LogFrequency) {
		recs, s.pending = s.pending, nil
	} else {
		recs, indexed = s.flushLocked()
	}
	s.mu.Unlock()
	s.write(recs, indexed)
}

// write hands recs, a group of traces, to the next indexed file, or else
// to the trace file itself.
func (s *sampler) write(recs []*Record, indexed bool) {
	if len(recs) == 0 || s.t.file == nil {
		return
	}
	if indexed {
		s.t.file.indexed(s.set.File, recs)
		return
	}
	for _, r := range recs {
		s.t.file.stream(s.set.File, r)
	}
}
