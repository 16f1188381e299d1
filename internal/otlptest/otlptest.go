package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// Span is one received span, flattened: ids as lower-case hex (ParentID
// "" for a root span), times as received, attribute values as pdata's
// AsRaw gives them (string, int64, float64, bool, ...), the resource's
// attributes and the instrumentation scope it came with.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string
	Kind                      string // "Server", "Client", ... as pdata names them
	Start, End                time.Time
	Attributes                map[string]any
	Events                    []Event
	Resource                  map[string]any
	Scope                     string
}

// Event is one event of a span.
type Event struct {
	Name string
	Time time.Time
}

// Receiver is a running OTLP receiver. Its methods are safe for
// concurrent use.
type Receiver struct {
	// HTTPURL is the OTLP/HTTP traces endpoint, a full URL
	// (http://127.0.0.1:<port>/v1/traces); GRPCAddr the OTLP/gRPC
	// address (127.0.0.1:<port>), both plain text.
	HTTPURL, GRPCAddr string

	rcv receiver.Traces

	mu      sync.Mutex
	spans   []Span
	batches int
	changed chan struct{} // closed and replaced whenever spans arrive
}

// Start starts a receiver on two free loopback ports and stops it when
// the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	var lastErr error
	// A port found free may be taken before the receiver binds it; try a
	// few times rather than fail on such a race.
	for range 5 {
		r, err := start()
		if err == nil {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := r.rcv.Shutdown(ctx); err != nil {
					t.Errorf("otlptest: shutting the receiver down: %v", err)
				}
			})
			return r
		}
		lastErr = err
	}
	t.Fatalf("otlptest: starting the OTLP receiver: %v", lastErr)
	return nil
}

func start() (*Receiver, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r := &Receiver{
		HTTPURL:  "http://" + httpAddr + "/v1/traces",
		GRPCAddr: grpcAddr,
		changed:  make(chan struct{}),
	}
	next, err := consumer.NewTraces(r.consume)
	if err != nil {
		return nil, err
	}
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	g := configgrpc.NewDefaultServerConfig()
	g.NetAddr.Endpoint = grpcAddr
	h := otlpreceiver.HTTPConfig{ServerConfig: confighttp.NewDefaultServerConfig(), TracesURLPath: "/v1/traces"}
	h.ServerConfig.NetAddr.Endpoint = httpAddr
	cfg.Protocols.GRPC = configoptional.Some(g)
	cfg.Protocols.HTTP = configoptional.Some(h)
	set := receiver.Settings{
		ID: component.NewID(f.Type()),
		TelemetrySettings: component.TelemetrySettings{
			Logger:         zap.NewNop(),
			TracerProvider: tracenoop.NewTracerProvider(),
			MeterProvider:  metricnoop.NewMeterProvider(),
		},
	}
	ctx := context.Background()
	rcv, err := f.CreateTraces(ctx, set, cfg, next)
	if err != nil {
		return nil, err
	}
	if err := rcv.Start(ctx, host{}); err != nil {
		_ = rcv.Shutdown(ctx)
		return nil, err
	}
	r.rcv = rcv
	return r, nil
}

// freeAddr returns a loopback address with a port free at the time.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// host is the receiver's host: no extensions.
type host struct{}

func (host) GetExtensions() map[component.ID]component.Component { return nil }

// consume keeps the spans of one export request, copied out of pdata
// before it returns.
func (r *Receiver) consume(_ context.Context, td ptrace.Traces) error {
	var got []Span
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes().AsRaw()
		for _, ss := range rs.ScopeSpans().All() {
			scope := ss.Scope().Name()
			for _, s := range ss.Spans().All() {
				tid, sid := s.TraceID(), s.SpanID()
				sp := Span{
					Name:       s.Name(),
					TraceID:    hex.EncodeToString(tid[:]),
					SpanID:     hex.EncodeToString(sid[:]),
					Kind:       s.Kind().String(),
					Start:      s.StartTimestamp().AsTime(),
					End:        s.EndTimestamp().AsTime(),
					Attributes: s.Attributes().AsRaw(),
					Resource:   res,
					Scope:      scope,
				}
				if p := s.ParentSpanID(); !p.IsEmpty() {
					sp.ParentID = hex.EncodeToString(p[:])
				}
				for _, e := range s.Events().All() {
					sp.Events = append(sp.Events, Event{Name: e.Name(), Time: e.Timestamp().AsTime()})
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, got...)
	r.batches++
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// Spans returns the spans received so far, in the order they arrived.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Batches returns how many export requests have been received.
func (r *Receiver) Batches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batches
}

// WaitSpans waits until at least n spans have been received, or ctx
// ends, and returns the spans received.
func (r *Receiver) WaitSpans(ctx context.Context, n int) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, changed := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if len(spans) >= n {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: %d spans received, want %d: %w", len(spans), n, context.Cause(ctx))
		}
	}
}

// Find returns the spans of spans named name.
func Find(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// EventNames returns the names of the span's events, in order.
func (s Span) EventNames() []string {
	names := make([]string, len(s.Events))
	for i, e := range s.Events {
		names[i] = e.Name
	}
	return names
}
