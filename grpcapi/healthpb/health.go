package healthpb

import (
	"google.golang.org/grpc"
	hv1 "google.golang.org/grpc/health/grpc_health_v1"
)

// The messages, the enum and the service of grpc.health.v1, as grpc-go
// generates them.
type (
	HealthCheckRequest                = hv1.HealthCheckRequest
	HealthCheckResponse               = hv1.HealthCheckResponse
	HealthCheckResponse_ServingStatus = hv1.HealthCheckResponse_ServingStatus
	HealthListRequest                 = hv1.HealthListRequest
	HealthListResponse                = hv1.HealthListResponse
	HealthClient                      = hv1.HealthClient
	HealthServer                      = hv1.HealthServer
	UnimplementedHealthServer         = hv1.UnimplementedHealthServer
	Health_WatchClient                = hv1.Health_WatchClient
	Health_WatchServer                = hv1.Health_WatchServer
)

// The values of HealthCheckResponse.ServingStatus.
const (
	HealthCheckResponse_UNKNOWN         = hv1.HealthCheckResponse_UNKNOWN
	HealthCheckResponse_SERVING         = hv1.HealthCheckResponse_SERVING
	HealthCheckResponse_NOT_SERVING     = hv1.HealthCheckResponse_NOT_SERVING
	HealthCheckResponse_SERVICE_UNKNOWN = hv1.HealthCheckResponse_SERVICE_UNKNOWN
)

// The full method names of the RPCs.
const (
	Health_Check_FullMethodName = hv1.Health_Check_FullMethodName
	Health_List_FullMethodName  = hv1.Health_List_FullMethodName
	Health_Watch_FullMethodName = hv1.Health_Watch_FullMethodName
)

// File_health_proto is grpc-go's grpc/health/v1/health.proto.
var File_health_proto = hv1.File_grpc_health_v1_health_proto

// Health_ServiceDesc is the service's grpc-go description.
var Health_ServiceDesc = hv1.Health_ServiceDesc

// NewHealthClient returns a client of the Health service on cc.
func NewHealthClient(cc grpc.ClientConnInterface) HealthClient { return hv1.NewHealthClient(cc) }

// RegisterHealthServer registers srv as the Health service of s.
func RegisterHealthServer(s grpc.ServiceRegistrar, srv HealthServer) {
	hv1.RegisterHealthServer(s, srv)
}
