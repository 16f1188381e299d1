package grpcapi_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The test backends and helpers shared with the other packages' tests.
var (
	mirror     = testmodels.Mirror
	addSub     = testmodels.AddSub
	echoParams = testmodels.EchoParams
	newBlocker = testmodels.NewBlocker
	dtypes     = testmodels.Dtypes
	mapFS      = testmodels.MapFS
)

const simpleConfig = `
name: "simple"
backend: "addsub"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
`

// repo returns the standard test repository: simple (INT32 add/sub),
// params (echoes request parameters), decoupled, batched (FP32 [4],
// dynamic batching), block (waits for its ctx to end; backend "block"),
// and id_<wire> (batching) and nb_<wire> (not batching) identity models of
// every datatype, all with a version 1.
func repo() map[string]string {
	files := map[string]string{
		"simple/config.pbtxt": simpleConfig,
		"simple/1/model":      "",
		"params/config.pbtxt": `name: "params" backend: "params" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]`,
		"params/1/model": "",
		"decoupled/config.pbtxt": `name: "decoupled" backend: "mirror" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }`,
		"decoupled/1/model": "",
		"batched/config.pbtxt": `name: "batched" backend: "mirror" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }`,
		"batched/1/model": "",
		"block/config.pbtxt": `name: "block" backend: "block" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
		"block/1/model": "",
	}
	for _, d := range dtypes {
		for _, m := range []struct {
			prefix string
			batch  int
		}{{"id_", 8}, {"nb_", 0}} {
			name := m.prefix + d.Wire
			files[name+"/config.pbtxt"] = fmt.Sprintf(`name: %q backend: "mirror" max_batch_size: %d
input [ { name: "INPUT0" data_type: %s dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: %s dims: [ -1 ] } ]`, name, m.batch, d.Config, d.Config)
			files[name+"/1/model"] = ""
		}
	}
	return files
}

// fixture is a triton.Server over the standard repository (or another),
// served by grpcapi over an in-memory connection.
type fixture struct {
	srv    *triton.Server
	block  *testmodels.Blocker
	client inferencepb.GRPCInferenceServiceClient
	health healthpb.HealthClient
	conn   *grpc.ClientConn
	lis    *bufconn.Listener
}

// dial opens another client connection to the fixture's server, with
// opts; it closes when the test ends.
func (f *fixture) dial(t testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///bufnet", append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return f.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// setup configures a fixture.
type setup struct {
	files    map[string]string // nil: repo()
	server   []triton.Option
	svc      []grpcapi.Option
	grpc     []grpc.ServerOption                  // after grpcapi.ServerOptions()
	register func(*grpc.Server, *grpcapi.Service) // nil: Service.Register
}

// newFixture starts a fixture; everything closes when the test ends.
func newFixture(t testing.TB, s setup) *fixture {
	t.Helper()
	if s.files == nil {
		s.files = repo()
	}
	f := &fixture{block: newBlocker()}
	opts := append([]triton.Option{
		triton.WithRepository(mapFS(s.files)),
		triton.WithBackend("mirror", mirror),
		triton.WithBackend("addsub", addSub),
		triton.WithBackend("params", echoParams),
		triton.WithBackend("block", f.block.Backend()),
	}, s.server...)
	srv, err := triton.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.srv = srv
	lis := bufconn.Listen(1 << 20)
	f.lis = lis
	g := grpc.NewServer(append(grpcapi.ServerOptions(), s.grpc...)...)
	if svc := grpcapi.New(srv, s.svc...); s.register != nil {
		s.register(g, svc)
	} else {
		svc.Register(g)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	f.conn = conn
	f.client = inferencepb.NewGRPCInferenceServiceClient(conn)
	f.health = healthpb.NewHealthClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// wantStatus fails unless err is a gRPC status with code whose message
// holds every part.
func wantStatus(t testing.TB, err error, code codes.Code, parts ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("error %v is not a gRPC status (want %v)", err, code)
	}
	if st.Code() != code {
		t.Errorf("code %v, want %v (message %q)", st.Code(), code, st.Message())
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Errorf("message %q does not contain %q", st.Message(), p)
		}
	}
}
