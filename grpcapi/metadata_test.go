package grpcapi_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/sysshm"
)

// notReadyBackend loads models whose instances report themselves not ready
// (backend.Readier), so that the model is loaded but not ready.
type notReadyBackend struct{}

func (notReadyBackend) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return notReadyBackend{}, nil
}
func (notReadyBackend) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return notReadyBackend{}, nil
}
func (notReadyBackend) Execute(context.Context, *backend.Batch) error { return nil }
func (notReadyBackend) Close() error                                  { return nil }
func (notReadyBackend) Ready(context.Context) error                   { return errors.New("not ready") }

// brokenRepo is the standard repository plus a model that fails to load,
// which makes the server not ready (with WithExitOnError(false)).
func brokenRepo() map[string]string {
	files := repo()
	files["broken/config.pbtxt"] = `name: "broken" backend: "nosuchbackend" input [ { name: "X" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "Y" data_type: TYPE_FP32 dims: [1] } ]`
	files["broken/1/model"] = ""
	return files
}

// shutDown shuts f's server down (no drain period): it is then no longer
// live.
func shutDown(t *testing.T, f *fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestServerLiveReady(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, setup{})
	live, err := f.client.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err != nil || !live.GetLive() {
		t.Errorf("ServerLive: %v, %v", live, err)
	}
	ready, err := f.client.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	if err != nil || !ready.GetReady() {
		t.Errorf("ServerReady: %v, %v", ready, err)
	}

	// A model that failed to load: live, not ready (OK with false).
	g := newFixture(t, setup{files: brokenRepo(), server: []triton.Option{triton.WithExitOnError(false)}})
	ready, err = g.client.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	if err != nil || ready.GetReady() {
		t.Errorf("ServerReady with a broken model: %v, %v", ready, err)
	}
	live, err = g.client.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err != nil || !live.GetLive() {
		t.Errorf("ServerLive with a broken model: %v, %v", live, err)
	}

	// Shutting down: UNAVAILABLE "Server exiting" for both.
	shutDown(t, f)
	_, err = f.client.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	wantStatus(t, err, codes.Unavailable, "Server exiting")
	_, err = f.client.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
	wantStatus(t, err, codes.Unavailable, "Server exiting")
	_, err = f.client.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "simple"})
	wantStatus(t, err, codes.Unavailable, "Server not ready")
}

func TestModelReady(t *testing.T) {
	files := repo()
	files["unready/config.pbtxt"] = `name: "unready" backend: "unready" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`
	files["unready/1/model"] = ""
	files["gone/config.pbtxt"] = strings.Replace(simpleConfig, `name: "simple"`, `name: "gone"`, 1)
	files["gone/1/model"] = ""
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("unready", notReadyBackend{}), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("*")}})
	if resp, err := f.client.ModelReady(t.Context(), &inferencepb.ModelReadyRequest{Name: "gone"}); err != nil || !resp.GetReady() {
		t.Fatalf("gone before unloading: %v, %v", resp, err)
	}
	if _, err := f.client.RepositoryModelUnload(t.Context(), &inferencepb.RepositoryModelUnloadRequest{ModelName: "gone"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version string
		ready         bool
		code          codes.Code
		msg           string
	}{
		{"simple", "", true, codes.OK, ""},
		{"simple", "1", true, codes.OK, ""},
		{"simple", " +1", true, codes.OK, ""},  // std::stol: leading space and sign
		{"simple", "1abc", true, codes.OK, ""}, // std::stol: trailing text ignored
		{"unready", "", false, codes.OK, ""},
		{"unready", "1", false, codes.OK, ""},
		// Known to the repository but not loaded, unloaded or without that
		// version: ready=false, not an error; a model the repository does
		// not have is an error (spec §3).
		{"nosuch", "", false, codes.InvalidArgument, "Request for unknown model: 'nosuch' is not found"},
		{"simple", "2", false, codes.OK, ""},
		{"simple", "0", false, codes.OK, ""},
		{"gone", "", false, codes.OK, ""},
		{"gone", "1", false, codes.OK, ""},
		{"", "", false, codes.InvalidArgument, "Request for unknown model: '' is not found"},
		{"simple", "-1", false, codes.InvalidArgument, "invalid model version specified '-1' , version should be an integral value > 0"},
		{"simple", "abc", false, codes.InvalidArgument, "failed to get model version from specified version string 'abc' (details: stol), version should be an integral value > 0"},
		{"simple", "+", false, codes.InvalidArgument, "failed to get model version from specified version string '+'"},
		{"simple", "99999999999999999999", false, codes.InvalidArgument, "failed to get model version from specified version string '99999999999999999999'"},
	} {
		t.Run(tc.name+"/"+tc.version, func(t *testing.T) {
			resp, err := f.client.ModelReady(context.Background(), &inferencepb.ModelReadyRequest{Name: tc.name, Version: tc.version})
			if tc.code != codes.OK {
				wantStatus(t, err, tc.code, tc.msg)
				return
			}
			if err != nil || resp.GetReady() != tc.ready {
				t.Errorf("ready %v, %v; want %v", resp.GetReady(), err, tc.ready)
			}
		})
	}
}

func TestServerMetadata(t *testing.T) {
	f := newFixture(t, setup{})
	md, err := f.client.ServerMetadata(context.Background(), &inferencepb.ServerMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"classification", "sequence", "model_repository", "model_repository(unload_dependents)", "schedule_policy",
		"model_configuration", "cuda_shared_memory", "binary_tensor_data", "parameters", "statistics", "logging"}
	if md.GetName() != "triton" || md.GetVersion() != triton.Version || !slices.Equal(md.GetExtensions(), want) {
		t.Errorf("metadata %v\nwant extensions %v", md, want)
	}

	// With shared memory enabled, system_shared_memory is listed too.
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	g := newFixture(t, setup{svc: []grpcapi.Option{grpcapi.WithSharedMemory(reg)}})
	md, err = g.client.ServerMetadata(context.Background(), &inferencepb.ServerMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(md.GetExtensions(), ","), "model_configuration,system_shared_memory,cuda_shared_memory") {
		t.Errorf("extensions with shared memory %v", md.GetExtensions())
	}
}

func TestModelMetadata(t *testing.T) {
	f := newFixture(t, setup{})
	ctx := context.Background()
	want := &inferencepb.ModelMetadataResponse{
		Name: "simple", Versions: []string{"1"}, Platform: "addsub",
		Inputs: []*inferencepb.ModelMetadataResponse_TensorMetadata{
			{Name: "INPUT0", Datatype: "INT32", Shape: []int64{-1, 16}},
			{Name: "INPUT1", Datatype: "INT32", Shape: []int64{-1, 16}},
		},
		Outputs: []*inferencepb.ModelMetadataResponse_TensorMetadata{
			{Name: "OUTPUT0", Datatype: "INT32", Shape: []int64{-1, 16}},
			{Name: "OUTPUT1", Datatype: "INT32", Shape: []int64{-1, 16}},
		},
	}
	for _, v := range []string{"", "1"} {
		got, err := f.client.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "simple", Version: v})
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("version %q: %v, %v\nwant %v", v, got, err, want)
		}
	}
	got, err := f.client.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "nb_BYTES"})
	if err != nil || got.GetInputs()[0].GetDatatype() != "BYTES" || !slices.Equal(got.GetInputs()[0].GetShape(), []int64{-1}) || got.GetPlatform() != "mirror" {
		t.Errorf("nb_BYTES: %v, %v", got, err)
	}
	for _, tc := range []struct {
		name, version string
		code          codes.Code
		msg           string
	}{
		{"nosuch", "", codes.InvalidArgument, "Request for unknown model: 'nosuch' is not found"},
		{"simple", "7", codes.NotFound, "Request for unknown model: 'simple' version 7 is not found"},
		{"simple", "x", codes.InvalidArgument, "failed to get model version from specified version string 'x'"},
		{"simple", "-3", codes.InvalidArgument, "invalid model version specified '-3'"},
	} {
		_, err := f.client.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: tc.name, Version: tc.version})
		wantStatus(t, err, tc.code, tc.msg)
	}
}

func TestModelMetadataVersions(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": `name: "m" backend: "mirror" max_batch_size: 0 version_policy { all { } }
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
		"m/1/model": "",
		"m/3/model": "",
	}
	f := newFixture(t, setup{files: files})
	for v, want := range map[string][]string{"": {"1", "3"}, "3": {"3"}, "1": {"1"}} {
		md, err := f.client.ModelMetadata(context.Background(), &inferencepb.ModelMetadataRequest{Name: "m", Version: v})
		if err != nil || !slices.Equal(md.GetVersions(), want) {
			t.Errorf("version %q: versions %v, %v; want %v", v, md.GetVersions(), err, want)
		}
	}
}

func TestModelConfig(t *testing.T) {
	f := newFixture(t, setup{})
	ctx := context.Background()
	resp, err := f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "batched"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := resp.GetConfig()
	if cfg.GetName() != "batched" || cfg.GetMaxBatchSize() != 8 || cfg.GetDynamicBatching() == nil ||
		len(cfg.GetInput()) != 1 || cfg.GetInput()[0].GetName() != "INPUT0" || !slices.Equal(cfg.GetInput()[0].GetDims(), []int64{4}) {
		t.Errorf("config %v", cfg)
	}
	// The configuration the server runs with, as it reports it.
	want, err := f.srv.ModelConfig("batched", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(cfg, want) {
		t.Errorf("config\n%v\nwant\n%v", cfg, want)
	}
	resp, err = f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "batched", Version: "1"})
	if err != nil || !proto.Equal(resp.GetConfig(), want) {
		t.Errorf("version 1: %v, %v", resp, err)
	}
	_, err = f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "nosuch"})
	wantStatus(t, err, codes.InvalidArgument, "Request for unknown model: 'nosuch' is not found")
	_, err = f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "simple", Version: "2"})
	wantStatus(t, err, codes.NotFound, "version 2 is not found")
	_, err = f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "simple", Version: "two"})
	wantStatus(t, err, codes.InvalidArgument, "failed to get model version from specified version string 'two'")
}

// TestRestrictedProtocolRPCs checks that every RPC of the metadata,
// configuration, repository, statistics, shared-memory, trace and logging
// categories is restricted with its category, before anything else.
func TestRestrictedProtocolRPCs(t *testing.T) {
	reg := sysshm.NewRegistry()
	t.Cleanup(func() { reg.Close() })
	f := newFixture(t, setup{svc: []grpcapi.Option{
		grpcapi.WithSharedMemory(reg),
		grpcapi.WithRestrictedProtocol("model-repository,shared-memory", "admin-key", "s3cret"),
		grpcapi.WithRestrictedProtocol("health", "probe", "yes"),
		grpcapi.WithRestrictedProtocol("metadata", "meta", "m"),
		grpcapi.WithRestrictedProtocol("model-config", "cfg", "c"),
		grpcapi.WithRestrictedProtocol("statistics", "stat", "s"),
		grpcapi.WithRestrictedProtocol("trace", "trace", "t"),
		grpcapi.WithRestrictedProtocol("logging", "log", "l"),
	}})
	c := f.client
	for _, tc := range []struct {
		rpc, key, value string
		call            func(context.Context) error
	}{
		{"ServerLive", "probe", "yes", func(ctx context.Context) error {
			_, err := c.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
			return err
		}},
		{"ServerReady", "probe", "yes", func(ctx context.Context) error {
			_, err := c.ServerReady(ctx, &inferencepb.ServerReadyRequest{})
			return err
		}},
		{"ModelReady", "probe", "yes", func(ctx context.Context) error {
			_, err := c.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "simple"})
			return err
		}},
		{"ServerMetadata", "meta", "m", func(ctx context.Context) error {
			_, err := c.ServerMetadata(ctx, &inferencepb.ServerMetadataRequest{})
			return err
		}},
		{"ModelMetadata", "meta", "m", func(ctx context.Context) error {
			_, err := c.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "simple"})
			return err
		}},
		{"ModelConfig", "cfg", "c", func(ctx context.Context) error {
			_, err := c.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "simple"})
			return err
		}},
		{"ModelStatistics", "stat", "s", func(ctx context.Context) error {
			_, err := c.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{})
			return err
		}},
		{"RepositoryIndex", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.RepositoryIndex(ctx, &inferencepb.RepositoryIndexRequest{})
			return err
		}},
		{"RepositoryModelLoad", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "simple"})
			return err
		}},
		{"RepositoryModelUnload", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "simple"})
			return err
		}},
		{"SystemSharedMemoryStatus", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.SystemSharedMemoryStatus(ctx, &inferencepb.SystemSharedMemoryStatusRequest{})
			return err
		}},
		{"SystemSharedMemoryRegister", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.SystemSharedMemoryRegister(ctx, &inferencepb.SystemSharedMemoryRegisterRequest{Name: "r", Key: "/nosuch", ByteSize: 4})
			return err
		}},
		{"SystemSharedMemoryUnregister", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.SystemSharedMemoryUnregister(ctx, &inferencepb.SystemSharedMemoryUnregisterRequest{Name: "r"})
			return err
		}},
		{"CudaSharedMemoryStatus", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.CudaSharedMemoryStatus(ctx, &inferencepb.CudaSharedMemoryStatusRequest{})
			return err
		}},
		{"CudaSharedMemoryRegister", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.CudaSharedMemoryRegister(ctx, &inferencepb.CudaSharedMemoryRegisterRequest{Name: "c"})
			return err
		}},
		{"CudaSharedMemoryUnregister", "admin-key", "s3cret", func(ctx context.Context) error {
			_, err := c.CudaSharedMemoryUnregister(ctx, &inferencepb.CudaSharedMemoryUnregisterRequest{})
			return err
		}},
		{"TraceSetting", "trace", "t", func(ctx context.Context) error {
			_, err := c.TraceSetting(ctx, &inferencepb.TraceSettingRequest{})
			return err
		}},
		{"LogSettings", "log", "l", func(ctx context.Context) error {
			_, err := c.LogSettings(ctx, &inferencepb.LogSettingsRequest{})
			return err
		}},
	} {
		t.Run(tc.rpc, func(t *testing.T) {
			key := "triton-grpc-protocol-" + tc.key // what Triton's clients send
			for _, md := range []metadata.MD{nil, metadata.Pairs(key, tc.value+"x"), metadata.Pairs(key+"x", tc.value),
				metadata.Pairs(tc.key, tc.value), // the bare key, as this server once wanted
				metadata.Pairs("triton-grpc-protocol-probe", "yes", "triton-grpc-protocol-admin-key", "s3cret")} {
				if md.Get(key) != nil && md.Get(key)[0] == tc.value {
					continue // another category's key alone is tested below
				}
				ctx := metadata.NewOutgoingContext(context.Background(), md)
				wantStatus(t, tc.call(ctx), codes.Unavailable, "This protocol is restricted, expecting header '"+key+"'")
			}
			ctx := metadata.AppendToOutgoingContext(context.Background(), key, tc.value)
			if err := tc.call(ctx); err != nil && strings.Contains(err.Error(), "This protocol is restricted") {
				t.Errorf("with %s=%s: %v", tc.key, tc.value, err)
			}
		})
	}
}
