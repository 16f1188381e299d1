package grpcapi_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

func TestHealthCheck(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, setup{})
	resp, err := f.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("ready server: %v, %v", resp, err)
	}
	// The service name is ignored, as in Triton.
	resp, err = f.health.Check(ctx, &healthpb.HealthCheckRequest{Service: "inference.GRPCInferenceService"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("named service: %v, %v", resp, err)
	}

	// Live but not ready (a model failed to load): NOT_SERVING.
	g := newFixture(t, setup{files: brokenRepo(), server: []triton.Option{triton.WithExitOnError(false)}})
	resp, err = g.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("not ready server: %v, %v", resp, err)
	}

	// Shutting down: NOT_SERVING.
	shutDown(t, f)
	resp, err = f.health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("server shutting down: %v, %v", resp, err)
	}
}

func TestHealthWatch(t *testing.T) {
	f := newFixture(t, setup{})
	stream, err := f.health.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	wantStatus(t, err, codes.Unimplemented)
}

func TestHealthRestricted(t *testing.T) {
	f := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithRestrictedProtocol("health", "probe-key", "yes")}})
	const key = "triton-grpc-protocol-probe-key" // Triton's prefix, what its clients send
	for _, md := range []metadata.MD{nil, metadata.Pairs(key, "no"), metadata.Pairs("other", "yes"),
		metadata.Pairs("probe-key", "yes"),    // the bare key is not Triton's
		metadata.Pairs(key, "no", key, "yes"), // as in Triton, the first value counts
	} {
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		_, err := f.health.Check(ctx, &healthpb.HealthCheckRequest{})
		wantStatus(t, err, codes.Unavailable, "This protocol is restricted, expecting header '"+key+"'")
	}
	for _, md := range []metadata.MD{metadata.Pairs(key, "yes"), metadata.Pairs(key, "yes", key, "no"), metadata.Pairs("Triton-GRPC-Protocol-Probe-Key", "yes")} {
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		resp, err := f.health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("with %v: %v, %v", md, resp, err)
		}
	}
	// Other categories are not restricted.
	if _, err := f.client.ServerMetadata(context.Background(), &inferencepb.ServerMetadataRequest{}); err != nil {
		t.Errorf("metadata: %v", err)
	}
}
