// trace.go starts the traces of the requests the service receives and
// keeps their gRPC stamps.

package grpcapi

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton/trace"
)

// mdCarrier reads a W3C trace context from incoming metadata (keys are
// lower case there).
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if vs := metadata.MD(c).Get(key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// callTrace is one traced request with the gRPC stamps it has taken:
// Triton writes them after the server's, when the call is done.
type callTrace struct {
	tr     *trace.Trace
	stamps []trace.Stamp
}

// startTrace samples a request to model (nil when not traced, or without
// a tracer), whose read began at readStart and ended at readEnd. The carrier of
// mode opentelemetry is the call's incoming metadata.
func (s *Service) startTrace(ctx context.Context, tracer *trace.Tracer, model string, readStart, readEnd time.Time) *callTrace {
	if tracer == nil {
		return nil
	}
	var carrier mdCarrier
	if tracer.Mode() == trace.ModeOpenTelemetry {
		md, _ := metadata.FromIncomingContext(ctx)
		carrier = mdCarrier(md)
	}
	var tr *trace.Trace
	if carrier != nil {
		tr = tracer.Start(ctx, model, carrier)
	} else {
		tr = tracer.Start(ctx, model, nil)
	}
	if tr == nil {
		return nil
	}
	return &callTrace{tr: tr, stamps: append(make([]trace.Stamp, 0, 4),
		trace.Stamp{Activity: trace.GRPCWaitReadStart, At: readStart}, trace.Stamp{Activity: trace.GRPCWaitReadEnd, At: readEnd})}
}

// add keeps a gRPC stamp taken now (nil: not traced).
func (c *callTrace) add(a trace.Activity) {
	if c != nil {
		c.stamps = append(c.stamps, trace.Stamp{Activity: a, At: time.Now()})
	}
}

// done stamps what was kept, after the server's stamps, and ends the
// trace; sendEnd first adds GRPC_SEND_END, now.
func (c *callTrace) done(sendEnd bool) {
	if c == nil {
		return
	}
	if sendEnd {
		c.add(trace.GRPCSendEnd)
	}
	for _, st := range c.stamps {
		c.tr.Stamp(st.Activity, st.At)
	}
	c.tr.End()
}

// traceOf returns the trace of a request the service started (nil when
// not traced).
func (s *Service) traceOf(ctx context.Context) *trace.Trace {
	if s.srv.Tracer() == nil {
		return nil
	}
	return trace.FromContext(ctx)
}
